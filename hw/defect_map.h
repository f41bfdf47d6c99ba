#pragma once
// Defects are data: failed tiles (core, router, SRAM) and failed links, in PHYSICAL coordinates.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "hw/coord.h"
#include "hw/wafer_spec.h"

namespace wafer::hw {

enum class DefectKind : std::uint8_t { Core, Router, Sram, Link };
const char* to_string(DefectKind k);

struct Defect {
  DefectKind kind = DefectKind::Core;
  Coord at;                // physical tile
  Dir dir = Dir::East;     // Link only: the link from `at` towards East or South (canonical form)
  friend bool operator==(const Defect&, const Defect&) = default;
};

class DefectMap {
 public:
  DefectMap() = default;
  explicit DefectMap(Grid physical);

  const Grid& grid() const { return grid_; }
  const std::vector<Defect>& defects() const { return defects_; }
  std::size_t size() const { return defects_.size(); }

  // Adds one defect. Out-of-range coordinates, a link leaving the grid, or a duplicate throw InputError
  // (`where` names the file and line when reading). Link defects given as North/West are canonicalised.
  void add(Defect d, std::string_view where = {});

  // A core, router or SRAM defect: the tile cannot host a logical tile.
  bool tile_failed(TileIndex physical) const { return !tile_bits_.empty() && (tile_bits_[physical] & kTileDead); }
  // A router defect: wavelets cannot pass through this tile either.
  bool router_failed(TileIndex physical) const { return !tile_bits_.empty() && (tile_bits_[physical] & kRouterDead); }
  // The physical link between `from` and its neighbour in direction `d` (any of N, E, S, W).
  bool link_failed(Coord from, Dir d) const;

 private:
  static constexpr std::uint8_t kTileDead = 1, kRouterDead = 2, kLinkEast = 4, kLinkSouth = 8;
  Grid grid_;
  std::vector<Defect> defects_;
  std::vector<std::uint8_t> tile_bits_;
};

// ---- generators --------------------------------------------------------------------------------------
enum class DefectModel : std::uint8_t { Poisson, NegBinomial };

struct DefectGenParams {
  DefectModel model = DefectModel::Poisson;
  double density_per_cm2 = 0.1;  // D0
  double alpha = 2.0;            // negative-binomial clustering (smaller = more clustered)
  // Share of each kind among generated defects (normalised); link defects pick E or S at random.
  double share_core = 0.45, share_sram = 0.35, share_router = 0.1, share_link = 0.1;
};

// Seeded and deterministic: the same (spec, params, seed) gives the same map on every machine.
DefectMap generate_defects(const WaferSpec& spec, const DefectGenParams& params, std::uint64_t seed);

// Files: CSV ("kind,x,y[,dir]" with a header line; '#' comments) or JSON ({"defects": [{"kind": "core",
// "x": 3, "y": 4}, {"kind": "link", "x": 3, "y": 4, "dir": "E"}]}), chosen by extension. Errors name file
// and line (CSV) or entry index (JSON).
DefectMap read_defects(const std::filesystem::path& file, const WaferSpec& spec);
void write_defects(const std::filesystem::path& file, const DefectMap& map);

}  // namespace wafer::hw
