#include "noc/routing/colors.h"

#include <algorithm>
#include <bit>

#include "hw/error.h"

namespace wafer::noc {

namespace {

std::string coord_str(Coord c) { return "(" + std::to_string(c.x) + "," + std::to_string(c.y) + ")"; }

TileIndex link_end(const Fabric& f, LinkId l) {
  return f.grid().index(hw::step(f.grid().coord(link_tile(l)), link_dir(l)));
}

void check_flow(const Fabric& f, const Flow& fl, std::size_t i) {
  if (fl.src >= f.grid().size())
    throw hw::InputError("colors: flow " + std::to_string(i) + " has source " + std::to_string(fl.src) +
                         " outside the mesh");
  for (const RouteEdge& e : fl.route)
    if (link_tile(e.link) >= f.grid().size())
      throw hw::InputError("colors: flow " + std::to_string(i) + " uses link " + std::to_string(e.link) +
                           " outside the mesh");
}

void tally(ColorReport& rep, const Fabric& f, const std::vector<std::uint64_t>& used,
           const std::vector<std::uint8_t>& count, std::uint32_t budget) {
  std::uint64_t all = 0;
  for (TileIndex t = 0; t < used.size(); ++t) {
    all |= used[t];
    if (count[t] > rep.max_per_tile) {
      rep.max_per_tile = count[t];
      rep.busiest = t;
    }
  }
  rep.colors_used = all ? 64u - std::uint32_t(std::countl_zero(all)) : 0u;
  if (rep.fits && rep.colors_used > budget) {
    rep.fits = false;
    rep.reason = "the plan needs " + std::to_string(rep.colors_used) + " colors, the wafer routes " +
                 std::to_string(budget) + " per router; " + std::to_string(rep.max_per_tile) +
                 " flows meet at router " + coord_str(f.grid().coord(rep.busiest));
  }
}

}  // namespace

void flow_routers(const Fabric& f, const Flow& flow, std::vector<TileIndex>& out) {
  out.clear();
  out.push_back(flow.src);
  for (const RouteEdge& e : flow.route) out.push_back(link_end(f, e.link));
}

ColorReport assign_colors(Plan& plan, const Fabric& f, std::uint32_t budget, std::size_t first) {
  if (budget < 1 || budget > kMaxColors)
    throw hw::InputError("colors: budget " + std::to_string(budget) + " is outside 1.." + std::to_string(kMaxColors));
  const std::size_t n = f.grid().size();
  std::vector<std::uint64_t> used(n, 0);
  std::vector<std::uint8_t> count(n, 0);
  std::vector<TileIndex> routers;
  ColorReport rep;
  auto touch = [&](const std::vector<TileIndex>& rs, Color c) {
    for (TileIndex t : rs) {
      if (!(used[t] & (1ull << c))) count[t] = std::uint8_t(std::min(255, count[t] + 1));
      used[t] |= 1ull << c;
    }
  };
  for (std::size_t i = 0; i < plan.flows.size(); ++i) {
    Flow& fl = plan.flows[i];
    check_flow(f, fl, i);
    flow_routers(f, fl, routers);
    if (i < first) {
      touch(routers, fl.color);
      continue;
    }
    std::uint64_t busy = 0;
    for (TileIndex t : routers) busy |= used[t];
    if (busy == ~0ull)
      throw hw::InputError("colors: flow " + std::to_string(i) + " from " + coord_str(f.grid().coord(fl.src)) +
                           " meets flows of all " + std::to_string(kMaxColors) + " colors along its route");
    Color c = Color(std::countr_one(busy));
    if (c >= budget && rep.fits) {
      TileIndex worst = routers.front();
      for (TileIndex t : routers)
        if (std::popcount(used[t]) > std::popcount(used[worst])) worst = t;
      rep.fits = false;
      rep.reason = "flow " + std::to_string(i) + " from " + coord_str(f.grid().coord(fl.src)) +
                   " finds no free color among " + std::to_string(budget) + ": its route meets " +
                   std::to_string(std::popcount(busy)) + " colored flows, " +
                   std::to_string(std::popcount(used[worst])) + " of them at router " +
                   coord_str(f.grid().coord(worst));
    }
    fl.color = c;
    touch(routers, c);
  }
  tally(rep, f, used, count, budget);
  return rep;
}

ColorReport check_colors(const Plan& plan, const Fabric& f, std::uint32_t budget) {
  const std::size_t n = f.grid().size();
  std::vector<std::uint64_t> used(n, 0);
  std::vector<std::uint8_t> count(n, 0);
  std::vector<std::uint32_t> owner;  // only filled on a clash search
  std::vector<TileIndex> routers;
  ColorReport rep;
  for (std::size_t i = 0; i < plan.flows.size(); ++i) {
    const Flow& fl = plan.flows[i];
    check_flow(f, fl, i);
    if (fl.color >= kMaxColors)
      throw hw::InputError("colors: flow " + std::to_string(i) + " has color " + std::to_string(fl.color));
    flow_routers(f, fl, routers);
    std::sort(routers.begin(), routers.end());
    routers.erase(std::unique(routers.begin(), routers.end()), routers.end());
    for (TileIndex t : routers) {
      if ((used[t] & (1ull << fl.color)) && rep.fits) {
        // Find the earlier flow for the message.
        std::size_t other = 0;
        std::vector<TileIndex> rs;
        for (std::size_t j = 0; j < i; ++j) {
          if (plan.flows[j].color != fl.color) continue;
          flow_routers(f, plan.flows[j], rs);
          if (std::find(rs.begin(), rs.end(), t) != rs.end()) {
            other = j;
            break;
          }
        }
        rep.fits = false;
        rep.reason = "flows " + std::to_string(other) + " and " + std::to_string(i) + " share color " +
                     std::to_string(fl.color) + " at router " + coord_str(f.grid().coord(t));
      }
      if (!(used[t] & (1ull << fl.color))) count[t] = std::uint8_t(std::min(255, count[t] + 1));
      used[t] |= 1ull << fl.color;
    }
  }
  tally(rep, f, used, count, budget);
  return rep;
}

ColorTable ColorTable::build(const Plan& plan, const Fabric& f) {
  ColorTable ct;
  for (std::size_t i = 0; i < plan.flows.size(); ++i) {
    const Flow& fl = plan.flows[i];
    check_flow(f, fl, i);
    // One entry per (router, input port): the source (Ramp in) and each edge's far end.
    std::vector<ColorEntry> es;
    es.push_back({fl.src, fl.color, Dir::Ramp, 0, std::uint32_t(i)});
    for (const RouteEdge& e : fl.route)
      es.push_back({link_end(f, e.link), fl.color, link_dir(e.link), 0, std::uint32_t(i)});
    for (std::size_t k = 0; k < fl.route.size(); ++k) {
      const RouteEdge& e = fl.route[k];
      std::size_t from = e.parent == kFromSource ? 0 : std::size_t(e.parent) + 1;
      es[from].out_ports |= std::uint8_t(1u << unsigned(link_dir(e.link)));
    }
    for (TileIndex s : fl.sinks) {
      // The entry at the sink: the edge ending there (or the source itself).
      for (auto& x : es)
        if (x.tile == s) {
          x.out_ports |= std::uint8_t(1u << unsigned(Dir::Ramp));
          break;
        }
    }
    ct.entries_.insert(ct.entries_.end(), es.begin(), es.end());
  }
  std::sort(ct.entries_.begin(), ct.entries_.end(), [](const ColorEntry& a, const ColorEntry& b) {
    if (a.tile != b.tile) return a.tile < b.tile;
    if (a.color != b.color) return a.color < b.color;
    return a.flow < b.flow;
  });
  return ct;
}

std::span<const ColorEntry> ColorTable::at(TileIndex t) const {
  auto lo = std::lower_bound(entries_.begin(), entries_.end(), t,
                             [](const ColorEntry& e, TileIndex v) { return e.tile < v; });
  auto hi = std::upper_bound(lo, entries_.end(), t, [](TileIndex v, const ColorEntry& e) { return v < e.tile; });
  return {lo, hi};
}

std::uint32_t ColorTable::colors_at(TileIndex t) const {
  std::uint64_t m = 0;
  for (const ColorEntry& e : at(t)) m |= 1ull << e.color;
  return std::uint32_t(std::popcount(m));
}

}  // namespace wafer::noc
