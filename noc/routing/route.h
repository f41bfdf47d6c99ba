#pragma once
// Unicast routing on the logical mesh: dimension order (XY) on a healthy mesh, shortest detours around
// faults, every route obeying the WEST-FIRST turn model, which makes the whole network deadlock-free.
//
// Deadlock freedom (Glass & Ni, "The turn model for adaptive routing", 1992; docs/routing.md):
//  * A route never turns INTO West: west hops come first (straight from the source), then any mix of
//    East, North and South. Forbidden turns: N->W, S->W, and every 180-degree turn (E->W, W->E, N->S,
//    S->N). XY routes obey it (they only turn from X to Y), so a healthy mesh routes plain XY.
//  * Proof that the channel-dependency graph (CDG: channel a -> channel b when a route uses b right after
//    a) has no cycle. Westward channels: W -> W moves one column west (x strictly decreases), and no
//    allowed turn leads from a non-west channel back into a westward one, so no cycle touches a westward
//    channel. Among E, N, S channels x never decreases and E strictly increases it, so a cycle would stay
//    on one column using only N and S channels; N -> N strictly decreases y, S -> S strictly increases it,
//    and N <-> S are 180-degree turns. Hence no cycle, and no set of bursts can wait on each other in a
//    cycle (Dally & Seitz). Ramps (injection, ejection) are sources and sinks of the CDG.
//  * Multicast trees (noc/routing/multicast.h) are unions of west-first paths from one root, so they add
//    only allowed turns; the tests build the dependency graph of all routes and trees and check it.
// Limit: a west-first route cannot go around a fault that blocks its westward run on the source row, so
// some pairs become unreachable; reachable()/unreachable_pairs() list them and route() names the faults.
#include <cstdint>
#include <string>
#include <vector>

#include "noc/routing/fabric.h"
#include "noc/routing/plan.h"

namespace wafer::noc {

// `in` is the direction the burst travelled to arrive at this router (Ramp: it is being injected here).
constexpr bool turn_allowed(Dir in, Dir out) {
  if (out == Dir::Ramp || in == Dir::Ramp) return true;
  if (out == hw::opposite(in)) return false;  // no 180-degree turns
  if (out == Dir::West) return in == Dir::West;  // west only straight from the source
  return true;
}

// Dimension order: X first, then Y; Ramp when here == dst.
constexpr Dir xy_port(Coord here, Coord dst) {
  if (here.x < dst.x) return Dir::East;
  if (here.x > dst.x) return Dir::West;
  if (here.y < dst.y) return Dir::South;
  if (here.y > dst.y) return Dir::North;
  return Dir::Ramp;
}

namespace detail {
Dir next_port_faulty(const Fabric& f, Coord here, Coord dst, Dir in);
}

// The routing function, called by the timing models once per hop: the output port of the router at
// `here` for a burst to `dst` that arrived travelling `in` (Ramp at its source); Ramp = deliver to the
// core. Pure. No allocation on a fault-free fabric (one branch, then XY), nor where the XY or the YX path
// from `here` is clear (lookups in the fabric's per-row/column fault index): both are as short as any
// path. Elsewhere an A* search over (tile, arrival direction) with the Manhattan heuristic returns the
// first hop of a shortest west-first path (it allocates; it stops at the first state from which XY or YX
// is clear, so it visits about as many states as the detour is long). Every hop lowers the remaining
// shortest distance by one, so following it hop by hop gives a shortest route. Throws InputError naming
// the tiles and the faults when `dst` cannot be reached from this state.
inline Dir next_port(const Fabric& f, Coord here, Coord dst, Dir in = Dir::Ramp) {
  if (f.fault_free()) return xy_port(here, dst);
  return detail::next_port_faulty(f, here, dst, in);
}

struct Route {
  std::vector<LinkId> links;  // in order from the source
  std::uint32_t hops = 0;     // physical hops (sum of link_hops); latency = hops x hop_latency
};

// The whole route (the links next_port picks hop by hop). Throws InputError when the source or the
// destination is outside the grid or a failed router, or when the defects cut them apart.
Route route(const Fabric& f, Coord src, Coord dst);
// A route as a chain of RouteEdges for a Flow.
std::vector<RouteEdge> as_edges(const Route& r);

// Whether route(src, dst) succeeds.
bool reachable(const Fabric& f, Coord src, Coord dst);
// Every tile `src` cannot route to (one search over the whole grid). A failed router reaches nothing.
std::vector<Coord> unreachable_from(const Fabric& f, Coord src);
struct TilePair {
  Coord src, dst;
};
// Every (src, dst) pair, src != dst, that cannot be routed, at most `limit` of them. Costs one search
// per source: refused (InputError) for grids above kMaxPairScanTiles tiles.
inline constexpr std::size_t kMaxPairScanTiles = 128 * 128;
std::vector<TilePair> unreachable_pairs(const Fabric& f, std::size_t limit = SIZE_MAX);
// "tile (3,4) cannot reach (7,1): the defects at router (5,4), link (6,1)-(6,2) cut it off".
std::string unreachable_message(const Fabric& f, Coord src, Coord dst);

}  // namespace wafer::noc
