#include "noc/route_step.h"

#include <fmt/format.h>

#include "hw/error.h"
#include "noc/routing/multicast.h"
#include "noc/routing/route.h"

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
    return t;
  }
  if (dest.span < 1) throw hw::InputError(fmt::format("multicast span {} must be at least 1", dest.span));
  const bool row = dest.kind == Destination::Kind::RowSegment;
  check(row ? Coord{dest.first.x + dest.span - 1, dest.first.y} : Coord{dest.first.x, dest.first.y + dest.span - 1});
  t.src = g.coord(src);
  t.region = row ? row_segment(dest.first, dest.span) : column_segment(dest.first, dest.span);
  t.sinks = std::uint32_t(dest.span) - (t.region.contains(t.src) ? 1u : 0u);
  if (t.sinks == 0) throw hw::InputError("a multicast segment holding only its source reaches no tile");
  if (!region_path_clear(fabric, t.src, t.region))
    throw hw::InputError(fmt::format("multicast from ({}, {}) to the {} segment at ({}, {}) span {} crosses a fault; "
                                     "route it as a Plan (noc::multicast detours)",
                                     t.src.x, t.src.y, row ? "row" : "column", dest.first.x, dest.first.y, dest.span));
  return t;
}

Step route_step(const Fabric& fabric, const Target& t, TileIndex here, Dir in) {
  const Grid& g = fabric.grid();
  Step s;
  if (t.kind == Destination::Kind::Tile) {
    Dir d = next_port(fabric, g.coord(here), g.coord(t.dst), in);
    if (d == Dir::Ramp) s.deliver = true;
    else s.ports = std::uint8_t(1u << unsigned(d));
    return s;
  }
  noc::Fanout f = region_ports(g.coord(here), t.src, t.region, in);
  s.ports = f.ports;
  s.deliver = f.deliver;
  return s;
}

}  // namespace wafer::noc
