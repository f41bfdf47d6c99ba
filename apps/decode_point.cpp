#include "apps/decode_point.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <string>
#include <string_view>

#include "core/executor.h"
#include "hw/error.h"

namespace wafer::apps {

std::optional<std::uint64_t> memory_available() {
  if (const char* env = std::getenv("WAFER_EMU_MEMORY_MB")) {
    char* end = nullptr;
    errno = 0;
    const unsigned long long mb = std::strtoull(env, &end, 10);
    if (*env == '\0' || *env == '-' || *end != '\0' || errno == ERANGE || mb > (1ull << 40))
      throw hw::InputError(fmt::format("WAFER_EMU_MEMORY_MB '{}' is not a whole number of MiB", env));
    return std::uint64_t(mb) << 20;
  }
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb << 10;
  return std::nullopt;
}

void check_memory(const mapper::Mapping& mapping) {
  const auto avail = memory_available();
  if (!avail) return;
  for (std::size_t k = 0; k < mapping.wafers.size(); ++k) {
    const std::uint64_t tasks = std::uint64_t(std::max<std::int64_t>(0, mapping.wafers[k].task_runs));
    const std::uint64_t need = core::Executor::record_bytes(tasks);
    if (need > *avail)
      throw hw::InputError(fmt::format(
          "the step would not fit in memory: wafer {} runs {} tile tasks, and a run keeps about {:.1f} GB of records "
          "for them (with or without reuse), more than the {:.1f} GB available (MemAvailable; WAFER_EMU_MEMORY_MB "
          "overrides); map onto fewer tiles (another --placement) or over more --wafers",
          k, tasks, double(need) / 1e9, double(*avail) / 1e9));
  }
}

mapper::Mapping map_point(const DecodePoint& p, const noc::Fabric& fabric) {
  return mapper::map_model(p.spec, fabric, p.model, p.options);
}

sim::StepResult emulate_point(sim::Simulator& simulator, const DecodePoint& p, const noc::Fabric& fabric,
                              const mapper::Mapping& mapping) {
  check_memory(mapping);
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
