#include "noc/routing/route.h"

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <set>

#include "hw/error.h"
#include "tests/routing/test_util.h"

using namespace wafer::noc;
using wafer::hw::InputError;
using wafer::noc::test::acyclic;
using wafer::noc::test::random_faults;

namespace {

// Independent reference: BFS over (tile, arrival direction) with the west-first rules written out
// (forbidden: N->W, S->W, and 180-degree turns). Shortest number of links from src to every tile, -1
// where unreachable.
std::vector<int> reference_distances(const Fabric& f, Coord src) {
  const Grid& g = f.grid();
  std::vector<int> best(g.size(), -1);
  if (!f.router_ok(g.index(src))) return best;
  best[g.index(src)] = 0;
  std::vector<int> seen(g.size() * 5, -1);  // arrival dir 0..3, 4 = injected
  std::vector<std::pair<TileIndex, int>> q{{g.index(src), 4}};
  seen[g.index(src) * 5 + 4] = 0;
  for (std::size_t h = 0; h < q.size(); ++h) {
    auto [t, in] = q[h];
    int d = seen[t * 5 + std::size_t(in)];
    for (int o = 0; o < 4; ++o) {
      if (in != 4 && o == (in + 2) % 4) continue;                            // U-turn
      if (o == int(Dir::West) && in != 4 && in != int(Dir::West)) continue;  // turn into west
      Coord n = wafer::hw::step(g.coord(t), Dir(o));
      if (!g.inside(n) || !f.router_ok(g.index(n)) || !f.link_ok(t, Dir(o))) continue;
      std::size_t k = g.index(n) * 5 + std::size_t(o);
      if (seen[k] >= 0) continue;
      seen[k] = d + 1;
      if (best[g.index(n)] < 0) best[g.index(n)] = d + 1;
      q.push_back({g.index(n), o});
    }
  }
  return best;
}

std::vector<LinkId> xy_links(const Grid& g, Coord s, Coord d) {
  std::vector<LinkId> out;
  while (s.x != d.x) {
    Dir dir = s.x < d.x ? Dir::East : Dir::West;
    out.push_back(link_id(g.index(s), dir));
    s = wafer::hw::step(s, dir);
  }
  while (s.y != d.y) {
    Dir dir = s.y < d.y ? Dir::South : Dir::North;
    out.push_back(link_id(g.index(s), dir));
    s = wafer::hw::step(s, dir);
  }
  return out;
}

// Checks every ordered pair of tiles; returns the number of routed pairs.
int check_all_pairs(const Fabric& f, std::set<std::pair<LinkId, LinkId>>& cdg) {
  const Grid& g = f.grid();
  int routed = 0;
  std::set<std::pair<int, int>> expected_unreachable;
  for (TileIndex s = 0; s < g.size(); ++s) {
    std::vector<int> dist = reference_distances(f, g.coord(s));
    for (TileIndex d = 0; d < g.size(); ++d) {
      Coord cs = g.coord(s), cd = g.coord(d);
      int ref = f.router_ok(d) ? dist[d] : -1;
      if (ref < 0) {
        if (s != d) expected_unreachable.insert({int(s), int(d)});
        EXPECT_FALSE(reachable(f, cs, cd));
        try {
          route(f, cs, cd);
          ADD_FAILURE() << "route to an unreachable tile did not throw";
        } catch (const InputError& e) {
          EXPECT_NE(std::string(e.what()).find("cannot reach"), std::string::npos) << e.what();
        }
        continue;
      }
      Route r = route(f, cs, cd);
      ++routed;
      EXPECT_EQ(int(r.links.size()), ref) << "(" << cs.x << "," << cs.y << ")->(" << cd.x << "," << cd.y << ")";
      // Walk it: contiguous, healthy, west-first, ends at dst.
      Coord at = cs;
      Dir in = Dir::Ramp;
      std::uint32_t hops = 0;
      for (std::size_t i = 0; i < r.links.size(); ++i) {
        LinkId l = r.links[i];
        EXPECT_EQ(link_tile(l), g.index(at));
        if (link_tile(l) != g.index(at)) break;
        Dir out = link_dir(l);
        EXPECT_TRUE(f.link_ok(link_tile(l), out));
        EXPECT_TRUE(f.router_ok(link_tile(l)));
        EXPECT_TRUE(turn_allowed(in, out));
        hops += f.link_hops(link_tile(l), out);
        if (i) cdg.insert({r.links[i - 1], l});
        at = wafer::hw::step(at, out);
        in = out;
      }
      EXPECT_EQ(at, cd);
      EXPECT_TRUE(f.router_ok(g.index(at)));
      EXPECT_EQ(r.hops, hops);
    }
  }
  std::set<std::pair<int, int>> listed;
  for (auto p : unreachable_pairs(f)) listed.insert({int(g.index(p.src)), int(g.index(p.dst))});
  EXPECT_EQ(listed, expected_unreachable);
  return routed;
}

}  // namespace

TEST(Fabric, PerfectMeshHasOneHopLinksAndNoLinksOffTheEdge) {
  Fabric f = Fabric::perfect({5, 4});
  EXPECT_TRUE(f.fault_free());
  EXPECT_EQ(f.links(), 80u);
  const Grid& g = f.grid();
  EXPECT_FALSE(f.link_ok(g.index({0, 2}), Dir::West));
  EXPECT_FALSE(f.link_ok(g.index({4, 2}), Dir::East));
  EXPECT_FALSE(f.link_ok(g.index({2, 0}), Dir::North));
  EXPECT_FALSE(f.link_ok(g.index({2, 3}), Dir::South));
  EXPECT_TRUE(f.link_ok(g.index({2, 2}), Dir::West));
  EXPECT_EQ(f.link_hops(g.index({2, 2}), Dir::West), 1u);
  EXPECT_EQ(f.link_hops(g.index({4, 2}), Dir::East), 0u);
  EXPECT_THROW(Fabric::perfect({0, 3}), InputError);
  EXPECT_THROW(f.fail_link(g.index({4, 0}), Dir::East), InputError);
}

TEST(Fabric, FaultsCutBothDirectionsAndNeighbourLinks) {
  Fabric f = Fabric::perfect({6, 6});
  const Grid& g = f.grid();
  f.fail_link(g.index({3, 2}), Dir::West);  // canonicalised to (2,2) E
  EXPECT_FALSE(f.fault_free());
  EXPECT_FALSE(f.link_ok(g.index({2, 2}), Dir::East));
  EXPECT_FALSE(f.link_ok(g.index({3, 2}), Dir::West));
  EXPECT_EQ(f.describe(f.faults().at(0)), "link (2,2)-(3,2)");
  f.fail_router(g.index({4, 4}));
  EXPECT_FALSE(f.router_ok(g.index({4, 4})));
  EXPECT_FALSE(f.link_ok(g.index({3, 4}), Dir::East));
  EXPECT_FALSE(f.link_ok(g.index({4, 5}), Dir::North));
  EXPECT_EQ(f.faults().size(), 2u);
  EXPECT_FALSE(f.row_clear(2, 0, 5));
  EXPECT_TRUE(f.row_clear(2, 0, 2));
  EXPECT_TRUE(f.row_clear(2, 3, 5));
  EXPECT_FALSE(f.column_clear(4, 0, 5));
  EXPECT_TRUE(f.column_clear(4, 0, 3));
  f.set_hops(g.index({1, 1}), Dir::South, 3);
  EXPECT_EQ(f.link_hops(g.index({1, 2}), Dir::North), 3u);
}

// What a placement that reads no link lengths sees of a fabric (mapper::mapping_reads_links, apps::PointCache): its
// grid and its faults (which routers work, which links have a healthy path); link lengths do not count, a failed
// router, a failed link and another grid do.
TEST(Fabric, SameFaultsComparesTheGridAndTheFaultsOnly) {
  const Fabric f = Fabric::perfect({6, 5});
  const Grid& g = f.grid();
  EXPECT_TRUE(f.same_faults(Fabric::perfect({6, 5})));
  EXPECT_FALSE(f.same_faults(Fabric::perfect({5, 6})));
  Fabric links = f;
  links.set_hops(g.index({1, 1}), Dir::East, 3);
  EXPECT_FALSE(links == f);
  EXPECT_TRUE(links.same_faults(f));
  EXPECT_TRUE(f.same_faults(links));
  Fabric cut = links;
  cut.fail_link(g.index({2, 3}), Dir::South);
  EXPECT_FALSE(cut.same_faults(f));
  EXPECT_FALSE(links.same_faults(cut));
  Fabric router = f;
  router.fail_router(g.index({4, 2}));
  EXPECT_FALSE(router.same_faults(f));
  EXPECT_FALSE(links.same_faults(router));
  Fabric other = f;
  other.fail_router(g.index({4, 3}));  // as many failed routers, another one
  EXPECT_FALSE(router.same_faults(other));
  other = f;
  other.fail_router(g.index({4, 2}));
  other.set_hops(g.index({0, 0}), Dir::South, 2);
  EXPECT_TRUE(router.same_faults(other));
}

// Reuse in space (core::Executor) copies a band of rows onto the rows below only where the fabric there is
// alike: faults, east links' and south links' lengths, and the links north out of the band's first row.
TEST(Fabric, RowsAlikeComparesFaultsAndLinkLengthsOfTheMovedRows) {
  Fabric f = Fabric::perfect({4, 9});
  const Grid& g = f.grid();
  EXPECT_TRUE(f.rows_alike(1, 2, 2));   // rows 1-2 against 3-4
  EXPECT_FALSE(f.rows_alike(0, 3, 3));  // 0-2 against 3-5: row 0 has no links north, row 3 has
  EXPECT_FALSE(f.rows_alike(0, 3, 6));  // 6-8 ends on the south edge: not alike (no links south of row 8)
  EXPECT_FALSE(f.rows_alike(4, 3, 3));  // beyond the grid
  EXPECT_FALSE(f.rows_alike(1, 2, 0));
  // A longer east link in row 4: rows 3-4 differ from 1-2, rows 5-6 from 3-4; 5-6 and 7-8 are still alike.
  f.set_hops(g.index({1, 4}), Dir::East, 2);
  EXPECT_FALSE(f.rows_alike(1, 2, 2));
  EXPECT_FALSE(f.rows_alike(3, 2, 2));
  EXPECT_TRUE(f.rows_alike(5, 1, 1));
  // A longer link south out of row 6 (into row 7): the band 7-8's first row sees it as its link north, so
  // 5-6 against 7-8 differ (the link south out of 6 is in the first band, the one north of 7 in the second),
  // while one row 5 against row 6 differs only by that south link: not alike either.
  Fabric h = Fabric::perfect({4, 9});
  h.set_hops(g.index({2, 6}), Dir::South, 3);
  EXPECT_FALSE(h.rows_alike(5, 2, 2));
  EXPECT_FALSE(h.rows_alike(5, 1, 1));
  EXPECT_TRUE(h.rows_alike(1, 2, 2));
  // A fault: a failed router differs from its twin a band below.
  Fabric d = Fabric::perfect({4, 9});
  d.fail_router(g.index({0, 2}));
  EXPECT_FALSE(d.rows_alike(1, 2, 2));
  EXPECT_TRUE(d.rows_alike(5, 1, 1));
}

TEST(Fabric, FromRepairTurnsUnmappedTilesAndZeroHopsIntoFaults) {
  wafer::hw::RepairResult r;
  r.scheme = "test";
  r.logical = {4, 3};
  r.physical = {5, 3};
  r.log_to_phys.resize(12);
  for (TileIndex t = 0; t < 12; ++t) r.log_to_phys[t] = t;
  r.hops_east.assign(12, 1);
  r.hops_south.assign(12, 1);
  for (std::int32_t y = 0; y < 3; ++y) r.hops_east[std::size_t(y * 4 + 3)] = 0;
  for (std::int32_t x = 0; x < 4; ++x) r.hops_south[std::size_t(2 * 4 + x)] = 0;
  r.hops_east[r.logical.index({1, 0})] = 2;      // repaired: two physical hops
  r.hops_south[r.logical.index({0, 0})] = 0;     // both ends mapped, no path: failed link
  r.log_to_phys[r.logical.index({2, 2})] = wafer::hw::kNoTile;
  r.hops_east[r.logical.index({1, 2})] = 0;
  r.hops_east[r.logical.index({2, 2})] = 0;
  r.hops_south[r.logical.index({2, 1})] = 0;
  Fabric f = Fabric::from_repair(r);
  const Grid& g = f.grid();
  EXPECT_EQ(f.link_hops(g.index({1, 0}), Dir::East), 2u);
  EXPECT_EQ(f.link_hops(g.index({2, 0}), Dir::West), 2u);
  EXPECT_FALSE(f.link_ok(g.index({0, 0}), Dir::South));
  EXPECT_FALSE(f.router_ok(g.index({2, 2})));
  EXPECT_TRUE(f.router_ok(g.index({1, 2})));
  EXPECT_EQ(f.faults().size(), 2u);
  Route rt = route(f, {0, 0}, {3, 0});
  EXPECT_EQ(rt.links.size(), 3u);
  EXPECT_EQ(rt.hops, 4u);
  r.hops_east.pop_back();
  EXPECT_THROW(Fabric::from_repair(r), InputError);
}

TEST(Routing, FaultFreeRoutesAreDimensionOrder) {
  Fabric f = Fabric::perfect({8, 7});
  const Grid& g = f.grid();
  for (TileIndex s = 0; s < g.size(); ++s)
    for (TileIndex d = 0; d < g.size(); ++d) {
      Route r = route(f, g.coord(s), g.coord(d));
      ASSERT_EQ(r.links, xy_links(g, g.coord(s), g.coord(d)));
      EXPECT_EQ(r.hops, r.links.size());
    }
  EXPECT_EQ(next_port(f, {3, 3}, {3, 3}), Dir::Ramp);
  EXPECT_EQ(next_port(f, {3, 3}, {1, 6}), Dir::West);
  EXPECT_EQ(next_port(f, {3, 3}, {3, 0}), Dir::North);
  EXPECT_TRUE(unreachable_pairs(f).empty());
}

TEST(Routing, DetourAroundOneFailedLinkCostsExactlyTheAddedHops) {
  Fabric f = Fabric::perfect({8, 8});
  const Grid& g = f.grid();
  f.fail_link(g.index({3, 4}), Dir::East);
  // Eastward along row 4: around the link, up (or down) and back: 2 extra links.
  EXPECT_EQ(route(f, {0, 4}, {7, 4}).links.size(), 9u);
  // To a tile on another row: a staircase avoids the link for free.
  EXPECT_EQ(route(f, {0, 4}, {7, 6}).links.size(), 9u);
  // Northward down a column with a failed vertical link: step west first, then north, then east.
  f.fail_link(g.index({5, 1}), Dir::South);
  Route r = route(f, {5, 6}, {5, 0});
  EXPECT_EQ(r.links.size(), 8u);
  EXPECT_EQ(link_dir(r.links.front()), Dir::West);
  // Westward along the source row through the failed link: west-first cannot go around it.
  EXPECT_FALSE(reachable(f, {6, 4}, {1, 4}));
  try {
    route(f, {6, 4}, {1, 4});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("tile (6,4) cannot reach (1,4)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("link (3,4)-(4,4)"), std::string::npos) << e.what();
  }
}

TEST(Routing, DetourAroundOneFaultMatchesReferenceOnEveryPair) {
  // Every single fault position (routers and links) on a 6x6 mesh, every pair.
  const Grid g{6, 6};
  for (TileIndex t = 0; t < g.size(); ++t)
    for (int kind = 0; kind < 3; ++kind) {
      Fabric f = Fabric::perfect(g);
      Coord c = g.coord(t);
      if (kind == 0) f.fail_router(t);
      else if (kind == 1 && c.x + 1 < g.width) f.fail_link(t, Dir::East);
      else if (kind == 2 && c.y + 1 < g.height) f.fail_link(t, Dir::South);
      else continue;
      std::set<std::pair<LinkId, LinkId>> cdg;
      int routed = check_all_pairs(f, cdg);
      EXPECT_GT(routed, 0);
      EXPECT_TRUE(acyclic(f.links(), cdg));
      if (::testing::Test::HasFailure()) return;
    }
}

TEST(Routing, RandomDefectSetsAllPairsTerminateAvoidFaultsAndStayAcyclic) {
  struct Case {
    Grid g;
    int seeds, routers, links;
  };
  for (Case c : {Case{{6, 6}, 6, 2, 3}, Case{{8, 8}, 4, 3, 5}, Case{{12, 12}, 1, 6, 10}, Case{{12, 9}, 1, 12, 18}})
    for (int s = 0; s < c.seeds; ++s) {
      Fabric f = random_faults(c.g, 1000 + std::uint64_t(s) * 7 + std::uint64_t(c.g.width), c.routers, c.links);
      std::set<std::pair<LinkId, LinkId>> cdg;
      check_all_pairs(f, cdg);
      EXPECT_TRUE(acyclic(f.links(), cdg)) << c.g.width << "x" << c.g.height << " seed " << s;
      if (::testing::Test::HasFailure()) return;
    }
}

TEST(Routing, BadEndpointsAreInputErrors) {
  Fabric f = Fabric::perfect({4, 4});
  EXPECT_THROW(route(f, {0, 0}, {4, 0}), InputError);
  EXPECT_THROW(route(f, {-1, 0}, {1, 1}), InputError);
  f.fail_router(f.grid().index({2, 2}));
  try {
    route(f, {0, 0}, {2, 2});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "tile (0,0) cannot reach (2,2): the router of (2,2) failed");
  }
  EXPECT_THROW(unreachable_pairs(Fabric::perfect({200, 200})), InputError);
}
