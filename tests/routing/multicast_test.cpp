#include "noc/routing/multicast.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "hw/error.h"
#include "noc/routing/route.h"
#include "tests/routing/test_util.h"

using namespace wafer::noc;
using wafer::hw::InputError;
using wafer::noc::test::acyclic;
using wafer::noc::test::random_faults;

namespace {

// A well-formed tree: parents first, each edge leaves the tile its parent entered (the source for
// roots), west-first turns, healthy links, no link twice when `unique`. Sinks = region minus the
// source minus `unreached`, each with its hop count. Adds the tree's dependencies to `cdg`.
void check_tree(const Fabric& f, Coord src, const Rect& r, const Multicast& m, bool unique,
                std::set<std::pair<LinkId, LinkId>>* cdg = nullptr) {
  const Grid& g = f.grid();
  std::vector<Coord> end(m.edges.size());
  std::vector<std::uint32_t> hops(m.edges.size());
  std::set<LinkId> used;
  for (std::size_t i = 0; i < m.edges.size(); ++i) {
    const RouteEdge& e = m.edges[i];
    ASSERT_LT(e.parent, std::int32_t(i));
    Coord from = e.parent == kFromSource ? src : end[std::size_t(e.parent)];
    Dir in = e.parent == kFromSource ? Dir::Ramp : link_dir(m.edges[std::size_t(e.parent)].link);
    ASSERT_EQ(link_tile(e.link), g.index(from));
    EXPECT_TRUE(f.link_ok(link_tile(e.link), link_dir(e.link)));
    EXPECT_TRUE(turn_allowed(in, link_dir(e.link)));
    if (unique) {
      EXPECT_TRUE(used.insert(e.link).second) << "link used twice";
    }
    if (cdg && e.parent != kFromSource) cdg->insert({m.edges[std::size_t(e.parent)].link, e.link});
    end[i] = wafer::hw::step(from, link_dir(e.link));
    hops[i] = (e.parent == kFromSource ? 0 : hops[std::size_t(e.parent)]) + f.link_hops(g.index(from), link_dir(e.link));
  }
  std::set<TileIndex> want, got(m.sinks.begin(), m.sinks.end());
  for (std::int32_t y = r.y0; y < r.y0 + r.h; ++y)
    for (std::int32_t x = r.x0; x < r.x0 + r.w; ++x) {
      Coord c{x, y};
      if (c == src || std::find(m.unreached.begin(), m.unreached.end(), c) != m.unreached.end()) continue;
      want.insert(g.index(c));
    }
  EXPECT_EQ(got, want);
  EXPECT_EQ(got.size(), m.sinks.size());
  ASSERT_EQ(m.sink_hops.size(), m.sinks.size());
  // Each sink is the end of some edge whose path has its hop count (or the source for none).
  for (std::size_t k = 0; k < m.sinks.size(); ++k) {
    bool found = false;
    for (std::size_t i = 0; i < m.edges.size() && !found; ++i)
      found = g.index(end[i]) == m.sinks[k] && hops[i] == m.sink_hops[k];
    EXPECT_TRUE(found) << "sink " << m.sinks[k];
  }
}

}  // namespace

TEST(Multicast, RowFromASourceOnTheRowSpreadsBothWays) {
  Fabric f = Fabric::perfect({10, 4});
  Multicast m = multicast(f, {4, 2}, row_segment({1, 2}, 8));  // columns 1..8
  check_tree(f, {4, 2}, row_segment({1, 2}, 8), m, true);
  EXPECT_EQ(m.edges.size(), 7u);
  EXPECT_EQ(m.sinks.size(), 7u);
  EXPECT_EQ(m.max_hops, 4u);  // to column 8
  Fanout at_src = region_ports({4, 2}, {4, 2}, row_segment({1, 2}, 8), Dir::Ramp);
  EXPECT_TRUE(at_src.has(Dir::East) && at_src.has(Dir::West));
  EXPECT_FALSE(at_src.deliver);
  Fanout end = region_ports({8, 2}, {4, 2}, row_segment({1, 2}, 8), Dir::East);
  EXPECT_EQ(end.ports, 0);
  EXPECT_TRUE(end.deliver);
}

TEST(Multicast, RowFromAnotherRowEntersAtItsWestEnd) {
  Fabric f = Fabric::perfect({10, 6});
  Rect row = row_segment({2, 4}, 6);  // columns 2..7 of row 4
  Multicast m = multicast(f, {5, 1}, row);
  check_tree(f, {5, 1}, row, m, true);
  EXPECT_EQ(m.edges.size(), 3u + 3u + 5u);  // west to column 2, south to row 4, east to column 7
  EXPECT_EQ(m.max_hops, 11u);
  EXPECT_EQ(m.sinks.size(), 6u);
}

TEST(Multicast, ColumnIsEnteredDimensionOrderAndSpreadsBothWays) {
  Fabric f = Fabric::perfect({8, 10});
  Rect col = column_segment({6, 1}, 8);  // rows 1..8 of column 6
  Multicast m = multicast(f, {2, 5}, col);
  check_tree(f, {2, 5}, col, m, true);
  EXPECT_EQ(m.edges.size(), 4u + 7u);
  EXPECT_EQ(m.max_hops, 4u + 4u);  // to row 1
  Fanout entry = region_ports({6, 5}, {2, 5}, col, Dir::East);
  EXPECT_TRUE(entry.has(Dir::North) && entry.has(Dir::South) && entry.deliver);
  EXPECT_FALSE(entry.has(Dir::East));
}

TEST(Multicast, EveryRegionFromEverySourceIsAWellFormedTree) {
  Fabric f = Fabric::perfect({6, 5});
  const Grid& g = f.grid();
  std::set<std::pair<LinkId, LinkId>> cdg;
  for (TileIndex s = 0; s < g.size(); ++s)
    for (Rect r : {Rect{0, 0, 6, 5}, Rect{1, 1, 3, 2}, Rect{2, 0, 1, 5}, Rect{0, 3, 6, 1}, Rect{4, 4, 1, 1},
                   Rect{3, 1, 3, 3}}) {
      Multicast m = multicast(f, g.coord(s), r);
      check_tree(f, g.coord(s), r, m, true, &cdg);
      EXPECT_TRUE(m.unreached.empty());
      // Each sink is reached in the fewest hops a west-first path allows.
      for (std::size_t k = 0; k < m.sinks.size(); ++k)
        EXPECT_GE(m.sink_hops[k], route(f, g.coord(s), g.coord(m.sinks[k])).hops);
    }
  EXPECT_TRUE(acyclic(f.links(), cdg));
}

TEST(Multicast, FaultAwareTreesAvoidFaultsListUnreachedAndStayAcyclicWithUnicast) {
  for (std::uint64_t seed = 0; seed < 4; ++seed) {
    Fabric f = random_faults({8, 8}, 77 + seed, 2, 4);
    const Grid& g = f.grid();
    std::set<std::pair<LinkId, LinkId>> cdg;
    for (TileIndex s = 0; s < g.size(); ++s) {
      if (!f.router_ok(s)) {
        EXPECT_THROW(multicast(f, g.coord(s), Rect{0, 0, 8, 8}), InputError);
        continue;
      }
      for (TileIndex d = 0; d < g.size(); ++d) {
        if (!reachable(f, g.coord(s), g.coord(d))) continue;
        Route r = route(f, g.coord(s), g.coord(d));
        for (std::size_t i = 1; i < r.links.size(); ++i) cdg.insert({r.links[i - 1], r.links[i]});
      }
      for (Rect r : {Rect{0, 0, 8, 8}, Rect{0, std::int32_t(s % 8), 8, 1}, Rect{std::int32_t(s % 8), 0, 1, 8}}) {
        Multicast m = multicast(f, g.coord(s), r);
        check_tree(f, g.coord(s), r, m, true, &cdg);
        for (Coord u : m.unreached) EXPECT_FALSE(reachable(f, g.coord(s), u));
        // Detoured trees reach every sink at its shortest west-first distance (links are one hop here);
        // the healthy tree may enter a row at its west end, never shorter than unicast.
        const bool clear = region_path_clear(f, g.coord(s), r);
        for (std::size_t k = 0; k < m.sinks.size(); ++k) {
          std::uint32_t shortest = route(f, g.coord(s), g.coord(m.sinks[k])).hops;
          if (clear) {
            EXPECT_GE(m.sink_hops[k], shortest);
          } else {
            EXPECT_EQ(m.sink_hops[k], shortest);
          }
        }
      }
      if (::testing::Test::HasFailure()) return;
    }
    EXPECT_TRUE(acyclic(f.links(), cdg)) << "seed " << seed;
  }
}

TEST(Multicast, BadRegionsAreInputErrors) {
  Fabric f = Fabric::perfect({4, 4});
  EXPECT_THROW(multicast(f, {0, 0}, Rect{0, 0, 0, 1}), InputError);
  EXPECT_THROW(multicast(f, {0, 0}, Rect{2, 2, 3, 1}), InputError);
  EXPECT_THROW(multicast(f, {5, 0}, Rect{0, 0, 1, 1}), InputError);
}
