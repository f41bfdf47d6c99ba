#pragma once
// An allocator for the per-tile arrays of the timing models and the cores' records, which a full wafer makes
// tens to hundreds of MB large and which a run reads in scattered order: blocks of 2 MiB and more are mapped
// on their own, aligned to 2 MiB, and go back to the kernel when freed. Smaller blocks come from the ordinary
// heap.
//
// Transparent huge pages: with WAFER_EMU_HUGE_PAGES unset, the blocks are offered for huge pages (madvise(
// MADV_HUGEPAGE)) when the job is a large one (set_large_job) or when a probe of the machine, run once a process
// by the wafer-emu binary, measured a huge page cheaper to fault in than the same memory in 4 KiB pages
// (huge_page_probe); else they follow the system's policy. On the 2-core VM either has held, depending on the day
// (docs/timing.md "Huge pages and cold memory", "Huge pages where they are measured cheaper").
#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <utility>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#if defined(__linux__)
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#endif
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#if defined(__SANITIZE_ADDRESS__)
#define WAFER_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WAFER_EMU_ASAN 1
#endif
#endif
#ifndef WAFER_EMU_ASAN
#define WAFER_EMU_ASAN 0
#endif

#include "hw/error.h"

namespace wafer::noc {

inline constexpr std::size_t kPage = 4096;  // (the smallest page: madvise's alignment)
inline constexpr std::size_t kHugePage = std::size_t(2) << 20;  // (a transparent huge page on x86-64)
// x rounded up to a whole number of huge pages (an address to the next huge-page boundary, a size to whole pages).
inline constexpr std::uintptr_t round_up_to_huge_page(std::uintptr_t x) { return (x + kHugePage - 1) / kHugePage * kHugePage; }

// What the big blocks ask of the kernel, from WAFER_EMU_HUGE_PAGES, read once: "1" offers them for transparent
// huge pages (MADV_HUGEPAGE), "0" keeps them off huge pages (MADV_NOHUGEPAGE, for systems whose policy is
// "always"); unset or empty, nothing (the system's policy). Anything else is refused: an unknown value must
// not silently mean one of the three.
enum class HugePageAdvice { System, Huge, NoHuge };
inline HugePageAdvice parse_huge_page_advice(const char* v) {
  if (!v || !*v) return HugePageAdvice::System;
  if (v[0] == '1' && !v[1]) return HugePageAdvice::Huge;
  if (v[0] == '0' && !v[1]) return HugePageAdvice::NoHuge;
  throw hw::InputError(std::string("WAFER_EMU_HUGE_PAGES must be 1 (huge pages), 0 (none) or unset (the system's "
                                   "policy), not '") + v + "'");
}
inline HugePageAdvice huge_page_advice() {
  static const HugePageAdvice a = parse_huge_page_advice(std::getenv("WAFER_EMU_HUGE_PAGES"));
  return a;
}
// Whether the blocks mapped from now on belong to a large job (apps::emulate_points decides, from the job's task
// records, before it allocates them): with WAFER_EMU_HUGE_PAGES unset, they are then offered for huge pages. (A
// kept block, keep_huge_blocks, keeps the advice it was mapped with.)
inline std::atomic<bool>& large_job_flag() {
  static std::atomic<bool> on{false};
  return on;
}
inline void set_large_job(bool on) { large_job_flag().store(on, std::memory_order_relaxed); }

// What faulting fresh memory in costs on this machine now, in 4 KiB pages and as a transparent huge page
// (docs/timing.md "Huge pages where they are measured cheaper"). On the 2-core VM it has been either way round
// from one day to the next: a cold huge page several times 2 MiB of small pages, or small pages so dear that a
// step ran 1.3 to 1.5 times as long in them. `ran`: measured (Linux, the system's policy "madvise", under which
// only advice gives huge pages); else the advice is left to the system.
struct HugePageProbe {
  bool ran = false;
  double small_ms = 0;  // 1 MiB faulted in, 4 KiB pages (256 faults), times two
  double huge_ms = 0;   // one 2 MiB huge page faulted in (its 512 small pages' worth touched)
  bool huge_cheaper() const { return ran && huge_ms < small_ms; }
};
inline HugePageProbe measure_huge_pages() {
  HugePageProbe r;
#if defined(__linux__) && defined(MADV_HUGEPAGE) && defined(MADV_NOHUGEPAGE)
  {
    char policy[128] = {};
    if (std::FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r")) {
      const std::size_t n = std::fread(policy, 1, sizeof(policy) - 1, f);
      policy[n] = 0;
      std::fclose(f);
    }
    if (!std::strstr(policy, "[madvise]")) return r;
  }
  constexpr std::size_t kHuge = kHugePage, kSmall = std::size_t(1) << 20;
  void* m = mmap(nullptr, 3 * kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return r;
  auto* const a = reinterpret_cast<volatile char*>(round_up_to_huge_page(reinterpret_cast<std::uintptr_t>(m)));
  auto* const b = a + kHuge;
  madvise(const_cast<char*>(a), kHuge, MADV_NOHUGEPAGE);
  madvise(const_cast<char*>(b), kHuge, MADV_HUGEPAGE);
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  for (std::size_t i = 0; i < kSmall; i += kPage) a[i] = 1;
  const auto t1 = clock::now();
  for (std::size_t i = 0; i < kHuge; i += kPage) b[i] = 1;
  const auto t2 = clock::now();
  munmap(m, 3 * kHuge);
  r.ran = true;
  r.small_ms = 2e3 * std::chrono::duration<double>(t1 - t0).count();
  r.huge_ms = 1e3 * std::chrono::duration<double>(t2 - t1).count();
#endif
  return r;
}
// Whether the first call of huge_page_probe (at the wafer-emu binary's start: offer_heap_huge_pages asks block_advice)
// measures the machine (measure_huge_pages), once a process, so that with WAFER_EMU_HUGE_PAGES unset every block is
// offered huge pages when they measured cheaper. Off unless asked (the wafer-emu binary asks; tests see the system's
// policy).
inline std::atomic<bool>& probe_flag() {
  static std::atomic<bool> on{false};
  return on;
}
inline void probe_huge_pages(bool on) { probe_flag().store(on, std::memory_order_relaxed); }
// The probe's figures: measured at the first call with the probe on and the variable unset (later calls give the
// same), else not run.
inline HugePageProbe huge_page_probe() {
  if (!probe_flag().load(std::memory_order_relaxed) || huge_page_advice() != HugePageAdvice::System) return {};
  static const HugePageProbe p = measure_huge_pages();
  return p;
}
// The advice a block mapped now gets: the variable's, or, when it is unset, huge pages for a large job or where
// the probe measured them cheaper.
inline HugePageAdvice block_advice() {
  const HugePageAdvice a = huge_page_advice();
  if (a != HugePageAdvice::System) return a;
  return large_job_flag().load(std::memory_order_relaxed) || huge_page_probe().huge_cheaper() ? HugePageAdvice::Huge : a;
}
// Gives a mapping that advice (a hint: failure only means the system's policy).
inline void advise_huge_pages([[maybe_unused]] void* p, [[maybe_unused]] std::size_t bytes, HugePageAdvice a) {
  if (a == HugePageAdvice::System) return;
#if defined(__linux__) && defined(MADV_HUGEPAGE) && defined(MADV_NOHUGEPAGE)
  madvise(p, bytes, a == HugePageAdvice::Huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
#endif
}

// The C library's heap on the same advice. With the big blocks offered huge pages (block_advice() == Huge, e.g.
// where the probe measured them cheaper), the rest of a job's memory, its std::vectors and other heap blocks (the
// mapper's programs, the executor's per-tile tables: about 22 k of the default decode's 24.5 k page faults), would
// still fault in 4 KiB at a time. offer_heap_huge_pages() (glibc on Linux; the wafer-emu binary calls it at start)
// makes the heap grow in one stretch of `pad` bytes (M_TOP_PAD: address space, no memory until touched) with blocks
// up to 32 MiB taken from it (M_MMAP_THRESHOLD; the most glibc allows) and its top never trimmed (a trimmed top
// would grow back without the advice), and advises that stretch MADV_HUGEPAGE. What glibc's own
// GLIBC_TUNABLES=glibc.malloc.hugetlb=1 does, which is read only at process start, before the probe can say.
// Heap growth beyond the stretch gets no advice (4 KiB pages, as without). Under AddressSanitizer the heap is the
// sanitizer's, and nothing is done.
struct HeapAdvice {
  bool advised = false;
  std::uintptr_t lo = 0, hi = 0;  // the stretch advised: [lo, hi)
};
inline constexpr int kHeapPad = 1 << 30;  // (mallopt takes an int)
// The range of [lo, hi) a huge page can back: lo rounded up to a huge page (empty if none is left).
inline std::pair<std::uintptr_t, std::uintptr_t> huge_aligned(std::uintptr_t lo, std::uintptr_t hi) {
  const std::uintptr_t a = round_up_to_huge_page(lo);
  return a < hi ? std::pair{a, hi} : std::pair{hi, hi};
}
inline HeapAdvice advise_heap_now([[maybe_unused]] int pad) {
  HeapAdvice r;
#if defined(__GLIBC__) && defined(__linux__) && defined(MADV_HUGEPAGE) && !WAFER_EMU_ASAN
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
  mallopt(M_TOP_PAD, pad);
  const auto before = reinterpret_cast<std::uintptr_t>(sbrk(0));
  void* p = std::malloc(kHugePage);  // (more than the top holds: the heap grows by it and the pad)
  asm volatile("" : : "r"(p) : "memory");  // (else the compiler may drop an allocation nothing uses)
  std::free(p);
  const auto after = reinterpret_cast<std::uintptr_t>(sbrk(0));
  const auto [lo, hi] = huge_aligned(before, after);
  if (hi - lo < kHugePage || madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE) != 0) return r;  // (no brk heap)
  r = {true, lo, hi};
#endif
  return r;
}
// Once a process: the heap offered huge pages when the big blocks are (block_advice() at the first call), else
// nothing. Later calls give the first one's result.
inline HeapAdvice offer_heap_huge_pages() {
  static const HeapAdvice a = block_advice() == HugePageAdvice::Huge ? advise_heap_now(kHeapPad) : HeapAdvice{};
  return a;
}

// Freed huge blocks kept for later allocations (keep_huge_blocks(true)): a process that runs many steps
// (apps::PointCache, the wafers of a pipeline, emulated one after the other or side by side) then maps and
// faults in its task records once. While blocks are kept, each is mapped a quarter larger than asked, and a
// request takes the smallest kept block that holds it and is at most twice its size: the records of wafers
// of about one size share blocks. Kept blocks are
// returned to the kernel, smallest first, while what is kept and what is in use exceed the most the process
// has had in use at once.
namespace detail {
struct HugePool {
  std::mutex m;
  bool keep = false;
  std::vector<std::pair<void*, std::size_t>> blocks;  // kept: (block, bytes)
  std::vector<std::pair<void*, std::size_t>> given;   // in use: (block, bytes mapped)
  std::size_t bytes = 0, in_use = 0, peak = 0;        // kept, in use, the most in use at once
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

// Returns every kept block to the kernel (a process about to wait for memory that another needs); blocks are
// kept again as they are freed while keep_huge_blocks is on.
inline void release_huge_blocks() {
  auto& p = detail::HugePool::get();
  std::lock_guard<std::mutex> g(p.m);
#if defined(__linux__)
  for (const auto& [b, size] : p.blocks) munmap(b, size);
#endif
  p.blocks.clear();
  p.bytes = 0;
}

// Makes [p, p + bytes) of a private anonymous mapping read as zero, writing only the pages that may hold something
// else: a page neither in memory nor swapped out reads as zero already (never written since it was mapped, or given
// back), and writing it would only fault it in (on this VM, some days, the dearest part of a step: docs/timing.md
// "A kept block's pages cleared where they are in memory"). Which pages are: /proc/self/pagemap (bit 63 in memory,
// 62 swapped out); where it cannot be read, every page is written.
inline void zero_resident(void* p, std::size_t bytes) {
  auto* const first = static_cast<unsigned char*>(p);
#if defined(__linux__)
  static const int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd >= 0 && bytes > 0) {
    constexpr std::size_t kBatch = 512;  // entries read at once (8 bytes a page)
    std::uint64_t e[kBatch];
    const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(first), b = a + bytes, end = (b + kPage - 1) / kPage;
    std::uintptr_t page = a / kPage;
    while (page < end) {
      const std::size_t n = std::size_t(std::min<std::uintptr_t>(kBatch, end - page));
      if (::pread(fd, e, n * sizeof(std::uint64_t), off_t(page * sizeof(std::uint64_t))) != ssize_t(n * sizeof(std::uint64_t)))
        break;  // (the rest written)
      for (std::size_t i = 0; i < n;) {
        if ((e[i] >> 62) == 0) {
          ++i;
          continue;
        }
        std::size_t j = i + 1;
        while (j < n && (e[j] >> 62) != 0) ++j;
        const std::uintptr_t lo = std::max(a, (page + i) * kPage), hi = std::min(b, (page + j) * kPage);
        std::memset(reinterpret_cast<void*>(lo), 0, hi - lo);
        i = j;
      }
      page += n;
    }
    if (page >= end) return;
    const std::uintptr_t lo = std::max(a, page * kPage);
    std::memset(reinterpret_cast<void*>(lo), 0, b - lo);
    return;
  }
#endif
  std::memset(first, 0, bytes);
}

template <class T>
struct HugePageAllocator {
  using value_type = T;
  static constexpr std::size_t kHuge = kHugePage;
  static std::size_t rounded_size(std::size_t bytes) { return round_up_to_huge_page(bytes); }

  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) {}

  T* allocate(std::size_t n) {
    bool fresh = false;
    return allocate_block(n, fresh);
  }
  // allocate(n), but reading as zero: a fresh mapping is the kernel's zero pages, not touched here (a page never
  // written then costs no memory and no fault); a kept block, or a small one from the heap, is cleared.
  T* allocate_zeroed(std::size_t n) {
    bool fresh = false;
    T* p = allocate_block(n, fresh);
    if (fresh) return p;
    // (a kept block: its pages in memory written, the others read as zero already; a small one from the heap
    // written whole)
    if (n * sizeof(T) >= kHuge) zero_resident(p, n * sizeof(T));
    else std::memset(static_cast<void*>(p), 0, n * sizeof(T));
    return p;
  }
  // A block for n elements; `fresh`: a new mapping (all zero, no page touched).
  T* allocate_block(std::size_t n, bool& fresh) {
    fresh = false;
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kHuge) {
      // (an over-aligned T, e.g. a record of half a cache line, keeps its alignment on this path too)
      // (bytes, a multiple of sizeof(T), is one of alignof(T) too, as aligned_alloc wants)
      void* p = alignof(T) > alignof(std::max_align_t) ? std::aligned_alloc(alignof(T), bytes ? bytes : alignof(T))
                                                       : std::malloc(bytes ? bytes : 1);
      if (!p) throw std::bad_alloc();
      return static_cast<T*>(p);
    }
    const std::size_t rounded = rounded_size(bytes);
#if defined(__linux__)
    auto& pool = detail::HugePool::get();
    std::lock_guard<std::mutex> g(pool.m);
    {
      std::size_t best = pool.blocks.size();
      for (std::size_t i = 0; i < pool.blocks.size(); ++i) {
        const std::size_t size = pool.blocks[i].second;
        if (size >= rounded && rounded >= size / 2 &&
            (best == pool.blocks.size() || size < pool.blocks[best].second))
          best = i;
      }
      if (best < pool.blocks.size()) {
        const auto block = pool.blocks[best];
        pool.blocks.erase(pool.blocks.begin() + std::ptrdiff_t(best));
        pool.bytes -= block.second;
        pool.given.push_back(block);
        pool.in_use += block.second;
        return static_cast<T*>(block.first);
      }
    }
    // A mapping of its own, 2 MiB aligned (map 2 MiB more and trim), whatever the C library's allocator is
    // told (a process that keeps freed heap memory would otherwise grow its heap for every aligned block).
    // Kept, it may serve a request a quarter larger later: mapped that much larger (the pages past the
    // request are not touched, so cost no memory until then).
    const std::size_t mapped = pool.keep ? rounded_size(bytes + bytes / 4) : rounded;
    void* m = mmap(nullptr, mapped + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(m);
    const std::uintptr_t aligned = round_up_to_huge_page(a);
    if (aligned > a) munmap(m, aligned - a);
    if (aligned + mapped < a + mapped + kHuge) munmap(reinterpret_cast<void*>(aligned + mapped), a + kHuge - aligned);
    void* p = reinterpret_cast<void*>(aligned);
    fresh = true;
    advise_huge_pages(p, mapped, block_advice());
    pool.given.push_back({p, mapped});
    pool.in_use += mapped;
    pool.peak = std::max(pool.peak, pool.in_use);
    while (!pool.blocks.empty() && pool.bytes + pool.in_use > pool.peak) {
      const auto smallest = std::min_element(pool.blocks.begin(), pool.blocks.end(),
                                             [](const auto& x, const auto& y) { return x.second < y.second; });
      munmap(smallest->first, smallest->second);
      pool.bytes -= smallest->second;
      pool.blocks.erase(smallest);
    }
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
      auto& pool = detail::HugePool::get();
      std::lock_guard<std::mutex> g(pool.m);
      std::size_t size = rounded_size(bytes);  // (every block is in `given`; this only if not)
      for (std::size_t i = 0; i < pool.given.size(); ++i)
        if (pool.given[i].first == p) {
          size = pool.given[i].second;
          pool.given[i] = pool.given.back();
          pool.given.pop_back();
          pool.in_use -= size;
          break;
        }
      if (pool.keep) pool.blocks.push_back({p, size}), pool.bytes += size;
      else munmap(p, size);
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

// The same blocks for records that are written before they are read (the cores' burst records): growing the
// array does not write its new elements (default-, not value-initialised), so a stretch that is grown over and
// never written (a reuse jump's copies read through a rule, core/executor.h) costs no page and no store.
template <class T>
struct UninitHugePageAllocator : HugePageAllocator<T> {
  using value_type = T;
  UninitHugePageAllocator() = default;
  template <class U>
  UninitHugePageAllocator(const UninitHugePageAllocator<U>&) {}
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... A>
  void construct(U* p, A&&... a) {
    ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
  }
};

template <class T>
using RecordArray = std::vector<T, UninitHugePageAllocator<T>>;

// Faults the pages holding [p, p + bytes) in by the kernel alone (MADV_POPULATE_WRITE), writing nothing: safe
// beside a thread that writes there. They read as before (a new mapping's as zero). False when the kernel could
// not (the pages are then faulted in when first written, as any).
inline bool populate_bytes_in_kernel([[maybe_unused]] const void* p, [[maybe_unused]] std::size_t bytes) {
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
  if (bytes == 0) return true;
  // (madvise wants a page-aligned start: a block from the huge-page pool is, a small one may not be)
  const std::uintptr_t first = reinterpret_cast<std::uintptr_t>(p), a = first / kPage * kPage;
  return madvise(reinterpret_cast<void*>(a), first + bytes - a, MADV_POPULATE_WRITE) == 0;
#else
  return false;
#endif
}

// A fixed-size array of trivially copyable elements that reads as zero until written, on the same blocks: a
// new mapping is not written at all, so the pages no element is ever written to are never faulted in (the
// executor's route tables, of which a decode step routes through a few percent), and a kept block is cleared.
template <class T>
class ZeroedArray {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  ZeroedArray() = default;
  ZeroedArray(const ZeroedArray&) = delete;
  ZeroedArray& operator=(const ZeroedArray&) = delete;
  ZeroedArray(ZeroedArray&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)), fresh_(std::exchange(o.fresh_, true)) {}
  ZeroedArray& operator=(ZeroedArray&& o) noexcept {
    if (this != &o)
      release(), p_ = std::exchange(o.p_, nullptr), n_ = std::exchange(o.n_, 0), fresh_ = std::exchange(o.fresh_, true);
    return *this;
  }
  ~ZeroedArray() { release(); }
  // n elements, all zero.
  void assign_zero(std::size_t n) {
    release();
    if (n > 0) p_ = HugePageAllocator<T>().allocate_zeroed(n);
    n_ = n;
  }
  // n elements that read as zero only once each range of them has been through clear (the caller clears them
  // all, before it reads any): a new mapping reads as zero already, a kept block holds what its last user left.
  void assign_uncleared(std::size_t n) {
    release();
    fresh_ = true;
    if (n > 0) p_ = HugePageAllocator<T>().allocate_block(n, fresh_);
    n_ = n;
  }
  // Makes elements [begin, end) read as zero, their pages faulted in now (populate) or when first written: a
  // new mapping's are zero (populated or left alone), a kept block's are written where in memory, the others
  // faulted in (populate), or given back to the kernel (read as zero again, faulted in when written).
  void clear(std::size_t begin, std::size_t end, bool fill) {
    end = std::min(end, n_);
    if (!p_ || begin >= end) return;
    if (fresh_) {
      if (fill) populate(begin, end);
      return;
    }
    auto* const first = reinterpret_cast<unsigned char*>(p_ + begin);
    auto* const last = reinterpret_cast<unsigned char*>(p_ + end);
#if defined(__linux__) && defined(MADV_DONTNEED)
    if (!fill) {
      // (the whole pages inside the range given back; the parts of pages at its ends written)
      constexpr std::uintptr_t page = kPage;
      auto* const a = reinterpret_cast<unsigned char*>((reinterpret_cast<std::uintptr_t>(first) + page - 1) / page * page);
      auto* const b = reinterpret_cast<unsigned char*>(reinterpret_cast<std::uintptr_t>(last) / page * page);
      if (a < b && madvise(a, std::size_t(b - a), MADV_DONTNEED) == 0) {
        std::memset(first, 0, std::size_t(a - first));
        std::memset(b, 0, std::size_t(last - b));
        return;
      }
    }
#endif
    zero_resident(first, std::size_t(last - first));
    if (fill) populate(begin, end);
  }
  // Makes every element read as zero again, whatever was written since: the pages in memory written, the others
  // (never written, or given back) left alone.
  void zero() {
    if (p_) zero_resident(p_, n_ * sizeof(T));
  }
  // Makes elements [begin, end) read as zero without faulting a page in: a kept block's pages in memory written,
  // the others (and a new mapping's) left to read as zero; populate_in_kernel may fault them in, beside a writer.
  void clear_resident(std::size_t begin, std::size_t end) {
    end = std::min(end, n_);
    if (!p_ || begin >= end || fresh_) return;
    zero_resident(p_ + begin, (end - begin) * sizeof(T));
  }
  // Faults the pages of elements [begin, end) in now, ahead of the writes that would (for elements every one of
  // which will be written, in scattered order: one pass of the kernel's rather than a fault in the middle of the
  // writer's work each time it reaches a new page). They read as zero as before.
  void populate(std::size_t begin, std::size_t end) {
    end = std::min(end, n_);
    if (!p_ || begin >= end) return;
    if (populate_in_kernel(begin, end)) return;
    // (without it: a write of what is there to one byte a page)
    const std::size_t bytes = (end - begin) * sizeof(T), page = kPage;
    auto* const first = reinterpret_cast<unsigned char*>(p_ + begin);
    for (std::size_t i = 0; i < bytes; i += page) reinterpret_cast<volatile unsigned char*>(first)[i] = first[i];
  }
  // The same by the kernel alone (MADV_POPULATE_WRITE), which writes no element: safe beside a thread that writes
  // them (populate's fallback, a read and write back of a byte a page, is not). False when it could not (the
  // pages are then faulted in when first written, as any).
  bool populate_in_kernel(std::size_t begin, std::size_t end) {
    end = std::min(end, n_);
    if (!p_ || begin >= end) return true;
    return populate_bytes_in_kernel(p_ + begin, (end - begin) * sizeof(T));
  }
  // A new mapping (assign_uncleared): it reads as zero without clear's writes.
  bool fresh() const { return fresh_; }
  T* data() { return p_; }
  const T* data() const { return p_; }
  std::size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  T& operator[](std::size_t i) { return p_[i]; }
  const T& operator[](std::size_t i) const { return p_[i]; }

 private:
  void release() {
    if (p_) HugePageAllocator<T>().deallocate(p_, n_);
    p_ = nullptr, n_ = 0;
  }
  T* p_ = nullptr;
  std::size_t n_ = 0;
  bool fresh_ = true;  // (assign_uncleared: a new mapping)
};

}  // namespace wafer::noc
