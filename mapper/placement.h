#pragma once
// Placement: which rectangle of the logical array each stage of the decode step (embedding, each decoder
// layer, the head) occupies. Strategies are an open set behind one interface, one file each in
// mapper/placement/, listed in mapper/placement/registry.cpp.
//
// Rule every strategy keeps: two stages' regions are either identical (time-multiplexed on the same
// tiles) or disjoint. Inside a region the partition is fixed (docs/mapping.md): inputs arrive at, and
// outputs leave from, the region's residual column (the east column, or the west one when `mirrored`).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hw/coord.h"
#include "noc/routing/fabric.h"

namespace wafer::mapper {

struct StageShape {
  std::string name;            // "embedding", "layer 3", "head"
  std::int64_t bytes = 0;      // weights + KV cache it must hold (resident), the share of SRAM it wants
  bool is_layer = false;       // a decoder layer (all layers have the same shape)
};

struct Region {
  hw::Rect rect;
  bool mirrored = false;       // data flows westward: the residual column is the west one
  friend bool operator==(const Region&, const Region&) = default;
};

class PlacementStrategy {
 public:
  virtual ~PlacementStrategy() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view description() const = 0;
  // One region per stage, inside fabric.grid(). Throws hw::InputError with a reason a person can act on
  // (e.g. fewer rows than stages, or a repair that left dead tiles where the strategy needs the whole array).
  virtual std::vector<Region> place(const std::vector<StageShape>& stages, const noc::Fabric& fabric) const = 0;
  // Whether place() reads the fabric's links (their health or lengths). False: it reads only the grid and
  // its faults (which routers work, which links have no healthy path: require_healthy), not the links' lengths, so two
  // fabrics alike in those (noc::Fabric::same_faults) get the same regions.
  virtual bool reads_links() const { return true; }
};

// Every registered strategy; a test lists the names so none silently drops out of the build.
std::vector<std::string> placement_names();
// Throws hw::InputError naming the strategy and the known ones.
const PlacementStrategy& placement(std::string_view name);

// Helpers the strategies share (mapper/placement/bands.cpp).
namespace placement_detail {
// Heights for `stages` stacked in `rows` rows: proportional to bytes, every decoder layer the same height,
// leftover rows to the non-layer stages (none: they stay idle, below the last band; the sum is then less than
// `rows`). Throws InputError when rows < stages.size().
std::vector<std::int32_t> band_heights(const std::vector<StageShape>& stages, std::int32_t rows,
                                       std::string_view strategy);
// Throws InputError when some router inside `rect` is dead (repair incomplete).
void require_healthy(const noc::Fabric& fabric, hw::Rect rect, std::string_view strategy);
// The largest rectangle whose routers all work and whose internal links are all healthy.
hw::Rect largest_healthy_rect(const noc::Fabric& fabric);
}  // namespace placement_detail

}  // namespace wafer::mapper
