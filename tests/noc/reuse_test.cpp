// The approx mesh's side of reuse in space (docs/timing.md "Reuse"): a state described from its own origin
// row equals the same state a few rows down described from its origin, and differs from any other. (That
// repeat() with `rows` then goes on as the moved run would is held end to end: tests/cli/reuse.cmake compares
// whole results, link counters included, with and without reuse.)
#include <gtest/gtest.h>

#include <cstdint>
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

}  // namespace
}  // namespace wafer::noc
