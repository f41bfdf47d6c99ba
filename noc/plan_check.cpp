#include "noc/plan_check.h"

#include <fmt/format.h>

#include <algorithm>

#include "hw/error.h"

namespace wafer::noc {

TileIndex edge_end(const Fabric& fabric, LinkId link) {
  const Grid& g = fabric.grid();
  return g.index(hw::step(g.coord(link_tile(link)), link_dir(link)));
}

void check_plan(const Fabric& fabric, const Plan& plan) {
  const Grid& g = fabric.grid();
  const std::size_t n = plan.flows.size();
  // Per route edge of the flow being checked: the tile it ends at, as an index and a coordinate (kept
  // along the tree from the source's, so no edge costs a division), and whether another edge continues it.
  std::vector<TileIndex> ends;
  std::vector<Coord> endc;
  std::vector<std::uint8_t> continued;
  for (std::size_t f = 0; f < n; ++f) {
    const Flow& fl = plan.flows[f];
    auto bad = [&](const std::string& why) { throw hw::InputError(fmt::format("plan flow {}: {}", f, why)); };
    if (fl.src >= g.size()) bad(fmt::format("source tile {} is outside the {} x {} mesh", fl.src, g.width, g.height));
    if (!fabric.router_ok(fl.src)) bad("its source tile has a failed router");
    if (fl.wavelets == 0) bad("a burst needs at least one wavelet");
    const Coord src_c = g.coord(fl.src);
    const std::size_t ne = fl.route.size();
    ends.resize(ne);
    endc.resize(ne);
    continued.assign(ne, 0);
    static constexpr std::int32_t dx[4] = {0, 1, 0, -1}, dy[4] = {-1, 0, 1, 0};  // N E S W (hw::step)
    for (std::size_t e = 0; e < ne; ++e) {
      const RouteEdge& re = fl.route[e];
      const TileIndex from = link_tile(re.link);
      const unsigned d = re.link % 4u;
      if (from >= g.size() || Dir(d) == Dir::Ramp) bad(fmt::format("route edge {} is not a mesh link", e));
      TileIndex expect = 0;
      Coord c{};  // == g.coord(from) once from == expect
      if (re.parent == kFromSource) {
        expect = fl.src, c = src_c;
      } else if (re.parent >= 0 && std::size_t(re.parent) < e) {
        expect = ends[std::size_t(re.parent)], c = endc[std::size_t(re.parent)];
        continued[std::size_t(re.parent)] = 1;
      } else {
        bad(fmt::format("route edge {} continues from edge {}, not an earlier one", e, re.parent));
      }
      if (from != expect) bad(fmt::format("route edge {} does not start where its parent ends", e));
      const Coord next{c.x + dx[d], c.y + dy[d]};
      if (!g.inside(next)) bad(fmt::format("route edge {} leaves the mesh at ({}, {})", e, c.x, c.y));
      if (!fabric.link_ok(from, Dir(d)))
        bad(fmt::format("route edge {} uses the failed link ({}, {}) {}", e, c.x, c.y, hw::to_string(Dir(d))));
      ends[e] = g.index(next);  // == edge_end(fabric, re.link)
      endc[e] = next;
    }
    if (fl.sinks.empty()) bad("it has no sink");
    for (std::size_t e = 0; e < fl.route.size(); ++e) {
      if (!continued[e] && std::find(fl.sinks.begin(), fl.sinks.end(), ends[e]) == fl.sinks.end())
        bad(fmt::format("route edge {} ends at tile {}, which is not a sink", e, ends[e]));
    }
    for (TileIndex s : fl.sinks)
      if (s != fl.src && std::find(ends.rbegin(), ends.rend(), s) == ends.rend())  // usually the last end
        bad(fmt::format("sink tile {} is not reached by its route", s));
    for (const Trigger& t : fl.after) {
      if (t.flow >= n) bad(fmt::format("a trigger names flow {}, but the plan has {}", t.flow, n));
      const auto& sk = plan.flows[t.flow].sinks;
      if (std::find(sk.begin(), sk.end(), t.tile) == sk.end())
        bad(fmt::format("a trigger waits for flow {} at tile {}, which is not one of its sinks", t.flow, t.tile));
    }
  }
}

void plan_dependents(const Plan& plan, std::vector<std::uint32_t>& start, std::vector<PlanDep>& deps) {
  const std::size_t n = plan.flows.size();
  start.assign(n + 1, 0);
  for (const Flow& fl : plan.flows)
    for (const Trigger& t : fl.after) ++start[t.flow + 1];
  for (std::size_t i = 0; i < n; ++i) start[i + 1] += start[i];
  deps.resize(start[n]);
  std::vector<std::uint32_t> fill(start.begin(), start.end() - 1);
  for (std::uint32_t g = 0; g < n; ++g)
    for (const Trigger& t : plan.flows[g].after)
      deps[fill[t.flow]++] = PlanDep{g, t.tile, t.reaction(), t.kind};
}

}  // namespace wafer::noc

namespace wafer::noc {

void PlanIndex::build(const Fabric& fabric, const Plan& plan) {
  const std::uint32_t n = std::uint32_t(plan.flows.size());
  edge_base.assign(n + 1, 0);
  for (std::uint32_t f = 0; f < n; ++f) edge_base[f + 1] = edge_base[f] + std::uint32_t(plan.flows[f].route.size());
  const std::uint32_t slots = edge_base[n] + n;
  child_start.assign(slots + 1, 0);
  sink.assign(slots, 0);
  end.assign(edge_base[n], 0);
  for (std::uint32_t f = 0; f < n; ++f) {
    const Flow& fl = plan.flows[f];
    auto is_sink = [&](TileIndex t) { return std::find(fl.sinks.begin(), fl.sinks.end(), t) != fl.sinks.end(); };
    sink[slot(f, kRoot)] = is_sink(fl.src);
    for (std::uint32_t e = 0; e < fl.route.size(); ++e) {
      std::int32_t p = fl.route[e].parent;
      ++child_start[slot(f, p == kFromSource ? kRoot : std::uint32_t(p)) + 1];
      end[edge_base[f] + e] = edge_end(fabric, fl.route[e].link);
      sink[slot(f, e)] = is_sink(end[edge_base[f] + e]);
    }
  }
  for (std::uint32_t i = 0; i < slots; ++i) child_start[i + 1] += child_start[i];
  children.assign(child_start[slots], 0);
  std::vector<std::uint32_t> fill(child_start.begin(), child_start.end() - 1);
  for (std::uint32_t f = 0; f < n; ++f) {
    const Flow& fl = plan.flows[f];
    for (std::uint32_t e = 0; e < fl.route.size(); ++e) {
      std::int32_t p = fl.route[e].parent;
      children[fill[slot(f, p == kFromSource ? kRoot : std::uint32_t(p))]++] = e;
    }
  }
  plan_dependents(plan, dep_start, deps);
}

}  // namespace wafer::noc
