#include "noc/routing/colors.h"

#include <gtest/gtest.h>

#include <set>

#include "hw/error.h"
#include "hw/random.h"
#include "noc/routing/multicast.h"
#include "noc/routing/route.h"

using namespace wafer::noc;
using wafer::hw::InputError;

namespace {

Flow unicast(const Fabric& f, Coord s, Coord d) {
  Flow fl;
  fl.src = f.grid().index(s);
  fl.route = as_edges(route(f, s, d));
  fl.sinks = {f.grid().index(d)};
  return fl;
}

std::set<TileIndex> routers_of(const Fabric& f, const Flow& fl) {
  std::vector<TileIndex> v;
  flow_routers(f, fl, v);
  return {v.begin(), v.end()};
}

}  // namespace

TEST(Colors, RandomFlowsNeverShareAColorAtARouterOrOnALink) {
  Fabric f = Fabric::perfect({10, 10});
  wafer::hw::Rng rng(5);
  Plan plan;
  for (int i = 0; i < 60; ++i) {
    Coord s{std::int32_t(rng.below(10)), std::int32_t(rng.below(10))};
    Coord d{std::int32_t(rng.below(10)), std::int32_t(rng.below(10))};
    plan.add(unicast(f, s, d));
  }
  plan.add([&] {
    Multicast m = multicast(f, {3, 3}, Rect{0, 0, 10, 10});
    Flow fl;
    fl.src = f.grid().index({3, 3});
    fl.route = m.edges;
    fl.sinks = m.sinks;
    return fl;
  }());
  ColorReport rep = assign_colors(plan, f, 64);
  EXPECT_TRUE(rep.fits) << rep.reason;
  for (std::size_t i = 0; i < plan.flows.size(); ++i)
    for (std::size_t j = i + 1; j < plan.flows.size(); ++j) {
      if (plan.flows[i].color != plan.flows[j].color) continue;
      auto a = routers_of(f, plan.flows[i]), b = routers_of(f, plan.flows[j]);
      for (TileIndex t : a) EXPECT_FALSE(b.count(t)) << "flows " << i << " and " << j << " at " << t;
      std::set<LinkId> la;
      for (auto& e : plan.flows[i].route) la.insert(e.link);
      for (auto& e : plan.flows[j].route) EXPECT_FALSE(la.count(e.link));
    }
  EXPECT_TRUE(check_colors(plan, f, 64).fits);
  // The broadcast touches every router, so it needs a color of its own.
  for (std::size_t i = 0; i + 1 < plan.flows.size(); ++i) EXPECT_NE(plan.flows[i].color, plan.flows.back().color);
  EXPECT_GE(rep.colors_used, rep.max_per_tile);
  // The per-router table agrees with the report.
  ColorTable ct = ColorTable::build(plan, f);
  std::uint32_t most = 0;
  for (TileIndex t = 0; t < f.grid().size(); ++t) most = std::max(most, ct.colors_at(t));
  EXPECT_EQ(most, rep.max_per_tile);
}

TEST(Colors, ChainAlternatesTwoColorsAndBudgetIsReported) {
  Fabric f = Fabric::perfect({8, 1});
  Plan plan;
  for (std::int32_t x = 7; x > 0; --x) plan.add(unicast(f, {x, 0}, {x - 1, 0}));
  ColorReport rep = assign_colors(plan, f, 24);
  EXPECT_TRUE(rep.fits);
  EXPECT_EQ(rep.colors_used, 2u);
  for (std::size_t i = 0; i < plan.flows.size(); ++i) EXPECT_EQ(plan.flows[i].color, i % 2);
  // Seven flows through one router need seven colors; a budget of 4 is exceeded, with the reason.
  Plan star;
  for (std::int32_t x = 0; x < 8; ++x)
    if (x != 3) star.add(unicast(f, {x, 0}, {3, 0}));
  ColorReport r2 = assign_colors(star, f, 4);
  EXPECT_FALSE(r2.fits);
  EXPECT_EQ(r2.max_per_tile, 7u);
  EXPECT_EQ(r2.busiest, 3u);
  EXPECT_NE(r2.reason.find("finds no free color among 4"), std::string::npos) << r2.reason;
  // A clash in a given coloring is named.
  star.flows[1].color = star.flows[0].color;
  ColorReport r3 = check_colors(star, f, 24);
  EXPECT_FALSE(r3.fits);
  EXPECT_NE(r3.reason.find("flows 0 and 1 share color"), std::string::npos) << r3.reason;
  EXPECT_THROW(assign_colors(star, f, 0), InputError);
}

TEST(Colors, ColorTableListsInputAndOutputPortsPerRouter) {
  Fabric f = Fabric::perfect({5, 5});
  Plan plan;
  plan.add(unicast(f, {0, 0}, {2, 1}));  // E, E, S
  assign_colors(plan, f, 24);
  ColorTable ct = ColorTable::build(plan, f);
  auto at_src = ct.at(0);
  ASSERT_EQ(at_src.size(), 1u);
  EXPECT_EQ(at_src[0].in, Dir::Ramp);
  EXPECT_EQ(at_src[0].out_ports, 1u << unsigned(Dir::East));
  auto turn = ct.at(f.grid().index({2, 0}));
  ASSERT_EQ(turn.size(), 1u);
  EXPECT_EQ(turn[0].in, Dir::East);
  EXPECT_EQ(turn[0].out_ports, 1u << unsigned(Dir::South));
  auto sink = ct.at(f.grid().index({2, 1}));
  ASSERT_EQ(sink.size(), 1u);
  EXPECT_EQ(sink[0].out_ports, 1u << unsigned(Dir::Ramp));
  EXPECT_EQ(ct.colors_at(f.grid().index({4, 4})), 0u);
}
