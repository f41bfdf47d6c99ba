#include "noc/route_step.h"

#include "noc/routing/route.h"

#include <fmt/format.h>

#include <algorithm>

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
    t.entry = g.index(dest.first);
    return t;
  }
  if (dest.span < 1) throw hw::InputError(fmt::format("multicast span {} must be at least 1", dest.span));
  Coord s = g.coord(src);
  if (dest.kind == Destination::Kind::RowSegment) {
    Coord last{dest.first.x + dest.span - 1, dest.first.y};
    check(last);
    t.lo = dest.first.x, t.hi = last.x;
    // West-first: from another row, enter at the west end and spread east only.
    t.entry = g.index({s.y == dest.first.y ? std::clamp(s.x, t.lo, t.hi) : t.lo, dest.first.y});
  } else {
    Coord last{dest.first.x, dest.first.y + dest.span - 1};
    check(last);
    t.lo = dest.first.y, t.hi = last.y;
    t.entry = g.index({dest.first.x, std::clamp(s.y, t.lo, t.hi)});
  }
  return t;
}

Fanout fanout(const Fabric& fabric, const Target& t, TileIndex here, Leg leg, Dir in) {
  Fanout f;
  if (leg == Leg::ToEntry && here != t.entry) {
    const Grid& g = fabric.grid();
    f.n = 1;
    f.dir[0] = next_port(fabric, g.coord(here), g.coord(t.entry), in);
    f.leg[0] = Leg::ToEntry;
    return f;
  }
  f.deliver = true;
  if (t.kind == Destination::Kind::Tile) return f;
  const bool row = t.kind == Destination::Kind::RowSegment;
  Coord c = fabric.grid().coord(here);
  std::int32_t pos = row ? c.x : c.y;
  if ((leg == Leg::ToEntry || leg == Leg::Forward) && pos < t.hi) {
    f.dir[f.n] = row ? Dir::East : Dir::South;
    f.leg[f.n++] = Leg::Forward;
  }
  if ((leg == Leg::ToEntry || leg == Leg::Backward) && pos > t.lo) {
    f.dir[f.n] = row ? Dir::West : Dir::North;
    f.leg[f.n++] = Leg::Backward;
  }
  return f;
}

}  // namespace wafer::noc
