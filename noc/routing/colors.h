#pragma once
// Colors: a router keeps one route per color (input port -> output ports), so two flows that pass through
// the same router must not share a color, or their routes would collide in that router's table. The
// rule here is therefore per ROUTER (stricter than per link: two flows sharing a link share both of its
// routers). The allocator gives each flow the lowest color free at every router it touches (greedy, in
// flow order, deterministic) and checks the result against the wafer's budget (WaferSpec::colors).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "noc/routing/fabric.h"
#include "noc/routing/plan.h"

namespace wafer::noc {

inline constexpr std::uint32_t kMaxColors = 64;  // WaferSpec::colors is at most 64

// The routers a flow touches: its source and the far end of each route edge (in route order; a router
// may appear twice on a detoured multicast).
void flow_routers(const Fabric& f, const Flow& flow, std::vector<TileIndex>& out);

struct ColorReport {
  bool fits = true;
  std::uint32_t colors_used = 0;     // distinct colors in the plan (highest color + 1)
  std::uint32_t max_per_tile = 0;    // the most flows meeting at one router
  TileIndex busiest = hw::kNoTile;   // a router where max_per_tile flows meet
  std::string reason;                // when !fits: which router, how many colors, the budget
};

// Colors plan.flows[first..] (earlier flows keep theirs and are respected) so that no two flows passing
// through one router share a color. Budget: colors per router (1..64). When a flow finds no free color
// below the budget it gets the lowest free color anyway (so the plan stays well-defined up to 64) and the
// report says !fits with the reason; beyond 64 it throws InputError. One 64-bit mask per tile.
ColorReport assign_colors(Plan& plan, const Fabric& f, std::uint32_t budget, std::size_t first = 0);

// Checks an existing coloring: the same report, !fits (with the tile and the two flows) when two flows
// share a color at a router or a color is >= budget.
ColorReport check_colors(const Plan& plan, const Fabric& f, std::uint32_t budget);

// The routers' color tables for a plan: per router, per color, the input port (Ramp = injected here),
// the output ports and whether the core receives. Sparse: one entry per (flow, router) touched.
struct ColorEntry {
  TileIndex tile;
  Color color;
  Dir in;
  std::uint8_t out_ports;  // bit (1 << Dir) per mesh port; the Ramp bit when the core receives
  std::uint32_t flow;
};
class ColorTable {
 public:
  static ColorTable build(const Plan& plan, const Fabric& f);
  // Every entry of router `t`, sorted by color.
  std::span<const ColorEntry> at(TileIndex t) const;
  // Distinct colors configured at router `t`.
  std::uint32_t colors_at(TileIndex t) const;
  const std::vector<ColorEntry>& entries() const { return entries_; }

 private:
  std::vector<ColorEntry> entries_;  // sorted by (tile, color, flow)
};

}  // namespace wafer::noc
