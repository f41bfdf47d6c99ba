#pragma once
// Checks shared by both fidelities before they execute a Plan, and the index structures they build.
#include <cstdint>
#include <utility>
#include <vector>

#include "noc/routing/fabric.h"
#include "noc/routing/plan.h"

namespace wafer::noc {

// The tile a route edge ends at (the router the link leads to).
TileIndex edge_end(const Fabric& fabric, LinkId link);

// Throws hw::InputError (naming the flow) when a route leaves the grid, uses a failed link or router,
// is not a tree rooted at the source, a sink is not reached, or a trigger names a missing flow/tile.
void check_plan(const Fabric& fabric, const Plan& plan);

// A trigger, filed under the flow it waits for, with what a mesh needs when that flow arrives.
struct PlanDep {
  std::uint32_t flow;   // the waiting flow
  TileIndex tile;       // the sink it watches
  std::uint32_t delay;  // the trigger's delay, at least 1: a core reacts the cycle after at the earliest
  Trigger::Kind kind;
};

// Per flow, the triggers waiting on it: CSR (start has flows+1 entries). Trigger flows must exist
// (check_plan).
void plan_dependents(const Plan& plan, std::vector<std::uint32_t>& start, std::vector<PlanDep>& deps);

}  // namespace wafer::noc

namespace wafer::noc {

// A Plan's routes as trees: for every node (a flow's source, or the end of one of its route edges) the
// edges leaving it, and whether the node's tile is a sink. Node ids: slot(f, kRoot) is flow f's source,
// slot(f, e) the end of its edge e.
struct PlanIndex {
  static constexpr std::uint32_t kRoot = 0xFFFFFFFFu;
  std::vector<std::uint32_t> edge_base;   // per flow (+1): first global edge index
  std::vector<std::uint32_t> child_start;  // CSR over node slots
  std::vector<std::uint32_t> children;     // edge indices within the flow
  std::vector<std::uint8_t> sink;          // per node slot: the node's tile is a sink
  std::vector<TileIndex> end;              // per global edge: the tile it leads to
  std::vector<std::uint32_t> dep_start;    // see plan_dependents
  std::vector<PlanDep> deps;

  std::uint32_t slot(std::uint32_t flow, std::uint32_t edge) const {
    return edge_base[flow] + flow + (edge == kRoot ? 0 : 1 + edge);
  }
  void build(const Fabric& fabric, const Plan& plan);
};

}  // namespace wafer::noc
