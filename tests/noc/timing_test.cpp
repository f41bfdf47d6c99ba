// Hand-computed timings, each in both fidelities and with ramps of R = 0 and R = 2 cycles, probed at the
// boundary: through noc::Network the arrival is not reported when the model has run up to the cycle
// before it, and is reported once the cycle of arrival has run (approx reports as the head takes the
// sink's delivery ramp, cycle as the tail does: R cycles before they reach the core; both carry the head
// and tail cycles at the core). Rules (noc/mesh.h): h hops cost h x hop_latency, each ramp (core ->
// router, router -> core) R, the tail follows lag = wavelets - 1 behind, ramps carry one wavelet per
// cycle; a burst a tile sends to itself pays no ramp latency.
#include <gtest/gtest.h>

#include "hw/error.h"
#include "noc/cycle.h"
#include "noc/mesh.h"
#include "noc/routing/traffic.h"
#include "noc_test_util.h"

namespace wafer::noc {
namespace {

using test::Recorder;

class Timing : public ::testing::TestWithParam<Fidelity> {
 protected:
  std::unique_ptr<Mesh> mesh(const Fabric& f, std::uint32_t hop = 1, std::uint32_t stage = 2, std::uint32_t ramp = 2) {
    return make_mesh(GetParam(), f, test::params(hop, stage, ramp));
  }
  // The cycle at which the model tells its client about an arrival with this head and tail at the core,
  // `ramp` being the delivery ramp's latency for it (0 for a burst to the tile itself).
  Cycle reported(Cycle head, Cycle tail, Cycle ramp) const {
    return (GetParam() == Fidelity::Approx ? head : tail) - ramp;
  }

  // Sends one burst through the Network interface and checks it arrives exactly at (head, tail): not
  // seen after running to the cycle before, seen after running the cycle itself.
  void probe_unicast(Mesh& m, TileIndex src, Coord dst, std::uint32_t wavelets, Cycle at, Cycle head, Cycle tail) {
    m.reset();
    Recorder rec(m);
    m.send({src, {Destination::Kind::Tile, dst, 1}, wavelets, 0, 0, 7}, at);
    const bool self = m.fabric().grid().index(dst) == src;
    Cycle r = reported(head, tail, self ? 0 : m.params().ramp_latency);
    m.run_until(r);
    EXPECT_TRUE(rec.arrivals.empty()) << "arrival reported before cycle " << r;
    m.run_until(r + 1);
    ASSERT_EQ(rec.arrivals.size(), 1u) << "no arrival by the end of cycle " << r;
    EXPECT_EQ(rec.arrivals[0].head, head);
    EXPECT_EQ(rec.arrivals[0].tail, tail);
    EXPECT_EQ(rec.arrivals[0].sink, m.fabric().grid().index(dst));
    m.run();
    EXPECT_EQ(m.stats().bursts, 1u);
    EXPECT_EQ(m.stats().wait_cycles, 0u);
  }
};

TEST_P(Timing, OneBurstOverKHops) {
  Fabric f = Fabric::perfect({16, 8});
  for (std::uint32_t ramp : {0u, 2u})
    for (std::uint32_t hop : {1u, 3u}) {
      auto m = mesh(f, hop, 2, ramp);
      const std::int32_t k = 9;
      const std::uint32_t w = 5;
      // Plan: head at release + 2R + k x hop, tail w - 1 later.
      Plan p;
      add_unicast(p, f, {2, 3}, {2 + 7, 3 - 2}, w, 4);
      auto t = m->execute(p);
      const Cycle head = 4 + 2 * ramp + k * hop;
      EXPECT_EQ(t[0].inject, 4u);
      EXPECT_EQ(t[0].head, head) << "hop latency " << hop << ", ramp " << ramp;
      EXPECT_EQ(t[0].tail, head + w - 1);
      EXPECT_EQ(t[0].wait, 0u);
      probe_unicast(*m, f.grid().index({2, 3}), {9, 1}, w, 4, head, head + w - 1);
    }
}

// The ramp rule at its boundary: on an idle mesh a burst injected at t over k hops has its head at the
// core at exactly t + 2R + k x hop (not a cycle earlier: a Stream stage behind it, delay s, starts at
// exactly head + s, and its own head lands at head + s + 2R + k' x hop); a burst a tile sends to itself
// pays no ramp (head t, tail t + w - 1), whatever R.
TEST_P(Timing, RampLatencyAtBothEndsNoneForASelfSend) {
  Fabric f = Fabric::perfect({12, 6});
  const Grid& g = f.grid();
  for (std::uint32_t ramp : {0u, 1u, 2u, 5u}) {
    auto m = mesh(f, 1, 2, ramp);
    const std::uint32_t w = 6, s = 3;
    Plan p;
    const std::uint32_t a = add_unicast(p, f, {1, 1}, {5, 2}, w, 7);  // 5 hops
    const std::uint32_t b = add_unicast(p, f, {5, 2}, {5, 5}, w, 0);  // 3 hops, streamed out of a
    p.flows[b].after.push_back({a, g.index({5, 2}), Trigger::Kind::Stream, s});
    const std::uint32_t self = add_unicast(p, f, {8, 4}, {8, 4}, w, 7);  // no route
    auto t = m->execute(p);
    const Cycle head_a = 7 + 2 * ramp + 5;
    EXPECT_EQ(t[a].head, head_a) << "ramp " << ramp;
    EXPECT_EQ(t[a].tail, head_a + w - 1);
    EXPECT_EQ(t[b].ready, head_a + s) << "the stage starts s after the head at the core, not the router";
    EXPECT_EQ(t[b].inject, head_a + s);
    EXPECT_EQ(t[b].head, head_a + s + 2 * ramp + 3);
    EXPECT_EQ(t[b].tail, t[b].head + w - 1);
    EXPECT_EQ(t[self].inject, 7u);
    EXPECT_EQ(t[self].head, 7u) << "a burst to the tile itself pays no ramp";
    EXPECT_EQ(t[self].tail, 7u + w - 1);
    for (FlowTiming x : t) EXPECT_EQ(x.wait, 0u);
    // Through the Network: the same cycles, reported when they are fixed.
    probe_unicast(*m, g.index({1, 1}), {5, 2}, w, 7, head_a, head_a + w - 1);
    probe_unicast(*m, g.index({8, 4}), {8, 4}, w, 7, 7, 7 + w - 1);
  }
}

// Both ramps serialise one core's bursts at the router's end, in order: a burst to the tile itself queued
// behind one leaving over the fabric waits until that one's tail has entered the router (R + w later); a
// fabric burst behind a self-send of w' <= R wavelets does not wait at all (the self-send is through the
// router's end of the ramp before the other's head gets there), one of w' = R + 1 waits one cycle.
TEST_P(Timing, RampsSerialiseAtTheRoutersEnd) {
  Fabric f = Fabric::perfect({8, 4});
  const std::uint32_t R = 2, w = 5;
  auto m = mesh(f, 1, 2, R);
  {
    Plan p;
    const std::uint32_t out = add_unicast(p, f, {2, 1}, {5, 1}, w, 10);
    const std::uint32_t self = add_unicast(p, f, {2, 1}, {2, 1}, 3, 10);
    auto t = m->execute(p);
    EXPECT_EQ(t[out].inject, 10u);
    EXPECT_EQ(t[out].head, 10u + 2 * R + 3);
    EXPECT_EQ(t[self].inject, 10u + R + w);
    EXPECT_EQ(t[self].head, 10u + R + w);
  }
  for (std::uint32_t ws : {R, R + 1}) {
    Plan p;
    const std::uint32_t self = add_unicast(p, f, {2, 1}, {2, 1}, ws, 10);
    const std::uint32_t out = add_unicast(p, f, {2, 1}, {5, 1}, w, 10);
    auto t = m->execute(p);
    EXPECT_EQ(t[self].head, 10u);
    EXPECT_EQ(t[out].inject, 10u + (ws - R)) << "self-send of " << ws;
    EXPECT_EQ(t[out].head, 10u + (ws - R) + 2 * R + 3) << "self-send of " << ws;
  }
}

TEST_P(Timing, TwoBurstsContendForOneLink) {
  // B enters (1,0)'s router at R and holds link (1,0)->(2,0) eastwards for its w cycles. A enters (0,0)'s
  // router at R and reaches (1,0) at R + 1: it waits until B's occupancy ends (R + w), i.e. w - 1 cycles,
  // then follows B to (3,0): head at the router R + w + 2, at the core 2R + w + 2, tail 2R + 2w + 1. B is
  // not delayed at all.
  Fabric f = Fabric::perfect({8, 4});
  for (std::uint32_t R : {0u, 2u})
    for (std::uint32_t w : {4u, 9u}) {
      auto m = mesh(f, 1, 2, R);
      Plan p;
      std::uint32_t a = add_unicast(p, f, {0, 0}, {3, 0}, w, 0);
      std::uint32_t b = add_unicast(p, f, {1, 0}, {3, 0}, w, 0);
      auto t = m->execute(p);
      EXPECT_EQ(t[b].head, 2 * R + 2);
      EXPECT_EQ(t[b].tail, 2 * R + 2 + w - 1);
      EXPECT_EQ(t[b].wait, 0u);
      EXPECT_EQ(t[a].wait, w - 1) << "A waits exactly until B's occupancy of the link ends";
      EXPECT_EQ(t[a].head, 2 * R + w + 2);
      EXPECT_EQ(t[a].tail, 2 * R + 2 * w + 1);
      EXPECT_EQ(m->stats().wait_cycles, w - 1);
      EXPECT_EQ(m->link_busy(link_id(f.grid().index({1, 0}), Dir::East)), 2u * w);
      // Boundary: A is not reported the cycle before its head takes the delivery ramp, is the cycle it does.
      m->reset();
      Recorder rec(*m);
      m->send({f.grid().index({1, 0}), {Destination::Kind::Tile, {3, 0}, 1}, w, 0, 0, 2}, 0);
      m->send({f.grid().index({0, 0}), {Destination::Kind::Tile, {3, 0}, 1}, w, 0, 0, 1}, 0);
      Cycle r = reported(2 * R + w + 2, 2 * R + 2 * w + 1, R);
      m->run_until(r);
      for (const auto& x : rec.arrivals) EXPECT_NE(x.tag, 1u) << "A reported before cycle " << r;
      m->run_until(r + 1);
      bool seen = false;
      for (const auto& x : rec.arrivals)
        if (x.tag == 1u) {
          seen = true;
          EXPECT_EQ(x.head, 2 * R + w + 2);
          EXPECT_EQ(x.seen, r);
        }
      EXPECT_TRUE(seen);
    }
}

TEST_P(Timing, ReduceChainStreams) {
  // N tiles along a row, each forwards after its input's head arrives plus the stage latency: flow i's
  // head reaches tile i+1's core at i (hop + 2R + stage) + hop + 2R; the last tail at
  // (N-2)(hop + 2R + stage) + hop + 2R + w - 1 - about N x (hop + 2R + stage) + w, not N x w.
  Fabric f = Fabric::perfect({32, 2});
  const std::uint32_t w = 16, stage = 2, hop = 1;
  for (std::uint32_t R : {0u, 2u})
    for (std::int32_t n : {8, 30}) {
      auto m = mesh(f, hop, stage, R);
      Plan p;
      add_row_reduce(p, f, 1, 0, n, w, stage, 0);
      auto t = m->execute(p);
      const Cycle step = hop + 2 * R + stage;
      const Cycle head = Cycle(n - 2) * step + hop + 2 * R;
      EXPECT_EQ(t.back().head, head) << "N = " << n << ", R = " << R;
      EXPECT_EQ(t.back().tail, head + w - 1) << "N = " << n;
      EXPECT_LT(t.back().tail, Cycle(n - 1) * w) << "store-and-forward would take N x w";
      for (std::size_t i = 0; i < t.size(); ++i) EXPECT_EQ(t[i].inject, i * step) << "flow " << i;
    }
}

TEST_P(Timing, StretchedInputStretchesOutput) {
  // Complete trigger then stream: flow 0 (w wavelets) must fully arrive before flow 1 leaves; flow 2
  // streams out of flow 1. Cross-checked against hand arithmetic: flow 1 starts at tail0 + 1 (the
  // reaction cycle), flow 2 starts at head1 + stage.
  Fabric f = Fabric::perfect({8, 1});
  for (std::uint32_t R : {0u, 2u}) {
    auto m = mesh(f, 1, 2, R);
    const std::uint32_t w = 6;
    Plan p;
    std::uint32_t a = add_unicast(p, f, {0, 0}, {1, 0}, w, 0);
    std::uint32_t b = add_unicast(p, f, {1, 0}, {2, 0}, w, 0);
    std::uint32_t c = add_unicast(p, f, {2, 0}, {3, 0}, 2 * w, 0);
    p.flows[b].after.push_back({a, f.grid().index({1, 0}), Trigger::Kind::Complete, 0});
    p.flows[c].after.push_back({b, f.grid().index({2, 0}), Trigger::Kind::Stream, 2});
    auto t = m->execute(p);
    EXPECT_EQ(t[a].tail, 2 * R + 1 + w - 1);
    EXPECT_EQ(t[b].inject, t[a].tail + 1);
    EXPECT_EQ(t[c].inject, t[b].head + 2);
    EXPECT_EQ(t[c].tail, t[c].inject + 2 * R + 1 + 2 * w - 1);
  }
}

TEST_P(Timing, MulticastAlongARow) {
  // From (3,1) to the row segment x in [0, 10): the source's router fans out west and east, one link
  // occupation per link; tile x gets the head at 2R + |x - 3|, the tail w - 1 later.
  Fabric f = Fabric::perfect({12, 4});
  const Cycle R = 2;
  auto m = mesh(f, 1, 2, R);
  const std::uint32_t w = 7;
  Recorder rec(*m);
  m->send({f.grid().index({3, 1}), {Destination::Kind::RowSegment, {0, 1}, 10}, w, 0, 0, 5}, 0);
  // The farthest sink (9,1) is 6 hops away.
  Cycle r = reported(2 * R + 6, 2 * R + 6 + w - 1, R);
  m->run_until(r);
  std::size_t before = rec.arrivals.size();
  for (const auto& a : rec.arrivals) EXPECT_NE(a.sink, f.grid().index({9, 1}));
  m->run_until(r + 1);
  EXPECT_EQ(rec.arrivals.size(), before + 1);
  m->run();
  ASSERT_EQ(rec.arrivals.size(), 9u) << "every tile of the segment but the source";
  for (const auto& a : rec.arrivals) {
    Coord c = f.grid().coord(a.sink);
    EXPECT_EQ(c.y, 1);
    EXPECT_NE(c.x, 3);
    EXPECT_EQ(a.head, 2 * R + Cycle(std::abs(c.x - 3))) << "sink x = " << c.x;
    EXPECT_EQ(a.tail, a.head + w - 1);
  }
  EXPECT_EQ(m->stats().link_traversals, 9u) << "one occupation per link of the tree";
  EXPECT_EQ(m->stats().wait_cycles, 0u);
  // The same through a Plan.
  Plan p;
  add_row_multicast(p, f, 3, 1, 0, 10, w, 0);
  auto t = m->execute(p);
  EXPECT_EQ(t[0].head, 2 * R + 6);
  EXPECT_EQ(t[0].tail, 2 * R + 6 + w - 1);
}

TEST_P(Timing, MulticastAlongAColumnFromOutside) {
  // A column segment not containing the source: dimension order to the nearest tile, then both ways.
  Fabric f = Fabric::perfect({8, 12});
  const Cycle R = 2;
  auto m = mesh(f, 1, 2, R);
  Recorder rec(*m);
  m->send({f.grid().index({1, 5}), {Destination::Kind::ColumnSegment, {6, 2}, 8}, 3, 0, 0, 1}, 0);
  m->run();
  ASSERT_EQ(rec.arrivals.size(), 8u);
  for (const auto& a : rec.arrivals) {
    Coord c = f.grid().coord(a.sink);
    EXPECT_EQ(a.head, 2 * R + Cycle(5 + std::abs(c.y - 5))) << "sink y = " << c.y;
  }
}

TEST_P(Timing, RepairedLinkOfThreePhysicalHops) {
  // Logical link (4,2)->(5,2) spans 3 physical hops (a repair shifted the row): a burst crossing it
  // arrives 2 x hop_latency later than on a perfect mesh (the ramps are the same).
  Fabric f = Fabric::perfect({10, 4});
  f.set_hops(f.grid().index({4, 2}), Dir::East, 3);
  const Cycle R = 2;
  for (std::uint32_t hop : {1u, 2u}) {
    auto m = mesh(f, hop, 2, R);
    const std::uint32_t w = 4;
    Plan p;
    add_unicast(p, f, {1, 2}, {7, 2}, w, 0);    // crosses it
    add_unicast(p, f, {1, 1}, {7, 1}, w, 0);    // a healthy row
    add_unicast(p, f, {5, 2}, {1, 2}, w, 0);    // crosses it westwards
    auto t = m->execute(p);
    EXPECT_EQ(t[0].head, 2 * R + (6u + 2u) * hop);
    EXPECT_EQ(t[1].head, 2 * R + 6u * hop);
    EXPECT_EQ(t[2].head, 2 * R + (4u + 2u) * hop);
    EXPECT_EQ(t[0].tail, t[0].head + w - 1);
    probe_unicast(*m, f.grid().index({1, 2}), {7, 2}, w, 0, 2 * R + 8 * hop, 2 * R + 8 * hop + w - 1);
  }
}

TEST_P(Timing, HotspotContendsOnTheDeliveryRamp) {
  // Two bursts from opposite sides reach (4,4)'s router at the same cycle (R + 3) over disjoint links; the
  // delivery ramp takes one wavelet per cycle at the router's end, so the second's head waits the
  // first's w cycles there, then crosses the ramp's R.
  Fabric f = Fabric::perfect({9, 9});
  for (std::uint32_t R : {0u, 2u}) {
    auto m = mesh(f, 1, 2, R);
    const std::uint32_t w = 5;
    Plan p;
    add_unicast(p, f, {1, 4}, {4, 4}, w, 0);
    add_unicast(p, f, {7, 4}, {4, 4}, w, 0);
    auto t = m->execute(p);
    Cycle first = std::min(t[0].head, t[1].head), second = std::max(t[0].head, t[1].head);
    EXPECT_EQ(first, 2 * R + 3);
    EXPECT_EQ(second, 2 * R + 3 + w);
    EXPECT_EQ(std::max(t[0].wait, t[1].wait), w);
    EXPECT_EQ(std::max(t[0].tail, t[1].tail), 2 * R + 3 + 2 * w - 1);
  }
}

TEST_P(Timing, InjectionRampSerialisesOneCoresBursts) {
  Fabric f = Fabric::perfect({8, 8});
  for (std::uint32_t R : {0u, 2u}) {
    auto m = mesh(f, 1, 2, R);
    const std::uint32_t w = 6;
    Plan p;
    add_unicast(p, f, {2, 2}, {5, 2}, w, 0);
    add_unicast(p, f, {2, 2}, {2, 6}, w, 0);
    auto t = m->execute(p);
    EXPECT_EQ(t[0].inject, 0u);
    EXPECT_EQ(t[1].inject, w) << "the second burst leaves once the first's tail has";
    EXPECT_EQ(t[1].head, w + 2 * R + 4);
    EXPECT_EQ(t[1].wait, 0u) << "source queueing is not link waiting";
  }
}

TEST_P(Timing, TimersFireAtTheirCycle) {
  Fabric f = Fabric::perfect({4, 4});
  auto m = mesh(f);
  struct T : NetworkClient {
    std::vector<Cycle> fired;
    void on_arrival(std::uint64_t, TileIndex, Cycle, Cycle) override {}
    void on_timer(std::uint64_t tag, Cycle now) override { fired.push_back(now * 1000 + tag); }
  } c;
  m->set_client(&c);
  m->timer(5000, 3);
  m->timer(17, 2);
  m->run_until(17);
  EXPECT_TRUE(c.fired.empty());
  m->run_until(18);
  ASSERT_EQ(c.fired.size(), 1u);
  EXPECT_EQ(c.fired[0], 17002u);
  EXPECT_EQ(m->run(), 5000u);
  EXPECT_EQ(c.fired.back(), 5000003u);
}

TEST_P(Timing, BadPlansAreRefused) {
  Fabric f = Fabric::perfect({4, 4});
  auto m = mesh(f);
  Plan p;
  add_unicast(p, f, {0, 0}, {3, 0}, 2, 0);
  p.flows[0].route[1].link = link_id(f.grid().index({0, 1}), Dir::East);  // does not continue the route
  EXPECT_THROW(m->execute(p), hw::InputError);
  Plan q;
  add_unicast(q, f, {0, 0}, {1, 0}, 2, 0);
  add_unicast(q, f, {1, 0}, {2, 0}, 2, 0);
  q.flows[0].after.push_back({1, f.grid().index({2, 0}), Trigger::Kind::Complete, 0});
  q.flows[1].after.push_back({0, f.grid().index({1, 0}), Trigger::Kind::Complete, 0});
  EXPECT_THROW(m->execute(q), hw::InputError) << "a trigger cycle never runs";
}

INSTANTIATE_TEST_SUITE_P(Fidelities, Timing, ::testing::Values(Fidelity::Approx, Fidelity::Cycle),
                         [](const auto& p) { return std::string(to_string(p.param)); });

TEST(CycleFidelity, RefusesLargeMeshesBeforeAllocating) {
  Fabric f = Fabric::perfect({129, 4});
  try {
    make_mesh(Fidelity::Cycle, f, test::params());
    FAIL() << "no error";
  } catch (const hw::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("128 x 128"), std::string::npos) << e.what();
  }
  Fabric ok = Fabric::perfect({128, 2});
  EXPECT_NO_THROW(make_mesh(Fidelity::Cycle, ok, test::params()));
}

// Two column broadcasts from (0,3) and (0,5) of one column, on one color: each source's head takes its router's
// North and South outputs at once, and its South branch (the one at (0,3)) needs the output the other holds at (0,5)
// as the other's North branch needs the one it holds at (0,3). Short bursts fit in the queues between the forks
// and pass; long ones fill them and wait on each other for ever (the turn model's argument covers paths, not
// forks: docs/routing.md). The cycle model says so at the first cycle nothing can change, not a million cycles
// later; the approx model (bursts, no queues) runs them.
TEST(CycleFidelity, MulticastsWaitingOnEachOtherAtTheirForksAreADeadlockFoundAtOnce) {
  Fabric f = Fabric::perfect({1, 8});
  auto column = [&](Fidelity fid, std::uint32_t w) {
    auto m = make_mesh(fid, f, test::params());
    test::Recorder rec(*m);
    for (int y : {3, 5}) m->send({f.grid().index({0, y}), {Destination::Kind::ColumnSegment, {0, 0}, 8}, w, 0, 0, 1}, 0);
    m->run();
    return rec.arrivals.size();
  };
  EXPECT_EQ(column(Fidelity::Cycle, 4), 14u);  // (7 sinks each: a source is not its own)
  EXPECT_EQ(column(Fidelity::Approx, 64), 14u);
  auto m = make_mesh(Fidelity::Cycle, f, test::params());
  test::Recorder rec(*m);
  for (int y : {3, 5}) m->send({f.grid().index({0, y}), {Destination::Kind::ColumnSegment, {0, 0}, 8}, 64, 0, 0, 1}, 0);
  try {
    m->run();
    FAIL() << "no deadlock found";
  } catch (const Deadlock& e) {
    EXPECT_LT(m->now(), 100u) << e.what();
    EXPECT_NE(std::string(e.what()).find("none can ever move"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace wafer::noc
