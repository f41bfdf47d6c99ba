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
  // The physical link between `from` and its neighbour in direction `d` (any of N, E, S, W). A link that
  // would leave the grid (or `from` outside it) counts as failed: nothing can cross it.
  bool link_failed(Coord from, Dir d) const;
  // This exact defect (kind and place; a link in either of its two spellings) is in the map.
  bool contains(Defect d) const;
  // Fast forms for hot loops: the link from tile `physical` to its east / south neighbour failed.
  bool east_link_failed(TileIndex physical) const { return !tile_bits_.empty() && (tile_bits_[physical] & kLinkEast); }
  bool south_link_failed(TileIndex physical) const { return !tile_bits_.empty() && (tile_bits_[physical] & kLinkSouth); }
  // Defects of one kind in the map.
  std::size_t count(DefectKind k) const;
  // Tiles that cannot host a logical tile (a tile with both a core and an SRAM defect counts once).
  std::size_t dead_tiles() const { return dead_tiles_; }

 private:
  static constexpr std::uint8_t kTileDead = 1, kRouterDead = 2, kLinkEast = 4, kLinkSouth = 8, kCore = 16,
                                kSram = 32;
  static std::uint8_t flag_of(const Defect& d);
  Grid grid_;
  std::vector<Defect> defects_;
  std::vector<std::uint8_t> tile_bits_;
  std::size_t dead_tiles_ = 0;
};

// ---- generators --------------------------------------------------------------------------------------
enum class DefectModel : std::uint8_t { Poisson, NegBinomial };
const char* to_string(DefectModel m);  // "poisson", "negbin"
DefectModel parse_defect_model(std::string_view name);  // InputError naming the model and the known ones

struct DefectGenParams {
  DefectModel model = DefectModel::Poisson;
  double density_per_cm2 = 0.1;  // D0
  double alpha = 2.0;            // negative-binomial clustering (smaller = more clustered)
  // Share of each kind among generated defects (normalised); link defects pick E or S at random.
  double share_core = 0.45, share_sram = 0.35, share_router = 0.1, share_link = 0.1;
  friend bool operator==(const DefectGenParams&, const DefectGenParams&) = default;
};

// Throws InputError when a parameter is negative, non-finite or absurd (shares that sum to zero, a density
// that would put more defects than tiles on the wafer on average).
void validate(const DefectGenParams& params, const WaferSpec& spec);

// Seeded and deterministic: the same (spec, params, seed) gives the same map on every machine (hw/random.h).
// Method: the number of defects is drawn from Poisson(area_cm2 x D) with D = D0 (Poisson model) or D drawn
// from a gamma with shape alpha and mean D0 (negative binomial); each defect then picks its kind by the
// shares and a uniform position: a tile for core/router/SRAM, one of the grid's links for a link defect
// (uniform over all E and S links, so none leaves the grid). A draw that hits an existing defect (same
// kind, same tile or link) is MERGED: two defects on one element are one failure. Hence every element
// fails independently with probability 1 - exp(-mean per element), which the analytic yields in
// hw/yield.h use exactly; the map can hold slightly fewer defects than were drawn (rare at real
// densities). The Poisson mean is capped at 16 x the physical tile count (a saturated wafer).
DefectMap generate_defects(const WaferSpec& spec, const DefectGenParams& params, std::uint64_t seed);

// Files: CSV ("kind,x,y[,dir]" with a header line, optional when reading; '#' comments and blank lines are
// skipped; kinds core|router|sram|link, dir N|E|S|W for links only) or JSON ({"defects": [{"kind": "core",
// "x": 3, "y": 4}, {"kind": "link", "x": 3, "y": 4, "dir": "E"}]}), chosen by extension; a name with neither
// extension (a pipe, /dev/stdin) is read as JSON when its first non-blank character is '{', else as CSV. Errors
// name file and line (CSV) or entry index (JSON). JSON may carry "grid": {"width", "height"}, which must match
// the wafer's physical grid. format_defects gives the text of `file`'s format, which read_defects reads back; to
// write, an extension other than .csv / .json is an InputError. (Writing it is the caller's: apps/ writes outputs through
// traces::write_text_atomic, which knows files from streams and links, docs/fidelity.md "Output".)
DefectMap read_defects(const std::filesystem::path& file, const WaferSpec& spec);
std::string format_defects(const std::filesystem::path& file, const DefectMap& map);

}  // namespace wafer::hw
