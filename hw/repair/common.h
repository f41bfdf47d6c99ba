#pragma once
// Helpers shared by the repair schemes: physical path lengths (hop counts), the largest usable logical
// rectangle, and the final assembly of a RepairResult. Internal to hw/repair; tests may use them.
#include <cstdint>
#include <string_view>
#include <vector>

#include "hw/coord.h"
#include "hw/defect_map.h"
#include "hw/repair.h"
#include "hw/wafer_spec.h"

namespace wafer::hw::repair {

// Shortest physical path between two tiles that avoids failed routers and failed links. A tile whose core
// or SRAM failed still forwards wavelets; a failed router does not. O(1) for neighbours, O(distance) when
// one of the two L-shaped paths is clear (then the Manhattan distance is optimal); otherwise a BFS in a
// window around the two tiles, widened until the result is provably shortest (a path leaving a window
// grown by m around the bounding box is at least Manhattan + 2m long), the whole grid as the last resort.
// Holds scratch buffers: one PathFinder per thread.
class PathFinder {
 public:
  explicit PathFinder(const DefectMap& defects) : map_(defects), grid_(defects.grid()) {}
  // Hops from a to b; 0 when a == b, when either router failed, or when no path exists. Capped at 65535.
  std::uint32_t hops(Coord a, Coord b);
  // Calls of hops() that needed a search (for statistics and benchmarks).
  std::uint64_t searches() const { return searches_; }

 private:
  bool step_ok(Coord from, Dir d) const;  // link healthy and the next router works
  bool clear_l_path(Coord a, Coord b, bool x_first) const;
  std::int64_t bfs(Coord a, Coord b, Rect window);  // -1 when b is unreachable inside the window

  const DefectMap& map_;
  Grid grid_;
  std::vector<std::int32_t> dist_;
  std::vector<std::uint32_t> queue_;
  std::uint64_t searches_ = 0;
};

// The largest rectangle of logical tiles that all have a physical tile (histogram method, O(tiles)).
// Ties: the first found scanning rows top-down. An empty Rect when no tile is mapped.
Rect largest_mapped_rectangle(const Grid& logical, const std::vector<TileIndex>& log_to_phys);

// The map a scheme works on: `defects` itself, or an empty map of the wafer's physical grid when `defects`
// was default-constructed. Throws InputError when the map belongs to another grid.
DefectMap const& checked_map(const WaferSpec& spec, const DefectMap& defects, DefectMap& empty_storage);

// Given scheme, grids, log_to_phys and reason already set: fills complete, usable, hops_east, hops_south.
void finish_result(RepairResult& r, const DefectMap& defects);

}  // namespace wafer::hw::repair
