#include "apps/wafer_map.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace wafer::apps {

namespace {
// Four significant digits: enough for a heatmap, and short in JSON (utilisations are often far below 1 %).
double sig4(double v) {
  if (v == 0 || !std::isfinite(v)) return v;
  const double scale = std::pow(10.0, 3 - std::floor(std::log10(std::fabs(v))));
  return std::round(v * scale) / scale;
}
}  // namespace

std::vector<int> program_layers(const firmware::Image& image) {
  std::vector<int> out(image.programs.size(), kIdleLayer);
  for (std::size_t p = 0; p < image.programs.size(); ++p) {
    const auto& tasks = image.programs[p].tasks;
    if (tasks.empty()) continue;
    int l = tasks.front().layer;
    for (const auto& t : tasks)
      if (t.layer != tasks.front().layer) l = kSeveralLayers;
    out[p] = l;
  }
  return out;
}

namespace {
// The physical wafer of one defect map: defects, spares used, displaced tiles.
void add_repair(traces::Report& ph, const hw::DefectMap& defects, const hw::RepairResult& repair,
                const hw::RepairLinks& links) {
  const hw::Grid pg = repair.physical;
  const sim::RegionGrid r = sim::RegionGrid::fit(pg, kRegionCells);
  ph.add_text("scheme", repair.scheme);
  ph.add_text("complete", repair.complete ? "yes" : "no: " + repair.reason);
  ph.add_int("cell_side", r.cell, "tiles", "each cell is cell_side x cell_side physical tiles");
  ph.add_int("columns", r.cols, "cells");
  ph.add_int("rows", r.rows, "cells");
  ph.add_int("physical_width", pg.width, "tiles");
  ph.add_int("physical_height", pg.height, "tiles");
  std::vector<double> dm(r.size(), 0), spare(r.size(), 0), moved(r.size(), 0);
  for (const auto& d : defects.defects())
    if (pg.inside(d.at)) dm[r.of(d.at)] += 1;
  std::int64_t spares = 0, displaced = 0;
  for (hw::TileIndex t = 0; t < repair.log_to_phys.size(); ++t) {
    const hw::TileIndex p = repair.log_to_phys[t];
    if (p == hw::kNoTile) continue;
    const hw::Coord pc = pg.coord(p), lc = repair.logical.coord(t);
    if (pc.x >= repair.logical.width || pc.y >= repair.logical.height) spare[r.of(pc)] += 1, ++spares;
    if (pc.x != lc.x || pc.y != lc.y) moved[r.of(pc)] += 1, ++displaced;
  }
  // (links: each link once, as `defects` and a study's points count them)
  ph.add_int("defects", std::int64_t(defects.size()), "defects");
  ph.add_int("failed_tiles", std::int64_t(defects.dead_tiles()), "tiles", "physical tiles with a core, SRAM or router defect");
  ph.add_int("usable_tiles", repair.usable.area(), "tiles",
             "the largest logical rectangle of tiles on healthy physical ones (links without a path not counted: "
             "defect-aware keeps those out too)");
  ph.add_int("spare_tiles_used", spares, "tiles", "physical tiles in the spare columns/rows hosting a logical tile");
  ph.add_int("displaced_tiles", displaced, "tiles", "logical tiles not on the physical tile of the same coordinates");
  ph.add_int("links_detoured", links.detoured, "links", "logical links (each pair of neighbours once) longer than one physical hop");
  ph.add_int("extra_hops", links.extra_hops, "hops", "their physical hops beyond one, summed");
  ph.add_int("links_without_path", links.no_path, "links", "logical links between working tiles that repair left without a path");
  ph.add_matrix("defect_map", r.cols, r.rows, std::move(dm), "defects", "defects per cell (any kind)");
  ph.add_matrix("spares_used", r.cols, r.rows, std::move(spare), "tiles", "spare tiles hosting a logical tile");
  ph.add_matrix("displaced", r.cols, r.rows, std::move(moved), "tiles", "physical tiles hosting a displaced logical tile");
}
}  // namespace

void add_regions(traces::Report& rep, const hw::WaferSpec& spec, const WaferRepairs& wr,
                 const std::vector<const firmware::Image*>& images, const sim::StepResult& res) {
  const noc::Fabric& fabric = wr.fabrics.front();
  auto& sec = rep.section("regions", "the wafer as a grid of cells (wafer-emu report; docs/report.md)");
  const sim::RegionGrid g = sim::RegionGrid::fit(fabric.grid(), kRegionCells);
  sec.add_int("cell_side", g.cell, "tiles", "each cell is cell_side x cell_side logical tiles (the last ones may be cut)");
  sec.add_int("columns", g.cols, "cells");
  sec.add_int("rows", g.rows, "cells");
  sec.add_int("logical_width", fabric.grid().width, "tiles");
  sec.add_int("logical_height", fabric.grid().height, "tiles");
  const std::size_t n = g.size();

  // Layer names of every wafer (the same names mean the same layer).
  std::vector<std::string> names;
  auto name_index = [&](const std::string& s) {
    auto it = std::find(names.begin(), names.end(), s);
    if (it == names.end()) it = names.insert(names.end(), s);
    return int(it - names.begin());
  };
  std::map<int, std::int64_t> tiles_per_layer;

  for (std::size_t k = 0; k < images.size() && k < res.wafers.size(); ++k) {
    const firmware::Image& im = *images[k];
    const sim::WaferStep& ws = res.wafers[k];
    const sim::RegionTotals& rt = ws.regions;
    auto& w = sec.section(fmt::format("wafer_{}", k), fmt::format("wafer {}", k));
    const double span = double(std::max<hw::Cycle>(1, ws.step.end - ws.step.start));
    w.add_int("step_cycles", std::int64_t(ws.step.end - ws.step.start), "cycles", "this wafer's part of the step");
    const std::vector<int> pl = program_layers(im);
    std::vector<int> global(pl.size());
    for (std::size_t p = 0; p < pl.size(); ++p)
      global[p] = pl[p] >= 0 ? name_index(im.layer_names[std::size_t(pl[p])]) : pl[p];

    std::vector<double> link(n, std::numeric_limits<double>::quiet_NaN()), busy(n, 0), sram(n, 0), used(n, 0), extra(n, 0),
        layer(n, kIdleLayer);
    // Per cell, the layers of its used tiles with their counts (a cell holds few); per program, its tiles.
    std::vector<std::vector<std::pair<int, std::int64_t>>> cell_layers(n);
    std::vector<std::int64_t> prog_tiles(im.programs.size(), 0);
    const std::vector<std::uint32_t> cell_of = g.of_tiles(im.grid);
    for (hw::TileIndex t = 0; t < im.tile_program.size(); ++t) {
      const std::uint32_t p = im.tile_program[t];
      if (p == firmware::kIdle || p >= im.programs.size()) continue;
      const std::size_t c = cell_of[t];
      used[c] += 1;
      sram[c] += double(im.programs[p].sram.total());
      ++prog_tiles[p];
      auto& v = cell_layers[c];
      auto it = std::find_if(v.begin(), v.end(), [&](const auto& e) { return e.first == global[p]; });
      if (it == v.end()) v.push_back({global[p], 1});
      else ++it->second;
    }
    for (std::size_t p = 0; p < prog_tiles.size(); ++p)
      if (prog_tiles[p]) tiles_per_layer[global[p]] += prog_tiles[p];
    for (std::size_t c = 0; c < n; ++c) {
      const bool have = c < rt.tiles.size() && rt.tiles[c] > 0;
      const double tiles = have ? double(rt.tiles[c]) : 1.0;
      if (c < rt.links.size() && rt.links[c] > 0) link[c] = sig4(100.0 * double(rt.link_busy[c]) / (double(rt.links[c]) * span));
      if (have) busy[c] = sig4(100.0 * double(rt.task_cycles[c]) / (tiles * span));
      sram[c] = sig4(100.0 * sram[c] / (tiles * double(spec.sram_bytes)));
      if (c < rt.extra_hops.size()) extra[c] = double(rt.extra_hops[c]);
      // The layer most of its tiles hold (the lowest index of those as many).
      const auto& v = cell_layers[c];
      if (v.empty()) continue;
      auto best = v.front();
      for (const auto& e : v)
        if (e.second > best.second || (e.second == best.second && e.first < best.first)) best = e;
      layer[c] = best.first;
    }
    w.add_matrix("link_utilisation", g.cols, g.rows, std::move(link), "%",
                 "busy cycles of the links leaving the cell's tiles / (links x this wafer's step); null: no link");
    w.add_matrix("tile_busy", g.cols, g.rows, std::move(busy), "%",
                 "cycles the cell's cores ran tasks / (tiles x step) (a streaming task's setup, done while it waits "
                 "armed for its input, not counted: docs/report.md)");
    w.add_matrix("sram_use", g.cols, g.rows, std::move(sram), "%", "bytes allocated / (tiles x SRAM per tile)");
    w.add_matrix("tiles_used", g.cols, g.rows, std::move(used), "tiles", "tiles with a program");
    w.add_matrix("extra_hops", g.cols, g.rows, std::move(extra), "hops",
                 "physical hops beyond one of the links east and south of the cell's tiles (repair detours)");
    w.add_matrix("layer", g.cols, g.rows, std::move(layer), "index",
                 "the layer most of the cell's used tiles hold (layers table; -1 idle, -2 several layers per tile)");
    // A wafer with a defect map of its own: its physical wafer (one map for every wafer: regions.repair below).
    if (wr.maps.size() > 1 && k < wr.maps.size())
      add_repair(w.section("repair", fmt::format("wafer {}'s physical wafer: its defects and what repair did with the "
                                                 "spares",
                                                 k)),
                 wr.maps[k], wr.repairs[k], wr.links[k]);
  }
  auto& lt = sec.add_table("layers", {"index", "layer", "tiles"},
                           "the layer indexes of the layer matrices; tiles: those whose tasks are the layer's, all wafers");
  if (tiles_per_layer.count(kSeveralLayers)) names.push_back("several layers per tile");
  for (std::size_t i = 0; i < names.size(); ++i) {
    const bool several = tiles_per_layer.count(kSeveralLayers) && i + 1 == names.size();
    const int index = several ? kSeveralLayers : int(i);
    decltype(lt.rows)::value_type row;
    row.emplace_back(std::int64_t(index));
    row.emplace_back(names[i]);
    row.emplace_back(tiles_per_layer[index]);
    lt.rows.push_back(std::move(row));
  }

  // The physical wafer: defects, spares used, displaced tiles (one map for every wafer).
  if (wr.maps.size() == 1)
    add_repair(sec.section("repair", images.size() > 1
                                         ? fmt::format("the physical wafer of each of the {} wafers (one map is every "
                                                       "wafer's): defects and what repair did with the spares",
                                                       images.size())
                                         : std::string("the physical wafer: defects and what repair did with the spares")),
               wr.maps[0], wr.repairs[0], wr.links[0]);
}

}  // namespace wafer::apps
