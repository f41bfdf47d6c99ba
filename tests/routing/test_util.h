#pragma once
// Helpers shared by the routing tests: a tiny seeded generator and random fault sets.
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "noc/routing/fabric.h"

namespace wafer::noc::test {

struct SplitMix64 {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::uint32_t below(std::uint32_t n) { return std::uint32_t(next() % n); }
};

// `routers` failed routers and `links` failed links at random (may repeat: the fabric ignores repeats).
inline Fabric random_faults(Grid g, std::uint64_t seed, int routers, int links) {
  Fabric f = Fabric::perfect(g);
  SplitMix64 rng{seed};
  for (int i = 0; i < routers; ++i) f.fail_router(rng.below(std::uint32_t(g.size())));
  for (int i = 0; i < links; ++i) {
    Coord c = g.coord(rng.below(std::uint32_t(g.size())));
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
