#pragma once
// Synthetic traffic for studying and validating the mesh (`wafer-emu noc`, the approx-vs-cycle tests):
// seeded patterns turned into a Plan whose flows carry their creation cycle as `release`. Pure and
// deterministic: the same (fabric, params) gives the same Plan on every machine.
//
// Rate convention (BookSim, Noxim): `rate` is injected wavelets per tile per cycle. Every cycle of the
// injection window each tile creates a burst with probability rate / burst_wavelets (a Bernoulli process,
// drawn gap by gap: geometric gaps by inversion, so the cost is per burst, not per tile-cycle), except:
//   row-reduce        every cycle each row starts a reduce-and-forward chain with that probability (every
//                     tile of the row then sends one burst of the chain, so each injects ~rate);
//   column-broadcast  the burst is multicast to every tile of the creating tile's column.
// Destinations: uniform (any other healthy tile), transpose ((x, y) -> (y, x), scaled on a non-square
// mesh; tiles on the diagonal stay silent), hotspot (a quarter of the bursts to the centre tile, the rest
// uniform), neighbour (one of the up-to-four adjacent tiles).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "noc/routing/fabric.h"
#include "noc/routing/plan.h"

namespace wafer::noc {

enum class Pattern : std::uint8_t { Uniform, Transpose, Hotspot, Neighbour, RowReduce, ColumnBroadcast };
const char* to_string(Pattern p);
const std::vector<Pattern>& all_patterns();
// Throws hw::InputError naming the pattern and listing the known ones.
Pattern parse_pattern(std::string_view name);

struct TrafficParams {
  Pattern pattern = Pattern::Uniform;
  double rate = 0.01;                  // injected wavelets per tile per cycle, in [0, 1]
  std::uint32_t burst_wavelets = 8;
  std::uint64_t cycles = 1000;         // injection window [0, cycles)
  std::uint64_t seed = 1;
  std::uint32_t colors = 1;            // bursts spread round-robin over this many colors
  std::uint32_t stage_latency = 2;     // reduce chains: cycles a tile adds before forwarding
};

// Refuses (hw::InputError) parameters out of range and workloads whose Plan would hold more than
// kMaxTrafficEdges route edges (estimated before anything is allocated). Routes come from noc::route;
// a pair the defects cut apart is an InputError naming the tiles.
inline constexpr std::uint64_t kMaxTrafficEdges = 50'000'000;
Plan make_traffic(const Fabric& fabric, const TrafficParams& params);

// Collective building blocks (also used by the tests):
// A reduce-and-forward chain along row y from x0 eastwards over `len` tiles: flow i goes (x0+i, y) ->
// (x0+i+1, y) and streams out of flow i-1 (Stream trigger, `stage` cycles). Returns the first flow index.
std::uint32_t add_row_reduce(Plan& plan, const Fabric& fabric, std::int32_t y, std::int32_t x0, std::int32_t len,
                             std::uint32_t wavelets, std::uint32_t stage, std::uint64_t release, Color color = 0);
// One burst from (x, y) multicast to every other tile of column x (noc::multicast's tree, each link once).
// Tiles the defects cut off are an InputError naming them.
std::uint32_t add_column_broadcast(Plan& plan, const Fabric& fabric, std::int32_t x, std::int32_t y,
                                   std::uint32_t wavelets, std::uint64_t release, Color color = 0);
// One burst from (x, y) multicast along row y over [x0, x0 + span) (the source's core excluded).
std::uint32_t add_row_multicast(Plan& plan, const Fabric& fabric, std::int32_t x, std::int32_t y, std::int32_t x0,
                                std::int32_t span, std::uint32_t wavelets, std::uint64_t release, Color color = 0);
// A unicast burst along noc::route.
std::uint32_t add_unicast(Plan& plan, const Fabric& fabric, Coord src, Coord dst, std::uint32_t wavelets,
                          std::uint64_t release, Color color = 0);

}  // namespace wafer::noc
