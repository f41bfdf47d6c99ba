#include "hw/wafer_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "hw/error.h"
#include "hw/json_input.h"

namespace wafer::hw {

namespace {
using W = WaferSpec;
constexpr double kBig = 1e12;
}  // namespace

const std::vector<ParamInfo>& wafer_params() {
  static const std::vector<ParamInfo> params = {
      {"logical_width", "tiles", "program-visible fabric width (x, columns)",
       "Cerebras SDK fabric dimensions: 757 (CS-2), 762 (CS-3)", &W::logical_width, 1, double(kMaxTilesPerSide)},
      {"logical_height", "tiles", "program-visible fabric height (y, rows)",
       "Cerebras SDK fabric dimensions: 996 (CS-2), 1172 (CS-3)", &W::logical_height, 1, double(kMaxTilesPerSide)},
      {"spare_cols", "tiles", "spare physical columns beyond the logical width (used by repair)",
       "chosen so physical tiles match public core counts (~850 k WSE-2, ~970 k WSE-3)", &W::spare_cols, 0, 4096},
      {"spare_rows", "tiles", "spare physical rows beyond the logical height (used by repair)",
       "chosen so physical tiles match public core counts", &W::spare_rows, 0, 4096},
      {"tile_area_mm2", "mm^2", "silicon area of one physical tile, for defect density",
       "46,225 mm^2 wafer area / physical tiles", &W::tile_area_mm2, 1e-6, 1e4},
      {"clock_ghz", "GHz", "core and fabric clock", "WSE-2 public 1.1 GHz; WSE-3 unpublished, same assumed",
       &W::clock_ghz, 1e-3, 100},
      {"simd_width", "FMAC/cycle", "FP16 fused multiply-accumulates per cycle per tile",
       "public: SIMD-4 (WSE-2), SIMD-8 (WSE-3)", &W::simd_width, 1, 1024},
      {"sram_bytes", "bytes", "local SRAM per tile (capacity is enforced)", "public: 48 KB per core",
       &W::sram_bytes, 1024, 1 << 30},
      {"sram_banks", "banks", "SRAM banks per tile", "public: 8 banks", &W::sram_banks, 1, 1024},
      {"sram_read_ports", "64-bit reads/cycle", "SRAM read bandwidth per tile",
       "public: 2 x 64-bit reads per cycle", &W::sram_read_ports, 1, 64},
      {"sram_write_ports", "64-bit writes/cycle", "SRAM write bandwidth per tile",
       "public: 1 x 64-bit write per cycle", &W::sram_write_ports, 1, 64},
      {"wavelet_bytes", "bytes", "payload of one wavelet (one per link per direction per cycle)",
       "public: 32-bit wavelets", &W::wavelet_bytes, 1, 64},
      {"hop_latency", "cycles", "latency for a wavelet head to cross one router and link",
       "public: about one cycle per hop", &W::hop_latency, 1, 1000},
      {"ramp_latency", "cycles",
       "latency of each ramp between a core and its router, either way (none for a burst to the tile itself)",
       "Luczynski et al., \"Near-Optimal Wafer-Scale Reduce\", HPDC'24 (arXiv 2404.15888): T_R ~ 2 on WSE-2",
       &W::ramp_latency, 0, 1000},
      {"stream_stage_latency", "cycles",
       "pipeline latency a tile adds when it transforms a stream and forwards it (reduce chains, relays); 0 acts as 1 "
       "(a core reacts the cycle after an arrival at the earliest)",
       "fitted with task_overhead and vector_setup (docs/fidelity.md, `wafer-emu validate --fit` on "
       "configs/validation/public.json); equals the one cycle of work per dependent step in Luczynski et al.'s model",
       &W::stream_stage_latency, 0, 1000},
      {"colors", "colors", "routable colors (virtual channels) per router",
       "public: 24 routable colors (WSE-2); WSE-3 assumed the same", &W::colors, 1, 64},
      {"task_overhead", "cycles", "running a task beyond its vector work: activation when its trigger (data on a color) arrives, and its fixed software costs; 0 acts as 1 (a core reacts the cycle after an arrival at the earliest)",
       "fitted (docs/fidelity.md, `wafer-emu validate --fit` on configs/validation/public.json: WaferLLM decode "
       "layers on WSE-2); no published figure: it stands for a kernel phase's software costs",
       &W::task_overhead, 0, 1e6},
      {"vector_setup", "cycles", "setting up one vector (DSD) operation before elements flow",
       "fitted (docs/fidelity.md, `wafer-emu validate --fit` on configs/validation/public.json: WaferLLM decode "
       "layers on WSE-2); no published figure: one @map iteration issuing one DSD op",
       &W::vector_setup, 0, 1e6},
      {"color_switch", "cycles", "switching or reconfiguring a color's route between phases",
       "estimate: one control wavelet through the router plus its pipeline", &W::color_switch, 0, 1e6},
      {"collective_sync", "cycles", "synchronisation before a collective starts, beyond the data dependency",
       "0: tasks are triggered by the arriving data itself; a parameter for studies", &W::collective_sync, 0, 1e6},
      {"io_bandwidth_gbs", "GB/s", "off-wafer I/O bandwidth of the system (MemoryX weight streaming)",
       "public: ~1.2 Tb/s per system", &W::io_bandwidth_gbs, 1e-3, 1e6},
      {"io_latency_ns", "ns", "latency of one off-wafer weight-stream request",
       "estimate: Ethernet + switch round trip, order of microseconds", &W::io_latency_ns, 0, 1e9},
      {"io_channels", "channels", "edge channels through which streamed weights enter the fabric",
       "public: 12 x 100 GbE ports per CS-2 system", &W::io_channels, 1, 4096},
      {"interwafer_bandwidth_gbs", "GB/s", "bandwidth of the link between two wafers of a pipeline",
       "assumed equal to the system I/O bandwidth", &W::interwafer_bandwidth_gbs, 1e-3, 1e6},
      {"interwafer_latency_ns", "ns", "latency of the link between two wafers of a pipeline",
       "estimate: Ethernet + switch, order of microseconds", &W::interwafer_latency_ns, 0, 1e9},
  };
  return params;
}

const ParamInfo* wafer_param(std::string_view key) {
  for (const ParamInfo& p : wafer_params())
    if (p.key == key) return &p;
  return nullptr;
}

namespace {

WaferSpec common(std::string name) {
  WaferSpec w;
  w.name = std::move(name);
  w.clock_ghz = 1.1;
  w.simd_width = 4;
  w.sram_bytes = 48 * 1024;
  w.sram_banks = 8;
  w.sram_read_ports = 2;
  w.sram_write_ports = 1;
  w.wavelet_bytes = 4;
  w.hop_latency = 1;
  w.ramp_latency = 2;
  w.stream_stage_latency = 1;  // the three fitted values: docs/fidelity.md
  w.colors = 24;
  w.task_overhead = 95;
  w.vector_setup = 16;
  w.color_switch = 4;
  w.collective_sync = 0;
  w.io_bandwidth_gbs = 150;
  w.io_latency_ns = 2000;
  w.io_channels = 12;
  w.interwafer_bandwidth_gbs = 150;
  w.interwafer_latency_ns = 2000;
  return w;
}

constexpr double kWaferAreaMm2 = 46225.0;

const std::map<std::string, WaferSpec, std::less<>>& presets() {
  static const auto table = [] {
    std::map<std::string, WaferSpec, std::less<>> m;
    WaferSpec wse2 = common("wse2");
    wse2.logical_width = 757, wse2.logical_height = 996, wse2.spare_cols = 48, wse2.spare_rows = 60;
    wse2.tile_area_mm2 = kWaferAreaMm2 / double(wse2.physical_tiles());
    m.emplace("wse2", wse2);
    WaferSpec wse3 = common("wse3");
    wse3.logical_width = 762, wse3.logical_height = 1172, wse3.spare_cols = 42, wse3.spare_rows = 34;
    wse3.simd_width = 8;
    wse3.tile_area_mm2 = kWaferAreaMm2 / double(wse3.physical_tiles());
    m.emplace("wse3", wse3);
    // Small meshes for tests: WSE-3 tiles, fewer of them.
    WaferSpec tiny = wse3;
    tiny.name = "tiny", tiny.logical_width = 8, tiny.logical_height = 8, tiny.spare_cols = 1, tiny.spare_rows = 1;
    m.emplace("tiny", tiny);
    WaferSpec small = wse3;
    small.name = "small", small.logical_width = 64, small.logical_height = 64, small.spare_cols = 2,
    small.spare_rows = 2;
    m.emplace("small", small);
    return m;
  }();
  return table;
}

double get(const WaferSpec& w, const ParamInfo& p) {
  return std::visit([&](auto m) { return double(w.*m); }, p.member);
}

}  // namespace

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& [k, v] : presets()) names.push_back(k);
  return names;
}

WaferSpec preset(std::string_view name) {
  auto it = presets().find(name);
  if (it == presets().end())
    throw InputError(fmt::format("unknown wafer preset '{}' (known: {})", name, fmt::join(preset_names(), ", ")));
  return it->second;
}

void validate(const WaferSpec& w, std::string_view where) {
  for (const auto& p : wafer_params()) {
    double v = get(w, p);
    if (!std::isfinite(v) || v < p.min || v > p.max)
      throw InputError(fmt::format("{}: '{}' = {} is outside [{}, {}] {}", where, p.key, v, p.min, p.max, p.unit));
  }
  if (w.physical_tiles() > kMaxPhysicalTiles)
    throw InputError(fmt::format("{}: {} x {} physical tiles exceed the limit of {} tiles", where,
                                 w.logical_width + w.spare_cols, w.logical_height + w.spare_rows, kMaxPhysicalTiles));
  if (w.logical_width + w.spare_cols > kMaxTilesPerSide || w.logical_height + w.spare_rows > kMaxTilesPerSide)
    throw InputError(fmt::format("{}: physical grid {} x {} exceeds {} tiles per side", where,
                                 w.logical_width + w.spare_cols, w.logical_height + w.spare_rows, kMaxTilesPerSide));
}

WaferSpec load_wafer_file(const std::filesystem::path& file) {
  const std::string f = file.string();
  const std::string text = read_input_file(file, "wafer file");
  const nlohmann::json j = parse_input_json<nlohmann::json>(text, f);
  return wafer_from_json(j, f, file.stem().string());
}

WaferSpec wafer_from_json(const nlohmann::json& j, std::string_view where, std::string name,
                          std::vector<std::string>* keys) {
  const std::string f(where);
  if (!j.is_object()) throw InputError(fmt::format("{}: a wafer file is a JSON object", f));

  WaferSpec w;
  std::set<std::string> seen;
  bool from_preset = false;
  if (auto it = j.find("preset"); it != j.end()) {
    if (!it->is_string()) throw InputError(fmt::format("{}: 'preset' must be a string", f));
    w = preset(it->get<std::string>());
    from_preset = true;
  }
  w.name = std::move(name);
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    if (key == "preset") continue;
    if (key == "name") {
      if (!it->is_string()) throw InputError(fmt::format("{}: 'name' must be a string", f));
      w.name = it->get<std::string>();
      // (it heads tables and labels: a control character, a newline say, would break them)
      if (w.name.empty() || std::any_of(w.name.begin(), w.name.end(), is_control))
        throw InputError(fmt::format("{}: 'name' = {} must be a non-empty line of text", f, it->dump()));
      // (it names a folder too: table's LLMServingSim bundle, wafer-emu-NAME; a '/' or '..' led outside --out)
      if (w.name.find_first_of("/\\") != std::string::npos || w.name == "." || w.name == "..")
        throw InputError(fmt::format("{}: 'name' = {} names a folder in outputs: no '/' or '\\', and not '.' or '..'", f,
                                     it->dump()));
      continue;
    }
    const ParamInfo* info = nullptr;
    for (const auto& p : wafer_params())
      if (p.key == key) info = &p;
    if (!info) throw InputError(fmt::format("{}: unknown key '{}' (see `wafer-emu describe`)", f, key));
    if (!it->is_number()) throw InputError(fmt::format("{}: '{}' must be a number", f, key));
    double v = it->get<double>();
    if (!std::isfinite(v) || v < info->min || v > info->max)
      throw InputError(fmt::format("{}: '{}' = {} is outside [{}, {}] {}", f, key, it->dump(), info->min, info->max,
                                   info->unit));
    std::visit(
        [&](auto m) {
          using T = std::remove_reference_t<decltype(w.*m)>;
          if constexpr (std::is_same_v<T, std::int64_t>) {
            if (!it->is_number_integer() && std::floor(v) != v)
              throw InputError(fmt::format("{}: '{}' = {} must be a whole number", f, key, it->dump()));
            w.*m = std::int64_t(v);
          } else {
            w.*m = v;
          }
        },
        info->member);
    seen.insert(key);
  }
  if (!from_preset) {
    std::vector<std::string> missing;
    for (const auto& p : wafer_params())
      if (!seen.count(std::string(p.key))) missing.emplace_back(p.key);
    if (!missing.empty())
      throw InputError(fmt::format("{}: missing required field(s) {} (or give \"preset\" to start from one)", f,
                                   fmt::join(missing, ", ")));
  }
  validate(w, f);
  if (keys) keys->assign(seen.begin(), seen.end());
  return w;
}

WaferSpec resolve_wafer(std::string_view arg) {
  if (names_file(arg)) return load_wafer_file(std::string(arg));
  WaferSpec w = preset(arg);
  validate(w, w.name);
  return w;
}

}  // namespace wafer::hw
