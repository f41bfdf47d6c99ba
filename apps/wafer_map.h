#pragma once
// The wafer as pictures for `wafer-emu report` (docs/report.md): the `regions` section of decode's results,
// aggregated to a grid of at most kRegionCells x kRegionCells cells so that a full wafer stays small
// (about 0.5 MB of JSON for wse3): per wafer the link utilisation, tile busy share, SRAM use, tiles used,
// repair detours (extra hops) and the layer placed on each cell; with defects, the physical wafer's defects,
// the spare tiles repair used and the tiles it displaced.
#include <optional>
#include <vector>

#include "apps/decode_point.h"
#include "firmware/program.h"
#include "hw/defect_map.h"
#include "hw/repair.h"
#include "hw/wafer_spec.h"
#include "noc/routing/fabric.h"
#include "sim/simulator.h"
#include "traces/report.h"

namespace wafer::apps {

inline constexpr std::int32_t kRegionCells = 128;  // heatmap cells a side at most (report, results JSON)
inline constexpr std::int32_t kSeriesCells = 4;    // trace counters: regions a side at most

// Per used tile's program: the layer all its tasks belong to, kSeveralLayers when they span more than one
// (the whole-wafer kernels), kIdleLayer for an idle tile.
inline constexpr int kIdleLayer = -1, kSeveralLayers = -2;
std::vector<int> program_layers(const firmware::Image& image);

// Adds the `regions` section to `rep`. `res` must come from a run with StepOptions::region_cells on wr's fabrics.
// The physical wafer of one map every wafer shares is `regions.repair`; of maps of their own, `regions.wafer_K.repair`.
void add_regions(traces::Report& rep, const hw::WaferSpec& spec, const WaferRepairs& wr,
                 const std::vector<const firmware::Image*>& images, const sim::StepResult& res);

}  // namespace wafer::apps
