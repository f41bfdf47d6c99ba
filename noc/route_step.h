#pragma once
// Hop-by-hop routing as the timing models use it: where a head goes next for a Destination (one tile,
// or a row/column segment it reaches dimension-order and then spreads along). The next-hop decision for a
// single destination is the pure routing function noc::next_port (noc/routing/route.h: dimension order,
// west-first detours around faults); this file only adds the segment logic both fidelities share.
// Segments keep the west-first turn rule: a row segment reached from another row is entered at its west
// end and spreads east only; from its own row (or a column segment from anywhere) it is entered at the
// nearest tile and spreads both ways.
#include <cstdint>

#include "hw/error.h"
#include "noc/network.h"
#include "noc/routing/fabric.h"

namespace wafer::noc {


// A resolved Destination: the tile where the burst enters the segment, and the segment's extent.
struct Target {
  TileIndex entry = 0;                  // unicast: the destination
  std::int32_t lo = 0, hi = 0;          // segment: first and last x (row) or y (column)
  Destination::Kind kind = Destination::Kind::Tile;
};

// Branch modes carried by a head moving hop by hop.
enum class Leg : std::uint8_t { ToEntry = 0, Forward = 1, Backward = 2 };  // Forward = East/South

// Throws hw::InputError when the destination leaves the grid or names a failed tile.
Target resolve(const Fabric& fabric, TileIndex src, const Destination& dest);

// What a head at `here` on `leg` does: deliver to the core here, and continue on up to two ports.
struct Fanout {
  bool deliver = false;
  std::uint8_t n = 0;
  Dir dir[2]{};
  Leg leg[2]{};
};
// `in` is the direction the head travelled to arrive here (Ramp at its source).
Fanout fanout(const Fabric& fabric, const Target& t, TileIndex here, Leg leg, Dir in);

}  // namespace wafer::noc
