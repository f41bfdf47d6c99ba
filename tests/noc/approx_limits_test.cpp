// The approx mesh's storage limits, each on both sides: a link busy for 2^32 cycles and more reports it
// exactly, and a link's latency is kept in 16 bits (a link of 65535 cycles or less is accepted and timed
// exactly, one of more is refused with its coordinates, not clamped).
#include <gtest/gtest.h>

#include "hw/error.h"
#include "noc/mesh.h"
#include "noc_test_util.h"

namespace wafer::noc {
namespace {

TEST(ApproxLimits, BusyCyclesBeyond32BitsAreExact) {
  const Fabric f = Fabric::perfect({4, 1});
  auto m = make_mesh(Fidelity::Approx, f, test::params());
  test::Recorder rec(*m);
  const LinkId east0 = f.grid().index({0, 0}) * 4 + unsigned(Dir::East);
  const LinkId east1 = f.grid().index({1, 0}) * 4 + unsigned(Dir::East);
  // One burst whose tail leaves 2^32 - 1 cycles after its head: each link it crosses is held 2^32 cycles.
  m->send({0, {Destination::Kind::Tile, {2, 0}, 1}, 1, 0xFFFFFFFFu, 0, 1}, 0);
  // A second one right behind it over the first link: 2^32 + 8 cycles on that link in all.
  m->send({0, {Destination::Kind::Tile, {1, 0}, 1}, 8, 0, 0, 2}, 0);
  m->run();
  ASSERT_EQ(rec.arrivals.size(), 2u);
  EXPECT_EQ(m->link_busy(east0), (std::uint64_t(1) << 32) + 8);
  EXPECT_EQ(m->link_busy(east1), std::uint64_t(1) << 32);
  EXPECT_EQ(m->link_busy(f.grid().index({2, 0}) * 4 + unsigned(Dir::East)), 0u);
  // Just below 2^32: 2^32 - 1 cycles (a lag of 2^32 - 2).
  m->reset();
  m->send({0, {Destination::Kind::Tile, {1, 0}, 1}, 1, 0xFFFFFFFEu, 0, 3}, 0);
  m->run();
  EXPECT_EQ(m->link_busy(east0), 0xFFFFFFFFull);
  m->reset();
  EXPECT_EQ(m->link_busy(east0), 0u) << "reset clears the carried part too";
}

TEST(ApproxLimits, LinkLatencyUpTo65535Cycles) {
  Fabric f = Fabric::perfect({3, 1});
  f.set_hops(f.grid().index({0, 0}), Dir::East, 64);  // a repaired link spanning 64 physical hops
  // 1023 x 64 = 65472 cycles: accepted, and a burst over it takes exactly that (no ramp latency here).
  auto m = make_mesh(Fidelity::Approx, f, test::params(1023, 2, 0));
  test::Recorder rec(*m);
  m->send({0, {Destination::Kind::Tile, {1, 0}, 1}, 1, 0, 0, 1}, 0);
  m->run();
  ASSERT_EQ(rec.arrivals.size(), 1u);
  EXPECT_EQ(rec.arrivals[0].head, 65472u);
  // 1024 x 64 = 65536: refused, naming the link.
  try {
    make_mesh(Fidelity::Approx, f, test::params(1024));
    FAIL() << "a 65536-cycle link was accepted";
  } catch (const hw::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("link (0, 0) E"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("65536"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace wafer::noc
