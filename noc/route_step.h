#pragma once
// Hop-by-hop routing as the timing models use it, on top of the pure routing functions of noc/routing:
// a unicast follows noc::next_port (dimension order, west-first detours around faults), a row or column
// segment follows noc::region_ports (the multicast tree: the source's router fans the burst out, one link
// occupation per link; the source's own core does not receive it). Both take the direction the head
// travelled to arrive, so the models carry it with every head.
#include <cstdint>

#include "hw/coord.h"
#include "noc/network.h"
#include "noc/routing/fabric.h"
#include "noc/routing/multicast.h"
#include "noc/routing/route.h"

namespace wafer::noc {

// A resolved Destination.
struct Target {
  Destination::Kind kind = Destination::Kind::Tile;
  bool along = false;     // multicast: the source lies in its segment (the tree is the segment itself)
  TileIndex dst = 0;      // unicast destination
  Coord dst_c;            // the same as a coordinate
  Coord src;              // multicast: the source (region_ports needs it)
  hw::Rect region;        // multicast: the segment
  std::uint32_t sinks = 1;  // cores that receive the burst
};

// Throws hw::InputError when the destination leaves the grid, names a failed tile, or (multicast) faults
// lie on the tree (hop-by-hop multicast needs a clear path; Plans can use noc::multicast's detours).
Target resolve(const Fabric& fabric, TileIndex src, const Destination& dest);

// At router `here`, reached travelling `in` (Ramp at the source): mesh output ports (bit 1 << Dir) and
// whether the local core receives the burst. Unicast routing errors (the mesh is cut) throw InputError.
struct Step {
  std::uint8_t ports = 0;
  bool deliver = false;
};
// A unicast's step (route_step of a Target of Kind::Tile), small enough for a model's hop to inline where
// route_step as a whole is not inlined.
[[gnu::always_inline]] inline Step unicast_step(const Fabric& fabric, const Target& t, Coord here, Dir in) {
  Step s;
  const Dir d = next_port(fabric, here, t.dst_c, in);
  if (d == Dir::Ramp) s.deliver = true;
  else s.ports = std::uint8_t(1u << unsigned(d));
  return s;
}
// A segment multicast's step when the segment holds its source (Target::along): region_ports in short, the
// source sends both ways along the segment, every other tile receives the burst and passes it on in the
// direction it travels. (Inlined in a model's hop, as unicast_step.)
[[gnu::always_inline]] inline Step along_step(const Target& t, Coord here, Dir in) {
  Step s;
  const bool row = t.kind == Destination::Kind::RowSegment;
  const std::int32_t v = row ? here.x : here.y;
  const std::int32_t lo = row ? t.region.x0 : t.region.y0;
  const std::int32_t hi = lo + (row ? t.region.w : t.region.h) - 1;
  const Dir back = row ? Dir::West : Dir::North, fwd = row ? Dir::East : Dir::South;
  if (v > lo && (in == Dir::Ramp || in == back)) s.ports |= std::uint8_t(1u << unsigned(back));
  if (v < hi && (in == Dir::Ramp || in == fwd)) s.ports |= std::uint8_t(1u << unsigned(fwd));
  s.deliver = in != Dir::Ramp;
  return s;
}
inline Step route_step(const Fabric& fabric, const Target& t, Coord here, Dir in) {
  if (t.kind == Destination::Kind::Tile) return unicast_step(fabric, t, here, in);
  if (t.along) return along_step(t, here, in);
  Step s;
  const noc::Fanout f = region_ports(here, t.src, t.region, in);
  s.ports = f.ports;
  s.deliver = f.deliver;
  return s;
}
inline Step route_step(const Fabric& fabric, const Target& t, TileIndex here, Dir in) {
  return route_step(fabric, t, fabric.grid().coord(here), in);
}

}  // namespace wafer::noc
