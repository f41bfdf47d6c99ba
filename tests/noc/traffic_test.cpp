// Synthetic traffic (noc/routing/traffic.h): seeded, the BookSim/Noxim rate convention, each pattern's
// destinations, and the refusals.
#include <gtest/gtest.h>

#include <cmath>

#include "hw/error.h"
#include "noc/routing/traffic.h"

namespace wafer::noc {
namespace {

TrafficParams tp(Pattern p, double rate, std::uint64_t cycles = 400, std::uint64_t seed = 9) {
  TrafficParams t;
  t.pattern = p;
  t.rate = rate;
  t.cycles = cycles;
  t.seed = seed;
  t.burst_wavelets = 8;
  return t;
}

TEST(Traffic, EveryPatternHasAName) {
  std::vector<std::string> names;
  for (Pattern p : all_patterns()) {
    names.emplace_back(to_string(p));
    EXPECT_EQ(parse_pattern(to_string(p)), p);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"uniform", "transpose", "hotspot", "neighbour", "row-reduce",
                                             "column-broadcast"}));
  EXPECT_THROW(parse_pattern("tornado"), hw::InputError);
}

TEST(Traffic, SameSeedSamePlanOtherSeedOtherPlan) {
  Fabric f = Fabric::perfect({16, 16});
  Plan a = make_traffic(f, tp(Pattern::Uniform, 0.05)), b = make_traffic(f, tp(Pattern::Uniform, 0.05));
  Plan c = make_traffic(f, tp(Pattern::Uniform, 0.05, 400, 10));
  ASSERT_EQ(a.flows.size(), b.flows.size());
  bool same_c = a.flows.size() == c.flows.size();
  for (std::size_t i = 0; i < a.flows.size(); ++i) {
    EXPECT_EQ(a.flows[i].src, b.flows[i].src);
    EXPECT_EQ(a.flows[i].sinks, b.flows[i].sinks);
    EXPECT_EQ(a.flows[i].release, b.flows[i].release);
    if (same_c && i < c.flows.size()) same_c = a.flows[i].sinks == c.flows[i].sinks;
  }
  EXPECT_FALSE(same_c);
}

TEST(Traffic, RateIsWaveletsPerTilePerCycle) {
  Fabric f = Fabric::perfect({16, 16});
  for (double rate : {0.02, 0.2}) {
    Plan p = make_traffic(f, tp(Pattern::Uniform, rate, 1000));
    double wavelets = 0;
    for (const Flow& fl : p.flows) {
      wavelets += fl.wavelets;
      EXPECT_LT(fl.release, 1000u);
      EXPECT_NE(fl.sinks[0], fl.src);
    }
    double offered = wavelets / (256.0 * 1000.0);
    // Binomial: n = 256000 trials, p = rate / 8; 5 standard deviations.
    double sd = 8 * std::sqrt(256000.0 * rate / 8 * (1 - rate / 8)) / 256000.0;
    EXPECT_NEAR(offered, rate, 5 * sd) << "rate " << rate;
  }
}

TEST(Traffic, PatternDestinations) {
  Fabric f = Fabric::perfect({16, 16});
  const Grid& g = f.grid();
  Plan t = make_traffic(f, tp(Pattern::Transpose, 0.1));
  ASSERT_FALSE(t.flows.empty());
  for (const Flow& fl : t.flows) {
    Coord s = g.coord(fl.src), d = g.coord(fl.sinks[0]);
    EXPECT_EQ(d.x, s.y);
    EXPECT_EQ(d.y, s.x);
  }
  Plan n = make_traffic(f, tp(Pattern::Neighbour, 0.1));
  for (const Flow& fl : n.flows) {
    Coord s = g.coord(fl.src), d = g.coord(fl.sinks[0]);
    EXPECT_EQ(std::abs(s.x - d.x) + std::abs(s.y - d.y), 1);
    EXPECT_EQ(fl.route.size(), 1u);
  }
  Plan h = make_traffic(f, tp(Pattern::Hotspot, 0.1, 1000));
  double hot = 0;
  for (const Flow& fl : h.flows) hot += fl.sinks[0] == g.index({8, 8});
  EXPECT_NEAR(hot / double(h.flows.size()), 0.25 + 0.75 / 255, 0.03);
  Plan c = make_traffic(f, tp(Pattern::ColumnBroadcast, 0.05));
  for (const Flow& fl : c.flows) {
    EXPECT_EQ(fl.sinks.size(), 15u);
    EXPECT_EQ(fl.route.size(), 15u) << "one link occupation per link";
    for (TileIndex s : fl.sinks) EXPECT_EQ(g.coord(s).x, g.coord(fl.src).x);
  }
  Plan r = make_traffic(f, tp(Pattern::RowReduce, 0.1));
  ASSERT_EQ(r.flows.size() % 15, 0u);
  for (std::size_t i = 0; i < r.flows.size(); ++i) {
    const Flow& fl = r.flows[i];
    EXPECT_EQ(g.coord(fl.sinks[0]).x, g.coord(fl.src).x + 1);
    if (i % 15 == 0) {
      EXPECT_TRUE(fl.after.empty());
    } else {
      ASSERT_EQ(fl.after.size(), 1u);
      EXPECT_EQ(fl.after[0].kind, Trigger::Kind::Stream);
      EXPECT_EQ(fl.after[0].flow, i - 1);
    }
  }
}

TEST(Traffic, Refusals) {
  Fabric f = Fabric::perfect({16, 16});
  EXPECT_THROW(make_traffic(f, tp(Pattern::Uniform, 1.01)), hw::InputError);
  EXPECT_THROW(make_traffic(f, tp(Pattern::Uniform, -0.01)), hw::InputError);
  EXPECT_THROW(make_traffic(f, tp(Pattern::Uniform, std::nan(""))), hw::InputError);
  EXPECT_THROW(make_traffic(f, tp(Pattern::Uniform, 0.1, 0)), hw::InputError);
  TrafficParams z = tp(Pattern::Uniform, 0.1);
  z.burst_wavelets = 0;
  EXPECT_THROW(make_traffic(f, z), hw::InputError);
  // Too big to hold: refused before allocating.
  Fabric big = Fabric::perfect({1024, 1024});
  try {
    make_traffic(big, tp(Pattern::Uniform, 1.0, 100000));
    FAIL();
  } catch (const hw::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("route edges"), std::string::npos);
  }
  // A cut mesh: the error names the tiles.
  Fabric cut = Fabric::perfect({8, 8});
  for (std::int32_t x = 0; x < 8; ++x) cut.fail_link(cut.grid().index({x, 3}), Dir::South);
  try {
    make_traffic(cut, tp(Pattern::Uniform, 0.2));
    FAIL();
  } catch (const hw::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot reach"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace wafer::noc
