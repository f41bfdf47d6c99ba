#include "apps/row_collectives.h"

#include <algorithm>

#include "noc/routing/route.h"

namespace wafer::apps {

namespace {

hw::Rect row(std::int32_t tiles) { return {0, 0, tiles, 1}; }

noc::Collective reduce_chain(noc::Plan& plan, const noc::Fabric& f, const noc::CollectiveParams& p, std::int32_t tiles,
                             std::uint32_t w) {
  return noc::reduce_rows(plan, f, p, row(tiles), w);
}
noc::Collective reduce_tree(noc::Plan& plan, const noc::Fabric& f, const noc::CollectiveParams& p, std::int32_t tiles,
                            std::uint32_t w) {
  return noc::reduce_tree(plan, f, p, row(tiles), w);
}
noc::Collective broadcast(noc::Plan& plan, const noc::Fabric& f, const noc::CollectiveParams& p, std::int32_t tiles,
                          std::uint32_t w) {
  return noc::broadcast_rows(plan, f, p, row(tiles), tiles - 1, w);
}

}  // namespace

const std::vector<RowCollective>& row_collectives() {
  static const std::vector<RowCollective> table = {
      {"reduce_chain", "reduce-and-forward chain from the west end to the east end (noc::reduce_rows)", reduce_chain},
      {"reduce_tree", "recursive-halving tree toward the east end (noc::reduce_tree)", reduce_tree},
      {"broadcast", "one multicast from the east end over the row (noc::broadcast_rows)", broadcast},
  };
  return table;
}

const RowCollective* find_row_collective(std::string_view name) {
  for (const auto& c : row_collectives())
    if (c.name == name) return &c;
  return nullptr;
}

std::string row_collective_names() {
  std::string s;
  for (const auto& c : row_collectives()) s += (s.empty() ? "" : ", ") + std::string(c.name);
  return s;
}

hw::Cycle time_row_collective(const RowCollective& c, const hw::WaferSpec& spec, noc::Fidelity fidelity,
                              std::int32_t tiles, std::uint32_t wavelets) {
  const noc::Fabric fabric = noc::Fabric::perfect({tiles, 1});
  noc::Plan plan;
  const noc::Collective col = c.build(plan, fabric, noc::CollectiveParams::of(spec), tiles, wavelets);
  auto mesh = noc::make_mesh(fidelity, fabric, noc::MeshParams::from(spec));
  const std::vector<noc::FlowTiming> t = mesh->execute(plan);
  hw::Cycle end = col.release;
  for (std::uint32_t f : col.final_flows) end = std::max(end, t.at(f).tail);
  return end - col.release;
}

hw::Cycle time_unicast(const hw::WaferSpec& spec, noc::Fidelity fidelity, std::int32_t hops, std::uint32_t wavelets) {
  const noc::Fabric fabric = noc::Fabric::perfect({hops + 1, 1});
  const hw::Coord src{0, 0}, dst{hops, 0};
  noc::Flow fl;
  fl.src = fabric.grid().index(src);
  fl.route = noc::as_edges(noc::route(fabric, src, dst));
  fl.sinks = {fabric.grid().index(dst)};
  fl.wavelets = wavelets;
  noc::Plan plan;
  plan.add(std::move(fl));
  auto mesh = noc::make_mesh(fidelity, fabric, noc::MeshParams::from(spec));
  return mesh->execute(plan).at(0).tail;
}

}  // namespace wafer::apps
