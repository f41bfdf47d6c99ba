#include "noc/routing/collectives.h"

#include <gtest/gtest.h>

#include <set>

#include "hw/error.h"
#include "noc/routing/route.h"
#include "tests/routing/test_util.h"

using namespace wafer::noc;
using wafer::hw::InputError;
using wafer::hw::Rect;
using wafer::noc::test::acyclic;

namespace {

// Every flow of `c`: a route contiguous from its source over healthy links with west-first turns, parents
// first, sinks on the route; triggers name earlier flows and a sink of theirs; colors legal.
void check_well_formed(const Plan& plan, const Fabric& f, const Collective& c, std::uint32_t budget) {
  const Grid& g = f.grid();
  std::set<std::pair<LinkId, LinkId>> cdg;
  for (std::uint32_t i = c.first_flow; i < c.first_flow + c.flows; ++i) {
    const Flow& fl = plan.flows[i];
    std::vector<TileIndex> end(fl.route.size());
    std::set<TileIndex> reached{fl.src};
    for (std::size_t e = 0; e < fl.route.size(); ++e) {
      const RouteEdge& re = fl.route[e];
      ASSERT_LT(re.parent, std::int32_t(e));
      TileIndex from = re.parent == kFromSource ? fl.src : end[std::size_t(re.parent)];
      Dir in = re.parent == kFromSource ? Dir::Ramp : link_dir(fl.route[std::size_t(re.parent)].link);
      ASSERT_EQ(link_tile(re.link), from);
      EXPECT_TRUE(f.link_ok(from, link_dir(re.link)));
      EXPECT_TRUE(turn_allowed(in, link_dir(re.link)));
      if (re.parent != kFromSource) cdg.insert({fl.route[std::size_t(re.parent)].link, re.link});
      end[e] = g.index(wafer::hw::step(g.coord(from), link_dir(re.link)));
      reached.insert(end[e]);
    }
    EXPECT_FALSE(fl.sinks.empty());
    for (TileIndex s : fl.sinks) EXPECT_TRUE(reached.count(s));
    for (const Trigger& t : fl.after) {
      EXPECT_LT(t.flow, i);  // the plan is a DAG in flow order
      const auto& sk = plan.flows[t.flow].sinks;
      EXPECT_NE(std::find(sk.begin(), sk.end(), t.tile), sk.end());
      EXPECT_EQ(t.tile, fl.src);  // a tile forwards what reached its own core
    }
  }
  EXPECT_TRUE(acyclic(f.links(), cdg));
  EXPECT_TRUE(c.colors.fits) << c.colors.reason;
  EXPECT_TRUE(check_colors(plan, f, budget).fits);
  EXPECT_EQ(c.final_flows.empty(), c.flows == 0);
}

}  // namespace

TEST(Collectives, ZeroLoadLatencyEqualsTheFormulaOnAHealthyMesh) {
  Fabric f = Fabric::perfect({9, 7});
  for (CollectiveParams p : {CollectiveParams{1, 2, 24, 0}, CollectiveParams{1, 2, 24, 2}, CollectiveParams{3, 5, 24, 3}})
    for (std::uint32_t w : {1u, 8u, 64u})
      for (Rect r : {Rect{0, 0, 9, 7}, Rect{2, 1, 4, 4}, Rect{1, 3, 8, 1}, Rect{4, 0, 1, 7}, Rect{0, 0, 2, 2}}) {
        SCOPED_TRACE("rect " + std::to_string(r.x0) + "," + std::to_string(r.y0) + " " + std::to_string(r.w) + "x" +
                     std::to_string(r.h) + " w " + std::to_string(w) + " h " + std::to_string(p.hop_latency) +
                     " R " + std::to_string(p.ramp_latency));
        std::vector<Collective> cs;
        Plan plan;
        auto run = [&](Collective c) {
          EXPECT_EQ(c.latency, c.formula) << c.name;
          check_well_formed(plan, f, c, p.colors);
          cs.push_back(c);
        };
        // Each collective in a plan of its own, so the formulas are checked in isolation.
        run(broadcast(plan, f, p, {r.x0 + r.w / 2, r.y0 + r.h / 2}, r, w));
        plan = {};
        run(broadcast(plan, f, p, {8, 6}, r, w));  // root outside (or at a corner of) the rectangle
        plan = {};
        run(broadcast_rows(plan, f, p, r, r.x0 + r.w / 3, w));
        plan = {};
        run(broadcast_columns(plan, f, p, r, r.y0 + r.h - 1, w));
        plan = {};
        if (r.w >= 2) {
          run(reduce_rows(plan, f, p, r, w));
          plan = {};
        }
        run(reduce_chain(plan, f, p, r, w));
        plan = {};
        run(allreduce(plan, f, p, r, w, ReduceKind::Chain));
        plan = {};
        run(allgather(plan, f, p, r, w));
        plan = {};
        bool pow2 = (r.w & (r.w - 1)) == 0 && (r.h & (r.h - 1)) == 0;
        Collective t = reduce_tree(plan, f, p, r, w);
        check_well_formed(plan, f, t, p.colors);
        if (pow2) {
          EXPECT_EQ(t.latency, t.formula);
        }
        plan = {};
        Collective a = allreduce(plan, f, p, r, w, ReduceKind::Tree);
        check_well_formed(plan, f, a, p.colors);
        if (pow2) {
          EXPECT_EQ(a.latency, a.formula);
        }
        if (::testing::Test::HasFailure()) return;
      }
}

TEST(Collectives, ChainsStreamRatherThanStoreAndForward) {
  Fabric f = Fabric::perfect({16, 1});
  Plan plan;
  CollectiveParams p{1, 2, 24, 2};
  Collective c = reduce_rows(plan, f, p, Rect{0, 0, 16, 1}, 64);
  // 15 flows of one hop and two ramps each, 14 stages, 63 cycles of tail: N x (hop + 2R + stage) + w, not
  // N x w.
  EXPECT_EQ(c.latency, 15u * (1 + 2 * 2) + 14u * 2 + 63);
  EXPECT_LT(c.latency, 16u * 64);
  EXPECT_EQ(c.flows, 15u);
  EXPECT_EQ(c.colors.colors_used, 2u);  // neighbours' one-hop flows meet at a router: two alternating colors
  for (std::size_t i = 1; i < plan.flows.size(); ++i) {
    ASSERT_EQ(plan.flows[i].after.size(), 1u);
    EXPECT_EQ(plan.flows[i].after[0].kind, Trigger::Kind::Stream);
    EXPECT_EQ(plan.flows[i].after[0].delay, 2u);
  }
  // A tree on the same row: log depth, Complete triggers.
  Plan tp;
  Collective t = reduce_tree(tp, f, p, Rect{0, 0, 16, 1}, 64);
  EXPECT_EQ(t.formula, 15u + 4u * 2 * 2 + 4u * 63 + 3u * 2);  // 4 levels, each one flow with its 2 ramps
  EXPECT_EQ(t.latency, t.formula);
  EXPECT_EQ(t.final_flows.size(), 4u);  // the root receives once per level
}

TEST(Collectives, RepairedLinksAndDetoursCountInTheLatency) {
  Fabric f = Fabric::perfect({8, 4});
  f.set_hops(f.grid().index({3, 1}), Dir::East, 3);  // a repaired link spanning 3 physical hops
  CollectiveParams p{2, 2, 24};
  Plan plan;
  Collective c = reduce_rows(plan, f, p, Rect{0, 1, 8, 1}, 4);
  EXPECT_EQ(c.latency, c.formula + 2u * 2);  // two extra physical hops x hop latency
  // A failed link in the middle of the row: the chain's eastward flow detours (2 extra links).
  Fabric g = Fabric::perfect({8, 4});
  g.fail_link(g.grid().index({3, 1}), Dir::East);
  Plan plan2;
  Collective d = reduce_rows(plan2, g, p, Rect{0, 1, 8, 1}, 4);
  EXPECT_EQ(d.latency, d.formula + 2u * 2);
  check_well_formed(plan2, g, d, p.colors);
}

TEST(Collectives, CutOffTilesAndBadArgumentsAreInputErrors) {
  Fabric f = Fabric::perfect({6, 6});
  f.fail_router(f.grid().index({2, 2}));
  Plan plan;
  CollectiveParams p{1, 2, 24};
  try {
    broadcast(plan, f, p, {0, 0}, Rect{0, 0, 6, 6}, 4);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("(2,2)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(reduce_chain(plan, f, p, Rect{0, 0, 6, 6}, 4), InputError);
  Fabric h = Fabric::perfect({6, 6});
  EXPECT_THROW(reduce_chain(plan, h, p, Rect{0, 0, 1, 1}, 4), InputError);
  EXPECT_THROW(reduce_chain(plan, h, p, Rect{0, 0, 7, 1}, 4), InputError);
  EXPECT_THROW(reduce_chain(plan, h, p, Rect{0, 0, 3, 1}, 0), InputError);
  EXPECT_THROW(broadcast_rows(plan, h, p, Rect{0, 0, 3, 3}, 5, 1), InputError);
}

TEST(Collectives, ZeroLoadFollowsTheTriggerConventions) {
  Fabric f = Fabric::perfect({6, 1});
  const Grid& g = f.grid();
  Plan plan;
  Flow a;
  a.src = 0;
  a.route = as_edges(route(f, {0, 0}, {3, 0}));
  a.sinks = {g.index({3, 0})};
  a.wavelets = 8;
  a.release = 10;
  plan.add(a);
  Flow b;
  b.src = g.index({3, 0});
  b.route = as_edges(route(f, {3, 0}, {5, 0}));
  b.sinks = {g.index({5, 0})};
  b.wavelets = 4;
  b.after = {Trigger{0, g.index({3, 0}), Trigger::Kind::Stream, 2}};
  plan.add(b);
  Flow c = b;
  c.after = {Trigger{0, g.index({3, 0}), Trigger::Kind::Complete, 2}};
  plan.add(c);
  ZeroLoad z = zero_load(plan, f, 1, 0);
  EXPECT_EQ(z.head_at(0, 3), 13u);  // 10 + 3 hops
  EXPECT_EQ(z.tail_at(0, 3), 20u);  // + 7
  EXPECT_EQ(z.start[1], 15u);       // head + 2
  EXPECT_EQ(z.lag[1], 7u);          // its tail leaves no earlier than 20 + 2 = 22
  EXPECT_EQ(z.tail_at(1, 5), 24u);
  EXPECT_EQ(z.start[2], 22u);       // tail + 2
  EXPECT_EQ(z.lag[2], 3u);
  EXPECT_EQ(z.end, 27u);
  EXPECT_THROW(z.head_at(0, 4), InputError);
  // Ramps of 2: every flow with a route pays 2 x 2 more per flow on the way; a flow to its own tile (no
  // route) none.
  Flow self;
  self.src = g.index({5, 0});
  self.sinks = {self.src};
  self.wavelets = 4;
  self.after = {Trigger{1, g.index({5, 0}), Trigger::Kind::Complete, 1}};
  plan.add(self);
  ZeroLoad zr = zero_load(plan, f, 1, 2);
  EXPECT_EQ(zr.head_at(0, 3), 17u);  // 10 + 2 + 3 hops + 2
  EXPECT_EQ(zr.tail_at(0, 3), 24u);
  EXPECT_EQ(zr.start[1], 19u);
  EXPECT_EQ(zr.lag[1], 7u);          // no earlier than 24 + 2 = 26
  EXPECT_EQ(zr.tail_at(1, 5), 32u);  // 19 + 2 + 2 + 2 + 7
  EXPECT_EQ(zr.start[2], 26u);
  EXPECT_EQ(zr.start[3], 33u);       // flow 1's tail + 1
  EXPECT_EQ(zr.head_at(3, g.index({5, 0})), 33u);  // at once
  EXPECT_EQ(zr.end, 36u);            // flow 3's tail (flow 2's: 26 + 6 + 3 = 35)
  plan.flows[0].after = {Trigger{2, g.index({5, 0}), Trigger::Kind::Complete, 0}};
  EXPECT_THROW(zero_load(plan, f, 1, 0), InputError);  // a cycle
}

// ---- 1-D allreduces along one row ----------------------------------------------------------------------

namespace {
// Row segment of P tiles starting at (2, 1): the functions must not assume x0 = 0.
Rect row_of(std::int32_t P) { return Rect{2, 1, P, 1}; }
}  // namespace

TEST(RowAllreduces, ZeroLoadLatencyEqualsTheFormulaOnHealthyRows) {
  Fabric f = Fabric::perfect({40, 3});
  // (s 0 acts as 1 in the Plans and the formulas alike: a core reacts the cycle after an arrival at the earliest)
  for (CollectiveParams p : {CollectiveParams{1, 2, 24, 0}, CollectiveParams{1, 2, 24, 2}, CollectiveParams{3, 5, 24, 3},
                             CollectiveParams{1, 0, 24, 0}, CollectiveParams{1, 0, 24, 2}})
    for (std::uint32_t w : {1u, 8u})
      for (std::int32_t P : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 17, 24, 25, 33, 36}) {
        SCOPED_TRACE("P " + std::to_string(P) + " w " + std::to_string(w) + " h " + std::to_string(p.hop_latency) +
                     " R " + std::to_string(p.ramp_latency) + " s " + std::to_string(p.stage_latency));
        auto check = [&](const Plan& plan, const Collective& c) {
          EXPECT_EQ(c.latency, c.formula) << c.name;
          check_well_formed(plan, f, c, p.colors);
          // Every tile but the root sends once, the root multicasts the sum: P flows (none for one tile).
          EXPECT_EQ(c.flows, P < 2 ? 0u : std::uint32_t(P)) << c.name;
          if (P < 2) {
            EXPECT_EQ(c.latency, 0u) << c.name;
          }
        };
        Plan a;
        Collective ch = allreduce_row_chain(a, f, p, row_of(P), w);
        check(a, ch);
        EXPECT_EQ(ch.formula, allreduce_row_chain_formula(p, P, w));
        EXPECT_LE(ch.colors.colors_used, 3u);  // two alternating along the chain, one for the multicast
        Plan b;
        Collective ce = allreduce_row_centre(b, f, p, row_of(P), w);
        check(b, ce);
        EXPECT_EQ(ce.formula, allreduce_row_centre_formula(p, P, w));
        EXPECT_LE(ce.colors.colors_used, 4u);
        for (std::int32_t g : {0, 1, 2, 3, 4, 5, 7, P, P + 2}) {
          SCOPED_TRACE("group " + std::to_string(g));
          Plan t;
          Collective tw = allreduce_row_two_level(t, f, p, row_of(P), w, g);
          check(t, tw);
          EXPECT_EQ(tw.formula, allreduce_row_two_level_formula(p, P, w, g));
          EXPECT_LE(tw.colors.colors_used, 7u);  // a root-to-root flow needs colors apart from its chains
          // One group is the centre scheme; groups of one tile are too (every tile a root).
          if (g >= P || g == 1) {
            EXPECT_EQ(tw.latency, ce.latency);
          }
        }
        if (::testing::Test::HasFailure()) return;
      }
}

// Hand-computed (h 1, R 2, s 2, w 1; a one-hop flow's head lands 2R + h = 5 after it leaves, a stage adds 2).
// P = 9, groups of 3 (roots at offsets 1, 4, 7): the group chains' heads reach the roots at 5; roots 1 and 7
// send at 7 to root 4 (3 hops): head 14; root 4 streams the sum out at 16 over the row, 4 hops to the
// farthest tile: 16 + 2 + 4 + 2 = 24. The centre scheme: chains of 4 stages to offset 4: heads at 4 x 7 - 2
// = 26, multicast at 28, 4 hops: 36. The chain: 8 stages to the east end (54), multicast at 56, 8 hops: 68.
// Luczynski et al.'s model (T = max(C, E/N + L) + (2 T_R + 1) D) gives B + (2 T_R + 2)(P - 1) for the chain
// reduce and B + P + 2 T_R for the 1-D broadcast from one end: at h = 1, s = 1, B = w this project's
// reduce_rows on one row is 2 less ((P-1)(h + 2R) + (P-2)s + w - 1: the tail follows w - 1 behind the head
// where they count B cycles, and the root's own add is not charged), and broadcast_rows from one end too
// ((P-1)h + 2R + w - 1).
TEST(RowAllreduces, HandComputedAndAgainstLuczynskisFormulas) {
  Fabric f = Fabric::perfect({40, 3});
  const CollectiveParams p{1, 2, 24, 2};
  Plan a, b, c;
  EXPECT_EQ(allreduce_row_two_level(a, f, p, row_of(9), 1, 3).latency, 24u);
  EXPECT_EQ(allreduce_row_centre(b, f, p, row_of(9), 1).latency, 36u);
  EXPECT_EQ(allreduce_row_chain(c, f, p, row_of(9), 1).latency, 68u);
  EXPECT_EQ(two_level_group(9, 0), 3);
  EXPECT_EQ(two_level_group(8, 0), 3);   // round(2.83)
  EXPECT_EQ(two_level_group(6, 0), 2);   // round(2.45)
  EXPECT_EQ(two_level_group(5, 9), 5);   // at most P
  EXPECT_THROW(two_level_group(5, -1), InputError);
  const CollectiveParams unit{1, 1, 24, 2};  // their unit costs: one cycle per hop and per add
  for (std::int32_t P : {2, 5, 16}) {
    const std::uint64_t B = 32;
    Plan r, q;
    EXPECT_EQ(reduce_rows(r, f, unit, row_of(P), std::uint32_t(B)).latency, B + (2 * 2 + 2) * std::uint64_t(P - 1) - 2)
        << P;
    EXPECT_EQ(broadcast_rows(q, f, unit, row_of(P), row_of(P).x0, std::uint32_t(B)).latency,
              B + std::uint64_t(P) + 2 * 2 - 2)
        << P;
  }
}

// The two-level tree against the centre chain, at the boundary (h 1, s 2, w 1, groups of 4): with ramps of
// 2 it wins at P = 8 (34 against 36 cycles) and not at P = 7 (32 against 28); at P = 8 it wins only from
// R = 2 on (R = 1: 26 and 26, a tie; R = 0: 18 against 16): the longer root-to-root hops pay off once
// every stage they save costs its two ramps.
TEST(RowAllreduces, TwoLevelBeatsTheCentreChainOnlyWhenRampsAreDear) {
  Fabric f = Fabric::perfect({40, 3});
  auto both = [&](std::uint32_t R, std::int32_t P) {
    const CollectiveParams p{1, 2, 24, R};
    Plan a, b;
    return std::pair{allreduce_row_two_level(a, f, p, row_of(P), 1, 4).latency, allreduce_row_centre(b, f, p, row_of(P), 1).latency};
  };
  EXPECT_EQ(both(2, 8), (std::pair<std::uint64_t, std::uint64_t>{34, 36}));
  EXPECT_EQ(both(2, 7), (std::pair<std::uint64_t, std::uint64_t>{32, 28}));
  EXPECT_EQ(both(1, 8), (std::pair<std::uint64_t, std::uint64_t>{26, 26}));
  EXPECT_EQ(both(0, 8), (std::pair<std::uint64_t, std::uint64_t>{18, 16}));
}

TEST(RowAllreduces, BadRowsAreInputErrors) {
  Fabric f = Fabric::perfect({8, 3});
  const CollectiveParams p;
  Plan plan;
  EXPECT_THROW(allreduce_row_chain(plan, f, p, Rect{0, 0, 4, 2}, 1), InputError);   // two rows
  EXPECT_THROW(allreduce_row_centre(plan, f, p, Rect{5, 0, 4, 1}, 1), InputError);  // leaves the mesh
  EXPECT_THROW(allreduce_row_two_level(plan, f, p, Rect{0, 0, 0, 1}, 1), InputError);
  EXPECT_THROW(allreduce_row_two_level(plan, f, p, Rect{0, 0, 4, 1}, 0), InputError);  // no wavelets
  EXPECT_THROW(allreduce_row_two_level(plan, f, p, Rect{0, 0, 4, 1}, 1, -2), InputError);
  try {
    allreduce_row_centre(plan, f, p, Rect{5, 0, 4, 1}, 1);
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("allreduce_row_centre"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(allreduce_row_chain(plan, f, p, Rect{4, 2, 4, 1}, 1));  // the limit: ends at x = 7
  EXPECT_TRUE(plan.flows.size() == 4u);
}
