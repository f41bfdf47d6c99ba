#include "noc/routing/route.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <stdexcept>
#include <unordered_map>

#include "hw/error.h"

namespace wafer::noc {

namespace {

constexpr std::uint32_t kUnseen = 0xFFFFFFFFu;

std::string coord_str(Coord c) { return "(" + std::to_string(c.x) + "," + std::to_string(c.y) + ")"; }

// Inclusive window of tiles a search may visit.
struct Window {
  std::int32_t x0, y0, x1, y1;
  bool contains(Coord c) const { return c.x >= x0 && c.x <= x1 && c.y >= y0 && c.y <= y1; }
  std::int32_t w() const { return x1 - x0 + 1; }
  std::int32_t h() const { return y1 - y0 + 1; }
};

// Candidate order at a tile: the XY port first (so detours keep the dimension-order shape where they
// can), then N, E, S, W. Deterministic.
std::array<Dir, 4> port_order(Coord at, Coord dst) {
  Dir first = xy_port(at, dst);
  if (first == Dir::Ramp) first = Dir::North;
  std::array<Dir, 4> o{first, Dir::North, Dir::East, Dir::South};
  std::size_t k = 1;
  for (Dir d : hw::kMeshDirs)
    if (d != first) o[k++] = d;
  return o;
}

struct SearchResult {
  bool found = false;
  std::uint32_t dist = 0;
  Dir first = Dir::Ramp;
};

// Breadth-first search over states (tile, direction travelled to arrive), from (here, in), inside `win`,
// under the west-first turn rules. With `dst` inside the grid it stops at the first state on dst; with
// reach != nullptr it runs to exhaustion and marks every reached tile (index on the grid).
SearchResult search(const Fabric& f, Coord here, Dir in, Coord dst, Window win, std::vector<std::uint8_t>* reach) {
  const Grid& g = f.grid();
  const std::size_t ww = std::size_t(win.w());
  auto local = [&](Coord c) { return std::size_t(c.y - win.y0) * ww + std::size_t(c.x - win.x0); };
  std::vector<std::uint32_t> dist(ww * std::size_t(win.h()) * 4, kUnseen);
  std::vector<std::uint8_t> first(dist.size(), 0);
  std::vector<std::uint32_t> queue;
  queue.reserve(1024);
  SearchResult res;

  auto expand = [&](Coord at, Dir arrived, std::uint32_t d, Dir first_hop, bool is_start) -> bool {
    TileIndex t = g.index(at);
    for (Dir out : port_order(at, dst)) {
      if (!turn_allowed(arrived, out) || !f.link_ok(t, out)) continue;
      Coord n = hw::step(at, out);
      if (!win.contains(n)) continue;
      std::uint32_t s = std::uint32_t(local(n) * 4 + std::size_t(out));
      if (dist[s] != kUnseen) continue;
      Dir fh = is_start ? out : first_hop;
      dist[s] = d + 1;
      first[s] = std::uint8_t(fh);
      if (reach) (*reach)[g.index(n)] = 1;
      if (!reach && n == dst) {
        res = {true, d + 1, fh};
        return true;
      }
      queue.push_back(s);
    }
    return false;
  };
  if (expand(here, in, 0, Dir::Ramp, true)) return res;
  for (std::size_t head = 0; head < queue.size(); ++head) {
    std::uint32_t s = queue[head];
    std::size_t l = s / 4;
    Coord at{win.x0 + std::int32_t(l % ww), win.y0 + std::int32_t(l / ww)};
    if (expand(at, Dir(s % 4), dist[s], Dir(first[s]), false)) return res;
  }
  return res;
}

// A* over states (tile, arrival direction) from (here, in) to dst under the west-first rules, with the
// Manhattan distance as heuristic (admissible and consistent: no path is shorter, each hop changes it by
// one), so the first state popped at dst ends a shortest path. Open states in buckets by f, popped last
// in first out, so it dives along the preferred (XY-first) direction; on a sparse fault map it expands
// about as many states as the path is long, wherever the pair lies on the wafer. A state east of dst
// reached by a non-west hop is a dead end (the route may never go west again) and is not explored.
// A Manhattan-length path from state (at, in) exists along XY (X then Y) / YX (Y then X) and is healthy.
bool clear_xy(const Fabric& f, Coord at, Dir in, Coord dst) {
  return turn_allowed(in, xy_port(at, dst)) && f.row_clear(at.y, at.x, dst.x) && f.column_clear(dst.x, at.y, dst.y);
}
bool clear_yx(const Fabric& f, Coord at, Dir in, Coord dst) {
  if (at.x == dst.x || at.y == dst.y) return false;  // the same path as XY
  Dir first = dst.y > at.y ? Dir::South : Dir::North;
  Dir second = dst.x > at.x ? Dir::East : Dir::West;
  return turn_allowed(in, first) && turn_allowed(first, second) && f.column_clear(at.x, at.y, dst.y) &&
         f.row_clear(dst.y, at.x, dst.x);
}

struct AstarNode {
  std::uint32_t g;
  Dir first;
};
// Visited states: dense on small meshes (fast, a few KB), hashed on large ones (memory ~ states expanded).
class DenseStates {
 public:
  explicit DenseStates(std::size_t tiles) : v_(tiles * 4, AstarNode{kUnseen, Dir::Ramp}) {}
  std::pair<AstarNode*, bool> try_emplace(std::uint32_t key, AstarNode n) {
    AstarNode& x = v_[key];
    if (x.g != kUnseen) return {&x, false};
    x = n;
    return {&x, true};
  }
  const AstarNode& at(std::uint32_t key) const { return v_[key]; }

 private:
  std::vector<AstarNode> v_;
};
class HashedStates {
 public:
  explicit HashedStates(std::size_t) { m_.reserve(256); }
  std::pair<AstarNode*, bool> try_emplace(std::uint32_t key, AstarNode n) {
    auto [it, fresh] = m_.try_emplace(key, n);
    return {&it->second, fresh};
  }
  const AstarNode& at(std::uint32_t key) const { return m_.at(key); }

 private:
  std::unordered_map<std::uint32_t, AstarNode> m_;
};

// `limit`: give up (found = false, dist = kUnseen) after visiting that many states.
template <class States>
SearchResult astar_with(const Fabric& f, Coord here, Dir in, Coord dst, std::size_t limit) {
  const Grid& g = f.grid();
  SearchResult res;
  std::size_t visited = 0;
  if (dst.x < here.x && ((in != Dir::Ramp && in != Dir::West) || !f.row_clear(here.y, here.x, dst.x)))
    return res;  // west of here: only a straight westward run from the source gets there
  auto h = [&](Coord c) { return std::uint32_t(std::abs(c.x - dst.x) + std::abs(c.y - dst.y)); };
  const std::uint32_t base = h(here);
  States best(g.size());
  std::vector<std::vector<std::uint32_t>> open(4);  // by f - base
  std::size_t lowest = 0;
  auto push = [&](Coord at, Dir arrived, std::uint32_t gv, Dir first) {
    std::uint32_t key = g.index(at) * 4 + std::uint32_t(arrived);
    auto [node, fresh] = best.try_emplace(key, AstarNode{gv, first});
    visited += fresh;
    if (!fresh) {
      if (node->g <= gv) return;
      *node = {gv, first};
    }
    std::size_t b = gv + h(at) - base;
    if (b >= open.size()) open.resize(b + 1);
    open[b].push_back(key);
    lowest = std::min(lowest, b);
  };
  auto expand = [&](Coord at, Dir arrived, std::uint32_t gv, Dir first, bool is_start) {
    TileIndex t = g.index(at);
    auto order = port_order(at, dst);
    for (std::size_t k = order.size(); k-- > 0;) {  // preferred port pushed last, popped first
      Dir out = order[k];
      if (!turn_allowed(arrived, out) || !f.link_ok(t, out)) continue;
      Coord n = hw::step(at, out);
      if (out != Dir::West && n.x > dst.x) continue;  // east of dst after a non-west hop: a dead end
      push(n, out, gv + 1, is_start ? out : first);
    }
  };
  expand(here, in, 0, Dir::Ramp, true);
  while (true) {
    while (lowest < open.size() && open[lowest].empty()) ++lowest;
    if (lowest >= open.size()) return res;
    std::uint32_t key = open[lowest].back();
    open[lowest].pop_back();
    Coord at = g.coord(key / 4);
    AstarNode nd = best.at(key);
    if (nd.g + h(at) - base != lowest) continue;  // superseded by a shorter way here
    // Popped with the least f: done once a healthy Manhattan path continues from here.
    if (at == dst || clear_xy(f, at, Dir(key % 4), dst) || clear_yx(f, at, Dir(key % 4), dst))
      return {true, nd.g + h(at), nd.first};
    if (visited > limit) return {false, kUnseen, Dir::Ramp};
    expand(at, Dir(key % 4), nd.g, nd.first, false);
  }
}

// Hashed states while the search stays small; a search that grows (an unreachable pair explores all it
// can reach) restarts on dense arrays, which are faster per state. Same order, same result.
SearchResult astar(const Fabric& f, Coord here, Dir in, Coord dst) {
  constexpr std::size_t kDenseTiles = 65536, kHashedStates = 200000;
  if (f.grid().size() <= kDenseTiles) return astar_with<DenseStates>(f, here, in, dst, SIZE_MAX);
  SearchResult r = astar_with<HashedStates>(f, here, in, dst, kHashedStates);
  if (!r.found && r.dist == kUnseen) return astar_with<DenseStates>(f, here, in, dst, SIZE_MAX);
  return r;
}

Window full_window(const Grid& g) { return {0, 0, g.width - 1, g.height - 1}; }

void check_tile(const Fabric& f, Coord c, const char* what) {
  if (!f.grid().inside(c))
    throw hw::InputError(std::string("route: ") + what + " " + coord_str(c) + " is outside the " +
                         std::to_string(f.grid().width) + " x " + std::to_string(f.grid().height) + " mesh");
}

}  // namespace

std::string unreachable_message(const Fabric& f, Coord src, Coord dst) {
  const Grid& g = f.grid();
  std::string head = "tile " + coord_str(src) + " cannot reach " + coord_str(dst) + ": ";
  if (g.inside(src) && !f.router_ok(g.index(src))) return head + "its router failed";
  if (g.inside(dst) && !f.router_ok(g.index(dst))) return head + "the router of " + coord_str(dst) + " failed";
  // Name the faults nearest to the rectangle spanned by the two tiles.
  std::int32_t x0 = std::min(src.x, dst.x), x1 = std::max(src.x, dst.x);
  std::int32_t y0 = std::min(src.y, dst.y), y1 = std::max(src.y, dst.y);
  std::vector<std::pair<std::int32_t, std::size_t>> near;
  const auto& faults = f.faults();
  for (std::size_t i = 0; i < faults.size(); ++i) {
    Coord c = g.coord(faults[i].tile);
    std::int32_t dx = c.x < x0 ? x0 - c.x : (c.x > x1 ? c.x - x1 : 0);
    std::int32_t dy = c.y < y0 ? y0 - c.y : (c.y > y1 ? c.y - y1 : 0);
    near.push_back({std::max(dx, dy), i});
  }
  std::stable_sort(near.begin(), near.end(), [](auto a, auto b) { return a.first < b.first; });
  std::string list;
  for (std::size_t i = 0; i < near.size() && i < 4; ++i)
    list += (i ? ", " : "") + f.describe(faults[near[i].second]);
  if (near.size() > 4) list += " and " + std::to_string(near.size() - 4) + " more";
  if (list.empty()) list = "(none)";
  return head + "the defects at " + list + " cut it off under west-first routing";
}

namespace detail {

Dir next_port_faulty(const Fabric& f, Coord here, Coord dst, Dir in) {
  if (here == dst) return Dir::Ramp;
  const Grid& g = f.grid();
  Dir xy = xy_port(here, dst);
  if (turn_allowed(in, xy) && f.row_clear(here.y, here.x, dst.x) && f.column_clear(dst.x, here.y, dst.y))
    return xy;  // the XY path from here is healthy and as short as any path can be
  if (clear_yx(f, here, in, dst)) return dst.y > here.y ? Dir::South : Dir::North;  // so is YX
  if (!f.router_ok(g.index(here)) || !f.router_ok(g.index(dst)))
    throw hw::InputError(unreachable_message(f, here, dst));
  SearchResult r = astar(f, here, in, dst);
  if (!r.found) throw hw::InputError(unreachable_message(f, here, dst));
  return r.first;
}

}  // namespace detail

Route route(const Fabric& f, Coord src, Coord dst) {
  check_tile(f, src, "source");
  check_tile(f, dst, "destination");
  const Grid& g = f.grid();
  if (!f.router_ok(g.index(src)) || !f.router_ok(g.index(dst)))
    throw hw::InputError(unreachable_message(f, src, dst));
  Route r;
  r.links.reserve(std::size_t(std::abs(src.x - dst.x) + std::abs(src.y - dst.y)));
  Coord at = src;
  Dir in = Dir::Ramp;
  // Each hop lowers the remaining shortest distance by one, so this ends; the bound is a safety net.
  const std::size_t bound = 4 * g.size() + 4;
  while (true) {
    Dir out = next_port(f, at, dst, in);
    if (out == Dir::Ramp) break;
    TileIndex t = g.index(at);
    if (!f.link_ok(t, out) || !turn_allowed(in, out) || r.links.size() > bound)
      throw std::logic_error("route: routing function left the healthy west-first paths at " + coord_str(at));
    r.links.push_back(link_id(t, out));
    r.hops += f.link_hops(t, out);
    at = hw::step(at, out);
    in = out;
  }
  return r;
}

std::vector<RouteEdge> as_edges(const Route& r) {
  std::vector<RouteEdge> e;
  e.reserve(r.links.size());
  for (std::size_t i = 0; i < r.links.size(); ++i) e.push_back({r.links[i], std::int32_t(i) - 1});
  return e;
}

std::vector<Coord> unreachable_from(const Fabric& f, Coord src) {
  check_tile(f, src, "source");
  const Grid& g = f.grid();
  std::vector<std::uint8_t> reach(g.size(), 0);
  reach[g.index(src)] = 1;
  if (f.router_ok(g.index(src))) search(f, src, Dir::Ramp, Coord{-1, -1}, full_window(g), &reach);
  std::vector<Coord> out;
  for (TileIndex t = 0; t < g.size(); ++t)
    if (!reach[t] || !f.router_ok(t)) {
      if (g.coord(t) == src && f.router_ok(t)) continue;
      out.push_back(g.coord(t));
    }
  return out;
}

bool reachable(const Fabric& f, Coord src, Coord dst) {
  const Grid& g = f.grid();
  if (!g.inside(src) || !g.inside(dst)) return false;
  if (!f.router_ok(g.index(src)) || !f.router_ok(g.index(dst))) return false;
  if (src == dst) return true;
  return astar(f, src, Dir::Ramp, dst).found;
}

std::vector<TilePair> unreachable_pairs(const Fabric& f, std::size_t limit) {
  const Grid& g = f.grid();
  if (g.size() > kMaxPairScanTiles)
    throw hw::InputError("unreachable_pairs: the " + std::to_string(g.width) + " x " + std::to_string(g.height) +
                         " mesh has more than " + std::to_string(kMaxPairScanTiles) +
                         " tiles; list per source with unreachable_from");
  std::vector<TilePair> out;
  if (f.fault_free()) return out;
  for (TileIndex s = 0; s < g.size() && out.size() < limit; ++s)
    for (Coord d : unreachable_from(f, g.coord(s))) {
      if (d == g.coord(s)) continue;
      if (out.size() >= limit) break;
      out.push_back({g.coord(s), d});
    }
  return out;
}

}  // namespace wafer::noc
