#pragma once
// The contract between routing (which decides where data goes) and the timing models (which decide
// when): a Plan is a DAG of bursts. Collectives (noc/routing/collectives.h) and the mapper build Plans;
// both timing fidelities execute them and must agree.
#include <cstdint>
#include <limits>
#include <vector>

#include "noc/routing/fabric.h"

namespace wafer::noc {

using Color = std::uint8_t;
inline constexpr std::int32_t kFromSource = -1;

// One edge of a burst's route: a link, and the edge it continues from (kFromSource = leaves the source's
// router). A unicast route is a chain; a multicast route is a tree (a router copies the burst to several
// output ports; each link is occupied once).
struct RouteEdge {
  LinkId link;
  std::int32_t parent = kFromSource;
};

// What a burst waits for before it is injected.
// A trigger's delay as charged: at least 1, a core reacts the cycle after an arrival at the earliest (docs/timing.md,
// "Rules both models implement"; the tile cores likewise, core::CostModel::react).
inline std::uint32_t reaction(std::uint32_t delay) { return delay > 0 ? delay : 1; }

struct Trigger {
  enum class Kind : std::uint8_t {
    Stream,    // starts `delay` cycles after the head of `flow` reaches `tile`'s core; its tail leaves no
               // earlier than `delay` cycles after that flow's tail arrives (reduce-and-forward, relays)
    Complete,  // starts `delay` cycles after the tail of `flow` reaches `tile`'s core (store-and-forward)
  };
  std::uint32_t flow;
  TileIndex tile;
  Kind kind = Kind::Complete;
  std::uint32_t delay = 0;
  std::uint32_t reaction() const { return noc::reaction(delay); }  // (the delay as charged)
};

struct Flow {
  TileIndex src = 0;
  std::vector<RouteEdge> route;   // in order: every edge's parent comes before it
  std::vector<TileIndex> sinks;   // tiles whose core receives the burst (ends of the route)
  std::uint32_t wavelets = 1;
  Color color = 0;
  std::uint64_t release = 0;      // earliest injection cycle
  std::vector<Trigger> after;     // all must hold; empty = injected at `release`
};

struct Plan {
  std::vector<Flow> flows;
  std::uint32_t add(Flow f) {
    flows.push_back(std::move(f));
    return std::uint32_t(flows.size() - 1);
  }
};

}  // namespace wafer::noc
