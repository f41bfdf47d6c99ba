// bench_noc_small: issue 3's speed target (1) measured honestly. Builds the `wafer-emu noc` uniform workload
// (default: small wafer, 64 x 64, rate 0.01, 8-wavelet bursts, 2000 cycles) ONCE, then times each model's
// Mesh::execute of that same Plan in this one process: approx REPS times, cycle CREPS times (medians).
// Prints both mean latencies side by side, the model-only times and their ratio. Plan generation and
// process start-up are reported separately (bench/noc.sh adds the whole-command wall times).
//   bench_noc_small [WAFER] [RATE] [CYCLES] [REPS] [CREPS]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "hw/wafer_spec.h"
#include "noc/mesh.h"
#include "noc/routing/traffic.h"

using namespace wafer;

namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

// Mean latency exactly as `wafer-emu noc` reports it (creation to tail arrival).
double mean_latency(const noc::Plan& plan, const std::vector<noc::FlowTiming>& t) {
  double sum = 0;
  for (std::size_t i = 0; i < t.size(); ++i) sum += double(t[i].tail - plan.flows[i].release);
  return t.empty() ? 0.0 : sum / double(t.size());
}

struct Timed {
  double median_s = 0, min_s = 0;
  double latency = 0;
  std::uint64_t checksum = 0;
};

Timed time_model(noc::Fidelity f, const noc::Fabric& fabric, const noc::MeshParams& mp, const noc::Plan& plan, int reps) {
  std::vector<double> s;
  Timed r;
  for (int i = 0; i < reps; ++i) {
    // A fresh mesh per repetition, built outside the timed region, as `wafer-emu noc` runs one per process.
    // (Needed: a second CycleMesh::execute on the same mesh does not reproduce the first's timings.)
    auto mesh = noc::make_mesh(f, fabric, mp);
    const auto t0 = Clock::now();
    const auto timing = mesh->execute(plan);
    const auto t1 = Clock::now();
    s.push_back(seconds(t0, t1));
    double lat = mean_latency(plan, timing);
    std::uint64_t h = 1469598103934665603ull;  // FNV over every flow's timing: runs must agree exactly
    for (const auto& ft : timing)
      for (hw::Cycle c : {ft.ready, ft.inject, ft.head, ft.tail, ft.wait}) h = (h ^ c) * 1099511628211ull;
    if (i > 0 && (h != r.checksum || lat != r.latency)) {
      fmt::print(stderr, "{}: repetition {} differs from the first\n", noc::to_string(f), i);
      std::exit(1);
    }
    r.latency = lat;
    r.checksum = h;
  }
  r.median_s = median(s);
  r.min_s = *std::min_element(s.begin(), s.end());
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string wafer = argc > 1 ? argv[1] : "small";
  const double rate = argc > 2 ? std::atof(argv[2]) : 0.01;
  const std::uint64_t cycles = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 2000;
  const int reps = argc > 4 ? std::atoi(argv[4]) : 21;
  const int creps = argc > 5 ? std::atoi(argv[5]) : 3;
  const hw::WaferSpec spec = hw::resolve_wafer(wafer);
  const noc::Fabric fabric = noc::Fabric::perfect(spec.logical());
  const noc::MeshParams mp = noc::MeshParams::from(spec);

  noc::TrafficParams tp;  // as `wafer-emu noc` sets them
  tp.pattern = noc::Pattern::Uniform;
  tp.rate = rate;
  tp.burst_wavelets = 8;
  tp.cycles = cycles;
  tp.seed = 1;
  tp.colors = 4;  // the CLI default (--colors 4)
  tp.stage_latency = std::uint32_t(spec.stream_stage_latency);
  const auto p0 = Clock::now();
  const noc::Plan plan = noc::make_traffic(fabric, tp);
  const auto p1 = Clock::now();
  std::size_t edges = 0;
  for (const auto& f : plan.flows) edges += f.route.size();

  fmt::print("wafer {} ({} x {}), uniform, rate {}, 8 wavelets, {} cycles: {} flows, {} route edges; plan built once in {:.4f} s\n",
             spec.name, fabric.grid().width, fabric.grid().height, rate, cycles, plan.flows.size(), edges, seconds(p0, p1));
  const Timed a = reps > 0 ? time_model(noc::Fidelity::Approx, fabric, mp, plan, reps) : Timed{};
  const Timed c = creps > 0 ? time_model(noc::Fidelity::Cycle, fabric, mp, plan, creps) : Timed{};
  fmt::print("mean latency [cycles]: approx {:.4f}  cycle {:.4f}  (approx - cycle) / cycle = {:+.2f} %\n", a.latency,
             c.latency, c.latency > 0 ? 100.0 * (a.latency - c.latency) / c.latency : 0.0);
  fmt::print("model only (Mesh::execute of the same Plan): approx median {:.5f} s (min {:.5f}, {} runs), "
             "cycle median {:.4f} s (min {:.4f}, {} runs)\n",
             a.median_s, a.min_s, reps, c.median_s, c.min_s, creps);
  if (a.median_s > 0 && c.median_s > 0)
    fmt::print("model ratio: cycle / approx = {:.0f}x (medians; target >= 100x)\n", c.median_s / a.median_s);
  fmt::print("approx_checksum={:016x}\n", a.checksum);
  return 0;
}
