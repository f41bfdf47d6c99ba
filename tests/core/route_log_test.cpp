// The route tables as they were at a cut, read through the log of changes since (core/route_log.h): what reuse in
// space compares a cut's rows with. Both sides of each rule: an entry changed or not, its first noted value or
// a later one, the changes on either side of the two ranges.
#include <gtest/gtest.h>

#include <vector>

#include "core/route_log.h"

namespace wafer::core {
namespace {

// Two cells of 8 entries; ranges of 3: [4, 7) now against [1, 4) before.
struct Tables {
  std::vector<std::uint8_t> t = {0, 1, 2, 3, 0, 1, 2, 3,    // cell 0
                                 0, 5, 6, 7, 0, 5, 6, 7};  // cell 1
  RouteLog log;
  // Changes entry e to v, as the executor's reroute notes it.
  void set(std::size_t e, std::uint8_t v) {
    log.push_back({e, t[e]});
    t[e] = v;
  }
  bool were(std::size_t a = 4, std::size_t b = 1, std::size_t len = 3) {
    RouteLog sorted = log;
    sort_route_log(sorted);
    return entries_were(t.data(), 8, 2, sorted, a, b, len);
  }
};

TEST(RouteLog, UnchangedTablesCompareByValue) {
  Tables x;
  EXPECT_FALSE(x.were());  // [4, 7) = 0 1 2 against [1, 4) = 1 2 3
  EXPECT_TRUE(x.were(5, 1, 3));
  x.t[7] = 9;  // (now, and no change noted: a difference the log cannot explain)
  EXPECT_FALSE(x.were(5, 1, 3));
  EXPECT_TRUE(x.were(5, 1, 2));  // (the entry after the ranges is not compared)
  EXPECT_TRUE(x.were(5, 1, 0));
}

TEST(RouteLog, AnEntryChangedSinceHeldItsValueFromBefore) {
  Tables x;
  x.set(2, 9);  // entry 2 (before: 2), in [1, 4); entry 6 now is 2
  EXPECT_TRUE(x.were(5, 1, 3));
  x.set(6, 8);  // entry 6, in [5, 8): compared as it is now, 8 against 2 before
  EXPECT_FALSE(x.were(5, 1, 3));
}

TEST(RouteLog, AnEntryChangedTwiceHeldItsFirstNotedValue) {
  Tables x;
  x.set(3, 4);
  x.set(3, 5);  // noted: 3 (the value before the first change), then 4
  EXPECT_TRUE(x.were(5, 1, 3));  // 1 2 3 before against 1 2 3 now
  x.t[7] = 4;  // entry 7 now = the value noted second: not what entry 3 held before
  EXPECT_FALSE(x.were(5, 1, 3));
}

TEST(RouteLog, ChangesOutsideTheRangeOrInOtherCellsDoNotCount) {
  Tables x;
  x.set(0, 7);   // before [1, 4)
  x.set(4, 7);   // after it (and before [5, 8))
  EXPECT_TRUE(x.were(5, 1, 3));
  x.set(8 + 2, 1);  // cell 1's entry 2 (before: 6): cell 1 still compares with what it held
  EXPECT_TRUE(x.were(5, 1, 3));
  x.t[8 + 6] = 1;  // cell 1's entry 6 now 1, against 6 before: cell 1 differs
  EXPECT_FALSE(x.were(5, 1, 3));
}

TEST(RouteLog, OverlappingRangesTakeTheNewOneAsItIsNow) {
  // [2, 5) now against [1, 4) before overlap in [2, 4): there the same entries are read both ways.
  Tables x;
  x.t = {0, 4, 4, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_TRUE(x.were(2, 1, 3));
  x.set(3, 9);  // before: 4 (so [1, 4) held 4 4 4); now [2, 5) = 4 9 4
  EXPECT_FALSE(x.were(2, 1, 3));
  x.set(3, 4);  // changed back: now 4 again, and before it was 4
  EXPECT_TRUE(x.were(2, 1, 3));
}

// Reuse in time: the tables as before the window when every entry it changed holds its first noted value again.
TEST(RouteLog, TablesRestoredWhenEveryChangedEntryHoldsItsFirstValueAgain) {
  Tables x;
  auto restored = [&] {
    RouteLog sorted = x.log;
    sort_route_log(sorted);
    return entries_restored(x.t.data(), sorted);
  };
  EXPECT_TRUE(restored());  // nothing changed
  x.set(9, 1);              // 5 -> 1
  EXPECT_FALSE(restored());
  x.set(9, 2);              // 1 -> 2: its first noted value is still 5
  EXPECT_FALSE(restored());
  x.set(9, 5);              // back to 5
  EXPECT_TRUE(restored());
  x.set(2, 2);              // "changed" to its own value: the same as before
  EXPECT_TRUE(restored());
  x.set(2, 7);
  EXPECT_FALSE(restored());
}

// WrittenChunks: a chunk never marked is taken as zero and not read. Here the chunks never marked hold 0xAB, which
// a read would see: every comparison that holds below holds only because they were not read.
struct Chunked {
  static constexpr std::size_t C = std::size_t(1) << WrittenChunks::kBits;
  std::vector<std::uint8_t> t = std::vector<std::uint8_t>(3 * C, 0xAB);  // three chunks
  WrittenChunks w;
  Chunked() { w.reset(t.size()); }
  // Writes v to entry e, marked as the executor's reroute marks it (the chunk, once written, holds zero elsewhere).
  void write(std::size_t e, std::uint8_t v) {
    if (!w.written(e)) std::fill(t.begin() + std::ptrdiff_t(e / C * C), t.begin() + std::ptrdiff_t(e / C * C + C), 0);
    w.mark(e);
    t[e] = v;
  }
};

TEST(WrittenChunks, ChunksNeverWrittenAreZeroAndNotRead) {
  Chunked x;
  const std::size_t C = Chunked::C;
  EXPECT_TRUE(x.w.equal(x.t.data(), 10, C + 10, 100));  // both never written
  EXPECT_TRUE(x.w.zero(x.t.data(), 0, 3 * C));
  x.write(C + 50, 0);  // chunk 1 written, all zero
  EXPECT_TRUE(x.w.equal(x.t.data(), 10, C + 10, 100));
  EXPECT_TRUE(x.w.equal(x.t.data(), C + 10, 10, 100));  // (either side)
  x.write(C + 50, 3);
  EXPECT_FALSE(x.w.equal(x.t.data(), 10, C + 10, 100));  // a written nonzero entry against zero
  EXPECT_FALSE(x.w.equal(x.t.data(), C + 10, 10, 100));
  EXPECT_TRUE(x.w.equal(x.t.data(), 10, C + 10, 40));    // the ranges end before it: [C + 10, C + 50)
  EXPECT_FALSE(x.w.equal(x.t.data(), 10, C + 10, 41));   // ... and reach it
  EXPECT_FALSE(x.w.zero(x.t.data(), C, C));
  EXPECT_TRUE(x.w.zero(x.t.data(), C + 51, C - 51));
  x.write(50, 3);  // both written, alike
  EXPECT_TRUE(x.w.equal(x.t.data(), 10, C + 10, 100));
  x.write(51, 1);
  EXPECT_FALSE(x.w.equal(x.t.data(), 10, C + 10, 100));
}

// A range across a chunk boundary: the piece in the written chunk is compared, the other is zero.
TEST(WrittenChunks, RangesAcrossChunkBoundaries) {
  Chunked x;
  const std::size_t C = Chunked::C;
  x.write(C + 1, 7);  // chunk 1's second entry
  // [C - 2, C + 2) against [2 C - 2, 2 C + 2): the first holds 0xAB 0xAB (not read) 0 7, the second zeros.
  EXPECT_TRUE(x.w.equal(x.t.data(), C - 2, 2 * C - 2, 3));
  EXPECT_FALSE(x.w.equal(x.t.data(), C - 2, 2 * C - 2, 4));
  EXPECT_TRUE(x.w.zero(x.t.data(), C - 2, 3));
  EXPECT_FALSE(x.w.zero(x.t.data(), C - 2, 4));
  // mark_range marks every chunk the range touches, and only those: up to the boundary and one past it.
  WrittenChunks w;
  w.reset(3 * C);
  w.mark_range(C - 4, 4);
  EXPECT_TRUE(w.written(0));
  EXPECT_FALSE(w.written(C));
  w.mark_range(C - 4, 5);
  EXPECT_TRUE(w.written(C));
  EXPECT_FALSE(w.written(2 * C));
}

// clear writes zeros over the chunks written only (the others read as zero already).
TEST(WrittenChunks, ClearWritesOnlyTheChunksWritten) {
  Chunked x;
  const std::size_t C = Chunked::C;
  x.write(C + 5, 9);
  x.w.clear(x.t.data(), C - 10, 20);
  EXPECT_EQ(x.t[C - 10], 0xAB);  // chunk 0: never written, left alone
  EXPECT_EQ(x.t[C + 5], 0);      // chunk 1: cleared
  EXPECT_EQ(x.t[C + 10], 0);
  EXPECT_TRUE(x.w.zero(x.t.data(), 0, 3 * C));
}

// entries_were given the chunks written gives what it gives reading every entry of a table whose unwritten chunks
// are zero, with those chunks holding anything.
TEST(WrittenChunks, EntriesWereReadsOnlyTheChunksWritten) {
  Chunked x;
  const std::size_t C = Chunked::C;
  std::vector<std::uint8_t> plain(3 * C, 0);  // the same table as the executor holds it: unwritten entries zero
  RouteLog log;
  auto set = [&](std::size_t e, std::uint8_t v) {
    log.push_back({e, plain[e]});
    plain[e] = v;
    x.write(e, v);
  };
  auto both = [&](std::size_t a, std::size_t b, std::size_t len) {
    RouteLog sorted = log;
    sort_route_log(sorted);
    const bool p = entries_were(plain.data(), 3 * C, 1, sorted, a, b, len);
    EXPECT_EQ(entries_were(x.t.data(), 3 * C, 1, sorted, a, b, len, &x.w), p) << a << " " << b << " " << len;
    return p;
  };
  EXPECT_TRUE(both(10, 2 * C + 10, 100));
  set(2 * C + 20, 4);  // the range before the change was zero there: still as before
  EXPECT_TRUE(both(10, 2 * C + 10, 100));
  set(30, 5);  // now nonzero at 30; before, 2 C + 30 held zero
  EXPECT_FALSE(both(10, 2 * C + 10, 100));
  set(2 * C + 30, 5);  // changed after the log began: its noted value (0) counts, not 5
  EXPECT_FALSE(both(10, 2 * C + 10, 100));
  set(30, 0);
  EXPECT_TRUE(both(10, 2 * C + 10, 100));
}

}  // namespace
}  // namespace wafer::core
