// Repair invariants on many random maps, for every scheme, on tiny / small / a custom wafer; hand-made
// cases with known answers; the registry; Monte Carlo repair success against the analytic row-shift formula.
#include "hw/repair.h"

#include <gtest/gtest.h>

#include <bit>
#include <deque>
#include <set>

#include "hw/error.h"
#include "hw/random.h"
#include "hw/repair/common.h"
#include "hw/yield.h"
#include "test_util.h"

using namespace wafer::hw;
using wafer::hw::testing::custom_wafer;
using wafer::hw::testing::per_wafer;

namespace {

// An independent reference: BFS over the physical grid built from the defect LIST (not the map's bit
// queries): a move u -> v needs a healthy link and a working router at v; both ends need working routers.
class ReferenceBfs {
 public:
  explicit ReferenceBfs(const DefectMap& m) : g_(m.grid()), router_(g_.size(), 0), link_(g_.size() * 4, 0), dist_(g_.size(), -1) {
    for (const auto& d : m.defects()) {
      if (d.kind == DefectKind::Router) router_[g_.index(d.at)] = 1;
      if (d.kind == DefectKind::Link) {
        const Coord to = step(d.at, d.dir);
        link_[g_.index(d.at) * 4 + unsigned(d.dir)] = 1;
        link_[g_.index(to) * 4 + unsigned(opposite(d.dir))] = 1;
      }
    }
  }
  int distance(Coord a, Coord b) {
    const TileIndex s = g_.index(a), t = g_.index(b);
    if (router_[s] || router_[t] || s == t) return 0;
    for (TileIndex v : seen_) dist_[v] = -1;
    seen_.clear();
    std::deque<TileIndex> q{s};
    dist_[s] = 0;
    seen_.push_back(s);
    while (!q.empty()) {
      const TileIndex u = q.front();
      q.pop_front();
      const Coord c = g_.coord(u);
      for (Dir d : kMeshDirs) {
        const Coord n = step(c, d);
        if (!g_.inside(n)) continue;
        const TileIndex v = g_.index(n);
        if (dist_[v] >= 0 || router_[v] || link_[u * 4 + unsigned(d)]) continue;
        dist_[v] = dist_[u] + 1;
        seen_.push_back(v);
        if (v == t) return dist_[v];
        q.push_back(v);
      }
    }
    return 0;
  }

 private:
  Grid g_;
  std::vector<char> router_, link_;
  std::vector<int> dist_;
  std::vector<TileIndex> seen_;
};

std::set<TileIndex> dead_by_list(const DefectMap& m) {
  std::set<TileIndex> dead;
  for (const auto& d : m.defects())
    if (d.kind != DefectKind::Link) dead.insert(m.grid().index(d.at));
  return dead;
}

// Every invariant of a RepairResult. `brute_rect`: also check the usable rectangle is the largest (small grids).
void check_result(const WaferSpec& s, const DefectMap& m, const RepairResult& r, bool brute_rect) {
  const Grid L = s.logical(), P = s.physical();
  ASSERT_EQ(r.logical.width, L.width);
  ASSERT_EQ(r.logical.height, L.height);
  ASSERT_EQ(r.physical.width, P.width);
  ASSERT_EQ(r.physical.height, P.height);
  ASSERT_EQ(r.log_to_phys.size(), L.size());
  ASSERT_EQ(r.hops_east.size(), L.size());
  ASSERT_EQ(r.hops_south.size(), L.size());
  std::set<TileIndex> used;
  const std::set<TileIndex> dead = dead_by_list(m);
  std::size_t unmapped = 0;
  for (TileIndex p : r.log_to_phys) {
    if (p == kNoTile) {
      ++unmapped;
      continue;
    }
    ASSERT_LT(p, P.size());
    ASSERT_FALSE(dead.count(p)) << "logical tile mapped to a failed physical tile";
    ASSERT_TRUE(used.insert(p).second) << "two logical tiles share physical tile " << p;
  }
  EXPECT_EQ(r.complete, unmapped == 0);
  if (r.complete) {
    EXPECT_EQ(r.usable, (Rect{0, 0, L.width, L.height}));
    EXPECT_TRUE(r.reason.empty());
  } else {
    EXPECT_FALSE(r.reason.empty()) << "an unrepairable map must say why";
    // The usable rectangle is valid: inside the logical grid, every tile in it mapped.
    ASSERT_GE(r.usable.x0, 0);
    ASSERT_GE(r.usable.y0, 0);
    ASSERT_LE(r.usable.x0 + r.usable.w, L.width);
    ASSERT_LE(r.usable.y0 + r.usable.h, L.height);
    EXPECT_LT(r.usable.area(), L.size());
    for (std::int32_t y = r.usable.y0; y < r.usable.y0 + r.usable.h; ++y)
      for (std::int32_t x = r.usable.x0; x < r.usable.x0 + r.usable.w; ++x)
        ASSERT_NE(r.log_to_phys[L.index({x, y})], kNoTile) << "usable rectangle holds an unmapped tile";
    if (brute_rect) {
      std::int64_t best = 0;
      for (int y0 = 0; y0 < L.height; ++y0)
        for (int x0 = 0; x0 < L.width; ++x0)
          for (int y1 = y0; y1 < L.height; ++y1)
            for (int x1 = x0; x1 < L.width; ++x1) {
              bool ok = true;
              for (int y = y0; y <= y1 && ok; ++y)
                for (int x = x0; x <= x1 && ok; ++x) ok = r.log_to_phys[L.index({x, y})] != kNoTile;
              if (ok) best = std::max<std::int64_t>(best, std::int64_t(x1 - x0 + 1) * (y1 - y0 + 1));
            }
      EXPECT_EQ(r.usable.area(), best) << "usable rectangle is not the largest";
    }
  }
  // Hop counts equal an independent BFS; 0 at the edge and next to unmapped tiles.
  ReferenceBfs bfs(m);
  for (std::int32_t y = 0; y < L.height; ++y)
    for (std::int32_t x = 0; x < L.width; ++x) {
      const TileIndex li = L.index({x, y});
      for (int dir = 0; dir < 2; ++dir) {
        const Coord n = dir == 0 ? Coord{x + 1, y} : Coord{x, y + 1};
        const std::uint16_t got = dir == 0 ? r.hops_east[li] : r.hops_south[li];
        if (!L.inside(n) || r.log_to_phys[li] == kNoTile || r.log_to_phys[L.index(n)] == kNoTile) {
          ASSERT_EQ(got, 0) << "edge or unmapped: no hops";
          continue;
        }
        const int want = bfs.distance(P.coord(r.log_to_phys[li]), P.coord(r.log_to_phys[L.index(n)]));
        ASSERT_EQ(int(got), want) << r.scheme << " logical (" << x << "," << y << ") " << (dir ? "south" : "east");
      }
    }
}

struct Case {
  WaferSpec spec;
  double per_wafer;
  int maps;
};

}  // namespace

TEST(Repair, RegistryListsEverySchemeByName) {
  const auto names = repair_scheme_names();
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()), (std::set<std::string>{"row-shift", "spare-rows-cols"}));
  for (const auto& n : names) {
    EXPECT_EQ(repair_scheme(n).name(), n);
    EXPECT_FALSE(repair_scheme(n).description().empty());
  }
  try {
    repair_scheme("magic");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "unknown repair scheme 'magic' (known: row-shift, spare-rows-cols)");
  }
}

TEST(Repair, InvariantsOnRandomMaps) {
  // Densities from "almost always repairable" to "rarely": both outcomes occur for every scheme (checked).
  const std::vector<Case> cases{{preset("tiny"), 1.5, 150},    {preset("tiny"), 6, 150},
                                {custom_wafer(), 2, 150},      {custom_wafer(), 8, 150},
                                {custom_wafer(17, 5, 0, 2), 3, 100}, {preset("small"), 25, 4},
                                {preset("small"), 200, 3}};
  for (const auto& scheme : repair_scheme_names()) {
    std::size_t complete = 0, incomplete = 0, detours = 0;
    for (const auto& c : cases) {
      for (auto model : {DefectModel::Poisson, DefectModel::NegBinomial}) {
        const auto p = per_wafer(c.spec, c.per_wafer, model);
        for (int i = 0; i < c.maps; ++i) {
          const DefectMap m = generate_defects(c.spec, p, derive_seed(21, std::uint64_t(i)));
          const RepairResult r = repair_scheme(scheme).repair(c.spec, m);
          ASSERT_EQ(r.scheme, scheme);
          const bool small_grid = c.spec.logical_tiles() <= 200;
          check_result(c.spec, m, r, small_grid);
          if (::testing::Test::HasFatalFailure()) return;
          (r.complete ? complete : incomplete)++;
          for (auto h : r.hops_east) detours += h > 1;
        }
      }
    }
    EXPECT_GT(complete, 50u) << scheme;
    EXPECT_GT(incomplete, 50u) << scheme;
    EXPECT_GT(detours, 50u) << scheme;
  }
}

TEST(Repair, RowShiftKnownCases) {
  const WaferSpec s = preset("tiny");  // logical 8 x 8, physical 9 x 9, one spare row and column
  const auto& rs = repair_scheme("row-shift");
  const Grid L = s.logical(), P = s.physical();
  {  // A dead core at (2, 0): row 0 shifts past it; its router still forwards, so 2 hops.
    DefectMap m(P);
    m.add({DefectKind::Core, {2, 0}});
    const auto r = rs.repair(s, m);
    EXPECT_TRUE(r.complete);
    EXPECT_EQ(r.physical_of({1, 0}), (Coord{1, 0}));
    EXPECT_EQ(r.physical_of({2, 0}), (Coord{3, 0}));
    EXPECT_EQ(r.physical_of({7, 0}), (Coord{8, 0}));
    EXPECT_EQ(r.hops_east[L.index({1, 0})], 2);
    EXPECT_EQ(r.hops_east[L.index({2, 0})], 1);
    EXPECT_EQ(r.hops_south[L.index({2, 0})], 2);  // (3,0) -> (2,1)
    EXPECT_EQ(r.hops_south[L.index({1, 0})], 1);
  }
  {  // The same with a dead router: the detour goes around through row 1, 4 hops.
    DefectMap m(P);
    m.add({DefectKind::Router, {2, 0}});
    const auto r = rs.repair(s, m);
    EXPECT_EQ(r.hops_east[L.index({1, 0})], 4);
  }
  {  // Two dead tiles in row 3 (one spare column): the spare row skips it; logical row 3 -> physical row 4.
    DefectMap m(P);
    m.add({DefectKind::Sram, {0, 3}});
    m.add({DefectKind::Core, {5, 3}});
    const auto r = rs.repair(s, m);
    EXPECT_TRUE(r.complete);
    EXPECT_EQ(r.physical_of({0, 2}), (Coord{0, 2}));
    EXPECT_EQ(r.physical_of({0, 3}), (Coord{0, 4}));
    EXPECT_EQ(r.physical_of({4, 7}), (Coord{4, 8}));
    EXPECT_EQ(r.hops_south[L.index({0, 2})], 2);  // through (0,3): its SRAM failed, its router works
    EXPECT_EQ(r.hops_south[L.index({1, 2})], 2);
  }
  {  // Two bad rows, one spare row: incomplete, the worse row skipped, the other keeps 7 of 8 tiles.
    DefectMap m(P);
    for (int x : {0, 1, 2}) m.add({DefectKind::Core, {x, 1}});
    for (int x : {3, 4}) m.add({DefectKind::Core, {x, 6}});
    const auto r = rs.repair(s, m);
    EXPECT_FALSE(r.complete);
    EXPECT_NE(r.reason.find("2 physical rows have more failed tiles than the 1 spare columns"), std::string::npos) << r.reason;
    EXPECT_EQ(r.physical_of({0, 1}), (Coord{0, 2}));      // row 1 skipped
    EXPECT_EQ(r.physical_of({6, 5}), (Coord{8, 6}));      // logical row 5 = physical row 6, shifted by 2
    EXPECT_EQ(r.physical_of({7, 5}), (Coord{-1, -1}));    // no healthy tile left
    EXPECT_EQ(r.usable, (Rect{0, 0, 7, 8}));
    check_result(s, m, r, true);
  }
  {  // A failed link between two healthy neighbours: the hop count grows to 3 (around), nothing else.
    DefectMap m(P);
    m.add({DefectKind::Link, {4, 4}, Dir::East});
    const auto r = rs.repair(s, m);
    EXPECT_TRUE(r.complete);
    EXPECT_EQ(r.hops_east[L.index({4, 4})], 3);
  }
  {  // A wall of dead routers cuts a tile off: its links get 0 hops (no path), the tile stays mapped.
    DefectMap m(P);
    m.add({DefectKind::Link, {0, 0}, Dir::East});
    m.add({DefectKind::Link, {0, 0}, Dir::South});
    const auto r = rs.repair(s, m);
    EXPECT_TRUE(r.complete);
    EXPECT_EQ(r.hops_east[L.index({0, 0})], 0);
    EXPECT_EQ(r.hops_south[L.index({0, 0})], 0);
    EXPECT_EQ(r.hops_east[L.index({1, 0})], 1);
  }
  // A map of another wafer is refused; an empty (default) map means no defects.
  EXPECT_THROW(rs.repair(s, DefectMap(Grid{5, 5})), InputError);
  EXPECT_TRUE(rs.repair(s, DefectMap{}).complete);
}

// repair_links counts each pair of mapped logical neighbours once: 8 x 8 has 2 x 8 x 7 = 112 links.
TEST(Repair, LinksAreCountedOncePerPairOfMappedNeighbours) {
  const WaferSpec s = preset("tiny");
  const auto& rs = repair_scheme("row-shift");
  const Grid P = s.physical();
  {
    const RepairLinks l = repair_links(rs.repair(s, DefectMap{}));
    EXPECT_EQ(l.links, 112);
    EXPECT_EQ(l.no_path + l.extra_hops + l.max_extra + l.detoured, 0);
  }
  {  // One failed link, 3 hops around: one detoured link, 2 extra hops (not 4: the reverse is the same link).
    DefectMap m(P);
    m.add({DefectKind::Link, {4, 4}, Dir::East});
    const RepairLinks l = repair_links(rs.repair(s, m));
    EXPECT_EQ(l.links, 112);
    EXPECT_EQ(l.detoured, 1);
    EXPECT_EQ(l.extra_hops, 2);
    EXPECT_EQ(l.max_extra, 2);
    EXPECT_EQ(l.no_path, 0);
  }
  {  // A tile cut off by two failed links: two links without a path, counted as links, with no hops.
    DefectMap m(P);
    m.add({DefectKind::Link, {0, 0}, Dir::East});
    m.add({DefectKind::Link, {0, 0}, Dir::South});
    const RepairLinks l = repair_links(rs.repair(s, m));
    EXPECT_EQ(l.links, 112);
    EXPECT_EQ(l.no_path, 2);
    EXPECT_EQ(l.detoured, 0);
  }
  {  // Logical (7, 5) left unmapped: its west, north and south links are not links at all (112 - 3).
    DefectMap m(P);
    for (int x : {0, 1, 2}) m.add({DefectKind::Core, {x, 1}});
    for (int x : {3, 4}) m.add({DefectKind::Core, {x, 6}});
    const RepairResult r = rs.repair(s, m);
    ASSERT_EQ(r.physical_of({7, 5}), (Coord{-1, -1}));
    EXPECT_EQ(repair_links(r).links, 109);
  }
}

TEST(Repair, SpareRowsColsKnownCases) {
  const WaferSpec s = custom_wafer(6, 5, 2, 1);  // physical 8 x 6
  const auto& sc = repair_scheme("spare-rows-cols");
  const Grid L = s.logical(), P = s.physical();
  {  // Three failures in column 2 and one at (5, 4): drop column 2, then row 4 (rows first on a tie).
    DefectMap m(P);
    for (int y : {0, 2, 3}) m.add({DefectKind::Core, {2, y}});
    m.add({DefectKind::Sram, {5, 4}});
    const auto r = sc.repair(s, m);
    EXPECT_TRUE(r.complete) << r.reason;
    EXPECT_EQ(r.physical_of({2, 0}), (Coord{3, 0}));
    EXPECT_EQ(r.physical_of({4, 0}), (Coord{5, 0}));
    EXPECT_EQ(r.physical_of({0, 4}), (Coord{0, 5}));
    EXPECT_EQ(r.hops_east[L.index({1, 0})], 2);
    check_result(s, m, r, true);
  }
  {  // A row with 4 failures must be dropped (more than 2 spare columns); then two more columns.
    DefectMap m(P);
    for (int x : {0, 2, 4, 6}) m.add({DefectKind::Core, {x, 3}});
    m.add({DefectKind::Core, {1, 0}});
    m.add({DefectKind::Core, {7, 5}});
    const auto r = sc.repair(s, m);
    EXPECT_TRUE(r.complete) << r.reason;
    EXPECT_EQ(r.physical_of({0, 3}), (Coord{0, 4}));
    check_result(s, m, r, true);
  }
  {  // Failures on a diagonal: 4 lines needed, 3 available: incomplete, with a reason and a rectangle.
    DefectMap m(P);
    for (int i : {0, 1, 2, 3}) m.add({DefectKind::Core, {i, i}});
    const auto r = sc.repair(s, m);
    EXPECT_FALSE(r.complete);
    EXPECT_NE(r.reason.find("cannot all be covered"), std::string::npos) << r.reason;
    EXPECT_GT(r.usable.area(), 0);
    check_result(s, m, r, true);
  }
}

// Greedy may spend the spares on lines no cover uses; the exact search then finds a cover where one exists.
// (Until 2026-12-07 greedy alone: the first case took rows 7 and 8, which two tiles each share, and was called
// impossible to cover.) Against a brute force over every choice of rows and columns, on random maps.
TEST(Repair, SpareRowsColsFindsACoverWhereOneExists) {
  const auto& sc = repair_scheme("spare-rows-cols");
  {
    const WaferSpec s = custom_wafer(64, 64, 2, 2);
    DefectMap m(s.physical());
    for (Coord c : {Coord{10, 7}, Coord{10, 8}, Coord{20, 7}, Coord{20, 8}, Coord{1, 30}, Coord{2, 30}, Coord{3, 40},
                    Coord{4, 40}})
      m.add({DefectKind::Core, c});
    const auto r = sc.repair(s, m);
    EXPECT_TRUE(r.complete) << r.reason;  // columns 10 and 20, rows 30 and 40
    check_result(s, m, r, false);
    m.add({DefectKind::Core, {50, 50}});  // one more: no cover of 2 + 2 lines, and the search says so
    const auto q = sc.repair(s, m);
    EXPECT_FALSE(q.complete);
    EXPECT_NE(q.reason.find("cannot all be covered"), std::string::npos) << q.reason;
    check_result(s, m, q, false);
  }
  {  // No cover, and the bounds say so without searching: 31 tiles on a diagonal, then 40 rows of 5 (34 rows and
     // 42 columns cover at most 34 x 5 + 42 = 212 of the 231). The search's budget was spent on it before.
    const WaferSpec s = custom_wafer(300, 100, 42, 34);
    DefectMap m(s.physical());
    std::int32_t x = 0, y = 0;
    for (int i = 0; i < 31; ++i, ++x, ++y) m.add({DefectKind::Core, {x, y}});
    for (int i = 0; i < 40; ++i, ++y)
      for (int j = 0; j < 5; ++j, ++x) m.add({DefectKind::Core, {x, y}});
    const auto r = sc.repair(s, m);
    EXPECT_FALSE(r.complete);
    EXPECT_NE(r.reason.find("231 failed tiles cannot all be covered"), std::string::npos) << r.reason;
  }
  std::uint64_t rng = 99;
  auto next = [&](std::uint32_t n) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return std::int32_t((rng >> 33) % n);
  };
  int complete = 0, incomplete = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const std::int32_t sr = next(3), scols = next(3);
    const WaferSpec s = custom_wafer(5, 5, scols, sr);
    const Grid P = s.physical();
    DefectMap m(P);
    const std::int32_t n = 1 + next(7);
    for (std::int32_t k = 0; k < n; ++k) {
      const Coord c{next(std::uint32_t(P.width)), next(std::uint32_t(P.height))};
      if (!m.tile_failed(P.index(c))) m.add({DefectKind::Core, c});
    }
    // Brute force: some set of at most sr rows and scols columns holding every failed tile.
    bool exists = false;
    for (std::uint32_t rows = 0; rows < (1u << P.height) && !exists; ++rows) {
      if (std::popcount(rows) > sr) continue;
      for (std::uint32_t cols = 0; cols < (1u << P.width) && !exists; ++cols) {
        if (std::popcount(cols) > scols) continue;
        bool all = true;
        for (const Defect& d : m.defects()) all = all && (((rows >> d.at.y) & 1) || ((cols >> d.at.x) & 1));
        exists = all;
      }
    }
    const auto r = sc.repair(s, m);
    ASSERT_EQ(r.complete, exists) << "trial " << trial << ": " << r.reason;
    (exists ? complete : incomplete) += 1;
    check_result(s, m, r, true);
  }
  EXPECT_GT(complete, 50);
  EXPECT_GT(incomplete, 50);
}

TEST(Repair, LargestMappedRectangle) {
  const Grid g{5, 4};
  std::vector<TileIndex> m(g.size(), 0);
  m[g.index({2, 0})] = kNoTile;
  m[g.index({0, 3})] = kNoTile;
  EXPECT_EQ(repair::largest_mapped_rectangle(g, m), (Rect{1, 1, 4, 3}));  // x 1..4, y 1..3: 12 tiles
  std::fill(m.begin(), m.end(), kNoTile);
  EXPECT_EQ(repair::largest_mapped_rectangle(g, m).area(), 0);
}

// Row-shift success probability: Monte Carlo over generated maps against the exact formula of hw/yield.h.
TEST(Repair, RowShiftSuccessMatchesAnalytic) {
  const WaferSpec s = custom_wafer(24, 24, 2, 2);  // physical 26 x 26
  const int maps = 1500;
  for (auto model : {DefectModel::Poisson, DefectModel::NegBinomial}) {
    // About 1.2 tile-killing defects per row: a regime where both outcomes are common.
    const auto p = per_wafer(s, 1.2 * 26 / 0.9, model, 2.0);
    const double want = row_shift_success_probability(s, p);
    ASSERT_GT(want, 0.15);
    ASSERT_LT(want, 0.9);
    int ok = 0;
    for (int i = 0; i < maps; ++i)
      ok += repair_scheme("row-shift").repair(s, generate_defects(s, p, derive_seed(31, std::uint64_t(i)))).complete;
    EXPECT_NEAR(double(ok) / maps, want, 4 * std::sqrt(want * (1 - want) / maps)) << to_string(model);
  }
}
