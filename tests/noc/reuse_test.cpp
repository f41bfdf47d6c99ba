// The approx mesh's side of reuse in space (docs/timing.md "Reuse"): a state described from its own origin
// row equals the same state a few rows down described from its origin, and differs from any other. (That
// repeat() with `rows` then goes on as the moved run would is held end to end: tests/cli/reuse.cmake compares
// whole results, link counters included, with and without reuse.)
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "noc/approx.h"
#include "noc/routing/fabric.h"
#include "noc_test_util.h"

namespace wafer::noc {
namespace {

using test::Recorder;

// A unicast across row y (west to east edge) and a row multicast over the row below, both sent at `at`.
void send_pair(ApproxMesh& m, std::int32_t y, Cycle at, std::uint64_t tag) {
  BurstSpec a;
  a.src = TileIndex(y) * 6;
  a.dest = {Destination::Kind::Tile, {5, y}, 1};
  a.wavelets = 8, a.lag = 7, a.color = 1, a.tag = tag;
  m.send(a, at);
  BurstSpec b;
  b.src = TileIndex(y + 1) * 6 + 2;
  b.dest = {Destination::Kind::RowSegment, {0, y + 1}, 6};
  b.wavelets = 4, b.lag = 3, b.color = 2, b.tag = tag + 1;
  m.send(b, at);
}

std::vector<std::uint64_t> describe(const ApproxMesh& m, std::int32_t origin) {
  std::vector<std::uint64_t> d;
  const bool ok = m.describe_state([](std::uint64_t tag, bool, std::vector<std::uint64_t>& o) { o.push_back(tag); }, d, origin);
  EXPECT_TRUE(ok);
  return d;
}

TEST(ApproxReuse, StatesMovedByWholeRowsDescribeAlikeFromTheirOrigins) {
  const Fabric f = Fabric::perfect({6, 8});
  ApproxMesh a(f, test::params()), b(f, test::params());
  Recorder ra(a), rb(b);
  send_pair(a, 1, 0, 10);
  send_pair(b, 4, 0, 10);
  a.run_until(5), b.run_until(5);  // both mid-flight
  EXPECT_EQ(describe(a, 1), describe(b, 4));
  EXPECT_NE(describe(a, 1), describe(b, 3));  // one row off: not alike
  EXPECT_NE(describe(a, 1), describe(a, 0));
}

// A mark saves only the rows its window books (noc/approx.h) and bounds the passes over busy resources to
// the tiles busy at the mark and those the window reserves: a mesh that was marked describes its state as one
// that never was, and repeat() adds the window's bookings, moved, to exactly the links a copy of every
// counter at the mark would give.
TEST(ApproxReuse, AMarkDescribesAndRepeatsAsAFullCopyOfTheCountersWould) {
  const Fabric f = Fabric::perfect({6, 16});
  ApproxMesh a(f, test::params()), b(f, test::params());
  Recorder ra(a), rb(b);
  for (ApproxMesh* m : {&a, &b}) send_pair(*m, 1, 0, 10), send_pair(*m, 5, 2, 20);  // rows 1-2 and 5-6
  a.run_until(6), b.run_until(6);   // in flight: busy resources in both pairs of rows at the mark
  a.mark();
  std::vector<std::uint64_t> at_mark(a.link_busy_data(), a.link_busy_data() + f.grid().size() * 4);
  for (ApproxMesh* m : {&a, &b}) send_pair(*m, 10, 7, 30);  // the window books rows 10-11 too, past them
  a.run_until(12), b.run_until(12);
  EXPECT_EQ(describe(a, 0), describe(b, 0));  // a's bounded pass finds what b's full one does
  // The window's bookings, link by link, against the copy taken at the mark.
  const std::size_t links = f.grid().size() * 4, step = std::size_t(2) * 6 * 4;  // moved 2 rows per repeat
  const std::vector<std::uint64_t> before(a.link_busy_data(), a.link_busy_data() + links);
  std::vector<std::uint64_t> expect = before;
  for (std::size_t l = 0; l < links; ++l)
    if (const std::uint64_t d = before[l] - at_mark[l]; d != 0) expect[l + step] += d;
  ASSERT_GT(a.link_busy(LinkId(10 * 6 * 4 + 1)), at_mark[10 * 6 * 4 + 1]);  // (row 10's east links were booked)
  a.repeat(20, 1, [](std::uint64_t tag, bool) { return tag; }, 2);
  const std::vector<std::uint64_t> got(a.link_busy_data(), a.link_busy_data() + links);
  EXPECT_EQ(got, expect);
  // Marked but never repeated: dropped, and the next description is the full pass's again.
  b.mark();
  b.unmark();
  EXPECT_THROW(b.repeat(20, 1, [](std::uint64_t tag, bool) { return tag; }, 2), std::logic_error);
}

}  // namespace
}  // namespace wafer::noc
