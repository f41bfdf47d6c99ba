#pragma once
// Helpers shared by the routing tests: random fault sets (seeded, hw::Rng) and a cycle check.
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "hw/random.h"
#include "noc/routing/fabric.h"

namespace wafer::noc::test {

// `routers` failed routers and `links` failed links at random (may repeat: the fabric ignores repeats).
inline Fabric random_faults(Grid g, std::uint64_t seed, int routers, int links) {
  Fabric f = Fabric::perfect(g);
  hw::Rng rng(seed);
  for (int i = 0; i < routers; ++i) f.fail_router(std::uint32_t(rng.below(g.size())));
  for (int i = 0; i < links; ++i) {
    Coord c = g.coord(std::uint32_t(rng.below(g.size())));
    Dir d = rng.below(2) ? Dir::East : Dir::South;
    if (!g.inside(hw::step(c, d))) continue;
    f.fail_link(g.index(c), d);
  }
  return f;
}

// Channel-dependency graph: an edge from each link to the next one a burst takes. True when acyclic.
inline bool acyclic(std::size_t nodes, const std::set<std::pair<LinkId, LinkId>>& edges) {
  std::vector<std::vector<LinkId>> adj(nodes);
  std::vector<int> indeg(nodes, 0);
  for (auto [a, b] : edges) {
    adj[a].push_back(b);
    ++indeg[b];
  }
  std::vector<LinkId> ready;
  for (LinkId l = 0; l < nodes; ++l)
    if (!indeg[l]) ready.push_back(l);
  std::size_t done = 0;
  while (!ready.empty()) {
    LinkId l = ready.back();
    ready.pop_back();
    ++done;
    for (LinkId m : adj[l])
      if (--indeg[m] == 0) ready.push_back(m);
  }
  return done == nodes;
}

}  // namespace wafer::noc::test
