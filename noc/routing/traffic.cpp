#include "noc/routing/traffic.h"

#include <fmt/format.h>

#include <cmath>

#include "hw/error.h"
#include "noc/routing/multicast.h"
#include "noc/routing/route.h"

namespace wafer::noc {

namespace {

// splitmix64: a tiny seeded generator; sampling is our own code so every machine draws the same numbers.
struct Rand {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  // Failures before the first success of Bernoulli(p) trials (inversion: exact for the Bernoulli process,
  // one draw per burst instead of one per tile and cycle).
  std::uint64_t geometric(double p) {
    if (p >= 1.0) return 0;
    double u = double((next() >> 11) + 1) * 0x1.0p-53;  // (0, 1]
    double g = std::floor(std::log(u) / std::log1p(-p));
    return g >= 1.8e19 ? ~std::uint64_t(0) : std::uint64_t(g);
  }
  std::uint64_t below(std::uint64_t n) { return std::uint64_t(uniform() * double(n)) % n; }
};

std::string cstr(Coord c) { return fmt::format("({}, {})", c.x, c.y); }

Flow multicast_flow(const Fabric& fabric, Coord src, const hw::Rect& region, std::uint32_t wavelets,
                    std::uint64_t release, Color color) {
  Multicast m = multicast(fabric, src, region);
  if (!m.unreached.empty()) {
    std::string list;
    for (std::size_t i = 0; i < m.unreached.size() && i < 8; ++i) list += (i ? ", " : "") + cstr(m.unreached[i]);
    if (m.unreached.size() > 8) list += fmt::format(" and {} more", m.unreached.size() - 8);
    throw hw::InputError(fmt::format("multicast from {}: the defects cut off {}", cstr(src), list));
  }
  Flow f;
  f.src = fabric.grid().index(src);
  f.route = std::move(m.edges);
  f.sinks = std::move(m.sinks);
  f.wavelets = wavelets;
  f.color = color;
  f.release = release;
  return f;
}

}  // namespace

const char* to_string(Pattern p) {
  switch (p) {
    case Pattern::Uniform: return "uniform";
    case Pattern::Transpose: return "transpose";
    case Pattern::Hotspot: return "hotspot";
    case Pattern::Neighbour: return "neighbour";
    case Pattern::RowReduce: return "row-reduce";
    case Pattern::ColumnBroadcast: return "column-broadcast";
  }
  return "?";
}

const std::vector<Pattern>& all_patterns() {
  static const std::vector<Pattern> v{Pattern::Uniform,   Pattern::Transpose, Pattern::Hotspot,
                                      Pattern::Neighbour, Pattern::RowReduce, Pattern::ColumnBroadcast};
  return v;
}

Pattern parse_pattern(std::string_view name) {
  std::string known;
  for (Pattern p : all_patterns()) {
    if (name == to_string(p)) return p;
    known += (known.empty() ? "" : ", ") + std::string(to_string(p));
  }
  throw hw::InputError(fmt::format("unknown pattern '{}' (known: {})", name, known));
}

std::uint32_t add_unicast(Plan& plan, const Fabric& fabric, Coord src, Coord dst, std::uint32_t wavelets,
                          std::uint64_t release, Color color) {
  Flow f;
  f.src = fabric.grid().index(src);
  f.route = as_edges(route(fabric, src, dst));
  f.sinks = {fabric.grid().index(dst)};
  f.wavelets = wavelets;
  f.color = color;
  f.release = release;
  return plan.add(std::move(f));
}

std::uint32_t add_row_reduce(Plan& plan, const Fabric& fabric, std::int32_t y, std::int32_t x0, std::int32_t len,
                             std::uint32_t wavelets, std::uint32_t stage, std::uint64_t release, Color color) {
  const Grid& g = fabric.grid();
  std::uint32_t first = std::uint32_t(plan.flows.size());
  for (std::int32_t i = 0; i + 1 < len; ++i) {
    std::uint32_t id = add_unicast(plan, fabric, {x0 + i, y}, {x0 + i + 1, y}, wavelets, release, color);
    if (i > 0)
      plan.flows[id].after.push_back({id - 1, g.index({x0 + i, y}), Trigger::Kind::Stream, stage});
  }
  return first;
}

std::uint32_t add_column_broadcast(Plan& plan, const Fabric& fabric, std::int32_t x, std::int32_t y,
                                   std::uint32_t wavelets, std::uint64_t release, Color color) {
  return plan.add(
      multicast_flow(fabric, {x, y}, column_segment({x, 0}, fabric.grid().height), wavelets, release, color));
}

std::uint32_t add_row_multicast(Plan& plan, const Fabric& fabric, std::int32_t x, std::int32_t y, std::int32_t x0,
                                std::int32_t span, std::uint32_t wavelets, std::uint64_t release, Color color) {
  return plan.add(multicast_flow(fabric, {x, y}, row_segment({x0, y}, span), wavelets, release, color));
}

Plan make_traffic(const Fabric& fabric, const TrafficParams& p) {
  const Grid& g = fabric.grid();
  if (!(p.rate >= 0.0 && p.rate <= 1.0))
    throw hw::InputError(fmt::format("--rate {} is outside [0, 1] (wavelets per tile per cycle)", p.rate));
  if (p.burst_wavelets == 0) throw hw::InputError("--burst-wavelets must be at least 1");
  if (p.cycles == 0) throw hw::InputError("--cycles must be at least 1");
  if (p.colors == 0) throw hw::InputError("traffic needs at least one color");
  const double prob = p.rate / double(p.burst_wavelets);
  // Estimated route edges, before anything is allocated.
  double per_burst = p.pattern == Pattern::ColumnBroadcast ? double(g.height)
                     : p.pattern == Pattern::Neighbour || p.pattern == Pattern::RowReduce
                         ? 1.0
                         : double(g.width + g.height) / 2.0;
  double edges = prob * double(p.cycles) * double(g.size()) * per_burst;
  if (edges > double(kMaxTrafficEdges))
    throw hw::InputError(fmt::format(
        "this workload would hold about {:.3g} route edges (limit {}): lower --rate, --cycles or the mesh size", edges,
        kMaxTrafficEdges));

  Plan plan;
  Rand rng{p.seed ^ 0x6E6F632D74726166ull};
  std::vector<TileIndex> healthy;
  for (TileIndex t = 0; t < g.size(); ++t)
    if (fabric.router_ok(t)) healthy.push_back(t);
  if (healthy.size() < 2) throw hw::InputError("the mesh has fewer than two healthy tiles");
  const Coord centre{g.width / 2, g.height / 2};
  std::uint32_t color = 0;
  auto next_color = [&] {
    Color c = Color(color);
    color = (color + 1) % p.colors;
    return c;
  };
  auto other = [&](TileIndex src) {
    for (;;) {
      TileIndex d = healthy[rng.below(healthy.size())];
      if (d != src) return d;
    }
  };

  if (prob <= 0.0) return plan;
  // Creation cycles of one source: a Bernoulli(prob) process over [0, cycles), drawn gap by gap.
  auto each_creation = [&](auto&& make) {
    for (std::uint64_t t = rng.geometric(prob); t < p.cycles; t += 1 + rng.geometric(prob)) make(t);
  };
  if (p.pattern == Pattern::RowReduce) {
    for (std::int32_t y = 0; y < g.height; ++y)
      each_creation([&](std::uint64_t t) {
        add_row_reduce(plan, fabric, y, 0, g.width, p.burst_wavelets, p.stage_latency, t, next_color());
      });
    return plan;
  }
  for (TileIndex src : healthy) {
    const Coord s = g.coord(src);
    each_creation([&](std::uint64_t t) {
      switch (p.pattern) {
        case Pattern::Uniform:
          add_unicast(plan, fabric, s, g.coord(other(src)), p.burst_wavelets, t, next_color());
          break;
        case Pattern::Transpose: {
          Coord d{std::int32_t(std::int64_t(s.y) * g.width / g.height), std::int32_t(std::int64_t(s.x) * g.height / g.width)};
          if (d == s || !fabric.router_ok(g.index(d))) break;
          add_unicast(plan, fabric, s, d, p.burst_wavelets, t, next_color());
          break;
        }
        case Pattern::Hotspot: {
          bool hot = rng.uniform() < 0.25 && fabric.router_ok(g.index(centre)) && s != centre;
          add_unicast(plan, fabric, s, hot ? centre : g.coord(other(src)), p.burst_wavelets, t, next_color());
          break;
        }
        case Pattern::Neighbour: {
          Dir d = hw::kMeshDirs[rng.below(4)];
          Coord n = hw::step(s, d);
          if (!g.inside(n) || !fabric.router_ok(g.index(n))) break;
          add_unicast(plan, fabric, s, n, p.burst_wavelets, t, next_color());
          break;
        }
        case Pattern::ColumnBroadcast:
          if (g.height > 1) add_column_broadcast(plan, fabric, s.x, s.y, p.burst_wavelets, t, next_color());
          break;
        case Pattern::RowReduce: break;
      }
    });
  }
  return plan;
}

}  // namespace wafer::noc
