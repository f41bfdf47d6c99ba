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

}  // namespace
}  // namespace wafer::core
