#pragma once
// Collectives on a 1 x P row of tiles, by name, as noc Plans (noc/routing/collectives.h), and a unicast
// over k hops: what `wafer-emu validate` times on the mesh model for its collective_cycles and hop_cycles
// cases (docs/fidelity.md). A new collective plugs in with one line in row_collectives().
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "hw/wafer_spec.h"
#include "noc/mesh.h"
#include "noc/routing/collectives.h"

namespace wafer::apps {

// Appends the collective over tiles (0,0) .. (tiles-1,0) of `fabric` to `plan`.
using RowCollectiveBuilder = noc::Collective (*)(noc::Plan& plan, const noc::Fabric& fabric,
                                                 const noc::CollectiveParams& params, std::int32_t tiles,
                                                 std::uint32_t wavelets);

struct RowCollective {
  std::string_view name;
  std::string_view what;  // one line for --help and the docs
  RowCollectiveBuilder build;
};

const std::vector<RowCollective>& row_collectives();
// nullptr when `name` is not in the table.
const RowCollective* find_row_collective(std::string_view name);
// "reduce_chain, reduce_tree, broadcast"
std::string row_collective_names();

// Cycles from the collective's release to its last tail arrival, executed on a healthy 1 x tiles row with
// the wafer's parameters (hop latency, stream stage latency, colors) on the `fidelity` mesh model.
hw::Cycle time_row_collective(const RowCollective& c, const hw::WaferSpec& spec, noc::Fidelity fidelity,
                              std::int32_t tiles, std::uint32_t wavelets);

// Tail arrival of one unicast of `wavelets` from (0,0) to (hops,0), injected at cycle 0 on an idle
// healthy row.
hw::Cycle time_unicast(const hw::WaferSpec& spec, noc::Fidelity fidelity, std::int32_t hops, std::uint32_t wavelets);

}  // namespace wafer::apps
