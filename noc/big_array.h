#pragma once
// An allocator for the per-tile arrays of the timing models, which a full wafer makes tens of MB large
// and which a run reads in scattered order: blocks of 2 MiB and more are aligned to 2 MiB and offered to
// the kernel for transparent huge pages (madvise(MADV_HUGEPAGE); a hint, ignored where unsupported), so
// one TLB entry covers 2 MiB instead of 4 KiB. Smaller blocks come from the ordinary heap.
#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace wafer::noc {

template <class T>
struct HugePageAllocator {
  using value_type = T;
  static constexpr std::size_t kHuge = std::size_t(2) << 20;

  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) {}

  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kHuge) {
      void* p = std::malloc(bytes ? bytes : 1);
      if (!p) throw std::bad_alloc();
      return static_cast<T*>(p);
    }
    const std::size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
    void* p = std::aligned_alloc(kHuge, rounded);
    if (!p) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    madvise(p, rounded, MADV_HUGEPAGE);  // a hint: failure only means ordinary pages
#endif
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) noexcept { std::free(p); }

  template <class U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }
};

template <class T>
using BigArray = std::vector<T, HugePageAllocator<T>>;

}  // namespace wafer::noc
