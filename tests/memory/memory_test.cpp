// Tile SRAM (capacity, ports), the bandwidth pipe, and the MemoryX / wafer-link TLM targets.
#include <gtest/gtest.h>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "hw/error.h"
#include "memory/edge_channels.h"
#include "memory/link.h"
#include "memory/memoryx.h"
#include "memory/sram.h"

namespace wafer::memory {
namespace {

TEST(Sram, CapacityIsEnforcedAtTheLimit) {
  hw::WaferSpec spec = hw::preset("tiny");
  TileSram sram(spec);
  ASSERT_EQ(sram.capacity(), 49152u);
  SramFootprint at{40000, 8000, 1000, 152};  // exactly the capacity
  EXPECT_NO_THROW(sram.check({3, 4}, at));
  SramFootprint over = at;
  over.code += 1;  // limit + 1
  try {
    sram.check({3, 4}, over);
    FAIL() << "no error";
  } catch (const hw::InputError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("tile (3,4)"), std::string::npos) << m;
    EXPECT_NE(m.find("49153 bytes"), std::string::npos) << m;
    EXPECT_NE(m.find("a tile has 49152"), std::string::npos) << m;
  }
}

TEST(Sram, PortCycles) {
  hw::WaferSpec spec = hw::preset("tiny");  // 2 x 64-bit reads, 1 x 64-bit write per cycle
  TileSram sram(spec);
  EXPECT_EQ(sram.read_cycles(16), 1u);
  EXPECT_EQ(sram.read_cycles(17), 2u);
  EXPECT_EQ(sram.write_cycles(8), 1u);
  EXPECT_EQ(sram.write_cycles(9), 2u);
  EXPECT_EQ(sram.read_cycles(0), 0u);
}

TEST(Sram, Stats) {
  SramStats s;
  s.add({0, 0}, 100);
  s.add({1, 0}, 300, 3);
  EXPECT_EQ(s.tiles, 4u);
  EXPECT_EQ(s.max_bytes, 300u);
  EXPECT_EQ(s.max_tile, (hw::Coord{1, 0}));
  EXPECT_DOUBLE_EQ(s.mean_bytes(), 250.0);
}

TEST(BandwidthLink, DelayIsLatencyPlusBytesOverBandwidth) {
  BandwidthLink l(150.0, 2000.0);  // 150 GB/s = 150 bytes/ns, 2 us
  EXPECT_EQ(l.request(0, 150'000), 1'000'000u + 2'000'000u);  // 1 us of bytes + 2 us latency
}

TEST(BandwidthLink, TwoRequestsShareTheBandwidth) {
  BandwidthLink l(100.0, 500.0);
  Picos a = l.request(0, 100'000);  // 1000 ns of bytes
  Picos b = l.request(0, 100'000);  // waits for a's bytes
  EXPECT_EQ(a, 1'000'000u + 500'000u);
  EXPECT_EQ(b, 2'000'000u + 500'000u);
  // A request after the pipe drained does not wait: one picosecond before, it still does.
  Picos c = l.request(2'000'000, 1000);
  EXPECT_EQ(c, 2'000'000u + 10'000u + 500'000u);
  BandwidthLink m(100.0, 500.0);
  m.request(0, 100'000);
  EXPECT_EQ(m.request(999'999, 1000), 1'000'000u + 10'000u + 500'000u);
  EXPECT_EQ(l.bytes(), 201'000u);
  EXPECT_EQ(l.requests(), 3u);
}

TEST(Clock, CyclesAndPicos) {
  EXPECT_EQ(cycles_to_ps(11, 1.1), 10'000u);
  EXPECT_EQ(ps_to_cycles(10'000, 1.1), 11u);
  EXPECT_EQ(ps_to_cycles(10'001, 1.1), 12u);  // data is usable at the next edge
  EXPECT_EQ(ps_to_cycles(0, 1.1), 0u);
}

// One SystemC elaboration per process: all TLM checks live in this one test.
struct Initiator : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<Initiator> socket;
  explicit Initiator(sc_core::sc_module_name n) : sc_core::sc_module(n), socket("socket") {}
  sc_core::sc_time read(std::uint64_t address, unsigned bytes, sc_core::sc_time offset, tlm::tlm_response_status* st) {
    tlm::tlm_generic_payload gp;
    gp.set_command(tlm::TLM_READ_COMMAND);
    gp.set_address(address);
    gp.set_data_ptr(nullptr);
    gp.set_data_length(bytes);
    gp.set_streaming_width(bytes);
    gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    socket->b_transport(gp, offset);
    *st = gp.get_response_status();
    return offset;
  }
};

TEST(MemoryX, BTransportAnnotatesLatencyPlusBytesOverBandwidthAndSharesIt) {
  hw::WaferSpec spec = hw::preset("tiny");
  spec.io_bandwidth_gbs = 150, spec.io_latency_ns = 2000, spec.io_channels = 12;
  MemoryX mx("memoryx", spec);
  WaferLink wl("wafer_link", spec);
  Initiator ini("ini"), ini2("ini2");
  ini.socket.bind(mx.socket);
  ini2.socket.bind(wl.socket);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);

  tlm::tlm_response_status st{};
  using sc_core::sc_time, sc_core::SC_NS, sc_core::SC_PS;
  // 150,000 bytes at 150 GB/s = 1000 ns on the port, + 2000 ns latency: first byte out at 2000 ns, last at
  // 3000 ns. Then edge channel 0 (tiny: 1 lane, 4.4 GB/s): 150,000 / 4.4 = 34,090,910 ps from 2000 ns.
  EXPECT_EQ(ini.read(0, 150'000, sc_time(0, SC_NS), &st), sc_time(2'000'000 + 34'090'910, SC_PS));
  EXPECT_EQ(st, tlm::TLM_OK_RESPONSE);
  // A second request at the same time on another channel shares the port (it waits for the first's
  // bytes: first byte out at 3000 ns) but not the channel.
  EXPECT_EQ(ini.read(11, 150'000, sc_time(0, SC_NS), &st), sc_time(3'000'000 + 34'090'910, SC_PS));
  // A third on channel 0 queues behind the first on the channel: 1500 bytes = 340,910 ps after it.
  EXPECT_EQ(ini.read(0, 1500, sc_time(0, SC_NS), &st), sc_time(2'000'000 + 34'090'910 + 340'910, SC_PS));
  // Channel io_channels is out of range.
  ini.read(12, 8, sc_time(0, SC_NS), &st);
  EXPECT_EQ(st, tlm::TLM_ADDRESS_ERROR_RESPONSE);
  EXPECT_EQ(mx.link().bytes(), 301'500u);
  EXPECT_EQ(mx.channels().pipes().at(0).requests(), 2u);
  // The wafer link is its own pipe: it does not queue behind MemoryX traffic.
  EXPECT_EQ(ini2.read(0, 1500, sc_time(100, SC_NS), &st), sc_time(100 + 10 + 2000, SC_NS));
  EXPECT_EQ(st, tlm::TLM_OK_RESPONSE);
}

// The derived channel figure: share = 150 / 12 = 12.5 GB/s, one edge link = 4 B x 1.1 GHz = 4.4 GB/s, so a
// channel needs ceil(12.5 / 4.4) = 3 lanes; wse3 has 1172 / 6 = 195 rows per channel, tiny 8 / 6 = 1.
TEST(EdgeChannels, LanesAndBandwidthFromTheSpec) {
  EdgeChannelRule w = EdgeChannelRule::from(hw::preset("wse3"));
  EXPECT_DOUBLE_EQ(w.share_gbs, 12.5);
  EXPECT_NEAR(w.lane_gbs, 4.4, 1e-12);
  EXPECT_EQ(w.lanes, 3u);
  EXPECT_DOUBLE_EQ(w.gbs, 12.5);  // the port's share binds, not the 13.2 GB/s of 3 lanes
  EdgeChannelRule t = EdgeChannelRule::from(hw::preset("tiny"));
  EXPECT_EQ(t.lanes, 1u);
  EXPECT_NEAR(t.gbs, 4.4, 1e-12);  // one row: the lane binds
  // One request rides one lane even when the channel has more: 1500 bytes = 375 cycles = 340,909 ps.
  EdgeChannels ch(hw::preset("wse3"));
  EXPECT_EQ(ch.push(0, 1000, 1010, 1500), 1000u + 340'909u);
  // The next one on the channel starts after the first's 120,000 ps at 12.5 GB/s, not after its lane.
  EXPECT_EQ(ch.push(0, 1000, 1010, 1500), 1000u + 120'000u + 340'909u);
}

}  // namespace
}  // namespace wafer::memory
