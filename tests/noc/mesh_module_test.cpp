// noc::MeshModule: the mesh inside SystemC, temporally decoupled, with a TLM-2.0 target at the wafer edge.
// Each case elaborates once (ctest runs every case in its own process).
#include <gtest/gtest.h>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "noc/mesh.h"
#include "noc/mesh_module.h"
#include "noc_test_util.h"

namespace wafer::noc {
namespace {

const sc_core::sc_time kCycle(1, sc_core::SC_NS);

// Deterministic pseudo-random unicasts and row multicasts, sent before the run.
void load(Network& n, const Grid& g) {
  std::uint64_t s = 12345;
  auto next = [&] {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return std::uint32_t(s >> 33);
  };
  for (std::uint64_t i = 0; i < 400; ++i) {
    TileIndex src = next() % g.size();
    Coord d = g.coord(next() % g.size());
    if (d == g.coord(src)) continue;
    BurstSpec b{src, {Destination::Kind::Tile, d, 1}, 1 + next() % 12, 0, 0, i};
    if (i % 10 == 0) b.dest = {Destination::Kind::RowSegment, {0, d.y}, g.width};
    n.send(b, next() % 300);
  }
}

std::vector<test::Arrival> sorted(std::vector<test::Arrival> a) {
  std::sort(a.begin(), a.end(), [](const auto& x, const auto& y) {
    return std::tie(x.tag, x.sink, x.head, x.tail) < std::tie(y.tag, y.sink, y.head, y.tail);
  });
  return a;
}

TEST(MeshModule, QuantumSlicesGiveTheSameTimingAsOneRun) {
  Fabric f = Fabric::perfect({16, 16});
  auto plain = make_mesh(Fidelity::Approx, f, test::params());
  test::Recorder rp(*plain);
  load(*plain, f.grid());
  plain->run();

  auto mesh = make_mesh(Fidelity::Approx, f, test::params());
  test::Recorder rm(*mesh);
  MeshModule mm("mesh", *mesh, kCycle, 7);
  load(*mesh, f.grid());
  sc_core::sc_start(2000 * kCycle);
  EXPECT_TRUE(mesh->idle());
  auto a = sorted(rp.arrivals), b = sorted(rm.arrivals);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_GT(a.size(), 400u);
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].head, b[i].head) << "arrival " << i;
    EXPECT_EQ(a[i].tail, b[i].tail) << "arrival " << i;
  }
  // The kernel was entered once per quantum while there was work, not once per event, and the module
  // slept once the mesh went idle.
  EXPECT_GT(mm.slices(), 10u);
  EXPECT_LT(mm.slices(), 2000u / 7 + 2);
  EXPECT_EQ(plain->stats().wait_cycles, mesh->stats().wait_cycles);
}

struct Host : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<Host> socket{"socket"};
  std::vector<tlm::tlm_response_status> status;
  SC_HAS_PROCESS(Host);
  explicit Host(sc_core::sc_module_name n) : sc_module(n) { SC_THREAD(go); }
  void go() {
    wait(10 * kCycle);
    unsigned char data[32] = {};
    tlm::tlm_generic_payload p;
    p.set_command(tlm::TLM_WRITE_COMMAND);
    p.set_address(3 * 16 + 5);  // tile (5, 3) on a 16-wide mesh
    p.set_data_ptr(data);
    p.set_data_length(32);      // 8 wavelets of 4 bytes
    sc_core::sc_time delay = 5 * kCycle;
    socket->b_transport(p, delay);
    status.push_back(p.get_response_status());
    p.set_address(9999);        // outside the mesh
    socket->b_transport(p, delay);
    status.push_back(p.get_response_status());
  }
};

void edge_injection(Fidelity fid) {
  Fabric f = Fabric::perfect({16, 16});
  auto mesh = make_mesh(fid, f, test::params());
  test::Recorder rec(*mesh);
  MeshModule mm("mesh", *mesh, kCycle, 16);
  Host host("host");
  host.socket.bind(mm.edge);
  sc_core::sc_start(200 * kCycle);
  ASSERT_EQ(host.status.size(), 2u);
  EXPECT_EQ(host.status[0], tlm::TLM_OK_RESPONSE);
  EXPECT_EQ(host.status[1], tlm::TLM_ADDRESS_ERROR_RESPONSE);
  ASSERT_EQ(rec.arrivals.size(), 1u);
  // Injected at the annotated time 10 + 5 = 15 at the west edge of row 3 (through that tile's injection
  // ramp, R = 2), 5 hops east, then the delivery ramp (2): head at 24, tail 7 later.
  EXPECT_EQ(mesh->params().ramp_latency, 2u);
  EXPECT_EQ(rec.arrivals[0].sink, f.grid().index({5, 3}));
  EXPECT_EQ(rec.arrivals[0].head, 24u);
  EXPECT_EQ(rec.arrivals[0].tail, 31u);
}

TEST(MeshModule, EdgeInjectionThroughTlmApprox) { edge_injection(Fidelity::Approx); }

}  // namespace
}  // namespace wafer::noc

namespace wafer::noc {
namespace {
TEST(MeshModule, EdgeInjectionThroughTlmCycle) { edge_injection(Fidelity::Cycle); }
}  // namespace
}  // namespace wafer::noc
