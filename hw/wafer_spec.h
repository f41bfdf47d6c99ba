#pragma once
// WaferSpec: the resolved, validated description of one wafer. Models receive only this struct.
// Every field is declared once in the parameter table (wafer_params() in wafer_spec.cpp) with its unit, meaning, range
// and the source of its default, so `wafer-emu describe`, the wafer-file reader and the JSON writer
// all speak of the same parameters.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "hw/coord.h"

namespace wafer::hw {

struct WaferSpec {
  std::string name;
  // Geometry. Programs see the logical rectangle; spares and repair live below it.
  std::int64_t logical_width = 0;   // tiles along x (columns)
  std::int64_t logical_height = 0;  // tiles along y (rows)
  std::int64_t spare_cols = 0;      // physical width = logical_width + spare_cols
  std::int64_t spare_rows = 0;      // physical height = logical_height + spare_rows
  double tile_area_mm2 = 0;         // silicon area of one physical tile (defect model)
  // Core.
  double clock_ghz = 0;
  std::int64_t simd_width = 0;      // FP16 FMACs per cycle
  std::int64_t sram_bytes = 0;      // local SRAM per tile
  std::int64_t sram_banks = 0;
  std::int64_t sram_read_ports = 0;   // 64-bit reads per cycle
  std::int64_t sram_write_ports = 0;  // 64-bit writes per cycle
  // Fabric.
  std::int64_t wavelet_bytes = 0;     // payload of one wavelet
  std::int64_t hop_latency = 0;       // cycles for a wavelet head to cross one router + link
  std::int64_t ramp_latency = 0;      // cycles of each ramp between a core and its router (core -> router and
                                      // router -> core); none for a burst a tile sends to itself
  std::int64_t stream_stage_latency = 0;  // cycles a tile adds when it transforms and forwards a stream
  std::int64_t colors = 0;            // routable colors (virtual channels) per router
  // Fixed costs (first-class, reported in the breakdown).
  std::int64_t task_overhead = 0;     // cycles to activate a task when its trigger arrives
  std::int64_t vector_setup = 0;      // cycles to set up one vector (DSD) operation
  std::int64_t color_switch = 0;      // cycles to switch/reconfigure a color's route
  std::int64_t collective_sync = 0;   // cycles of synchronisation before a collective starts
  // Off-wafer I/O (MemoryX weight streaming) and links between wafers.
  double io_bandwidth_gbs = 0;        // GB/s of the whole system
  double io_latency_ns = 0;
  std::int64_t io_channels = 0;       // edge channels through which streamed data enters the fabric
  double interwafer_bandwidth_gbs = 0;
  double interwafer_latency_ns = 0;

  Grid logical() const { return {std::int32_t(logical_width), std::int32_t(logical_height)}; }
  Grid physical() const {
    return {std::int32_t(logical_width + spare_cols), std::int32_t(logical_height + spare_rows)};
  }
  std::int64_t logical_tiles() const { return logical_width * logical_height; }
  std::int64_t physical_tiles() const { return (logical_width + spare_cols) * (logical_height + spare_rows); }
  double area_cm2() const { return double(physical_tiles()) * tile_area_mm2 / 100.0; }
  double cycles_to_us(double cycles) const { return cycles / (clock_ghz * 1e3); }
  friend bool operator==(const WaferSpec&, const WaferSpec&) = default;  // every field (apps::PointCache keys)
};

// ---- parameter table -------------------------------------------------------------------------------
enum class ParamKind : std::uint8_t { Integer, Real };

struct ParamInfo {
  std::string_view key;
  std::string_view unit;
  std::string_view meaning;
  std::string_view source;  // where the default comes from
  std::variant<std::int64_t WaferSpec::*, double WaferSpec::*> member;
  double min;  // inclusive
  double max;  // inclusive
};

// Every WaferSpec parameter, in presentation order.
const std::vector<ParamInfo>& wafer_params();
// The parameter named `key` (wafer_params), or nullptr.
const ParamInfo* wafer_param(std::string_view key);

// Largest wafer accepted, checked before anything is allocated.
inline constexpr std::int64_t kMaxTilesPerSide = 8192;
inline constexpr std::int64_t kMaxPhysicalTiles = 16'777'216;

// ---- presets and files -----------------------------------------------------------------------------
std::vector<std::string> preset_names();
// Throws InputError naming the preset and listing the known ones.
WaferSpec preset(std::string_view name);

// Throws InputError when a field is out of range or inconsistent; `where` prefixes the message.
void validate(const WaferSpec& spec, std::string_view where);

// Reads a wafer JSON file: {"preset": "wse3", "name": "...", "<param>": value, ...}. Without "preset"
// every parameter is required. Unknown keys, wrong types, malformed JSON and out-of-range values are
// InputErrors naming the key and file.
WaferSpec load_wafer_file(const std::filesystem::path& file);

// The same rules for a wafer object already parsed (a wafer file's content, or a wafer given inline, as in
// the validation case files): `where` prefixes every error, `name` names the spec unless the object has a
// "name". When `keys` is given it receives the parameters the object sets (presets and names excluded).
WaferSpec wafer_from_json(const nlohmann::json& j, std::string_view where, std::string name,
                          std::vector<std::string>* keys = nullptr);

// `--wafer` argument: a preset name, or a path to a wafer file (anything with '/' or ending in .json).
WaferSpec resolve_wafer(std::string_view arg);

}  // namespace wafer::hw
