#pragma once
// Multicast: one burst fanned out by the routers to every tile of a region (a row segment, a column
// segment, or a rectangle), each link used once. Two forms that agree link for link on a healthy path:
//  * hop by hop, region_ports(): which output ports the burst takes at a router and whether the core
//    there receives it; pure, O(1), no allocation. Valid when region_path_clear() (always on a healthy
//    fabric); the timing models call it per router.
//  * the whole tree, multicast(): RouteEdges + sinks for a Plan's Flow, fault-aware.
//
// The tree, under the west-first turn model of noc/routing/route.h (a burst never turns into West):
//  * the source row crosses the region (src.y inside [y0, y1]): the burst runs along the source row into
//    the region (or starts there) and spreads both ways along that row (the "spine"); every spine tile
//    fans out North and South through its column. Westward spine hops come straight from the source.
//  * otherwise it first runs along the source row to the region's WEST column x0 (west hops first), then
//    north or south to the nearest region row, then east along that row as the spine, each spine tile
//    fanning into its column. Going to x0 rather than to the column of the source is what the turn
//    model demands: a burst that has moved north or south may not turn west.
// So a row segment reached from its own row spreads both ways from the entry; one reached from another
// row enters at its west end. A column segment is entered dimension-order (along the source row to its
// column) and spreads both ways from the entry. Every root-to-leaf path is a west-first path, so trees
// add only allowed turns to the channel-dependency graph. The source's own core never receives its burst.
#include <cstdint>
#include <vector>

#include "hw/coord.h"
#include "noc/routing/fabric.h"
#include "noc/routing/plan.h"

namespace wafer::noc {

using hw::Rect;

struct Fanout {
  std::uint8_t ports = 0;  // bit (1 << Dir) for each mesh output port the burst is copied to
  bool deliver = false;    // the core at this router receives the burst
  bool has(Dir d) const { return ports & (1u << unsigned(d)); }
};

// Segments in the terms of noc/network.h Destination: `span` tiles from `first` going East / South.
inline Rect row_segment(Coord first, std::int32_t span) { return {first.x, first.y, span, 1}; }
inline Rect column_segment(Coord first, std::int32_t span) { return {first.x, first.y, 1, span}; }

// At router `here`, for a multicast from `src` to `region` that arrived travelling `in` (Ramp at the
// source): the ports to copy it to and whether the local core receives it. Defined for the routers of
// the fault-free tree (see above); meaningless elsewhere.
inline Fanout region_ports(Coord here, Coord src, const Rect& r, Dir in) {
  Fanout f;
  const std::int32_t x0 = r.x0, x1 = r.x0 + r.w - 1, y0 = r.y0, y1 = r.y0 + r.h - 1;
  auto add = [&f](Dir d) { f.ports |= std::uint8_t(1u << unsigned(d)); };
  const bool row_in = src.y >= y0 && src.y <= y1;
  const std::int32_t spine = row_in ? src.y : (src.y < y0 ? y0 : y1);
  const bool in_x = here.x >= x0 && here.x <= x1;
  f.deliver = r.contains(here) && !(here == src);
  if (here.y == spine && in_x && (row_in || in == Dir::East || here.x == x0)) {
    // On the spine: run along it, fan into the column.
    if (row_in && src.x >= x0 && src.x <= x1) {
      if ((in == Dir::Ramp || in == Dir::West) && here.x > x0) add(Dir::West);
      if ((in == Dir::Ramp || in == Dir::East) && here.x < x1) add(Dir::East);
    } else if (row_in && src.x > x1) {
      if (here.x > x0) add(Dir::West);
    } else if (here.x < x1) {
      add(Dir::East);
    }
    if (here.y > y0 && in != Dir::South) add(Dir::North);
    if (here.y < y1 && in != Dir::North) add(Dir::South);
    return f;
  }
  if (in_x && here.y >= y0 && here.y <= y1) {
    // In a column, fanning away from the spine.
    if (in == Dir::North && here.y > y0) add(Dir::North);
    if (in == Dir::South && here.y < y1) add(Dir::South);
    return f;
  }
  // Approach.
  if (row_in) {
    if (here.y == src.y) add(here.x < x0 ? Dir::East : Dir::West);
    return f;
  }
  if (here.y == src.y && here.x != x0) {
    add(here.x < x0 ? Dir::East : Dir::West);
    return f;
  }
  if (here.x == x0) add(spine > here.y ? Dir::South : Dir::North);
  return f;
}

// Every link of the fault-free tree is healthy (O(1) lookups in the fabric's fault index, O(width) for
// a rectangle's columns). When false, use multicast(), which detours.
bool region_path_clear(const Fabric& f, Coord src, const Rect& r);

struct Multicast {
  std::vector<RouteEdge> edges;          // a tree rooted at the source's router (parents first)
  std::vector<TileIndex> sinks;          // tiles whose core receives it (never the source)
  std::vector<std::uint32_t> sink_hops;  // per sink: physical hops from the source (head latency / hop)
  std::uint32_t max_hops = 0;
  std::vector<Coord> unreached;          // region tiles defects cut off (failed routers included)
};

// The multicast tree from `src` over `region` (clipped to nothing outside the grid: an InputError).
// Healthy path: exactly the tree region_ports() describes. With faults on it: the shortest-path tree of
// one breadth-first search over (tile, arrival direction) states under the west-first rules, pruned to
// the region's tiles: every sink at its shortest west-first distance, every link used once (a state is
// the link it arrived by), O(grid) time; tiles it cannot reach are listed in `unreached`.
Multicast multicast(const Fabric& f, Coord src, const Rect& region);

}  // namespace wafer::noc
