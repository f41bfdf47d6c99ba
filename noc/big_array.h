#pragma once
// An allocator for the per-tile arrays of the timing models and the cores' records, which a full wafer makes
// tens to hundreds of MB large and which a run reads in scattered order: blocks of 2 MiB and more are mapped
// on their own, aligned to 2 MiB and offered to the kernel for transparent huge pages
// (madvise(MADV_HUGEPAGE); a hint, ignored where unsupported), so one TLB entry and one page fault cover
// 2 MiB instead of 4 KiB; they go back to the kernel when freed. Smaller blocks come from the ordinary heap.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <utility>
#include <new>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace wafer::noc {

// Freed huge blocks kept for the next allocation of the same size (keep_huge_blocks(true)): a process that
// runs many steps of one wafer (apps::PointCache) then maps and faults in its task records once. A request
// no kept block fits returns every kept block to the kernel first, so what is kept is at most what the
// last step freed.
namespace detail {
struct HugePool {
  std::mutex m;
  bool keep = false;
  std::vector<std::pair<void*, std::size_t>> blocks;  // (block, bytes)
  std::size_t bytes = 0;
  static HugePool& get() {
    static HugePool p;
    return p;
  }
};
}  // namespace detail
inline void keep_huge_blocks(bool on) {
  auto& p = detail::HugePool::get();
  std::lock_guard<std::mutex> g(p.m);
  p.keep = on;
}
// Bytes of freed blocks kept (the process's own to use again).
inline std::size_t huge_blocks_kept() {
  auto& p = detail::HugePool::get();
  std::lock_guard<std::mutex> g(p.m);
  return p.bytes;
}

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
#if defined(__linux__)
    {
      auto& pool = detail::HugePool::get();
      std::lock_guard<std::mutex> g(pool.m);
      for (std::size_t i = 0; i < pool.blocks.size(); ++i)
        if (pool.blocks[i].second == rounded) {
          void* p = pool.blocks[i].first;
          pool.blocks.erase(pool.blocks.begin() + std::ptrdiff_t(i));
          pool.bytes -= rounded;
          return static_cast<T*>(p);
        }
      for (const auto& [block, size] : pool.blocks) munmap(block, size);
      pool.blocks.clear(), pool.bytes = 0;
    }
    // A mapping of its own, 2 MiB aligned (map 2 MiB more and trim), whatever the C library's allocator is
    // told (a process that keeps freed heap memory would otherwise grow its heap for every aligned block).
    void* m = mmap(nullptr, rounded + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(m);
    const std::uintptr_t aligned = (a + kHuge - 1) / kHuge * kHuge;
    if (aligned > a) munmap(m, aligned - a);
    if (aligned + rounded < a + rounded + kHuge) munmap(reinterpret_cast<void*>(aligned + rounded), a + kHuge - aligned);
    void* p = reinterpret_cast<void*>(aligned);
#if defined(MADV_HUGEPAGE)
    madvise(p, rounded, MADV_HUGEPAGE);  // a hint: failure only means ordinary pages
#endif
#else
    void* p = std::aligned_alloc(kHuge, rounded);
    if (!p) throw std::bad_alloc();
#endif
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    const std::size_t bytes = n * sizeof(T);
#if defined(__linux__)
    if (bytes >= kHuge) {
      const std::size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
      auto& pool = detail::HugePool::get();
      std::lock_guard<std::mutex> g(pool.m);
      if (pool.keep) pool.blocks.push_back({p, rounded}), pool.bytes += rounded;
      else munmap(p, rounded);
      return;
    }
#endif
    std::free(p);
  }

  template <class U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }
};

template <class T>
using BigArray = std::vector<T, HugePageAllocator<T>>;

}  // namespace wafer::noc
