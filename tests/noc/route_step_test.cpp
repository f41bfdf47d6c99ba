// noc::route_step, the hop-by-hop routing both timing models call: its short path for a segment that
// holds the burst's source must give the same output ports and delivery as noc::region_ports at every
// state a burst can reach (the source, then each tile along the segment, arriving in the direction it
// travels), and a segment that does not hold its source keeps the general tree.
#include <gtest/gtest.h>

#include "noc/route_step.h"

namespace wafer::noc {
namespace {

TEST(RouteStep, SegmentHoldingItsSourceMatchesRegionPorts) {
  const Fabric f = Fabric::perfect({9, 7});
  std::size_t states = 0;
  for (bool row : {true, false}) {
    const std::int32_t len = row ? 9 : 7;
    for (std::int32_t first = 0; first < len; ++first)
      for (std::int32_t span = 1; first + span <= len; ++span)
        for (std::int32_t s = first; s < first + span; ++s) {
          if (span == 1) continue;  // a segment of only its source reaches nothing (refused by resolve)
          const std::int32_t other = 3;  // the fixed coordinate
          const Coord src = row ? Coord{s, other} : Coord{other, s};
          const Coord first_c = row ? Coord{first, other} : Coord{other, first};
          const Destination dest{row ? Destination::Kind::RowSegment : Destination::Kind::ColumnSegment, first_c, span};
          const Target t = resolve(f, f.grid().index(src), dest);
          ASSERT_TRUE(t.along);
          for (std::int32_t v = first; v < first + span; ++v) {
            const Coord here = row ? Coord{v, other} : Coord{other, v};
            Dir in = Dir::Ramp;  // the direction a burst travels to reach `here` from the source
            if (v > s) in = row ? Dir::East : Dir::South;
            if (v < s) in = row ? Dir::West : Dir::North;
            const Step got = route_step(f, t, here, in);
            const Fanout want = region_ports(here, t.src, t.region, in);
            EXPECT_EQ(got.ports, want.ports) << (row ? "row" : "column") << " first " << first << " span " << span
                                             << " src " << s << " at " << v;
            EXPECT_EQ(got.deliver, want.deliver) << (row ? "row" : "column") << " first " << first << " span "
                                                 << span << " src " << s << " at " << v;
            ++states;
          }
        }
  }
  EXPECT_GT(states, 300u);
}

TEST(RouteStep, SegmentAwayFromItsSourceKeepsTheGeneralTree) {
  const Fabric f = Fabric::perfect({9, 7});
  // Source (1, 1), a column segment at x = 5 from y = 2, span 4: the burst first travels to the segment.
  const Target t = resolve(f, f.grid().index({1, 1}), {Destination::Kind::ColumnSegment, {5, 2}, 4});
  EXPECT_FALSE(t.along);
  EXPECT_EQ(t.sinks, 4u);
  const Step at_src = route_step(f, t, Coord{1, 1}, Dir::Ramp);
  const Fanout want = region_ports({1, 1}, {1, 1}, t.region, Dir::Ramp);
  EXPECT_EQ(at_src.ports, want.ports);
  EXPECT_FALSE(at_src.deliver);
}

}  // namespace
}  // namespace wafer::noc
