// The approx mesh's storage limits, each on both sides: a link busy for 2^32 cycles and more reports it
// exactly, and a link's latency is kept in 16 bits (a link of 65535 cycles or less is accepted and timed
// exactly, one of more is refused with its coordinates, not clamped).
#include <gtest/gtest.h>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#include <vector>

#include "hw/error.h"
#include "noc/approx.h"
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

#if defined(__linux__)
// Built, the approx mesh writes neither its tile records nor its busy counters for a fabric whose links are one hop
// each and work (a new mapping reads as zero: a step, or the executor's thread behind it, faults them in), the
// array's edges included; a failed link and a repaired link of 3 hops inside it are written, and timed.
TEST(ApproxLimits, ABuiltMeshLeavesItsRecordsUntouched) {
  const std::size_t page = std::size_t(sysconf(_SC_PAGESIZE));
  auto resident = [&](const void* p, std::size_t bytes) {  // pages of [p, p + bytes) in memory
    const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(p) / page * page, b = reinterpret_cast<std::uintptr_t>(p) + bytes;
    std::vector<unsigned char> v((b - a + page - 1) / page);
    EXPECT_EQ(mincore(reinterpret_cast<void*>(a), b - a, v.data()), 0);
    std::size_t in = 0;
    for (unsigned char r : v) in += r & 1;
    return in;
  };
  Fabric f = Fabric::perfect({512, 512});  // (16 MiB of records, 8 MiB of counters: mappings of their own)
  {
    ApproxMesh m(f, test::params());
    const std::size_t n = f.grid().size();
    EXPECT_EQ(resident(m.tile_records(), n * ApproxMesh::kTileRecordBytes), 0u);
    EXPECT_EQ(resident(m.link_busy_data(), n * 4 * sizeof(std::uint64_t)), 0u);
  }
  f.fail_link(f.grid().index({100, 300}), Dir::South);
  f.set_hops(f.grid().index({4, 2}), Dir::East, 3);
  ApproxMesh m(f, test::params(1, 2, 0));
  const auto* records = static_cast<const unsigned char*>(m.tile_records());
  const auto record = [&](Coord c) { return records + std::size_t(f.grid().index(c)) * ApproxMesh::kTileRecordBytes; };
  EXPECT_EQ(resident(record({100, 300}), 1), 1u) << "the failed link's tile was not written";
  EXPECT_EQ(resident(record({100, 301}), 1), 1u) << "the failed link's other end was not written";
  EXPECT_EQ(resident(record({5, 2}), 1), 1u) << "the 3-hop link's far end was not written";
  EXPECT_EQ(resident(record({300, 100}), 1), 0u) << "a tile far from both was written";
  test::Recorder rec(m);
  m.send({f.grid().index({1, 2}), {Destination::Kind::Tile, {7, 2}, 1}, 1, 0, 0, 1}, 0);  // over the 3-hop link
  m.run();
  ASSERT_EQ(rec.arrivals.size(), 1u);
  EXPECT_EQ(rec.arrivals[0].head, 6u + 2u);
}
#endif

}  // namespace
}  // namespace wafer::noc
