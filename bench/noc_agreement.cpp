// bench_noc_agreement: approx vs the cycle reference under uniform random traffic (8-wavelet bursts,
// 4 colors) on k x k meshes, from low load past saturation: offered and accepted throughput and mean
// latency of both. Where the cycle model's accepted throughput stops following the offered load is its
// saturation; docs/timing.md quotes this table.   bench_noc_agreement [K...]   (default 16 32)
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "noc/mesh.h"
#include "noc/routing/traffic.h"

using namespace wafer;

int main(int argc, char** argv) {
  std::vector<int> ks;
  for (int i = 1; i < argc; ++i) ks.push_back(std::atoi(argv[i]));
  if (ks.empty()) ks = {16, 32};
  const std::uint64_t cycles = 2000;
  fmt::print("{:>6} {:>8} | {:>9} {:>9} | {:>9} {:>9} | {:>7}\n", "mesh", "offered", "acc.apx", "acc.cyc", "lat.apx",
             "lat.cyc", "error");
  for (int k : ks) {
    noc::Fabric f = noc::Fabric::perfect({k, k});
    for (double rate : {0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.14, 0.16, 0.2, 0.25}) {
      noc::TrafficParams tp;
      tp.rate = rate, tp.burst_wavelets = 8, tp.cycles = cycles, tp.seed = 3, tp.colors = 4;
      noc::Plan p = noc::make_traffic(f, tp);
      double acc[2], lat[2];
      for (int m = 0; m < 2; ++m) {
        noc::MeshParams mp;
        mp.colors = 4;
        auto t = noc::make_mesh(m ? noc::Fidelity::Cycle : noc::Fidelity::Approx, f, mp)->execute(p);
        double sum = 0, wav = 0;
        for (std::size_t i = 0; i < t.size(); ++i) {
          sum += double(t[i].tail - p.flows[i].release);
          if (t[i].tail < cycles) wav += p.flows[i].wavelets;
        }
        acc[m] = wav / (double(k) * k * double(cycles));
        lat[m] = sum / double(std::max<std::size_t>(1, t.size()));
      }
      fmt::print("{:>3}x{:<2} {:>8.3f} | {:>9.4f} {:>9.4f} | {:>9.1f} {:>9.1f} | {:>+6.1f}%\n", k, k, rate, acc[0], acc[1],
                 lat[0], lat[1], 100 * (lat[0] - lat[1]) / lat[1]);
    }
  }
  return 0;
}
