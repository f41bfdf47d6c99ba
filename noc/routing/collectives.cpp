#include "noc/routing/collectives.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "hw/error.h"
#include "noc/routing/multicast.h"
#include "noc/routing/route.h"

namespace wafer::noc {

namespace {

std::string coord_str(Coord c) { return "(" + std::to_string(c.x) + "," + std::to_string(c.y) + ")"; }

void check_rect(const Fabric& f, const hw::Rect& r, std::uint32_t w, const char* what) {
  const Grid& g = f.grid();
  if (r.w <= 0 || r.h <= 0 || r.area() < 2 || !g.inside({r.x0, r.y0}) || !g.inside({r.x0 + r.w - 1, r.y0 + r.h - 1}))
    throw hw::InputError(std::string(what) + ": rectangle at " + coord_str({r.x0, r.y0}) + " of " +
                         std::to_string(r.w) + " x " + std::to_string(r.h) +
                         " tiles must hold at least 2 tiles inside the " + std::to_string(g.width) + " x " +
                         std::to_string(g.height) + " mesh");
  if (w == 0) throw hw::InputError(std::string(what) + ": bursts of 0 wavelets");
}

Flow unicast_flow(const Fabric& f, Coord s, Coord d, std::uint32_t w) {
  Flow fl;
  fl.src = f.grid().index(s);
  fl.route = as_edges(route(f, s, d));
  fl.sinks = {f.grid().index(d)};
  fl.wavelets = w;
  return fl;
}

Flow multicast_flow(const Fabric& f, Coord root, const hw::Rect& region, std::uint32_t w, const char* what) {
  Multicast m = multicast(f, root, region);
  if (!m.unreached.empty()) {
    std::string list;
    for (std::size_t i = 0; i < m.unreached.size() && i < 4; ++i) list += (i ? ", " : "") + coord_str(m.unreached[i]);
    if (m.unreached.size() > 4) list += " and " + std::to_string(m.unreached.size() - 4) + " more";
    throw hw::InputError(std::string(what) + ": " + list + " cannot be reached from " + coord_str(root) + ": " +
                         unreachable_message(f, root, m.unreached.front()));
  }
  Flow fl;
  fl.src = f.grid().index(root);
  fl.route = std::move(m.edges);
  fl.sinks = std::move(m.sinks);
  fl.wavelets = w;
  return fl;
}

Trigger stream_on(std::uint32_t flow, TileIndex t, const CollectiveParams& p) {
  return {flow, t, Trigger::Kind::Stream, p.stage_latency};
}
Trigger complete_on(std::uint32_t flow, TileIndex t, const CollectiveParams& p) {
  return {flow, t, Trigger::Kind::Complete, p.stage_latency};
}

// Appends a chain tiles[0] -> tiles[1] -> ... -> tiles.back(); flow k leaves tiles[k] with
// wavelets(k), streaming flow k-1 and feed[k] (a flow ending at tiles[k], or -1). Returns the flows.
template <class Wavelets>
std::vector<std::uint32_t> add_chain(Plan& plan, const Fabric& f, const CollectiveParams& p,
                                     const std::vector<Coord>& tiles, const std::vector<std::int64_t>& feed,
                                     Wavelets wavelets, std::uint64_t release) {
  std::vector<std::uint32_t> out;
  for (std::size_t k = 0; k + 1 < tiles.size(); ++k) {
    Flow fl = unicast_flow(f, tiles[k], tiles[k + 1], wavelets(k));
    fl.release = release;
    TileIndex here = f.grid().index(tiles[k]);
    if (k > 0) fl.after.push_back(stream_on(out.back(), here, p));
    if (!feed.empty() && feed[k] >= 0) fl.after.push_back(stream_on(std::uint32_t(feed[k]), here, p));
    out.push_back(plan.add(std::move(fl)));
  }
  return out;
}

struct Builder {
  Plan& plan;
  const Fabric& f;
  const CollectiveParams& p;
  Collective c;
  Builder(Plan& pl, const Fabric& fa, const CollectiveParams& pa, const char* name, std::uint64_t release)
      : plan(pl), f(fa), p(pa) {
    c.name = name;
    c.first_flow = std::uint32_t(plan.flows.size());
    c.release = release;
  }
  Collective finish(std::uint64_t formula) {
    c.flows = std::uint32_t(plan.flows.size()) - c.first_flow;
    c.formula = formula;
    for (std::uint32_t i = c.first_flow; i < plan.flows.size(); ++i) c.link_occupations += plan.flows[i].route.size();
    c.colors = assign_colors(plan, f, p.colors, c.first_flow);
    ZeroLoad z = zero_load(plan, f, p.hop_latency, p.ramp_latency);
    std::uint64_t end = c.release;
    for (std::uint32_t fl : c.final_flows)
      for (auto [t, head] : z.head[fl]) end = std::max(end, head + z.lag[fl]);
    c.latency = end - c.release;
    return std::move(c);
  }
};

std::int64_t hh(const CollectiveParams& p) { return p.hop_latency; }
std::int64_t ss(const CollectiveParams& p) { return reaction(p.stage_latency); }  // (0 acts as 1, as the meshes charge it)
std::int64_t rr(const CollectiveParams& p) { return p.ramp_latency; }
// A one-hop burst's head from core to core: injection ramp, hop, delivery ramp.
std::int64_t dd(const CollectiveParams& p) { return hh(p) + 2 * rr(p); }

std::uint64_t chain_formula(const CollectiveParams& p, std::int64_t n, std::int64_t w) {
  return n < 2 ? 0 : std::uint64_t((n - 1) * dd(p) + (n - 2) * ss(p) + w - 1);
}
std::uint64_t rect_chain_head(const CollectiveParams& p, std::int64_t W, std::int64_t H) {
  return std::uint64_t((W + H - 2) * dd(p) + (W + H - 3) * ss(p));
}
std::int64_t log2_ceil(std::int64_t n) { return n <= 1 ? 0 : std::int64_t(std::bit_width(std::uint64_t(n - 1))); }

// Reduces `r` by chains to its root; returns the flows ending at the root (the column chain's last flow
// and the root row's own chain). With `grow`, each stage appends its block (all-gather).
std::vector<std::uint32_t> build_reduce_chain(Builder& b, const hw::Rect& r, std::uint32_t w, std::uint64_t release,
                                              bool grow) {
  std::vector<std::int64_t> row_final(std::size_t(r.h), -1);
  for (std::int32_t y = r.y0; y < r.y0 + r.h; ++y) {
    if (r.w < 2) break;
    std::vector<Coord> tiles;
    for (std::int32_t x = r.x0; x < r.x0 + r.w; ++x) tiles.push_back({x, y});
    auto fl = add_chain(b.plan, b.f, b.p, tiles, {},
                        [&](std::size_t k) { return grow ? std::uint32_t(k + 1) * w : w; }, release);
    row_final[std::size_t(y - r.y0)] = fl.back();
  }
  if (r.h < 2) return {std::uint32_t(row_final[0])};
  std::vector<Coord> tiles;
  std::vector<std::int64_t> feed;
  for (std::int32_t y = r.y0 + r.h - 1; y >= r.y0; --y) {
    tiles.push_back({r.x0 + r.w - 1, y});
    feed.push_back(row_final[std::size_t(y - r.y0)]);
  }
  const std::uint32_t row_block = std::uint32_t(r.w) * w;
  auto col = add_chain(b.plan, b.f, b.p, tiles, feed,
                       [&](std::size_t k) { return grow ? std::uint32_t(k + 1) * row_block : w; }, release);
  std::vector<std::uint32_t> at_root{col.back()};
  if (row_final[0] >= 0) at_root.push_back(std::uint32_t(row_final[0]));
  return at_root;
}

// Tree reduction; returns every flow ending at the root.
std::vector<std::uint32_t> build_reduce_tree(Builder& b, const hw::Rect& r, std::uint32_t w, std::uint64_t release) {
  const Grid& g = b.f.grid();
  const std::int32_t x1 = r.x0 + r.w - 1;
  std::vector<std::vector<std::uint32_t>> received(std::size_t(r.area()));
  auto slot = [&](Coord c) -> std::vector<std::uint32_t>& {
    return received[std::size_t(c.y - r.y0) * std::size_t(r.w) + std::size_t(c.x - r.x0)];
  };
  auto send = [&](Coord from, Coord to) {
    Flow fl = unicast_flow(b.f, from, to, w);
    fl.release = release;
    for (std::uint32_t in : slot(from)) fl.after.push_back(complete_on(in, g.index(from), b.p));
    slot(to).push_back(b.plan.add(std::move(fl)));
  };
  for (std::int32_t y = r.y0; y < r.y0 + r.h; ++y)
    for (std::int32_t stride = 1; stride < r.w; stride *= 2)
      for (std::int32_t i = stride; i < r.w; i += 2 * stride) send({x1 - i, y}, {x1 - i + stride, y});
  for (std::int32_t stride = 1; stride < r.h; stride *= 2)
    for (std::int32_t i = stride; i < r.h; i += 2 * stride) send({x1, r.y0 + i}, {x1, r.y0 + i - stride});
  return slot({x1, r.y0});
}

void check_row(const Fabric& f, const hw::Rect& row, std::uint32_t w, const char* what) {
  const Grid& g = f.grid();
  if (row.h != 1 || row.w < 1 || !g.inside({row.x0, row.y0}) || !g.inside({row.x0 + row.w - 1, row.y0}))
    throw hw::InputError(std::string(what) + ": the row at " + coord_str({row.x0, row.y0}) + " of " +
                         std::to_string(row.w) + " x " + std::to_string(row.h) +
                         " tiles must be one row of at least 1 tile inside the " + std::to_string(g.width) + " x " +
                         std::to_string(g.height) + " mesh");
  if (w == 0) throw hw::InputError(std::string(what) + ": bursts of 0 wavelets");
}

// Chains from both ends of the tiles [a, e] of row y toward `root` (a <= root <= e): from a east, from e
// west, each stage streaming. Returns the flows ending at the root (none when the segment is the root).
std::vector<std::uint32_t> chains_to(Builder& b, std::int32_t y, std::int32_t a, std::int32_t e, std::int32_t root,
                                     std::uint32_t w, std::uint64_t release) {
  std::vector<std::uint32_t> in;
  auto same = [&](std::size_t) { return w; };
  std::vector<Coord> tiles;
  for (std::int32_t x = a; x <= root && root > a; ++x) tiles.push_back({x, y});
  if (!tiles.empty()) in.push_back(add_chain(b.plan, b.f, b.p, tiles, {}, same, release).back());
  tiles.clear();
  for (std::int32_t x = e; x >= root && e > root; --x) tiles.push_back({x, y});
  if (!tiles.empty()) in.push_back(add_chain(b.plan, b.f, b.p, tiles, {}, same, release).back());
  return in;
}

// The root's multicast over the whole row, streaming out of `inputs` (flows ending at the root).
void row_result(Builder& b, const hw::Rect& row, std::int32_t root, const std::vector<std::uint32_t>& inputs,
                std::uint32_t w, std::uint64_t release, const char* what) {
  const Coord rc{root, row.y0};
  Flow bc = multicast_flow(b.f, rc, row, w, what);
  bc.release = release;
  for (std::uint32_t in : inputs) bc.after.push_back(stream_on(in, b.f.grid().index(rc), b.p));
  b.c.final_flows.push_back(b.plan.add(std::move(bc)));
}

}  // namespace

CollectiveParams CollectiveParams::of(const hw::WaferSpec& spec) {
  return {std::uint32_t(spec.hop_latency), std::uint32_t(spec.stream_stage_latency), std::uint32_t(spec.colors),
          std::uint32_t(spec.ramp_latency)};
}

std::uint32_t multicast_hops(Coord root, const hw::Rect& r) {
  const std::int32_t x0 = r.x0, x1 = r.x0 + r.w - 1, y0 = r.y0, y1 = r.y0 + r.h - 1;
  if (root.y >= y0 && root.y <= y1)
    return std::uint32_t(std::max(std::abs(root.x - x0), std::abs(root.x - x1)) +
                         std::max(std::abs(root.y - y0), std::abs(root.y - y1)));
  std::int32_t spine = root.y < y0 ? y0 : y1;
  return std::uint32_t(std::abs(root.x - x0) + std::abs(root.y - spine) + (x1 - x0) + (y1 - y0));
}

Collective broadcast(Plan& plan, const Fabric& f, const CollectiveParams& p, Coord root, const hw::Rect& region,
                     std::uint32_t w, std::uint64_t release) {
  if (w == 0) throw hw::InputError("broadcast: bursts of 0 wavelets");
  Builder b(plan, f, p, "broadcast", release);
  Flow fl = multicast_flow(f, root, region, w, "broadcast");
  fl.release = release;
  b.c.final_flows.push_back(plan.add(std::move(fl)));
  return b.finish(std::uint64_t(multicast_hops(root, region)) * p.hop_latency + 2 * std::uint64_t(p.ramp_latency) + w - 1);
}

Collective broadcast_rows(Plan& plan, const Fabric& f, const CollectiveParams& p, const hw::Rect& r,
                          std::int32_t root_x, std::uint32_t w, std::uint64_t release) {
  check_rect(f, r, w, "broadcast_rows");
  if (root_x < r.x0 || root_x >= r.x0 + r.w)
    throw hw::InputError("broadcast_rows: root column " + std::to_string(root_x) + " is outside the rectangle");
  Builder b(plan, f, p, "broadcast_rows", release);
  for (std::int32_t y = r.y0; y < r.y0 + r.h; ++y) {
    Flow fl = multicast_flow(f, {root_x, y}, row_segment({r.x0, y}, r.w), w, "broadcast_rows");
    if (fl.sinks.empty()) continue;  // a one-tile row
    fl.release = release;
    b.c.final_flows.push_back(plan.add(std::move(fl)));
  }
  if (r.w < 2) return b.finish(0);
  return b.finish(std::uint64_t(std::max(root_x - r.x0, r.x0 + r.w - 1 - root_x)) * p.hop_latency +
                  2 * std::uint64_t(p.ramp_latency) + w - 1);
}

Collective broadcast_columns(Plan& plan, const Fabric& f, const CollectiveParams& p, const hw::Rect& r,
                             std::int32_t root_y, std::uint32_t w, std::uint64_t release) {
  check_rect(f, r, w, "broadcast_columns");
  if (root_y < r.y0 || root_y >= r.y0 + r.h)
    throw hw::InputError("broadcast_columns: root row " + std::to_string(root_y) + " is outside the rectangle");
  Builder b(plan, f, p, "broadcast_columns", release);
  for (std::int32_t x = r.x0; x < r.x0 + r.w; ++x) {
    Flow fl = multicast_flow(f, {x, root_y}, column_segment({x, r.y0}, r.h), w, "broadcast_columns");
    if (fl.sinks.empty()) continue;  // a one-tile column
    fl.release = release;
    b.c.final_flows.push_back(plan.add(std::move(fl)));
  }
  if (r.h < 2) return b.finish(0);
  return b.finish(std::uint64_t(std::max(root_y - r.y0, r.y0 + r.h - 1 - root_y)) * p.hop_latency +
                  2 * std::uint64_t(p.ramp_latency) + w - 1);
}

Collective reduce_rows(Plan& plan, const Fabric& f, const CollectiveParams& p, const hw::Rect& r, std::uint32_t w,
                       std::uint64_t release) {
  check_rect(f, r, w, "reduce_rows");
  if (r.w < 2) throw hw::InputError("reduce_rows: rows of 1 tile have nothing to reduce");
  Builder b(plan, f, p, "reduce_rows", release);
  for (std::int32_t y = r.y0; y < r.y0 + r.h; ++y) {
    std::vector<Coord> tiles;
    for (std::int32_t x = r.x0; x < r.x0 + r.w; ++x) tiles.push_back({x, y});
    b.c.final_flows.push_back(add_chain(plan, f, p, tiles, {}, [&](std::size_t) { return w; }, release).back());
  }
  return b.finish(chain_formula(p, r.w, w));
}

Collective reduce_chain(Plan& plan, const Fabric& f, const CollectiveParams& p, const hw::Rect& r, std::uint32_t w,
                        std::uint64_t release) {
  check_rect(f, r, w, "reduce_chain");
  Builder b(plan, f, p, "reduce_chain", release);
  b.c.final_flows = build_reduce_chain(b, r, w, release, false);
  return b.finish(rect_chain_head(p, r.w, r.h) + w - 1);
}

Collective reduce_tree(Plan& plan, const Fabric& f, const CollectiveParams& p, const hw::Rect& r, std::uint32_t w,
                       std::uint64_t release) {
  check_rect(f, r, w, "reduce_tree");
  Builder b(plan, f, p, "reduce_tree", release);
  b.c.final_flows = build_reduce_tree(b, r, w, release);
  std::int64_t L = log2_ceil(r.w) + log2_ceil(r.h);
  return b.finish(std::uint64_t((r.w + r.h - 2) * hh(p) + 2 * L * rr(p) + L * (std::int64_t(w) - 1) + (L - 1) * ss(p)));
}

Collective allreduce(Plan& plan, const Fabric& f, const CollectiveParams& p, const hw::Rect& r, std::uint32_t w,
                     ReduceKind kind, std::uint64_t release) {
  check_rect(f, r, w, "allreduce");
  Builder b(plan, f, p, kind == ReduceKind::Chain ? "allreduce_chain" : "allreduce_tree", release);
  const Coord root{r.x0 + r.w - 1, r.y0};
  const TileIndex rt = f.grid().index(root);
  Flow bc = multicast_flow(f, root, r, w, "allreduce");
  bc.release = release;
  std::uint64_t formula = 0;
  const std::int64_t D = r.w + r.h - 2;
  if (kind == ReduceKind::Chain) {
    for (std::uint32_t in : build_reduce_chain(b, r, w, release, false)) bc.after.push_back(stream_on(in, rt, p));
    formula = std::uint64_t(2 * D * hh(p) + D * ss(p) + 2 * (D + 1) * rr(p) + std::int64_t(w) - 1);
  } else {
    for (std::uint32_t in : build_reduce_tree(b, r, w, release)) bc.after.push_back(complete_on(in, rt, p));
    std::int64_t L = log2_ceil(r.w) + log2_ceil(r.h);
    formula = std::uint64_t(D * hh(p) + 2 * L * rr(p) + L * (std::int64_t(w) - 1) + (L - 1) * ss(p) + ss(p) +
                            D * hh(p) + 2 * rr(p) + std::int64_t(w) - 1);
  }
  b.c.final_flows.push_back(plan.add(std::move(bc)));
  return b.finish(formula);
}

Collective allgather(Plan& plan, const Fabric& f, const CollectiveParams& p, const hw::Rect& r, std::uint32_t w,
                     std::uint64_t release) {
  check_rect(f, r, w, "allgather");
  if (std::uint64_t(r.area()) * w > 0xFFFFFFFFull)
    throw hw::InputError("allgather: " + std::to_string(r.area()) + " tiles x " + std::to_string(w) +
                         " wavelets exceed one burst's 2^32 wavelets");
  Builder b(plan, f, p, "allgather", release);
  const Coord root{r.x0 + r.w - 1, r.y0};
  const TileIndex rt = f.grid().index(root);
  Flow bc = multicast_flow(f, root, r, std::uint32_t(r.area()) * w, "allgather");
  bc.release = release;
  for (std::uint32_t in : build_reduce_chain(b, r, w, release, true)) bc.after.push_back(stream_on(in, rt, p));
  b.c.final_flows.push_back(plan.add(std::move(bc)));
  const std::int64_t D = r.w + r.h - 2;
  return b.finish(std::uint64_t(2 * D * hh(p) + D * ss(p) + 2 * (D + 1) * rr(p) + r.area() * std::int64_t(w) - 1));
}

// ---- 1-D allreduces along one row -------------------------------------------------------------------

std::int32_t two_level_group(std::int32_t P, std::int32_t group) {
  if (group < 0) throw hw::InputError("allreduce_row_two_level: group size " + std::to_string(group) + " is negative");
  if (P < 1) return 1;
  const std::int32_t g = group > 0 ? group : std::int32_t(std::lround(std::sqrt(double(P))));
  return std::clamp(g, 1, P);
}

std::uint64_t allreduce_row_chain_formula(const CollectiveParams& p, std::int32_t P, std::uint32_t w) {
  if (P < 2) return 0;
  return std::uint64_t((P - 1) * (2 * hh(p) + 2 * rr(p) + ss(p)) + 2 * rr(p) + std::int64_t(w) - 1);
}

std::uint64_t allreduce_row_centre_formula(const CollectiveParams& p, std::int32_t P, std::uint32_t w) {
  if (P < 2) return 0;
  const std::int64_t m = P / 2;
  return std::uint64_t(m * (2 * hh(p) + 2 * rr(p) + ss(p)) + 2 * rr(p) + std::int64_t(w) - 1);
}

std::uint64_t allreduce_row_two_level_formula(const CollectiveParams& p, std::int32_t P, std::uint32_t w,
                                              std::int32_t group) {
  if (P < 2) return 0;
  const std::int64_t g = two_level_group(P, group), G = (P + g - 1) / g, c = G / 2, m = g / 2;
  const std::int64_t rc = c * g + std::min<std::int64_t>(g, P - c * g) / 2;
  return std::uint64_t((m + c) * (2 * rr(p) + ss(p)) + 2 * rc * hh(p) + 2 * rr(p) + std::int64_t(w) - 1);
}

Collective allreduce_row_chain(Plan& plan, const Fabric& f, const CollectiveParams& p, const hw::Rect& row,
                               std::uint32_t w, std::uint64_t release) {
  check_row(f, row, w, "allreduce_row_chain");
  Builder b(plan, f, p, "allreduce_row_chain", release);
  if (row.w > 1) {
    const std::int32_t x1 = row.x0 + row.w - 1;
    row_result(b, row, x1, chains_to(b, row.y0, row.x0, x1, x1, w, release), w, release, "allreduce_row_chain");
  }
  return b.finish(allreduce_row_chain_formula(p, row.w, w));
}

Collective allreduce_row_centre(Plan& plan, const Fabric& f, const CollectiveParams& p, const hw::Rect& row,
                                std::uint32_t w, std::uint64_t release) {
  check_row(f, row, w, "allreduce_row_centre");
  Builder b(plan, f, p, "allreduce_row_centre", release);
  if (row.w > 1) {
    const std::int32_t root = row.x0 + row.w / 2;
    row_result(b, row, root, chains_to(b, row.y0, row.x0, row.x0 + row.w - 1, root, w, release), w, release,
               "allreduce_row_centre");
  }
  return b.finish(allreduce_row_centre_formula(p, row.w, w));
}

Collective allreduce_row_two_level(Plan& plan, const Fabric& f, const CollectiveParams& p, const hw::Rect& row,
                                   std::uint32_t w, std::int32_t group, std::uint64_t release) {
  check_row(f, row, w, "allreduce_row_two_level");
  const std::int32_t P = row.w, g = two_level_group(P, group);
  Builder b(plan, f, p, "allreduce_row_two_level", release);
  if (P < 2) return b.finish(0);
  const std::int32_t G = (P + g - 1) / g, c = G / 2, y = row.y0;
  const Grid& grid = f.grid();
  // Phase 1: every group reduces to its middle tile.
  std::vector<std::int32_t> root(static_cast<std::size_t>(G));
  std::vector<std::vector<std::uint32_t>> in(static_cast<std::size_t>(G));
  for (std::int32_t k = 0; k < G; ++k) {
    const std::int32_t a = row.x0 + k * g, len = std::min(g, P - k * g);
    root[std::size_t(k)] = a + len / 2;
    in[std::size_t(k)] = chains_to(b, y, a, a + len - 1, root[std::size_t(k)], w, release);
  }
  // Phase 2: the roots' chains from both ends toward the centre root; the tiles between two roots only
  // forward (one unicast per root-to-root step).
  auto root_step = [&](std::int32_t from, std::int32_t to, std::int64_t prev) {
    const Coord s{root[std::size_t(from)], y};
    Flow fl = unicast_flow(f, s, {root[std::size_t(to)], y}, w);
    fl.release = release;
    for (std::uint32_t i : in[std::size_t(from)]) fl.after.push_back(stream_on(i, grid.index(s), p));
    if (prev >= 0) fl.after.push_back(stream_on(std::uint32_t(prev), grid.index(s), p));
    return std::int64_t(plan.add(std::move(fl)));
  };
  std::int64_t west = -1, east = -1;
  for (std::int32_t k = 0; k < c; ++k) west = root_step(k, k + 1, west);
  for (std::int32_t k = G - 1; k > c; --k) east = root_step(k, k - 1, east);
  // Phase 3: the centre root multicasts the sum over the whole row.
  std::vector<std::uint32_t> at_root = in[std::size_t(c)];
  if (west >= 0) at_root.push_back(std::uint32_t(west));
  if (east >= 0) at_root.push_back(std::uint32_t(east));
  row_result(b, row, root[std::size_t(c)], at_root, w, release, "allreduce_row_two_level");
  return b.finish(allreduce_row_two_level_formula(p, P, w, g));
}

// ---- zero-load evaluation ---------------------------------------------------------------------------

std::uint64_t ZeroLoad::head_at(std::uint32_t flow, TileIndex t) const {
  if (flow < head.size()) {
    const auto& v = head[flow];
    auto it = std::lower_bound(v.begin(), v.end(), std::pair<TileIndex, std::uint64_t>{t, 0});
    if (it != v.end() && it->first == t) return it->second;
  }
  throw hw::InputError("plan: tile " + std::to_string(t) + " is not a sink of flow " + std::to_string(flow));
}

ZeroLoad zero_load(const Plan& plan, const Fabric& f, std::uint32_t hop_latency, std::uint32_t ramp_latency) {
  const std::size_t n = plan.flows.size();
  const Grid& g = f.grid();
  ZeroLoad z;
  z.start.assign(n, 0);
  z.lag.assign(n, 0);
  z.head.resize(n);
  // Dependency order (Kahn).
  std::vector<std::uint32_t> pending(n, 0);
  std::vector<std::vector<std::uint32_t>> users(n);
  for (std::uint32_t i = 0; i < n; ++i)
    for (const Trigger& t : plan.flows[i].after) {
      if (t.flow >= n)
        throw hw::InputError("plan: flow " + std::to_string(i) + " waits for flow " + std::to_string(t.flow) +
                             ", which does not exist");
      ++pending[i];
      users[t.flow].push_back(i);
    }
  std::vector<std::uint32_t> ready;
  for (std::uint32_t i = 0; i < n; ++i)
    if (!pending[i]) ready.push_back(i);
  std::size_t done = 0;
  std::vector<std::uint64_t> edge_head;
  std::vector<std::pair<TileIndex, std::uint64_t>> ends;
  for (std::size_t k = 0; k < ready.size(); ++k) {
    const std::uint32_t i = ready[k];
    const Flow& fl = plan.flows[i];
    std::uint64_t start = fl.release, tail_floor = 0;
    for (const Trigger& t : fl.after) {
      std::uint64_t head = z.head_at(t.flow, t.tile);
      if (t.kind == Trigger::Kind::Stream) {
        start = std::max(start, head + t.reaction());
        tail_floor = std::max(tail_floor, head + z.lag[t.flow] + t.reaction());
      } else {
        start = std::max(start, head + z.lag[t.flow] + t.reaction());
      }
    }
    z.start[i] = start;
    std::uint64_t wl = fl.wavelets ? fl.wavelets - 1 : 0;
    z.lag[i] = std::max(wl, tail_floor > start ? tail_floor - start : 0);
    // Head arrival at the router at the end of each edge (the head entered the source's router one ramp
    // after `start`); a sink's core has it one ramp later, from the earliest edge ending there. A flow
    // without a route (a tile sending to itself) pays no ramp.
    const std::uint64_t ramp = fl.route.empty() ? 0 : ramp_latency;
    edge_head.assign(fl.route.size(), 0);
    ends.clear();
    for (std::size_t e = 0; e < fl.route.size(); ++e) {
      const RouteEdge& re = fl.route[e];
      std::uint64_t base = re.parent == kFromSource ? start + ramp : edge_head[std::size_t(re.parent)];
      edge_head[e] = base + std::uint64_t(f.link_hops(link_tile(re.link), link_dir(re.link))) * hop_latency;
      ends.push_back({g.index(hw::step(g.coord(link_tile(re.link)), link_dir(re.link))), edge_head[e] + ramp});
    }
    ends.push_back({fl.src, start + 2 * ramp});
    std::sort(ends.begin(), ends.end());
    for (TileIndex s : fl.sinks) {
      auto it = std::lower_bound(ends.begin(), ends.end(), std::pair<TileIndex, std::uint64_t>{s, 0});
      if (it == ends.end() || it->first != s)
        throw hw::InputError("plan: sink " + std::to_string(s) + " of flow " + std::to_string(i) +
                             " is not on its route");
      z.head[i].push_back(*it);
      z.end = std::max(z.end, it->second + z.lag[i]);
    }
    std::sort(z.head[i].begin(), z.head[i].end());
    ++done;
    for (std::uint32_t u : users[i])
      if (--pending[u] == 0) ready.push_back(u);
  }
  if (done != n) throw hw::InputError("plan: the triggers of " + std::to_string(n - done) + " flows form a cycle");
  return z;
}

}  // namespace wafer::noc
