#include "noc/routing/multicast.h"

#include <algorithm>
#include <string>

#include "hw/error.h"
#include "noc/routing/route.h"

namespace wafer::noc {

namespace {

std::string coord_str(Coord c) { return "(" + std::to_string(c.x) + "," + std::to_string(c.y) + ")"; }

void check_region(const Fabric& f, Coord src, const Rect& r) {
  const Grid& g = f.grid();
  if (r.w <= 0 || r.h <= 0 || !g.inside({r.x0, r.y0}) || !g.inside({r.x0 + r.w - 1, r.y0 + r.h - 1}))
    throw hw::InputError("multicast: region " + coord_str({r.x0, r.y0}) + " size " + std::to_string(r.w) + " x " +
                         std::to_string(r.h) + " is empty or leaves the " + std::to_string(g.width) + " x " +
                         std::to_string(g.height) + " mesh");
  if (!g.inside(src))
    throw hw::InputError("multicast: source " + coord_str(src) + " is outside the mesh");
  if (!f.router_ok(g.index(src)))
    throw hw::InputError("multicast: the router of source " + coord_str(src) + " failed");
}

}  // namespace

bool region_path_clear(const Fabric& f, Coord src, const Rect& r) {
  if (f.fault_free()) return true;
  const std::int32_t x0 = r.x0, x1 = r.x0 + r.w - 1, y0 = r.y0, y1 = r.y0 + r.h - 1;
  const bool row_in = src.y >= y0 && src.y <= y1;
  if (!f.router_ok(f.grid().index(src))) return false;
  if (row_in) {
    if (!f.row_clear(src.y, std::min(src.x, x0), std::max(src.x, x1))) return false;
  } else {
    std::int32_t spine = src.y < y0 ? y0 : y1;
    if (!f.row_clear(src.y, src.x, x0) || !f.column_clear(x0, src.y, spine) || !f.row_clear(spine, x0, x1))
      return false;
  }
  for (std::int32_t x = x0; x <= x1; ++x)
    if (!f.column_clear(x, y0, y1)) return false;
  // Failed routers on the tree cut the links into them, so the link checks cover them too.
  return true;
}

Multicast multicast(const Fabric& f, Coord src, const Rect& region) {
  check_region(f, src, region);
  const Grid& g = f.grid();
  Multicast m;
  if (region_path_clear(f, src, region)) {
    struct Item {
      Coord at;
      Dir in;
      std::int32_t parent;
      std::uint32_t hops;
    };
    std::vector<Item> work{{src, Dir::Ramp, kFromSource, 0}};
    const std::size_t bound = 4 * g.size();
    for (std::size_t i = 0; i < work.size(); ++i) {
      Item it = work[i];
      Fanout fo = region_ports(it.at, src, region, it.in);
      TileIndex t = g.index(it.at);
      if (fo.deliver) {
        m.sinks.push_back(t);
        m.sink_hops.push_back(it.hops);
        m.max_hops = std::max(m.max_hops, it.hops);
      }
      for (Dir d : hw::kMeshDirs) {
        if (!fo.has(d)) continue;
        if (m.edges.size() > bound) throw std::logic_error("multicast: tree does not terminate");
        m.edges.push_back({link_id(t, d), it.parent});
        work.push_back({hw::step(it.at, d), d, std::int32_t(m.edges.size() - 1), it.hops + f.link_hops(t, d)});
      }
    }
    return m;
  }
  // Faults on the way: one breadth-first search over (tile, arrival direction) states from the source
  // under the west-first rules. Its search tree holds a shortest west-first path to every reachable
  // tile, and a state IS the link it arrived by, so the sub-tree spanning the region's tiles uses each
  // link once. Cost: one pass over the grid's states (4 per tile).
  const std::size_t states = g.size() * 4;
  constexpr std::uint32_t kNone = 0xFFFFFFFFu;
  std::vector<std::uint32_t> parent(states, kNone);  // parent state, kRoot for the source's own links
  constexpr std::uint32_t kRoot = 0xFFFFFFFEu;
  std::vector<std::uint32_t> order;  // states in discovery order
  std::vector<std::uint32_t> first_state(g.size(), kNone);
  order.reserve(1024);
  auto visit = [&](Coord at, Dir arrived, std::uint32_t from) {
    TileIndex t = g.index(at);
    for (Dir out : hw::kMeshDirs) {
      if (!turn_allowed(arrived, out) || !f.link_ok(t, out)) continue;
      TileIndex n = g.index(hw::step(at, out));
      std::uint32_t st = n * 4 + std::uint32_t(out);
      if (parent[st] != kNone) continue;
      parent[st] = from;
      order.push_back(st);
      if (first_state[n] == kNone) first_state[n] = st;
    }
  };
  visit(src, Dir::Ramp, kRoot);
  for (std::size_t k = 0; k < order.size(); ++k) visit(g.coord(order[k] / 4), Dir(order[k] % 4), order[k]);
  // Mark the states the region's tiles need, then emit them in discovery order (parents first).
  std::vector<std::uint8_t> need(states, 0);
  for (std::int32_t y = region.y0; y < region.y0 + region.h; ++y)
    for (std::int32_t x = region.x0; x < region.x0 + region.w; ++x) {
      Coord dst{x, y};
      if (dst == src) continue;
      std::uint32_t st = first_state[g.index(dst)];
      if (st == kNone || !f.router_ok(g.index(dst))) {
        m.unreached.push_back(dst);
        continue;
      }
      for (; st != kRoot && !need[st]; st = parent[st]) need[st] = 1;
    }
  std::vector<std::uint32_t> hops_of_edge;
  std::vector<std::int32_t> edge_index(states, -1);
  for (std::uint32_t st : order) {
    if (!need[st]) continue;
    TileIndex n = st / 4;
    Dir d = Dir(st % 4);
    TileIndex from = g.index(hw::step(g.coord(n), hw::opposite(d)));
    std::int32_t par = parent[st] == kRoot ? kFromSource : edge_index[parent[st]];
    std::uint32_t hops = (par == kFromSource ? 0 : hops_of_edge[std::size_t(par)]) + f.link_hops(from, d);
    edge_index[st] = std::int32_t(m.edges.size());
    m.edges.push_back({link_id(from, d), par});
    hops_of_edge.push_back(hops);
    if (first_state[n] == st && region.contains(g.coord(n)) && !(g.coord(n) == src)) {
      m.sinks.push_back(n);
      m.sink_hops.push_back(hops);
      m.max_hops = std::max(m.max_hops, hops);
    }
  }
  return m;
}

}  // namespace wafer::noc
