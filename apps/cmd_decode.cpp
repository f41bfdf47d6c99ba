// wafer-emu decode: the main job. One decode step of a transformer on a wafer: map (mapper) -> emulate
// (sim: mesh model + cores + MemoryX) -> report latency, tokens/s and where the time goes.
#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <numeric>
#include <optional>

#include "apps/cli.h"
#include "apps/decode_point.h"
#include "apps/point_cache.h"
#include "apps/search.h"
#include "apps/wafer_map.h"
#include "firmware/program.h"
#include "hw/defect_map.h"
#include "hw/error.h"
#include "hw/repair.h"
#include "hw/wafer_spec.h"
#include "mapper/mapper.h"
#include "mapper/model_config.h"
#include "noc/mesh.h"
#include "noc/routing/fabric.h"
#include "sim/simulator.h"
#include "traces/chrome_trace.h"

namespace wafer::apps {
namespace {

using Clock = std::chrono::steady_clock;
using hw::Cycle;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// --dump-firmware X,Y or X,Y@K: a tile and the wafer of the pipeline it is on (0 when not given).
struct DumpedTile {
  hw::Coord at;
  int wafer = 0;
};
DumpedTile parse_tile(const std::string& s) {
  // Whole numbers of decimal digits only, as a tile's coordinates are printed (no sign, no spaces: sscanf took
  // "+1, 1" and refused "1,1 "); one beyond an int is kept as the int's largest, outside any array or pipeline (the
  // bounds are checked after, and said with the value as given).
  std::size_t at = 0;
  auto number = [&](int& out) {
    const std::size_t from = at;
    long long v = 0;
    while (at < s.size() && s[at] >= '0' && s[at] <= '9') v = std::min<long long>(v * 10 + (s[at++] - '0'), INT_MAX);
    out = int(v);
    return at > from;
  };
  DumpedTile d;
  const bool ok = number(d.at.x) && at < s.size() && s[at++] == ',' && number(d.at.y) &&
                  (at == s.size() || (s[at++] == '@' && number(d.wafer) && at == s.size()));
  if (!ok) throw hw::InputError(fmt::format("--dump-firmware '{}': expected X,Y or X,Y@WAFER (whole numbers from 0)", s));
  return d;
}

void add_causes(traces::Table& t, const std::string& name, const core::CauseCycles& c, double total, const hw::WaferSpec& spec) {
  Cycle sum = std::accumulate(c.begin(), c.end(), Cycle(0));
  std::vector<std::variant<double, std::int64_t, std::string>> row{name, std::int64_t(sum), spec.cycles_to_us(double(sum)),
                                                                    total > 0 ? 100.0 * double(sum) / total : 0.0};
  for (Cycle v : c) row.emplace_back(std::int64_t(v));
  t.rows.push_back(std::move(row));
}

std::vector<std::string> cause_columns(std::string first) {
  std::vector<std::string> cols{std::move(first), "total [cycles]", "total [us]", "share [%]"};
  for (std::size_t c = 0; c < core::kCauses; ++c) cols.push_back(fmt::format("{} [cycles]", core::to_string(core::Cause(c))));
  return cols;
}

// --trace-window X0:X1,Y0:Y1 (inclusive), checked against the logical array.
hw::Rect parse_window(const std::string& s, const hw::Grid& grid) {
  int x0 = 0, x1 = 0, y0 = 0, y1 = 0, used = 0;
  char c1 = 0, c2 = 0, c3 = 0;
  if (std::sscanf(s.c_str(), "%d%c%d%c%d%c%d%n", &x0, &c1, &x1, &c2, &y0, &c3, &y1, &used) != 7 || c1 != ':' || c2 != ',' ||
      c3 != ':' || std::size_t(used) != s.size())
    throw hw::InputError(fmt::format("--trace-window '{}': expected X0:X1,Y0:Y1 (tiles, inclusive)", s));
  if (x0 > x1 || y0 > y1)
    throw hw::InputError(fmt::format("--trace-window '{}': X0 must not exceed X1, nor Y0 Y1", s));
  if (x0 < 0 || y0 < 0 || x1 >= grid.width || y1 >= grid.height)
    throw hw::InputError(fmt::format("--trace-window '{}' is outside the {}x{} array (0:{},0:{})", s, grid.width, grid.height,
                                     grid.width - 1, grid.height - 1));
  return {x0, y0, x1 - x0 + 1, y1 - y0 + 1};
}

// Per-tile tracks of a trace: the tiles of the window, whole tiles in tile order, until the events of one
// wafer reach kMaxTileEvents (a full-wafer trace stays near 30 MB; docs/report.md).
constexpr std::size_t kMaxTileEvents = 120'000;
struct TileTracks {
  hw::Rect window;
  bool whole_wafer = true;  // no --trace-window: the window is the array
  std::vector<std::size_t> events;                     // per wafer: runs kept for tile tracks
  std::vector<std::vector<std::uint8_t>> admitted;     // per wafer, per tile
  std::vector<std::size_t> tiles, skipped;             // per wafer: tiles admitted / window tiles left out
  hw::Grid grid;
  void resize(std::size_t wafers) {
    events.assign(wafers, 0), tiles.assign(wafers, 0), skipped.assign(wafers, 0);
    admitted.assign(wafers, std::vector<std::uint8_t>(grid.size(), 0));
  }
  // Asked once per tile that ran a task (sim::StepOptions::keep_tile): its runs get a track or not.
  bool keep(std::size_t k, hw::TileIndex tile, std::uint32_t runs) {
    if (k >= events.size() || !window.contains(grid.coord(tile))) return false;
    if (events[k] >= kMaxTileEvents) {
      ++skipped[k];
      return false;
    }
    admitted[k][tile] = 1, ++tiles[k], events[k] += runs;
    return true;
  }
};

std::string region_name(const sim::RegionGrid& g, std::size_t c, const hw::Grid& grid) {
  const std::int32_t cx = std::int32_t(c % std::size_t(g.cols)), cy = std::int32_t(c / std::size_t(g.cols));
  return fmt::format("x {}-{}, y {}-{}", cx * g.cell, std::min(grid.width, (cx + 1) * g.cell) - 1, cy * g.cell,
                     std::min(grid.height, (cy + 1) * g.cell) - 1);
}

// fmt::format of a compiled format through a stack buffer (a std::string grows a piece at a time).
template <class S, class... T>
std::string text(const S& format, const T&... args) {
  fmt::memory_buffer b;
  fmt::format_to(std::back_inserter(b), format, args...);
  return std::string(b.data(), b.size());
}

// (chunks: a prefill's; the trace is its last chunk's, whose step the simulator holds, and says so)
void write_trace(const std::string& path, const sim::Simulator& sim, const sim::StepResult& res,
                 const std::vector<const firmware::Image*>& images, const hw::WaferSpec& spec, const TileTracks& tt,
                 std::size_t chunks) {
  traces::ChromeTrace tr;
  const double us_per_cycle = 1.0 / (spec.clock_ghz * 1e3);
  auto us = [&](Cycle c) { return double(c) * us_per_cycle; };
  const Cycle overhead = core::CostModel::react(spec.task_overhead);  // (a task's span begins with it; 0 acts as 1)
  // pid 1: the critical path. tid 1: its layers, tid 2: its operators (the timed segments of the path,
  // merged: per layer they sum to the layer's row of the breakdown), tid 3..: its tasks, on as many
  // tracks as they overlap (streams do). Wafer K is pid K + 2. (No pid 0: Perfetto's importer and UI treat it
  // as the kernel's idle process; and no tid 0, which Perfetto takes for the process's own track, tid = pid.)
  constexpr std::int32_t path_pid = 1, layers_tid = 1, ops_tid = 2, first_task_tid = 3;
  tr.process_name(path_pid,
                  chunks > 1 ? fmt::format("critical path of the last of {} chunks (the results sum the chunks)", chunks)
                             : std::string("critical path"),
                  0);
  tr.thread_name(path_pid, layers_tid, "layers", 0);
  tr.thread_name(path_pid, ops_tid, "operators", 1);
  for (std::size_t k = 0; k < res.wafers.size(); ++k) {
    const auto& im = *images[k];
    const auto& segs = res.wafers[k].step.path;
    if (k > 0 && k - 1 < res.link_cycles.size()) {
      const Cycle to = res.wafers[k].step.start, from = to - res.link_cycles[k - 1];
      tr.complete("inter-wafer links", "layer", us(from), us(to - from), path_pid, layers_tid,
                  fmt::format("wafer {} -> {}", k - 1, k));
      tr.complete("inter_wafer", "operator", us(from), us(to - from), path_pid, ops_tid,
                  fmt::format("inter_wafer {} cycles (wafer {} -> {})", to - from, k - 1, k));
    }
    for (std::size_t i = 0; i < segs.size();) {  // runs of one layer, and inside them runs of one operator
      std::size_t j = i;
      while (j < segs.size() && segs[j].layer == segs[i].layer) ++j;
      tr.complete(im.layer_names[segs[i].layer], "layer", us(segs[i].from), us(segs[j - 1].to - segs[i].from), path_pid,
                  layers_tid, fmt::format("wafer {}", k));
      for (std::size_t a = i; a < j;) {
        std::size_t b = a;
        core::CauseCycles causes{};
        while (b < j && segs[b].op == segs[a].op) causes[std::size_t(segs[b].cause)] += segs[b].to - segs[b].from, ++b;
        std::string detail;
        for (std::size_t c = 0; c < core::kCauses; ++c)
          if (causes[c]) detail += fmt::format("{}{} {}", detail.empty() ? "" : ", ", core::to_string(core::Cause(c)), causes[c]);
        tr.complete(fmt::format("{} / {}", im.layer_names[segs[a].layer], im.op_names[segs[a].op]), "operator",
                    us(segs[a].from), us(segs[b - 1].to - segs[a].from), path_pid, ops_tid, detail + " cycles");
        a = b;
      }
      i = j;
    }
  }
  std::vector<std::pair<double, double>> iv;
  std::vector<std::pair<std::size_t, const core::TaskRun*>> crit;
  for (std::size_t k = 0; k < sim.task_runs().size(); ++k)
    for (const auto& t : sim.task_runs()[k])
      if (t.critical) crit.push_back({k, &t}), iv.push_back({double(t.start - overhead), double(t.end)});
  auto lanes = traces::ChromeTrace::lanes(iv);
  // "layer / operator" names interned once per wafer, layer and operator.
  std::vector<std::vector<std::uint32_t>> task_names(images.size());
  auto task_name = [&](std::size_t k, const core::TaskRun& t) {
    const auto& im = *images[k];
    auto& v = task_names[k];
    if (v.empty()) v.assign(im.layer_names.size() * im.op_names.size(), ~0u);
    std::uint32_t& id = v[std::size_t(t.layer) * im.op_names.size() + t.op];
    if (id == ~0u) id = tr.id(fmt::format("{} / {}", im.layer_names[t.layer], im.op_names[t.op]));
    return id;
  };
  const std::uint32_t cat_critical = tr.id("critical"), cat_task = tr.id("task");
  std::vector<std::uint32_t> task_detail;  // "task N"
  auto detail = [&](std::uint16_t n) {
    if (task_detail.size() <= n) task_detail.resize(std::size_t(n) + 1, ~0u);
    if (task_detail[n] == ~0u) task_detail[n] = tr.id(fmt::format("task {}", n));
    return task_detail[n];
  };
  std::uint32_t nl = 0;
  for (std::size_t i = 0; i < crit.size(); ++i) {
    const auto& [k, t] = crit[i];
    const auto& im = *images[k];
    hw::Coord c = im.grid.coord(t->tile);
    tr.complete(task_name(k, *t), cat_critical,
                us(t->start - overhead), us(t->end - t->start + overhead), path_pid,
                std::int32_t(lanes[i]) + first_task_tid, tr.once(text(FMT_COMPILE("wafer {} tile ({},{}) task {}"), k, c.x, c.y, t->task)));
    nl = std::max(nl, lanes[i] + 1);
  }
  for (std::uint32_t l = 0; l < nl; ++l)
    tr.thread_name(path_pid, std::int32_t(l) + first_task_tid, fmt::format("path tasks {}", l), std::int32_t(l + 2));

  // One process per wafer: counters per region (link utilisation, tiles busy, SRAM use), then one track
  // per tile of the window (a core runs one task at a time, so a tile's spans never overlap).
  for (std::size_t k = 0; k < sim.task_runs().size(); ++k) {
    const auto& im = *images[k];
    const std::int32_t pid = std::int32_t(k) + 2;
    std::string tracks = tt.whole_wafer ? "every tile" : fmt::format("window x {}-{}, y {}-{}", tt.window.x0,
                                                                      tt.window.x0 + tt.window.w - 1, tt.window.y0,
                                                                      tt.window.y0 + tt.window.h - 1);
    if (k >= tt.admitted.size()) break;
    if (tt.skipped[k]) tracks += fmt::format("; tile tracks capped: {} tiles shown, {} left out (--trace-window)", tt.tiles[k], tt.skipped[k]);
    tr.process_name(pid, fmt::format("wafer {} ({})", k, tracks), pid);
    const sim::RegionSeries& se = res.wafers[k].series;
    const std::size_t cells = se.grid.size();
    std::vector<double> sram(cells, 0), tiles(cells, 0);
    for (hw::TileIndex t = 0; t < im.tile_program.size(); ++t) {
      const std::size_t c = se.grid.of(im.grid.coord(t));
      if (c >= cells) continue;
      tiles[c] += 1;
      if (im.tile_program[t] != firmware::kIdle) sram[c] += im.programs[im.tile_program[t]].sram.total();
    }
    for (std::size_t c = 0; c < cells; ++c) {
      const std::string where = region_name(se.grid, c, im.grid);
      const std::string ln = "link utilisation [%] " + where, bn = "tiles busy [%] " + where, sn = "SRAM use [%] " + where;
      for (std::size_t i = 0; i < se.intervals(); ++i) {
        tr.counter(ln, us(se.t[i]), pid, 100.0 * se.link_utilisation[i * cells + c]);
        tr.counter(bn, us(se.t[i]), pid, 100.0 * se.tiles_busy[i * cells + c]);
      }
      if (!se.t.empty()) {
        tr.counter(ln, us(se.t.back()), pid, 0.0);
        tr.counter(bn, us(se.t.back()), pid, 0.0);
        const double v = tiles[c] > 0 ? 100.0 * sram[c] / (tiles[c] * double(spec.sram_bytes)) : 0.0;
        tr.counter(sn, us(se.t.front()), pid, v);  // allocated for the whole step
        tr.counter(sn, us(se.t.back()), pid, v);
      }
    }
    hw::TileIndex last = hw::kNoTile;
    for (const auto& t : sim.task_runs()[k]) {
      if (!tt.admitted[k][t.tile]) continue;
      hw::Coord c = im.grid.coord(t.tile);
      // (tile t's track is tid t + 1: Perfetto takes tid 0 for the process's own track,
      // tid = pid, where tile (0,0) landed on another tile's)
      const std::int32_t tid = std::int32_t(t.tile) + 1;
      if (t.tile != last) tr.thread_name(pid, tid, tr.once(text(FMT_COMPILE("tile ({},{})"), c.x, c.y)), tid);
      last = t.tile;
      tr.complete(task_name(k, t), cat_task, us(t.start - overhead),
                  us(t.end - t.start + overhead), pid, tid, detail(t.task));
    }
  }
  tr.write_atomic(path);
}

int run_decode(const std::vector<std::string>& args) {
  po::options_description opts("decode options");
  opts.add_options()
      ("wafer", po::value<std::string>()->default_value("wse3")->value_name("PRESET|FILE"), "the wafer")
      ("model", po::value<std::string>()->default_value("llama-3.1-8b")->value_name("NAME|FILE"),
       "a shipped model name or a HuggingFace config.json")
      ("context", po::value<std::int64_t>()->default_value(4096)->value_name("N"), "KV-cache length (tokens attended)")
      ("batch", po::value<std::int64_t>()->default_value(1)->value_name("B"), "sequences decoded together")
      ("prefill", po::value<std::int64_t>()->value_name("T"),
       "emulate a step of T new tokens per sequence instead (a prompt's prefill: time to first token; context "
       "defaults to T; with --context C > T, a chunk whose last token is at position C, or a speculative verify "
       "step of T draft tokens), chunked where SRAM forces it")
      ("chunk", po::value<std::int64_t>()->value_name("N"), "--prefill: at most N tokens per chunk (fewer where N do not fit; default: as many as fit)")
      ("step", po::value<std::string>()->value_name("T@C,..."),
       "emulate a mixed step instead (continuous batching): one sequence per entry, T new tokens whose last is at "
       "position C (1@C: a decode token at context C; T > 1: a prefill chunk ending at C), e.g. 1@4096,1@2048,128@512; "
       "every token goes through the GEMVs together, attention is per sequence; not with --batch, --context, --prefill")
      ("kv-capacity", po::value<std::int64_t>()->value_name("N"),
       "KV-cache positions the mapping reserves over all sequences (default: what the step holds, batch x context): "
       "a deployment sized for longer contexts or more sequences, on whose placement the step attends its own context")
      ("placement", po::value<std::string>()->default_value("layer-bands")->value_name("NAME|auto"),
       "placement strategy, or auto: search placements x kernels x allreduces x group sizes")
      ("kernel", po::value<std::string>()->default_value("bands")->value_name("bands|meshgemv"),
       "how a region computes a layer (docs/mapping.md)")
      ("allreduce", po::value<std::string>()->default_value("tree")->value_name("chain|centre|tree"),
       "allreduce algorithm of the meshgemv kernel")
      ("group", po::value<int>()->default_value(0)->value_name("G"), "tree allreduce: tiles per group (0: sqrt of the line)")
      ("search-budget", po::value<std::int64_t>()->default_value(SearchBudget{}.task_runs)->value_name("N"),
       "--placement auto: tile task runs the emulated candidates may take together")
      ("defects", po::value<std::vector<std::string>>()->value_name("FILE"),
       "defect map (CSV or JSON, physical coordinates); with --wafers N, given once (every wafer's) or N times (wafer k's "
       "the k-th)")
      ("density", po::value<double>()->value_name("D"), "generate defects at D per cm^2 instead of a file")
      ("defect-model", po::value<std::string>()->default_value("poisson")->value_name("poisson|negbin"),
       "the generated defects' model: Poisson, or negative binomial (clustered, --alpha): a sweep's defect_model")
      ("alpha", po::value<double>()->value_name("A"),
       "--defect-model negbin: clustering parameter (smaller = more clustered; default 2): a sweep's alpha")
      ("seed", po::value<std::string>()->default_value("1")->value_name("S"),
       "seed of the generated defect map (with --wafers N, wafer 0's; each other wafer's map has a seed of its own "
       "derived from it)")
      ("defects-out", po::value<std::vector<std::string>>()->value_name("FILE"),
       "write the defect map used (--defects or --density) as .csv or .json, as read by --defects; with --wafers N "
       "and maps of their own, N times (wafer k's to the k-th)")
      ("repair", po::value<std::string>()->default_value("row-shift")->value_name("SCHEME"), "repair scheme")
      ("fidelity", po::value<std::string>()->default_value("approx")->value_name("approx|cycle"), "mesh timing model")
      ("weights", po::value<std::string>()->default_value("resident")->value_name("resident|stream"),
       "keep weights in SRAM, or stream what does not fit through MemoryX")
      ("wafers", po::value<int>()->default_value(1)->value_name("N"), "wafers in a pipeline")
      ("weight-bits", po::value<int>()->default_value(16)->value_name("16|8"), "weight precision")
      ("dump-firmware", po::value<std::string>()->value_name("X,Y[@K]"),
       "print that tile's program (of wafer K of a pipeline, default 0) and stop")
      ("trace", po::value<std::string>()->value_name("PATH"), "write a Chrome Trace Event JSON (Perfetto)")
      ("trace-window", po::value<std::string>()->value_name("X0:X1,Y0:Y1"),
       "--trace: per-tile tracks for these tiles only (inclusive; default every tile, capped)")
      ("threads", po::value<std::int64_t>()->value_name("N"),
       "wafers of a pipeline emulated at once, each on a thread (default: the CPUs this process may use, as many as "
       "fit in memory); --placement auto runs its candidates side by side only when --threads is given; a thread "
       "left over (one wafer, N > 1) builds the mesh while the step is mapped, faults its memory in and sums the "
       "report's regions beside it; the results are the same for any N")
      ("no-reuse", "emulate everything: no wafer of a pipeline and no repeated layer is copied from an earlier "
                   "one (the results are identical either way; this checks it)")
      ("no-cache", "build every step of the process from scratch (the search's candidates, prefill chunks, the wafers "
                   "of a pipeline): no mesh model or freed memory kept from the one before (the results are identical)");
  po::variables_map vm;
  if (!parse(args, opts, "decode", "[--wafer W] [--model M] [--context N] [--batch B] [--placement P] ... [--json PATH]", vm))
    return 0;

  const auto t_start = Clock::now();
  hw::WaferSpec spec = hw::resolve_wafer(vm["wafer"].as<std::string>());
  const noc::Fidelity fidelity = noc::parse_fidelity(vm["fidelity"].as<std::string>());
  if (fidelity == noc::Fidelity::Cycle && (spec.logical_width > noc::kCycleMaxSide || spec.logical_height > noc::kCycleMaxSide))
    throw hw::InputError(fmt::format("--fidelity cycle handles meshes up to {0}x{0}; wafer '{1}' is {2}x{3} (use approx)",
                                     noc::kCycleMaxSide, spec.name, spec.logical_width, spec.logical_height));
  mapper::MapOptions mo;
  mo.context = vm["context"].as<std::int64_t>();
  mo.batch = vm["batch"].as<std::int64_t>();
  if (vm.count("kv-capacity")) {
    mo.kv_capacity = vm["kv-capacity"].as<std::int64_t>();
    if (mo.kv_capacity < 1) throw hw::InputError(fmt::format("--kv-capacity {} must be at least 1", mo.kv_capacity));
  }
  mo.placement = vm["placement"].as<std::string>();
  mo.weights = mapper::parse_weight_mode(vm["weights"].as<std::string>());
  mo.wafers = vm["wafers"].as<int>();
  mo.weight_bits = vm["weight-bits"].as<int>();
  mo.kernel = mapper::parse_kernel(vm["kernel"].as<std::string>());
  mo.allreduce = mapper::parse_allreduce(vm["allreduce"].as<std::string>());
  mo.group = vm["group"].as<int>();
  if (mo.group < 0 || mo.group > 8192) throw hw::InputError(fmt::format("--group {} must be between 0 and 8192", mo.group));
  // Options that apply to another choice are refused rather than ignored (the step would not be the one asked for).
  for (const char* o : {"kernel", "allreduce", "group"})
    if (mo.placement == "auto" && !vm[o].defaulted())
      throw hw::InputError(fmt::format("--{} does not apply with --placement auto: the search chooses it", o));
  for (const char* o : {"allreduce", "group"})
    if (mo.kernel != mapper::Kernel::MeshGemv && !vm[o].defaulted())
      throw hw::InputError(fmt::format("--{} applies to --kernel meshgemv (the bands kernel reduces along its rows)", o));
  if (mo.placement != "auto" && !vm["search-budget"].defaulted())
    throw hw::InputError("--search-budget applies to --placement auto");
  if (!vm["seed"].defaulted() && !vm.count("density"))
    throw hw::InputError("--seed applies to generated defects: give --density D too");
  if (vm.count("dump-firmware"))
    for (const char* o : {"json", "trace", "fidelity", "no-reuse", "no-cache", "threads"})
      if (vm.count(o) && !vm[o].defaulted())
        throw hw::InputError(fmt::format("--dump-firmware prints one tile's program and stops: --{} does not apply", o));
  if (!vm["repair"].defaulted() && !vm.count("defects") && !vm.count("density")) {
    hw::repair_scheme(vm["repair"].as<std::string>());  // (an unknown scheme named as such first)
    throw hw::InputError("--repair applies to defects: give --defects FILE or --density D too");
  }
  if (mo.batch < 1) throw hw::InputError(fmt::format("--batch {} must be at least 1", mo.batch));
  if (mo.context < 1) throw hw::InputError(fmt::format("--context {} must be at least 1", mo.context));
  std::uint32_t threads = cpus_available();
  if (vm.count("threads")) {
    const std::int64_t n = vm["threads"].as<std::int64_t>();
    if (n < 1 || n > 1024) throw hw::InputError(fmt::format("--threads {} is outside [1, 1024]", n));
    threads = std::uint32_t(n);
  }
  std::int64_t prefill = 0, max_chunk = 0;
  if (vm.count("chunk") && !vm.count("prefill")) throw hw::InputError("--chunk needs --prefill T");
  if (vm.count("prefill")) {
    prefill = vm["prefill"].as<std::int64_t>();
    if (prefill < 1) throw hw::InputError(fmt::format("--prefill {} must be at least 1", prefill));
    if (vm["context"].defaulted()) mo.context = prefill;
    if (prefill > mo.context)
      throw hw::InputError(fmt::format("--prefill {} is more tokens than --context {} holds", prefill, mo.context));
    if (vm.count("chunk")) {
      max_chunk = vm["chunk"].as<std::int64_t>();
      if (max_chunk < 1) throw hw::InputError(fmt::format("--chunk {} must be at least 1", max_chunk));
    }
    if (mo.placement == "auto") throw hw::InputError("--prefill maps with a given --placement, not auto");
    if (mo.kernel != mapper::Kernel::Bands) throw hw::InputError("--prefill is emitted for --kernel bands only");
  }
  std::vector<mapper::StepSequence> step;
  if (vm.count("step")) {
    if (vm.count("prefill"))
      throw hw::InputError("--step and --prefill: give one (an entry T@C of --step with T > 1 is a prefill chunk)");
    if (!vm["batch"].defaulted()) throw hw::InputError("--step and --batch: give one (--step lists the sequences)");
    if (!vm["context"].defaulted())
      throw hw::InputError("--step and --context: give one (each entry T@C of --step carries its context)");
    step = mapper::parse_step(vm["step"].as<std::string>());
    if (mo.placement == "auto") throw hw::InputError("--step maps with a given --placement, not auto");
    if (mo.kernel != mapper::Kernel::Bands) throw hw::InputError("--step is emitted for --kernel bands only");
    mo.step = step;
    mo.batch = std::int64_t(step.size()), mo.context = 0;
    for (const auto& q : step) mo.context = std::max(mo.context, q.context);
  }
  if (mo.wafers < 1 || mo.wafers > 64) throw hw::InputError(fmt::format("--wafers {} must be between 1 and 64", mo.wafers));
  if (mo.weight_bits != 16 && mo.weight_bits != 8)
    throw hw::InputError(fmt::format("--weight-bits {} must be 16 or 8", mo.weight_bits));
  if (vm.count("defects") && vm.count("density")) throw hw::InputError("give --defects FILE or --density D, not both");
  // The generated defects' model (a sweep's defect_model and alpha: a point of a study is decoded with the same map).
  hw::DefectGenParams gen;
  try {
    gen.model = hw::parse_defect_model(vm["defect-model"].as<std::string>());
  } catch (const hw::InputError& e) {
    throw hw::InputError(fmt::format("--defect-model: {}", e.what()));
  }
  if (!vm["defect-model"].defaulted() && !vm.count("density"))
    throw hw::InputError("--defect-model applies to generated defects: give --density D too");
  if (vm.count("alpha")) {
    if (gen.model != hw::DefectModel::NegBinomial)
      throw hw::InputError("--alpha applies to --defect-model negbin (clustered defects)");
    if (!vm.count("density")) throw hw::InputError("--alpha applies to generated defects: give --density D too");
    gen.alpha = vm["alpha"].as<double>();
  }
  // One defect map for every wafer (a file given once), or one per wafer (N files, or generated: wafer k's from its
  // own seed, apps::wafer_seed), docs/mapping.md section 5.
  const std::vector<std::string> defect_files =
      vm.count("defects") ? vm["defects"].as<std::vector<std::string>>() : std::vector<std::string>{};
  auto times = [](std::size_t n) { return n == 1 ? std::string("once") : n == 2 ? std::string("twice") : fmt::format("{} times", n); };
  hw::repair_scheme(vm["repair"].as<std::string>());  // (an unknown scheme refused before any map is written)
  if (vm.count("dump-firmware")) {
    const DumpedTile d = parse_tile(vm["dump-firmware"].as<std::string>());
    if (!spec.logical().inside(d.at))
      throw hw::InputError(fmt::format("--dump-firmware {} is outside the {}x{} array", vm["dump-firmware"].as<std::string>(),
                                       spec.logical().width, spec.logical().height));
    if (d.wafer >= mo.wafers)
      throw hw::InputError(fmt::format("--dump-firmware {} is outside the pipeline of {} wafer{} (wafers 0 to {})",
                                       vm["dump-firmware"].as<std::string>(), mo.wafers, mo.wafers == 1 ? "" : "s",
                                       mo.wafers - 1));
  }
  if (defect_files.size() > 1 && defect_files.size() != std::size_t(mo.wafers))
    throw hw::InputError(fmt::format("--defects given {} for {} wafer{}: give it once (every wafer's map) or once per "
                                     "wafer",
                                     times(defect_files.size()), mo.wafers, mo.wafers == 1 ? "" : "s"));
  const std::size_t maps_own = vm.count("density") ? std::size_t(mo.wafers) : std::max<std::size_t>(1, defect_files.size());
  const std::vector<std::string> maps_out =
      vm.count("defects-out") ? vm["defects-out"].as<std::vector<std::string>>() : std::vector<std::string>{};
  if (!maps_out.empty()) {
    if (!vm.count("defects") && !vm.count("density")) throw hw::InputError("--defects-out needs --defects FILE or --density D");
    if (maps_out.size() != maps_own)
      throw hw::InputError(
          maps_own == 1 ? fmt::format("--defects-out given {} for one defect map: give it once", times(maps_out.size()))
                        : fmt::format("--defects-out given {} for {} wafers with defect maps of their own: give it "
                                      "once per wafer",
                                      times(maps_out.size()), maps_own));
    for (std::size_t k = 0; k < maps_out.size(); ++k)
      for (std::size_t j = 0; j < k; ++j)
        if (maps_out[j] == maps_out[k])
          throw hw::InputError(fmt::format("--defects-out {} is given for wafers {} and {}: give each wafer's map a file of "
                                           "its own",
                                           maps_out[k], j, k));
    for (const std::string& out : maps_out) {
      check_map_path(out, "--defects-out");
      traces::check_writable(out, "--defects-out");
    }
  }
  if (vm.count("trace")) traces::check_writable(vm["trace"].as<std::string>(), "--trace");
  check_apart(given_paths(vm, {"json", "trace", "defects-out"}), given_paths(vm, {"model", "defects", "wafer"}));
  TileTracks tile_tracks;
  tile_tracks.grid = spec.logical();
  tile_tracks.window = {0, 0, tile_tracks.grid.width, tile_tracks.grid.height};
  if (vm.count("trace-window")) {
    if (!vm.count("trace")) throw hw::InputError("--trace-window needs --trace PATH");
    tile_tracks.window = parse_window(vm["trace-window"].as<std::string>(), tile_tracks.grid);
    tile_tracks.whole_wafer = false;
  }
  mapper::ModelConfig model = mapper::load_model(vm["model"].as<std::string>());
  for (std::size_t j = 0; j < step.size(); ++j)
    if (model.max_position > 0 && step[j].context > model.max_position)
      throw hw::InputError(fmt::format("--step entry '{}@{}' (sequence {}) is beyond {}'s max_position_embeddings {} (refused)",
                                       step[j].tokens, step[j].context, j + 1, model.name, model.max_position));
  if (model.max_position > 0 && mo.context > model.max_position)
    throw hw::InputError(fmt::format("{} {} is beyond {}'s max_position_embeddings {} (refused)",
                                     vm["context"].defaulted() && prefill > 0 ? "--prefill (the context)" : "--context",
                                     mo.context, model.name, model.max_position));

  // Defects -> repair -> the logical fabric routing sees, per wafer (or one for every wafer).
  std::string defects_desc = "none";
  WaferRepairs wr;
  if (vm.count("defects") || vm.count("density")) {
    std::vector<std::string> counts;
    if (vm.count("defects")) {
      for (std::size_t k = 0; k < defect_files.size(); ++k) {
        const std::string& f = defect_files[k];
        try {
          wr.maps.push_back(hw::read_defects(f, spec));
        } catch (const hw::InputError& e) {
          throw hw::InputError(defect_files.size() == 1 ? fmt::format("--defects: {}", e.what())
                                                        : fmt::format("--defects (wafer {}'s map): {}", k, e.what()));
        }
        counts.push_back(fmt::format("{} ({} defects)", f, wr.maps.back().size()));
      }
      defects_desc = fmt::format("{}", fmt::join(counts, ", "));
      if (wr.maps.size() == 1 && mo.wafers > 1) defects_desc += fmt::format(", the same on each of the {} wafers", mo.wafers);
    } else {
      gen.density_per_cm2 = vm["density"].as<double>();
      if (!(gen.density_per_cm2 >= 0) || gen.density_per_cm2 > 1e4)
        throw hw::InputError(fmt::format("--density {} must be between 0 and 10000 per cm^2", gen.density_per_cm2));
      const std::uint64_t seed = parse_seed(vm["seed"].as<std::string>());
      std::vector<std::string> seeds;
      for (std::size_t k = 0; k < maps_own; ++k) {
        wr.maps.push_back(hw::generate_defects(spec, gen, wafer_seed(seed, k)));
        counts.push_back(fmt::format("{}", wr.maps.back().size()));
        seeds.push_back(fmt::format("{}", wafer_seed(seed, k)));
      }
      const std::string clustered =
          gen.model == hw::DefectModel::NegBinomial ? fmt::format(", negative binomial with alpha {}", gen.alpha) : "";
      // (each wafer's own seed, so that its map alone is decode --density D --seed THAT)
      defects_desc = maps_own == 1 ? fmt::format("generated: {} per cm^2{}, seed {} ({} defects)", gen.density_per_cm2,
                                                 clustered, seed, counts[0])
                                   : fmt::format("generated: {} per cm^2{}, seed {}, a map per wafer (seeds {}; {} defects)",
                                                 gen.density_per_cm2, clustered, seed, fmt::join(seeds, ", "),
                                                 fmt::join(counts, ", "));
    }
    // (before the repair, so that a map the repair refuses can be looked at)
    for (std::size_t k = 0; k < maps_out.size(); ++k) write_defect_map(maps_out[k], wr.maps[k]);
    wr.repair(spec, vm["repair"].as<std::string>());
  } else {
    wr.fabrics.push_back(noc::Fabric::perfect(spec.logical()));
  }
  const noc::WaferFabrics fabrics = wr.view();

  // --placement auto: search the mapping space first (apps/search.h), then run the chosen mapping.
  // The steps of this process (the search's candidates, prefill chunks, a pipeline's wafers) share what a
  // PointCache shares (apps/point_cache.h): the memory of the large arrays, and the mesh model on one fabric.
  const bool cache = vm.count("no-cache") == 0;
  if (cache) keep_freed_memory();
  std::optional<sim::Simulator> simulator;
  auto new_simulator = [&] {
    simulator.emplace();
    simulator->keep_mesh(cache);
  };
  std::optional<SearchResult> searched;
  // The regions section (about 5 % of the default job's CPU time on wse3) only when the results are written.
  const bool regions = vm.count("json") > 0;
  if (mo.placement == "auto") {
    new_simulator();
    // The candidates side by side only when --threads is given: each holds its own task records, and on the
    // development VM the second one's fresh memory cost what running it after the first saves (docs/timing.md
    // "Wafers side by side"); one after the other, the second reuses the first's memory. A second CPU maps the
    // candidates beside the first and is each emulated candidate's core to spare (docs/timing.md "The search
    // with a core to spare").
    DecodePoint base{spec, model, mo, fidelity, false, {}, false, regions ? kRegionCells : 0, 0,
                     vm.count("no-reuse") == 0, vm.count("threads") ? threads : 1u};
    SearchBudget budget;
    budget.task_runs = vm["search-budget"].as<std::int64_t>();
    if (budget.task_runs < 0) throw hw::InputError(fmt::format("--search-budget {} must be at least 0", budget.task_runs));
    searched = search(*simulator, base, fabrics, budget, threads > 1);
    mo = searched->candidates[std::size_t(searched->chosen)].options;
  }
  DecodePoint point{spec, model, mo, fidelity, vm.count("trace") > 0, {}, false, regions ? kRegionCells : 0, 0,
                    vm.count("no-reuse") == 0, threads};
  if (vm.count("trace")) {
    tile_tracks.resize(std::size_t(mo.wafers));
    point.keep_tile = [&](std::size_t k, hw::TileIndex t, std::uint32_t runs) { return tile_tracks.keep(k, t, runs); };
    point.keep_path = true;
    point.series_cells = kSeriesCells;
  }
  // The search's mapping and emulation of the chosen candidate are this point's (the same options and
  // simulator settings), unless a prefill or a trace asks for another run.
  const bool from_search = searched && searched->chosen_run && prefill == 0 && !vm.count("trace");
  std::optional<PrefillRun> pre;
  mapper::Mapping mapping;
  if (prefill > 0 && !vm.count("dump-firmware")) {
    new_simulator();
    point.options.tokens = prefill;
    pre = run_prefill(*simulator, point, fabrics, max_chunk, nullptr, true);
    mapping = std::move(pre->mapping);
    point.options.tokens = pre->chunks.back().tokens;
  } else if (!step.empty()) {
    mapping = map_mixed(point, fabrics);
  } else if (from_search) {
    mapping = std::move(searched->chosen_run->mapping);
  } else {
    if (prefill > 0) point.options.tokens = max_chunk > 0 ? std::min(max_chunk, prefill) : prefill;
    // The mesh model the step runs on depends on the fabric alone: with a core to spare it is built while the
    // step is mapped (sim::Simulator::prepare_mesh; the default job's mesh takes about as long as its mapping,
    // docs/timing.md "The mesh built while the step is mapped").
    const bool prepare = cache && threads > 1 && !vm.count("dump-firmware");
    if (prepare && !simulator) new_simulator();
    std::optional<MeshPrepare> mesh;
    if (prepare) mesh.emplace(*simulator, spec, fabrics.of(0), fidelity, true);  // (wafer 0 runs first)
    mapping = map_point(point, fabrics);
  }
  const double mapping_s = since(t_start);
  std::vector<const firmware::Image*> images;
  for (const auto& im : mapping.images) images.push_back(&im);

  if (vm.count("dump-firmware")) {
    const DumpedTile d = parse_tile(vm["dump-firmware"].as<std::string>());  // (checked against the wafer above)
    if (mo.wafers > 1) fmt::print("wafer {} of {}: ", d.wafer, mo.wafers);
    fmt::print("{}", firmware::dump(*images[std::size_t(d.wafer)], d.at));
    // (why it is idle, when repair is why: it printed "idle (no program)" alone)
    const noc::Fabric& f = fabrics.of(std::size_t(d.wafer));
    if (!f.router_ok(f.grid().index(d.at)))
      fmt::print("tile ({},{}): repair left it without a working router (no working physical tile hosts it)\n",
                 d.at.x, d.at.y);
    return 0;
  }

  if (!simulator) new_simulator();
  // (on a terminal, a step that runs a while shows how far it has got: apps::TaskProgress)
  auto emulate = [&] {
    TaskProgress progress(mo.wafers > 1 ? fmt::format("decode: emulating {} wafers", mo.wafers) : "decode: emulating",
                          std::uint64_t(mapping.task_runs()));
    point.progress = progress.counter();
    return emulate_point(*simulator, point, fabrics, mapping);
  };
  sim::StepResult res = pre            ? std::move(pre->step)
                        : from_search ? std::move(searched->chosen_run->step)
                                      : emulate();

  // ---- report --------------------------------------------------------------------------------------
  traces::Report rep(pre ? "prefill step" : !step.empty() ? "mixed step" : "decode step");
  auto& cfg = rep.section("config", "configuration");
  cfg.add_text("wafer", spec.name);
  cfg.add_text("model", model.name);
  cfg.add_int("context", mo.context, "tokens", step.empty() ? "" : "the step's largest context");
  cfg.add_int("batch", mo.batch, "sequences", step.empty() ? "" : "sequences in the step");
  if (!step.empty()) cfg.add_text("step", mapper::to_string(step), "a mixed step: new tokens @ context, per sequence");
  if (pre) cfg.add_int("prefill_tokens", prefill, "tokens", "new tokens per sequence, the last at position context");
  if (mo.kv_capacity > 0)
    cfg.add_int("kv_capacity", mo.kv_capacity, "tokens", "KV-cache positions the mapping reserves, over all sequences");
  cfg.add_text("placement", mapping.placement);
  cfg.add_text("kernel", mapper::to_string(mo.kernel));
  if (mo.kernel == mapper::Kernel::MeshGemv) {
    cfg.add_text("allreduce", mapper::to_string(mo.allreduce));
    cfg.add_int("group", mo.group, "tiles", "0: sqrt of each line");
  }
  cfg.add_text("fidelity", noc::to_string(fidelity));
  cfg.add_text("weights", mapper::to_string(mo.weights));
  cfg.add_int("wafers", mo.wafers, "wafers");
  cfg.add_int("weight_bits", mo.weight_bits, "bits");
  cfg.add_text("defects", defects_desc);
  {
    std::string repaired = wr.repairs.empty() ? "not needed" : wr.repairs[0].scheme + ": ";
    std::vector<std::string> failed;
    for (std::size_t k = 0; k < wr.repairs.size(); ++k)
      if (!wr.repairs[k].complete)
        failed.push_back(wr.repairs.size() == 1 ? wr.repairs[k].reason
                                                : fmt::format("incomplete on wafer {}: {}", k, wr.repairs[k].reason));
    if (!wr.repairs.empty()) repaired += failed.empty() ? "complete" : fmt::format("{}", fmt::join(failed, "; "));
    // ("complete" is every logical tile on a healthy physical one; a link repair left without a path is said too, as
    // the placements that need every link refuse it: a tile cut off by four failed links was "complete" alone)
    std::int64_t no_path = 0;
    for (const hw::RepairLinks& l : wr.links) no_path += l.no_path;
    if (no_path > 0) repaired += fmt::format(" ({} logical link{} left without a healthy path)", no_path, no_path == 1 ? "" : "s");
    cfg.add_text("repair", repaired);
  }
  cfg.add("clock", spec.clock_ghz, "GHz");

  const double us = res.latency_us;
  if (pre) {
    rep.add_int("latency_cycles", std::int64_t(res.latency), "cycles", "every chunk, every layer, every wafer");
    rep.add("latency_us", us, "us", "the whole step");
    rep.add("ttft_us", us, "us",
            mo.context == prefill ? "time to first token of a prompt of prefill_tokens tokens"
                                  : "a chunk ending at position context (a speculative verify step has this shape)");
    rep.add("prompt_tokens_per_s", us > 0 ? 1e6 * double(prefill) / us : 0.0, "tokens/s", "per sequence");
    rep.add("prompt_tokens_per_s_aggregate", us > 0 ? 1e6 * double(prefill * mo.batch) / us : 0.0, "tokens/s", "the whole batch");
    auto& pc = rep.section("prefill", "the step in chunks (SRAM holds at most chunk_tokens token vectors per sequence)");
    pc.add_int("chunk_tokens", pre->chunk, "tokens");
    pc.add_int("chunks", std::int64_t(pre->chunks.size()), "chunks");
    auto& ct = pc.add_table("per_chunk", {"first token", "tokens", "context [tokens]", "latency [cycles]", "latency [us]"},
                            "one after another; the breakdown below sums them");
    for (const auto& c : pre->chunks)
      ct.rows.push_back({c.first, c.tokens, c.context, std::int64_t(c.latency), spec.cycles_to_us(double(c.latency))});
  } else if (!step.empty()) {
    std::int64_t tokens = 0, decode = 0;
    for (const auto& q : step) tokens += q.tokens, decode += q.tokens == 1;
    rep.add_int("latency_cycles", std::int64_t(res.latency), "cycles", "the whole step: every sequence, layer and wafer");
    rep.add("latency_us", us, "us", "the whole step (each sequence's new tokens all come out of it)");
    rep.add("tokens_per_s_aggregate", us > 0 ? 1e6 * double(tokens) / us : 0.0, "tokens/s", "new tokens of every sequence");
    auto& mx = rep.section("mixed", "a mixed step: decode tokens and prefill chunks of several sequences at once");
    mx.add_int("sequences", std::int64_t(step.size()), "sequences");
    mx.add_int("decode_sequences", decode, "sequences", "one new token each");
    mx.add_int("prefill_sequences", std::int64_t(step.size()) - decode, "sequences", "a chunk of more than one token each");
    mx.add_int("step_tokens", tokens, "tokens", "new tokens of every sequence: what goes through each GEMV");
    auto& st = mx.add_table("per_sequence", {"sequence", "kind", "tokens", "context [tokens]", "rate [tokens/s]"},
                            "each sequence's new tokens (the last at position context) and its rate in this step");
    for (std::size_t j = 0; j < step.size(); ++j)
      st.rows.push_back({std::int64_t(j + 1), std::string(step[j].tokens == 1 ? "decode" : "prefill"), step[j].tokens,
                         step[j].context, us > 0 ? 1e6 * double(step[j].tokens) / us : 0.0});
  } else {
    rep.add_int("latency_cycles", std::int64_t(res.latency), "cycles", "one token, every layer, every wafer");
    rep.add("latency_us", us, "us", "latency per token");
    rep.add("tokens_per_s", us > 0 ? 1e6 / us : 0.0, "tokens/s", "per user (sequence)");
    rep.add("tokens_per_s_aggregate", us > 0 ? 1e6 * double(mo.batch) / us : 0.0, "tokens/s", "the whole batch");
  }

  auto& bd = rep.section("breakdown", "critical path by cause, layer and operator (sums to the latency)");
  const double total = double(res.latency);
  for (std::size_t c = 0; c < core::kCauses; ++c) {
    Cycle v = res.breakdown.cause[c];
    bd.add_int(core::to_string(core::Cause(c)), std::int64_t(v), "cycles",
               fmt::format("{:.1f} % of the step", total > 0 ? 100.0 * double(v) / total : 0.0));
  }
  bd.add_int("path_tasks", res.breakdown.path_tasks, "tasks", "tasks on the critical path");
  bd.add_int("path_bursts", res.breakdown.path_bursts, "bursts", "bursts on the critical path");
  auto& tl = bd.add_table("per_layer", cause_columns("layer"), "critical path per layer");
  for (const auto& n : res.per_layer) add_causes(tl, n.name, n.cycles, total, spec);
  auto& to = bd.add_table("per_op", cause_columns("operator"), "critical path per operator");
  auto nonzero = [](const core::CauseCycles& c) { return std::any_of(c.begin(), c.end(), [](Cycle v) { return v > 0; }); };
  for (const auto& n : res.per_op)
    if (nonzero(n.cycles)) add_causes(to, n.name, n.cycles, total, spec);
  auto& tw = bd.add_table("work_per_op", {"operator", "compute [tile-cycles]", "vector_setup [tile-cycles]", "task_overhead [tile-cycles]"},
                          "work over all tiles (not only the critical path)");
  for (const auto& n : res.work_per_op)
    if (nonzero(n.cycles)) tw.rows.push_back({n.name, std::int64_t(n.cycles[0]), std::int64_t(n.cycles[1]), std::int64_t(n.cycles[2])});

  auto& mem = rep.section("sram", "tile SRAM");
  std::int64_t smax = 0;
  double ssum = 0;
  std::int64_t used = 0;
  for (const auto* im : images) {
    memory::SramStats s = sim::check_sram(spec, *im);
    smax = std::max<std::int64_t>(smax, std::int64_t(s.max_bytes));
    ssum += s.sum_bytes;
    used += std::int64_t(s.tiles);
  }
  // (a prefill in chunks: the fullest tile of any chunk, where the rest of the section is the last chunk's mapping)
  if (pre) smax = std::max<std::int64_t>(smax, std::int64_t(pre->sram_max));
  mem.add_int("sram_max", smax, "bytes", pre ? "the fullest tile, of any chunk" : "the fullest tile");
  mem.add("sram_mean", used ? ssum / double(used) : 0.0, "bytes", "mean over the tiles used");
  mem.add_int("sram_capacity", spec.sram_bytes, "bytes", "per tile");

  auto& fab = rep.section("fabric", "tiles, colors and network");
  int colors = 0;
  for (const auto& w : mapping.wafers) colors = std::max(colors, w.colors_used);
  fab.add_int("tiles_used", mapping.tiles_used(), "tiles", "tiles with a program, all wafers");
  {
    std::int64_t working = 0;  // (a tile repair left without a working router holds no program)
    for (std::size_t k = 0; k < std::size_t(mo.wafers); ++k)
      for (hw::TileIndex t = 0; t < fabrics.of(k).grid().size(); ++t) working += fabrics.of(k).router_ok(t);
    fab.add_int("tiles_available", working, "tiles", "logical tiles with a working router, all wafers");
  }
  fab.add_int("colors_used", colors, "colors", "most distinct colors one tile's program uses");
  fab.add_int("programs", std::int64_t(mapping.program_count()), "programs", "distinct tile programs");
  fab.add_int("firmware_bytes", mapping.firmware_bytes(), "bytes", "encoded distinct programs");
  std::uint64_t bursts = 0, traversals = 0, wait = 0, busy_max = 0, tasks = 0, held = 0;
  for (const auto& w : res.wafers) {
    bursts += w.network.bursts, traversals += w.network.link_traversals, wait += w.network.wait_cycles;
    busy_max = std::max(busy_max, w.link_busy_max), tasks += w.step.tasks_run, held += w.step.tasks_held;
  }
  fab.add_int("tasks_run", std::int64_t(tasks), "tasks", "tile task runs of the step, all tiles and wafers");
  fab.add_int("tasks_held", std::int64_t(held), "tasks",
              "tasks that waited for their tile's task whose output they read (inputs out of program order: streamed weights, a repair detour, a neighbour done sooner)");
  fab.add_int("bursts", std::int64_t(bursts), "bursts", "bursts the mesh carried, all wafers (a multicast once)");
  fab.add_int("link_traversals", std::int64_t(traversals), "links",
              "links the bursts occupied, summed over the bursts (each link of a multicast's tree once)");
  fab.add_int("wait_cycles_total", std::int64_t(wait), "cycles", "all bursts' heads waiting for busy links (not only the path)");
  fab.add_int("busiest_link", std::int64_t(busy_max), "cycles", "occupied cycles of the busiest link");

  auto& io = rep.section("io", "weight streaming and wafer links");
  // (a prefill in chunks: the mapping is the last chunk's, which may stream less than the others; what the port
  // carried is summed over every chunk, as the requests and the busy time are)
  // (per step: a step's tokens share one stream of the weights; until 2026-12-07 the key said per token, for the
  // decode step of one sequence it was first written for)
  io.add_int("streamed_bytes_per_step", mapping.streamed_bytes_per_step(), "bytes",
             pre && pre->chunks.size() > 1 ? "the last chunk's mapping, per step of it"
                                           : "per step (all its tokens share the weights streamed once)");
  io.add_int("memoryx_bytes", std::int64_t(res.memoryx_bytes), "bytes", "the MemoryX port carried, the whole step");
  io.add_int("memoryx_requests", std::int64_t(res.memoryx_requests), "requests",
             "requests to the MemoryX port: one per streamed-weights op of a tile (docs/streaming.md)");
  io.add("memoryx_busy", res.memoryx_busy_us, "us", "time the MemoryX port carried bytes");
  io.add("edge_channel_bandwidth", res.channel_rule.gbs, "GB/s",
         fmt::format("per channel: min(share {:.2f}, {} lanes x {:.2f}) (docs/streaming.md)", res.channel_rule.share_gbs,
                     res.channel_rule.lanes, res.channel_rule.lane_gbs));
  io.add("edge_channel_busy_max", res.channel_busy_max_us, "us", "time the busiest edge channel carried bytes");
  // (named per token until 2026-12-07, as streamed_bytes_per_step was)
  io.add_int("interwafer_bytes_per_step", mapping.interwafer_bytes_per_step(), "bytes",
             pre && pre->chunks.size() > 1
                 ? "the last chunk's mapping, per link and step of it (batch x its tokens x hidden x 2 bytes)"
                 : "per link and step: every new token's hidden vector (batch x tokens x hidden x 2 bytes)");
  io.add_int("interwafer_links", std::int64_t(res.link_cycles.size()), "links",
             "links between consecutive wafers the step crossed (wafers - 1)");

  if (searched) {
    auto& se = rep.section("search", "--placement auto: every candidate mapping, closed form first, the best few emulated");
    const auto& ch = searched->candidates[std::size_t(searched->chosen)];
    se.add_text("chosen", ch.label);
    se.add_text("chosen_by", searched->chosen_by_formula ? "closed form (no candidate fitted the emulation budget)"
                                                        : "the lowest emulated latency");
    if (!searched->note.empty()) se.add_text("note", searched->note);
    auto& st = se.add_table("candidates", {"candidate", "task runs", "predicted [cycles]", "emulated [cycles]", "status"},
                            "predicted: closed form (meshgemv only; -1: none); emulated: -1 when not emulated");
    for (const auto& c : searched->candidates) {
      std::string status = !c.rejected.empty() ? "rejected: " + c.rejected : !c.skipped.empty() ? c.skipped : "emulated";
      std::int64_t emulated = std::llround(c.emulated);
      if (&c == &ch) status = "chosen; " + status;
      // (a choice by closed form, not emulated by the search, is emulated as the step: its latency is the step's)
      if (&c == &ch && emulated < 0) emulated = std::int64_t(res.latency), status += "; emulated as the step";
      st.rows.push_back({c.label, c.task_runs, std::int64_t(std::llround(c.predicted)), emulated, status});
    }
  }
  auto& wall = rep.section("wall_time", "where the wall time went (not deterministic)");
  wall.add("mapping", mapping_s, "s",
           from_search ? "the search: candidates mapped and emulated, the chosen one's elaboration and emulation below "
                         "among them"
                       : "");
  wall.add("elaboration", res.elaboration_s, "s", "SystemC top, mesh model, core state");
  wall.add("emulation", res.emulation_s, "s");
  // What the emulation cost, in tile tasks: with reuse (sim::StepOptions::reuse) a wafer running the same
  // step as an earlier one is not emulated again. Kept here, beside the other figures that depend on how the
  // result was computed, not on the result.
  wall.add_int("tasks_executed", std::int64_t(res.tasks_executed), "tasks", "tile tasks the cores ran");
  wall.add_int("tasks_represented", std::int64_t(res.tasks_represented), "tasks", "tile tasks the result stands for (tasks_run)");
  wall.add_int("wafers_reused", std::int64_t(res.wafers_reused), "wafers", "wafers whose step is an earlier wafer's, shifted");
  wall.add_int("threads", std::int64_t(res.threads), "threads", "wafers emulated at once (--threads)");
  wall.add_int("layers_reused", std::int64_t(res.layers_reused), "layers", "layers copied once their state repeated");
  wall.add_int("layers_watched", std::int64_t(res.layers_watched), "layers",
               "layers of the runs watched for a repeated state (0: no run long enough)");
  wall.add("reuse_cuts", res.cuts_s, "s", "of emulation, the cuts of the runs watched: describing the state, comparing, copying");
  std::uint64_t reuse_bytes = 0, given_up = 0;
  for (const sim::WaferStep& w : res.wafers)
    reuse_bytes = std::max(reuse_bytes, w.step.reuse_bytes), given_up += w.step.reuse_dropped;
  wall.add_int("reuse_lists", std::int64_t(reuse_bytes), "bytes",
               "the most reuse's lists held on a wafer (descriptions, slots touched, bursts, route changes; at most half "
               "the wafer's task records, docs/timing.md \"Reuse's memory\")");
  wall.add_int("reuse_given_up", std::int64_t(given_up), "wafers", "wafers whose lists reached that cap: run in full from there on");
  wall.add_text("huge_pages", huge_pages_note(), "the big blocks' and the heap's pages (docs/timing.md \"Huge pages where they are measured cheaper\", \"The heap on huge pages too\")");
  // Wafer by wafer (a pipeline's wafers run side by side with --threads: which one bounds the wall time).
  auto& pw = wall.add_table("per_wafer",
                            {"wafer", "elaboration [s]", "emulation [s]", "tasks_executed [tasks]", "tasks_represented [tasks]",
                             "layers_reused [layers]", "layers_watched [layers]", "reuse_cuts [s]", "reuse_lists [bytes]",
                             "reuse_given_up", "reused_from"},
                            "each wafer's executor built and run; a wafer whose step is another's, shifted (reused_from; -1: "
                            "emulated), costs 0 s");
  for (std::size_t k = 0; k < res.wafers.size(); ++k) {
    const sim::WaferStep& w = res.wafers[k];  // (a copied wafer's own costs are 0: sim::WaferStep)
    pw.rows.push_back({std::int64_t(k), w.elaboration_s, w.emulation_s, std::int64_t(w.step.tasks_executed),
                       std::int64_t(w.step.tasks_run), std::int64_t(w.step.layers_reused),
                       std::int64_t(w.step.layers_watched), w.step.cuts_s, std::int64_t(w.step.reuse_bytes),
                       std::int64_t(w.step.reuse_dropped), std::int64_t(w.reused_from)});
  }
  for (std::size_t i = 0; i < mapping.notes.size(); ++i) rep.add_text(fmt::format("note_{}", i + 1), mapping.notes[i]);

  if (regions) add_regions(rep, spec, wr, images, res);
  if (vm.count("trace"))
    write_trace(vm["trace"].as<std::string>(), *simulator, res, images, spec, tile_tracks, pre ? pre->chunks.size() : 0);
  finish(rep, vm);
  return 0;
}

const Registrar reg{{"decode", "emulate one decode step of a model on a wafer: latency, tokens/s, breakdown", run_decode, 1}};

}  // namespace
}  // namespace wafer::apps
