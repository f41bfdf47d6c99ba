// bench_defects_one_map [RUNS]: one full wse3 map generated and repaired, per repair scheme; prints the
// median wall time of generation and of repair over RUNS maps (different seeds), D0 = 0.1 /cm^2 Poisson.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <vector>

#include "hw/defect_map.h"
#include "hw/random.h"
#include "hw/repair.h"
#include "hw/wafer_spec.h"

using namespace wafer::hw;

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 11;
  const WaferSpec spec = preset("wse3");
  DefectGenParams gen;
  using clock = std::chrono::steady_clock;
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  for (const auto& name : repair_scheme_names()) {
    std::vector<double> t_gen, t_rep;
    std::size_t defects = 0, complete = 0;
    for (int i = 0; i < runs; ++i) {
      const auto t0 = clock::now();
      const DefectMap map = generate_defects(spec, gen, derive_seed(1, std::uint64_t(i)));
      const auto t1 = clock::now();
      const RepairResult r = repair_scheme(name).repair(spec, map);
      const auto t2 = clock::now();
      t_gen.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      t_rep.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
      defects += map.size();
      complete += r.complete;
    }
    fmt::print("wse3 one map, {:<16} generate_median_ms={:.3f} repair_median_ms={:.3f} total_median_ms={:.3f} "
               "defects_mean={:.1f} complete={}/{}\n",
               name, median(t_gen), median(t_rep), median(t_gen) + median(t_rep), double(defects) / runs, complete, runs);
  }
  return 0;
}
