// noc::BigArray's pool of freed huge blocks (noc/big_array.h): what a process running many steps keeps.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "hw/error.h"
#include "noc/big_array.h"

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace wafer::noc {
namespace {

constexpr std::size_t kMiB = std::size_t(1) << 20;

#if defined(__linux__)
// A private anonymous mapping of `pages` small pages (kept off huge pages: residency is counted page by page);
// null when it cannot be mapped.
unsigned char* small_page_mapping(std::size_t pages) {
  const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
  void* m = mmap(nullptr, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  madvise(m, pages * page, MADV_NOHUGEPAGE);
  return static_cast<unsigned char*>(m);
}
#endif

// Turns keeping on and leaves one kept block of 5 MiB and more, every byte 7; returns its address.
const std::uint8_t* keep_a_block_of_sevens() {
  keep_huge_blocks(true);
  BigArray<std::uint8_t> a(5 * kMiB, 7);
  return a.data();
}

TEST(BigArrayPool, AKeptBlockServesALargerRequestWithinWhatItWasMappedFor) {
  keep_huge_blocks(true);
  const std::size_t kept0 = huge_blocks_kept();
  const std::uint8_t* first = nullptr;
  {
    BigArray<std::uint8_t> a(5 * kMiB, 1);
    first = a.data();
  }
  EXPECT_GT(huge_blocks_kept(), kept0);  // (mapped a quarter larger: 5 MiB + 1.25 MiB, rounded to 8 MiB)
  {
    BigArray<std::uint8_t> b(6 * kMiB);  // a sixth larger: the same block, its contents zeroed by the vector
    EXPECT_EQ(b.data(), first);
    EXPECT_EQ(b[5 * kMiB - 1], 0);
    EXPECT_EQ(huge_blocks_kept(), kept0);
  }
  {
    BigArray<std::uint8_t> d(7 * kMiB);  // (the block kept again when b went: it serves this too)
    EXPECT_EQ(d.data(), first);
  }
  {
    // Less than half the kept block: a mapping of its own. Kept and in use together would then exceed the most
    // the process had in use at once (the 8 MiB block), so the kept block goes back to the kernel.
    BigArray<std::uint8_t> c(2 * kMiB);
    EXPECT_NE(c.data(), first);
    EXPECT_EQ(huge_blocks_kept(), kept0);
  }
  keep_huge_blocks(false);
}

// A process about to wait for memory another process needs gives its kept blocks back (apps::MemoryGate); it
// keeps blocks again as they are freed.
TEST(BigArrayPool, ReleaseGivesEveryKeptBlockBack) {
  keep_huge_blocks(true);
  { BigArray<std::uint8_t> a(5 * kMiB, 1); }
  EXPECT_GE(huge_blocks_kept(), 5 * kMiB);
  release_huge_blocks();
  EXPECT_EQ(huge_blocks_kept(), 0u);
  { BigArray<std::uint8_t> b(3 * kMiB, 1); }
  EXPECT_GE(huge_blocks_kept(), 3 * kMiB);
  release_huge_blocks();
  keep_huge_blocks(false);
}

TEST(BigArrayPool, NothingIsKeptWhenKeepingIsOff) {
  keep_huge_blocks(false);
  const std::size_t kept0 = huge_blocks_kept();
  { BigArray<std::uint64_t> a(1 << 20, 7); }  // 8 MiB
  EXPECT_EQ(huge_blocks_kept(), kept0);
}

// A RecordArray grows without writing its new elements: a kept block's old contents are still there after a
// resize (a BigArray zeroes them, above), so the pages of a stretch grown over and never written are never touched.
TEST(BigArrayPool, ARecordArrayGrowsWithoutWritingItsNewElements) {
  const std::uint8_t* first = keep_a_block_of_sevens();
  {
    RecordArray<std::uint8_t> r;
    r.reserve(5 * kMiB);
    ASSERT_EQ(r.data(), first);  // (the kept block)
    r.push_back(1);
    r.resize(4 * kMiB);
    EXPECT_EQ(r[0], 1);
    EXPECT_EQ(r[1], 7);
    EXPECT_EQ(r[4 * kMiB - 1], 7);
    r.push_back(2);  // (after the stretch, in place)
    EXPECT_EQ(r[4 * kMiB], 2);
    EXPECT_EQ(r.data(), first);
  }
  keep_huge_blocks(false);
}

// A ZeroedArray reads as zero: on a fresh mapping without writing a byte (no page is faulted in until written), on
// a kept block by clearing what the block held.
#if defined(__linux__)
TEST(ZeroedArray, AFreshBlockIsNotTouchedAndReadsZero) {
  keep_huge_blocks(false);
  ZeroedArray<std::uint8_t> z;
  z.assign_zero(8 * kMiB);
  ASSERT_EQ(z.size(), 8 * kMiB);
  const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> resident((8 * kMiB + page - 1) / page);
  ASSERT_EQ(mincore(z.data(), 8 * kMiB, resident.data()), 0);
  std::size_t in = 0;
  for (unsigned char r : resident) in += r & 1;
  EXPECT_EQ(in, 0u) << "pages of a fresh ZeroedArray were touched";
  z[12345] = 3;
  EXPECT_EQ(z[0], 0);
  EXPECT_EQ(z[12345], 3);
  EXPECT_EQ(z[8 * kMiB - 1], 0);
}
#endif

TEST(ZeroedArray, AKeptBlockIsClearedBeforeItIsUsedAgain) {
  const std::uint8_t* first = keep_a_block_of_sevens();
  {
    ZeroedArray<std::uint8_t> z;
    z.assign_zero(5 * kMiB);
    ASSERT_EQ(z.data(), first);  // (the kept block)
    EXPECT_EQ(z[0], 0);
    EXPECT_EQ(z[kMiB + 17], 0);
    EXPECT_EQ(z[5 * kMiB - 1], 0);
    ZeroedArray<std::uint8_t> moved = std::move(z);
    EXPECT_TRUE(z.empty());
    EXPECT_EQ(moved.data(), first);
  }
  keep_huge_blocks(false);
}

// assign_uncleared then clear, range by range (the executor's task slots): every element reads zero whichever way
// its range was cleared, on a kept block (written, or its pages given back: the ends of a range that share a
// page with the next are written, not given back) and on a small block from the heap; on a fresh mapping a
// range cleared without filling is not touched, one cleared with filling is faulted in.
TEST(ZeroedArray, UnclearedBlocksReadZeroOnceEveryRangeIsCleared) {
  // (ranges whose ends fall inside pages: 3 MiB + 5 bytes is not a page boundary)
  const std::size_t cut1 = kMiB + 123, cut2 = 3 * kMiB + 5, n = 5 * kMiB;
  const std::uint8_t* first = keep_a_block_of_sevens();
  {
    ZeroedArray<std::uint8_t> z;
    z.assign_uncleared(n);
    ASSERT_EQ(z.data(), first);  // (the kept block, still holding sevens)
    EXPECT_EQ(z[cut1 + 1], 7);
    z.clear(0, cut1, true);
    z.clear(cut1, cut2, false);
    z.clear(cut2, n, true);
    for (std::size_t i : {std::size_t(0), cut1 - 1, cut1, cut1 + 1, cut1 + 4096, cut2 - 1, cut2, cut2 + 1, n - 1})
      EXPECT_EQ(z[i], 0) << i;
    std::size_t nonzero = 0;
    for (std::size_t i = 0; i < n; ++i) nonzero += z[i] != 0;
    EXPECT_EQ(nonzero, 0u);
  }
  keep_huge_blocks(false);
  {
    ZeroedArray<std::uint64_t> small;  // (from the heap, which may hold an earlier allocation's bytes)
    small.assign_uncleared(50'000);
    small.clear(0, 20'000, false);
    small.clear(20'000, 50'000, true);
    std::size_t nonzero = 0;
    for (std::size_t i = 0; i < 50'000; ++i) nonzero += small[i] != 0;
    EXPECT_EQ(nonzero, 0u);
  }
#if defined(__linux__)
  {
    ZeroedArray<std::uint8_t> z;
    z.assign_uncleared(8 * kMiB);
    z.clear(0, 2 * kMiB, true);
    z.clear(2 * kMiB, 8 * kMiB, false);
    const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> resident((8 * kMiB + page - 1) / page);
    ASSERT_EQ(mincore(z.data(), 8 * kMiB, resident.data()), 0);
    std::size_t filled = 0, left = 0;
    for (std::size_t p = 0; p < resident.size(); ++p) (p * page < 2 * kMiB ? filled : left) += resident[p] & 1;
    EXPECT_EQ(filled, 2 * kMiB / page) << "a populated range was not faulted in";
    EXPECT_EQ(left, 0u) << "a range cleared without filling was touched";
    EXPECT_EQ(z[5 * kMiB], 0);
  }
#endif
}

#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
// populate_in_kernel (the executor's slots faulted in behind the step, core::ExecOptions::populate_behind) writes
// no element: beside a thread that writes them, what it wrote stays, the rest reads zero, and every page is in.
TEST(ZeroedArray, PopulatedInTheKernelBesideAWriter) {
  keep_huge_blocks(false);
  const std::size_t n = 4 * kMiB;  // (16 MiB of 4-byte elements)
  ZeroedArray<std::uint32_t> z;
  z.assign_uncleared(n);
  ASSERT_TRUE(z.fresh());
  bool ok = true;
  std::thread behind([&] {
    for (std::size_t i = 0; i < n; i += kMiB / 4) ok = ok && z.populate_in_kernel(i, std::min(n, i + kMiB / 4));
  });
  for (std::size_t i = 0; i < n; i += 1021) z[i] = std::uint32_t(i + 1);
  behind.join();
  EXPECT_TRUE(ok);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += z[i] != (i % 1021 == 0 ? std::uint32_t(i + 1) : 0u);
  EXPECT_EQ(wrong, 0u);
  const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE)), bytes = n * sizeof(std::uint32_t);
  std::vector<unsigned char> resident((bytes + page - 1) / page);
  ASSERT_EQ(mincore(z.data(), bytes, resident.data()), 0);
  std::size_t in = 0;
  for (unsigned char r : resident) in += r & 1;
  EXPECT_EQ(in, resident.size());
}
// A range given by its bytes, from a start inside a page (a record array's elements): the pages holding it are
// faulted in, the ones around left alone, nothing written.
TEST(PopulateBytes, FaultsInThePagesHoldingTheRangeAlone) {
  const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
  unsigned char* const c = small_page_mapping(8);
  ASSERT_NE(c, nullptr);
  void* const m = c;
  ASSERT_TRUE(populate_bytes_in_kernel(c + 2 * page + 100, page));  // (pages 2 and 3)
  EXPECT_TRUE(populate_bytes_in_kernel(c, 0));
  std::vector<unsigned char> resident(8);
  ASSERT_EQ(mincore(m, 8 * page, resident.data()), 0);
  for (std::size_t p = 0; p < 8; ++p) EXPECT_EQ(resident[p] & 1, p == 2 || p == 3 ? 1 : 0) << p;
  std::size_t nonzero = 0;
  for (std::size_t i = 0; i < 8 * page; ++i) nonzero += c[i] != 0;
  EXPECT_EQ(nonzero, 0u);
  munmap(m, 8 * page);
}
#endif

#if defined(__linux__)
// zero_resident writes the pages in memory (or swapped out) and leaves the others, which read as zero already, out
// of memory: a mapping of 16 pages with pages 1-2 and 9 written (9 partly inside the range), 5 written then given
// back; the range [page 1 + 10 bytes, page 9 + 100 bytes) reads zero, the bytes outside it keep their value, and
// no page the range left out of memory is in memory after.
TEST(ZeroResident, WritesThePagesInMemoryAlone) {
  const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
  unsigned char* const c = small_page_mapping(16);
  ASSERT_NE(c, nullptr);
  void* const m = c;
  std::memset(c + page, 9, 2 * page);
  std::memset(c + 9 * page, 9, page);
  std::memset(c + 5 * page, 9, page);
  ASSERT_EQ(madvise(c + 5 * page, page, MADV_DONTNEED), 0);
  zero_resident(c + page + 10, 8 * page + 90);
  std::vector<unsigned char> resident(16);
  ASSERT_EQ(mincore(m, 16 * page, resident.data()), 0);
  for (std::size_t p = 0; p < 16; ++p) EXPECT_EQ(resident[p] & 1, p == 1 || p == 2 || p == 9 ? 1 : 0) << p;
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < 16 * page; ++i) {
    const bool kept = (i >= page && i < page + 10) || (i >= 9 * page + 100 && i < 10 * page);
    wrong += c[i] != (kept ? 9 : 0);
  }
  EXPECT_EQ(wrong, 0u);
  munmap(m, 16 * page);
}

// clear_resident on a kept block (the executor's slots with a core to spare): every element of the range reads
// zero, none outside it changes, and pages out of memory stay out (the thread behind the step faults them in).
TEST(ZeroedArray, AKeptBlockClearedWhereInMemory) {
  keep_huge_blocks(true);
  const std::uint8_t* first = nullptr;
  {
    BigArray<std::uint8_t> a(5 * kMiB, 0);
    first = a.data();
    madvise(a.data(), 5 * kMiB, MADV_NOHUGEPAGE);
    ASSERT_EQ(madvise(a.data() + 2 * kMiB, 3 * kMiB, MADV_DONTNEED), 0);  // (out of memory: reads zero)
    std::memset(a.data(), 7, 2 * kMiB);
  }
  {
    ZeroedArray<std::uint8_t> z;
    z.assign_uncleared(5 * kMiB);
    ASSERT_EQ(z.data(), first);  // (the kept block)
    ASSERT_FALSE(z.fresh());
    z.clear_resident(100, 5 * kMiB);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < 100; ++i) wrong += z[i] != 7;
    const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> resident(5 * kMiB / page);
    ASSERT_EQ(mincore(z.data(), 5 * kMiB, resident.data()), 0);
    std::size_t in_after = 0;
    for (std::size_t p = 2 * kMiB / page; p < resident.size(); ++p) in_after += resident[p] & 1;
    EXPECT_EQ(in_after, 0u) << "pages out of memory were faulted in";
    for (std::size_t i = 100; i < 5 * kMiB; ++i) wrong += z[i] != 0;
    EXPECT_EQ(wrong, 0u);
  }
  keep_huge_blocks(false);
}

// zero() after writes (the executor's claim cursors, between two runs of bands it watches): every element reads
// zero again, and the pages never written stay out of memory; on a small array from the heap too.
TEST(ZeroedArray, ZeroAfterWritesLeavesUnwrittenPagesAlone) {
  keep_huge_blocks(false);
  ZeroedArray<std::uint16_t> z;
  z.assign_zero(4 * kMiB);  // (8 MiB: a mapping of its own)
  madvise(z.data(), 8 * kMiB, MADV_NOHUGEPAGE);
  z[10] = 5, z[kMiB] = 6, z[4 * kMiB - 1] = 7;
  z.zero();
  const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> resident(8 * kMiB / page);
  ASSERT_EQ(mincore(z.data(), 8 * kMiB, resident.data()), 0);
  std::size_t in = 0;
  for (unsigned char r : resident) in += r & 1;
  EXPECT_EQ(in, 3u) << "zero() faulted in pages never written";
  EXPECT_EQ(z[10] + z[kMiB] + z[4 * kMiB - 1], 0);
  std::size_t nonzero = 0;
  for (std::size_t i = 0; i < z.size(); ++i) nonzero += z[i] != 0;
  EXPECT_EQ(nonzero, 0u);
  ZeroedArray<std::uint32_t> small;
  small.assign_zero(1000);
  small[999] = 1;
  small.zero();
  EXPECT_EQ(small[999], 0u);
}
#endif

// Below the huge-page size the array comes from the C library's allocator; an over-aligned element (the
// executor's per-tile record is half a cache line) keeps its alignment there too.
TEST(BigArray, SmallArraysOfOverAlignedElementsAreAligned) {
  struct alignas(32) Half {
    std::uint64_t a, b, c;
  };
  static_assert(alignof(Half) > alignof(std::max_align_t));
  for (std::size_t n : {std::size_t(1), std::size_t(3), std::size_t(1000)}) {
    BigArray<Half> v(n);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(v.data()) % 32, 0u) << n;
  }
}

// WAFER_EMU_HUGE_PAGES: 1, 0 or unset; anything else is refused, naming the variable and the value.
TEST(HugePageAdvice, TheVariableTakesOneZeroOrNothing) {
  EXPECT_EQ(parse_huge_page_advice(nullptr), HugePageAdvice::System);
  EXPECT_EQ(parse_huge_page_advice(""), HugePageAdvice::System);
  EXPECT_EQ(parse_huge_page_advice("1"), HugePageAdvice::Huge);
  EXPECT_EQ(parse_huge_page_advice("0"), HugePageAdvice::NoHuge);
  for (const char* bad : {"yes", "2", "10", "01", " 1", "1 "}) {
    try {
      parse_huge_page_advice(bad);
      ADD_FAILURE() << bad;
    } catch (const hw::InputError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("WAFER_EMU_HUGE_PAGES must be 1")), std::string::npos);
      EXPECT_NE(std::string(e.what()).find(std::string("'") + bad + "'"), std::string::npos);
    }
  }
}

#if defined(__linux__) && defined(MADV_HUGEPAGE) && defined(MADV_NOHUGEPAGE)
// The kernel's flags of the mapping that holds p (/proc/self/smaps VmFlags: "hg" advised huge pages, "nh" advised
// none); empty if not found.
std::string vm_flags(const void* p) {
  std::ifstream in("/proc/self/smaps");
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    std::uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= a && a < hi;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line + " ";
  }
  return {};
}

// The big blocks follow the system's policy unless asked (the test runs with WAFER_EMU_HUGE_PAGES unset): no
// advice by default, huge pages or none when advised.
TEST(HugePageAdvice, BlocksCarryTheAdviceAndNoneByDefault) {
  ASSERT_EQ(huge_page_advice(), HugePageAdvice::System) << "run with WAFER_EMU_HUGE_PAGES unset";
  BigArray<std::uint8_t> a(4 * kMiB, 1);
  std::string f = vm_flags(a.data());
  ASSERT_FALSE(f.empty()) << "no VmFlags for the block in /proc/self/smaps";
  EXPECT_EQ(f.find(" hg "), std::string::npos) << f;
  EXPECT_EQ(f.find(" nh "), std::string::npos) << f;
  const std::size_t n = 4 * kMiB;
  void* m = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  advise_huge_pages(m, n, HugePageAdvice::Huge);
  f = vm_flags(m);
  EXPECT_NE(f.find(" hg "), std::string::npos) << f;
  advise_huge_pages(m, n, HugePageAdvice::NoHuge);
  f = vm_flags(m);
  EXPECT_NE(f.find(" nh "), std::string::npos) << f;
  EXPECT_EQ(f.find(" hg "), std::string::npos) << f;
  munmap(m, n);
}

// With the variable unset, the blocks a large job maps (set_large_job, which apps::emulate_points sets from the
// job's task records) are offered for huge pages, and those mapped after it is cleared are not.
TEST(HugePageAdvice, ALargeJobsBlocksAreOfferedHugePages) {
  ASSERT_EQ(huge_page_advice(), HugePageAdvice::System) << "run with WAFER_EMU_HUGE_PAGES unset";
  set_large_job(true);
  EXPECT_EQ(block_advice(), HugePageAdvice::Huge);
  BigArray<std::uint8_t> large;
  large.reserve(4 * kMiB);  // (mapped, never touched)
  set_large_job(false);
  EXPECT_EQ(block_advice(), HugePageAdvice::System);
  BigArray<std::uint8_t> small;
  small.reserve(4 * kMiB);
  std::string f = vm_flags(large.data());
  ASSERT_FALSE(f.empty()) << "no VmFlags for the block in /proc/self/smaps";
  EXPECT_NE(f.find(" hg "), std::string::npos) << f;
  f = vm_flags(small.data());
  EXPECT_EQ(f.find(" hg "), std::string::npos) << f;
}

// The probe (asked for by the wafer-emu binary, off here until a test asks): measured once, under the policy
// "madvise" only; the blocks mapped with it on carry huge pages exactly when they measured cheaper.
TEST(HugePageAdvice, TheProbeAdvisesHugePagesWhereTheyMeasuredCheaper) {
  ASSERT_EQ(huge_page_advice(), HugePageAdvice::System) << "run with WAFER_EMU_HUGE_PAGES unset";
  EXPECT_FALSE(huge_page_probe().ran);  // not asked
  EXPECT_EQ(block_advice(), HugePageAdvice::System);
  std::string policy;
  std::getline(std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled"), policy);
  probe_huge_pages(true);
  const HugePageProbe p = huge_page_probe();
  EXPECT_EQ(p.ran, policy.find("[madvise]") != std::string::npos) << policy;
  if (p.ran) {
    EXPECT_TRUE(p.small_ms > 0 && p.huge_ms > 0) << p.small_ms << " " << p.huge_ms;
  }
  EXPECT_EQ(huge_page_probe().small_ms, p.small_ms);  // once a process
  EXPECT_EQ(block_advice(), p.huge_cheaper() ? HugePageAdvice::Huge : HugePageAdvice::System);
  BigArray<std::uint8_t> b;
  b.reserve(4 * kMiB);
  const std::string f = vm_flags(b.data());
  ASSERT_FALSE(f.empty()) << "no VmFlags for the block in /proc/self/smaps";
  EXPECT_EQ(f.find(" hg ") != std::string::npos, p.huge_cheaper()) << f;
  probe_huge_pages(false);
  EXPECT_EQ(block_advice(), HugePageAdvice::System);
}
#endif

// Cheaper means strictly cheaper, and only when measured.
TEST(HugePageAdvice, HugePagesAreCheaperOnlyWhenMeasuredSo) {
  EXPECT_TRUE((HugePageProbe{true, 2.0, 1.0}.huge_cheaper()));
  EXPECT_FALSE((HugePageProbe{true, 1.0, 1.0}.huge_cheaper()));
  EXPECT_FALSE((HugePageProbe{true, 1.0, 2.0}.huge_cheaper()));
  EXPECT_FALSE((HugePageProbe{false, 2.0, 1.0}.huge_cheaper()));
}

// The stretch of the heap a huge page can back starts at the first huge-page boundary at or after its start.
TEST(HeapAdvice, TheAdvisedStretchStartsAtAHugePageBoundary) {
  constexpr std::uintptr_t H = kHugePage;
  EXPECT_EQ(huge_aligned(10 * H, 20 * H), (std::pair<std::uintptr_t, std::uintptr_t>{10 * H, 20 * H}));
  EXPECT_EQ(huge_aligned(10 * H - 1, 20 * H), (std::pair<std::uintptr_t, std::uintptr_t>{10 * H, 20 * H}));
  EXPECT_EQ(huge_aligned(10 * H + 1, 20 * H), (std::pair<std::uintptr_t, std::uintptr_t>{11 * H, 20 * H}));
  EXPECT_EQ(huge_aligned(10 * H + 1, 11 * H + 1), (std::pair<std::uintptr_t, std::uintptr_t>{11 * H, 11 * H + 1}));
  EXPECT_EQ(huge_aligned(10 * H + 1, 11 * H), (std::pair<std::uintptr_t, std::uintptr_t>{11 * H, 11 * H}));  // none left
}

#if defined(__linux__) && defined(MADV_HUGEPAGE) && defined(MADV_NOHUGEPAGE)
// The heap offered huge pages (noc::advise_heap_now): it grows by the pad at once, the stretch from the first
// huge-page boundary on carries the advice ("hg" in /proc/self/smaps), and a block of several MiB allocated after
// it ends inside it. In a child process (EXPECT_EXIT), so that this one's heap keeps its settings. Under
// AddressSanitizer the heap is the sanitizer's and nothing is done.
TEST(HeapAdvice, TheHeapGrowsByThePadAndCarriesTheAdvice) {
  EXPECT_EXIT(
      {
        const HeapAdvice h = advise_heap_now(64 << 20);
        if (WAFER_EMU_ASAN) std::_Exit(h.advised ? 1 : 0);
        if (!h.advised) std::_Exit(2);
        if (h.hi - h.lo < 62 * kMiB || h.lo % kHugePage != 0) std::_Exit(3);
        std::vector<char> v(8 * kMiB, 1);
        const auto end = reinterpret_cast<std::uintptr_t>(v.data()) + v.size();
        if (end <= h.lo || end > h.hi) std::_Exit(4);
        if (vm_flags(reinterpret_cast<const void*>(h.lo)).find(" hg ") == std::string::npos) std::_Exit(5);
        if (vm_flags(v.data() + v.size() - 1).find(" hg ") == std::string::npos) std::_Exit(6);
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}
#endif

}  // namespace
}  // namespace wafer::noc

