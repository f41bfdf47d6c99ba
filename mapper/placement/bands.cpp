// Helpers shared by the placement strategies: band heights, health checks, the largest healthy rectangle.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "hw/error.h"
#include "mapper/placement.h"

namespace wafer::mapper::placement_detail {

std::vector<std::int32_t> band_heights(const std::vector<StageShape>& stages, std::int32_t rows,
                                       std::string_view strategy) {
  const std::int32_t n = std::int32_t(stages.size());
  if (n == 0) return {};
  if (rows < n)
    throw hw::InputError(fmt::format("{} needs one row of tiles per stage: {} stages, but only {} rows; use "
                                     "--placement whole-wafer or --wafers N",
                                     strategy, n, rows));
  double total = 0;
  for (const auto& s : stages) total += double(std::max<std::int64_t>(s.bytes, 1));
  std::vector<std::int32_t> h(n);
  std::int32_t layers = 0, layer_h = 0;
  for (std::int32_t i = 0; i < n; ++i) {
    h[i] = std::max<std::int32_t>(1, std::int32_t(double(rows) * double(std::max<std::int64_t>(stages[i].bytes, 1)) / total));
    if (stages[i].is_layer) {
      layer_h = layer_h ? std::min(layer_h, h[i]) : h[i];
      ++layers;
    }
  }
  for (std::int32_t i = 0; i < n; ++i)
    if (stages[i].is_layer) h[i] = layer_h;
  auto sum = [&] { return std::accumulate(h.begin(), h.end(), std::int32_t(0)); };
  // Too many rows (the max(1, ...) floor): shrink the tallest non-layer stages, then all layers together.
  while (sum() > rows) {
    std::int32_t best = -1;
    for (std::int32_t i = 0; i < n; ++i)
      if (!stages[i].is_layer && h[i] > 1 && (best < 0 || h[i] > h[best])) best = i;
    if (best >= 0 && (layers == 0 || h[best] >= layer_h)) {
      --h[best];
    } else if (layer_h > 1) {
      --layer_h;
      for (std::int32_t i = 0; i < n; ++i)
        if (stages[i].is_layer) h[i] = layer_h;
    } else if (best >= 0) {
      --h[best];
    } else {
      break;
    }
  }
  // Leftover rows: all layers one taller while that fits, then the non-layer stages in turn.
  std::int32_t left = rows - sum();
  if (layers > 0 && left >= layers) {
    std::int32_t more = left / layers;
    for (std::int32_t i = 0; i < n; ++i)
      if (stages[i].is_layer) h[i] += more;
    left = rows - sum();
  }
  // Stages of only decoder layers (a wafer of a pipeline holding neither the embedding nor the head): the rows
  // left over stay idle below the last band, so that every layer keeps one height and one program (layers of
  // two heights would run two kernels that time apart).
  std::vector<std::int32_t> others;
  for (std::int32_t i = 0; i < n; ++i)
    if (!stages[i].is_layer) others.push_back(i);
  for (std::size_t k = 0; left > 0 && !others.empty(); ++k, --left) ++h[others[k % others.size()]];
  return h;
}

void require_healthy(const noc::Fabric& fabric, hw::Rect rect, std::string_view strategy) {
  const hw::Grid& g = fabric.grid();
  std::int64_t dead = 0, cut = 0;
  hw::Coord first{-1, -1}, first_cut{-1, -1};
  hw::Dir cut_dir = hw::Dir::East;
  for (std::int32_t y = rect.y0; y < rect.y0 + rect.h; ++y)
    for (std::int32_t x = rect.x0; x < rect.x0 + rect.w; ++x) {
      const hw::TileIndex t = g.index({x, y});
      if (!fabric.router_ok(t)) {
        if (dead++ == 0) first = {x, y};
        continue;
      }
      // A link inside the rectangle with no healthy path (both routers working): the rows' and columns'
      // multicasts cross it (largest_healthy_rect keeps such tiles out too).
      for (hw::Dir d : {hw::Dir::East, hw::Dir::South}) {
        const hw::Coord n = d == hw::Dir::East ? hw::Coord{x + 1, y} : hw::Coord{x, y + 1};
        if (n.x >= rect.x0 + rect.w || n.y >= rect.y0 + rect.h || !fabric.router_ok(g.index(n))) continue;
        if (!fabric.link_ok(t, d) && cut++ == 0) first_cut = {x, y}, cut_dir = d;
      }
    }
  if (dead)
    throw hw::InputError(fmt::format("{} needs the whole {} x {} array, but repair left {} logical tile(s) without a "
                                     "working router (first at ({},{})); use --placement defect-aware",
                                     strategy, rect.w, rect.h, dead, first.x, first.y));
  if (cut)
    throw hw::InputError(fmt::format("{} needs the whole {} x {} array, but repair left {} logical link(s) without a "
                                     "healthy path (first ({},{})-({},{})); use --placement defect-aware",
                                     strategy, rect.w, rect.h, cut, first_cut.x, first_cut.y,
                                     first_cut.x + (cut_dir == hw::Dir::East), first_cut.y + (cut_dir == hw::Dir::South)));
}

hw::Rect largest_healthy_rect(const noc::Fabric& fabric) {
  const hw::Grid& g = fabric.grid();
  // The largest rectangle whose routers work and whose links between two of its tiles are healthy: then every
  // route between its tiles stays on healthy elements. A link leaving it is never used, so a tile beside a dead
  // one (or with a dead link out of the rectangle) is in it. (Until 2026-12-07 a tile whose east or south link
  // was bad was left out whatever the rectangle: the tile west of or north of a dead one with it, a column or
  // a row fewer than the rectangle the repair reports; tiny with a failed tile on logical (6,6) ran on 8 x 5
  // tiles, 27,174 cycles, where its 8 x 6 gives 19,920.)
  // Row by row, a histogram over 2W - 1 bars: even bar 2x the rows above (and including) this one that column
  // x's rectangle can reach (router working, the south links between them healthy), odd bar 2x + 1 the rows
  // over which the east link between columns x and x + 1 is healthy. A rectangle spans bars 2l .. 2r, its height
  // their least, its width the columns among them; the largest is found as in the largest rectangle of a
  // histogram, each bar extended while its neighbours are as tall.
  const std::int32_t W = g.width, n = 2 * W - 1;
  std::vector<std::int32_t> bar(std::size_t(std::max(n, 0)), 0);
  hw::Rect best{0, 0, 0, 0};
  std::vector<std::int32_t> stack;
  for (std::int32_t y = 0; y < g.height; ++y) {
    for (std::int32_t x = 0; x < W; ++x) {
      const hw::TileIndex t = g.index({x, y});
      std::int32_t& h = bar[std::size_t(2 * x)];
      if (!fabric.router_ok(t)) h = 0;
      else h = h > 0 && fabric.link_ok(g.index({x, y - 1}), hw::Dir::South) ? h + 1 : 1;
      if (x + 1 < W) {
        std::int32_t& e = bar[std::size_t(2 * x + 1)];
        e = fabric.router_ok(t) && fabric.router_ok(g.index({x + 1, y})) && fabric.link_ok(t, hw::Dir::East) ? e + 1 : 0;
      }
    }
    stack.clear();
    for (std::int32_t i = 0; i <= n; ++i) {
      const std::int32_t hi = i < n ? bar[std::size_t(i)] : 0;
      while (!stack.empty() && bar[std::size_t(stack.back())] >= hi) {
        const std::int32_t hh = bar[std::size_t(stack.back())];
        stack.pop_back();
        const std::int32_t left = stack.empty() ? 0 : stack.back() + 1, right = i - 1;  // bars left .. right
        const std::int32_t x0 = (left + 1) / 2, x1 = right / 2;                         // the columns among them
        if (x1 < x0 || hh == 0) continue;
        const std::int64_t area = std::int64_t(hh) * (x1 - x0 + 1);
        if (area > best.area()) best = {x0, y - hh + 1, x1 - x0 + 1, hh};
      }
      stack.push_back(i);
    }
  }
  return best;
}

}  // namespace wafer::mapper::placement_detail
