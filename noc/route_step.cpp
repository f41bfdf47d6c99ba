#include "noc/route_step.h"

#include <fmt/format.h>

#include "hw/error.h"

namespace wafer::noc {

Target resolve(const Fabric& fabric, TileIndex src, const Destination& dest) {
  const Grid& g = fabric.grid();
  Target t;
  t.kind = dest.kind;
  auto check = [&](Coord c) {
    if (!g.inside(c))
      throw hw::InputError(fmt::format("destination tile ({}, {}) is outside the {} x {} mesh", c.x, c.y, g.width,
                                       g.height));
    if (!fabric.router_ok(g.index(c)))
      throw hw::InputError(fmt::format("destination tile ({}, {}) has a failed router", c.x, c.y));
  };
  check(dest.first);
  if (dest.kind == Destination::Kind::Tile) {
    t.dst = g.index(dest.first);
    t.dst_c = dest.first;
    return t;
  }
  if (dest.span < 1) throw hw::InputError(fmt::format("multicast span {} must be at least 1", dest.span));
  const bool row = dest.kind == Destination::Kind::RowSegment;
  check(row ? Coord{dest.first.x + dest.span - 1, dest.first.y} : Coord{dest.first.x, dest.first.y + dest.span - 1});
  t.src = g.coord(src);
  t.region = row ? row_segment(dest.first, dest.span) : column_segment(dest.first, dest.span);
  t.along = t.region.contains(t.src);
  t.sinks = std::uint32_t(dest.span) - (t.along ? 1u : 0u);
  if (t.sinks == 0) throw hw::InputError("a multicast segment holding only its source reaches no tile");
  if (!region_path_clear(fabric, t.src, t.region))
    throw hw::InputError(fmt::format("multicast from ({}, {}) to the {} segment at ({}, {}) span {} crosses a fault; "
                                     "route it as a Plan (noc::multicast detours)",
                                     t.src.x, t.src.y, row ? "row" : "column", dest.first.x, dest.first.y, dest.span));
  return t;
}

}  // namespace wafer::noc
