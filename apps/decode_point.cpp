#include "apps/decode_point.h"

#include <algorithm>
#include <numeric>
#include <string_view>

namespace wafer::apps {

mapper::Mapping map_point(const DecodePoint& p, const noc::Fabric& fabric) {
  return mapper::map_model(p.spec, fabric, p.model, p.options);
}

sim::StepResult emulate_point(sim::Simulator& simulator, const DecodePoint& p, const noc::Fabric& fabric,
                              const mapper::Mapping& mapping) {
  std::vector<const firmware::Image*> images;
  for (const auto& im : mapping.images) images.push_back(&im);
  sim::StepOptions so;
  so.fidelity = p.fidelity;
  so.weight_bytes = p.options.weight_bits == 8 ? 1 : 2;
  so.keep_task_runs = p.keep_task_runs;
  so.keep_tile = p.keep_tile;
  so.keep_path = p.keep_path;
  so.region_cells = p.region_cells;
  so.series_cells = p.series_cells;
  so.reuse = p.reuse;
  so.interwafer_bytes = std::uint64_t(std::max<std::int64_t>(1, mapping.interwafer_bytes_per_token()));
  return simulator.run(p.spec, fabric, images, so);
}

hw::Cycle decoder_layer_cycles(const sim::StepResult& r) {
  constexpr std::string_view kLayer = "layer ";
  hw::Cycle sum = 0;
  for (const auto& n : r.per_layer) {
    const std::string_view name = n.name;
    if (name.size() <= kLayer.size() || !name.starts_with(kLayer)) continue;
    if (!std::all_of(name.begin() + std::ptrdiff_t(kLayer.size()), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    sum += std::accumulate(n.cycles.begin(), n.cycles.end(), hw::Cycle(0));
  }
  return sum;
}

DecodeRun run_point(sim::Simulator& simulator, const DecodePoint& p) {
  const noc::Fabric fabric = noc::Fabric::perfect(p.spec.logical());
  DecodeRun out;
  out.mapping = map_point(p, fabric);
  out.step = emulate_point(simulator, p, fabric, out.mapping);
  out.layer_cycles_total = decoder_layer_cycles(out.step);
  return out;
}

}  // namespace wafer::apps
