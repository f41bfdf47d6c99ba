// bench_noc_wafer: the approx mesh on a full wafer (default wse3, 762 x 1172 = 893 k tiles), driven through
// noc::Network by a small client (a Plan of ~89 M flows would not fit): a reduce-and-forward chain along
// every row (each tile streams its burst on stream_stage_latency after the input head arrives), then,
// once every row is done, a broadcast down every column (one multicast per column from its top tile),
// repeated N times. Prints wall time, simulated cycles, events handled, mesh bytes per tile, peak RSS.
//   bench_noc_wafer [WAFER] [REPEATS] [WAVELETS]
#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "hw/wafer_spec.h"
#include "noc/mesh.h"

using namespace wafer;

namespace {

class Client : public noc::NetworkClient {
 public:
  Client(noc::Network& net, const hw::Grid& g, std::uint32_t w, std::uint32_t stage, int repeats)
      : net_(net), g_(g), w_(w), stage_(stage), repeats_(repeats) {}

  void start_reduce(hw::Cycle at) {
    phase_ = 0;
    pending_ = std::uint64_t(g_.height);
    for (std::int32_t y = 0; y < g_.height; ++y) send_unicast(g_.index({0, y}), {1, y}, w_ - 1, at);
  }
  void on_arrival(std::uint64_t tag, hw::TileIndex sink, hw::Cycle head, hw::Cycle tail) override {
    ++arrivals;
    checksum += (head * 0x9E3779B97F4A7C15ull) ^ (tail * 0xC2B2AE3D27D4EB4Full) ^ sink;  // order-free sum
    if (phase_ == 0) {
      const hw::Coord c{std::int32_t(tag & 0xFFFF), std::int32_t(tag >> 16)};  // the sink, kept in the tag
      if (c.x + 1 < g_.width) {
        // Stream on: start stage cycles after the head, the tail no earlier than stage after the input's.
        send_unicast(sink, {c.x + 1, c.y}, std::uint32_t(std::max<hw::Cycle>(w_ - 1, tail - head)), head + stage_);
      } else if (--pending_ == 0) {
        // Every row reduced: broadcast down every column from its top tile.
        phase_ = 1;
        pending_ = std::uint64_t(g_.width) * std::uint64_t(g_.height - 1);
        for (std::int32_t x = 0; x < g_.width; ++x) {
          noc::BurstSpec b{g_.index({x, 0}), {noc::Destination::Kind::ColumnSegment, {x, 0}, g_.height}, w_, 0, 1, 1};
          net_.send(b, tail + stage_);
        }
      }
    } else if (--pending_ == 0) {
      if (++done_ < repeats_) start_reduce(tail + stage_);
    }
  }
  void on_timer(std::uint64_t, hw::Cycle) override {}
  std::uint64_t arrivals = 0;
  std::uint64_t checksum = 0;  // over every arrival (head, tail, sink): optimisations must not change it

 private:
  void send_unicast(hw::TileIndex src, hw::Coord dst, std::uint32_t lag, hw::Cycle at) {
    net_.send({src, {noc::Destination::Kind::Tile, dst, 1}, w_, lag, 0, std::uint64_t(dst.x) | std::uint64_t(dst.y) << 16}, at);
  }
  noc::Network& net_;
  hw::Grid g_;
  std::uint32_t w_, stage_;
  int repeats_;
  int done_ = 0;
  int phase_ = 0;
  std::uint64_t pending_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const std::string wafer = argc > 1 ? argv[1] : "wse3";
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 100;
  const std::uint32_t w = argc > 3 ? std::uint32_t(std::atoi(argv[3])) : 8;
  const hw::WaferSpec spec = hw::resolve_wafer(wafer);
  const auto t0 = std::chrono::steady_clock::now();
  noc::Fabric fabric = noc::Fabric::perfect(spec.logical());
  auto mesh = noc::make_mesh(noc::Fidelity::Approx, fabric, noc::MeshParams::from(spec));
  Client client(*mesh, fabric.grid(), w, std::uint32_t(spec.stream_stage_latency), repeats);
  mesh->set_client(&client);
  const auto t1 = std::chrono::steady_clock::now();
  client.start_reduce(0);
  const hw::Cycle end = mesh->run();
  const auto t2 = std::chrono::steady_clock::now();
  const double tiles = double(fabric.grid().size());
  // Fabric: 1 fault byte + 2 x 2 hop bytes per tile (its vectors), plus the model's own state.
  const double fabric_bytes = tiles * 5.0;
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  fmt::print("wafer {} ({} x {} = {:.0f} tiles), {} x (row reduce + column broadcast), {} wavelets per burst\n", spec.name,
             fabric.grid().width, fabric.grid().height, tiles, repeats, w);
  fmt::print("setup_s={:.3f} run_s={:.3f} simulated_cycles={} cycles_per_repeat={:.0f} bursts={} arrivals={}\n",
             std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t2 - t1).count(), end,
             double(end) / repeats, mesh->stats().bursts, client.arrivals);
  fmt::print("link_traversals={} wait_cycles={} mesh_bytes_per_tile={:.1f} (model {:.1f} + fabric 5.0) peak_rss_mib={}\n",
             mesh->stats().link_traversals, mesh->stats().wait_cycles, (double(mesh->state_bytes()) + fabric_bytes) / tiles,
             double(mesh->state_bytes()) / tiles, ru.ru_maxrss / 1024);
  fmt::print("arrival_checksum={:016x}\n", client.checksum);
  return 0;
}
