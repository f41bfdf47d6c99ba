#pragma once
// Repair: map the logical rectangle onto healthy physical tiles using spares. Schemes are an open set
// behind one interface, registered by name (hw/repair/*.cpp, listed in hw/repair/registry.cpp).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hw/coord.h"
#include "hw/defect_map.h"
#include "hw/wafer_spec.h"

namespace wafer::hw {

struct RepairResult {
  std::string scheme;
  Grid logical;
  Grid physical;
  bool complete = false;  // every logical tile maps to a distinct healthy physical tile
  Rect usable;            // largest usable logical rectangle (the whole logical grid when complete)
  std::string reason;     // when !complete: why, in words (e.g. "row 17 has 5 failed tiles, 2 spare columns")
  // Per logical tile (index on `logical`): its physical tile, kNoTile where none could be given.
  std::vector<TileIndex> log_to_phys;
  // Per logical tile: physical hops to the logical neighbour east / south (1 when adjacent; more across a
  // repair; 0 at the grid edge, where a tile is unmapped, or where no healthy physical path exists).
  std::vector<std::uint16_t> hops_east;
  std::vector<std::uint16_t> hops_south;

  Coord physical_of(Coord logical_tile) const {
    TileIndex p = log_to_phys[logical.index(logical_tile)];
    return p == kNoTile ? Coord{-1, -1} : physical.coord(p);
  }
};

class RepairScheme {
 public:
  virtual ~RepairScheme() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view description() const = 0;
  virtual RepairResult repair(const WaferSpec& spec, const DefectMap& defects) const = 0;
};

// The logical links of a repair, each pair of mapped neighbours once (east and south): how many, how many have no
// healthy physical path, their physical hops beyond one summed over those with a path, the most on one link, and
// how many are longer than one hop. What `defects`, a study's points and decode's regions count.
struct RepairLinks {
  std::int64_t links = 0, no_path = 0, extra_hops = 0, max_extra = 0, detoured = 0;
};
RepairLinks repair_links(const RepairResult& r);

// Every registered scheme; a test lists the names so none silently drops out of the build.
std::vector<std::string> repair_scheme_names();
// Throws InputError naming the scheme and the known ones.
const RepairScheme& repair_scheme(std::string_view name);

}  // namespace wafer::hw
