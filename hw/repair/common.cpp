#include "hw/repair/common.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "hw/error.h"

namespace wafer::hw::repair {

bool PathFinder::step_ok(Coord from, Dir d) const {
  if (map_.link_failed(from, d)) return false;  // also false outside the grid
  return !map_.router_failed(grid_.index(step(from, d)));
}

bool PathFinder::clear_l_path(Coord a, Coord b, bool x_first) const {
  Coord c = a;
  const Dir dx = b.x >= a.x ? Dir::East : Dir::West, dy = b.y >= a.y ? Dir::South : Dir::North;
  for (int leg = 0; leg < 2; ++leg) {
    const bool horizontal = (leg == 0) == x_first;
    if (horizontal) {
      while (c.x != b.x) {
        if (!step_ok(c, dx)) return false;
        c = step(c, dx);
      }
    } else {
      while (c.y != b.y) {
        if (!step_ok(c, dy)) return false;
        c = step(c, dy);
      }
    }
  }
  return true;
}

std::int64_t PathFinder::bfs(Coord a, Coord b, Rect w) {
  const std::size_t n = std::size_t(w.area());
  dist_.assign(n, -1);
  queue_.clear();
  auto local = [&](Coord c) { return std::uint32_t(c.y - w.y0) * std::uint32_t(w.w) + std::uint32_t(c.x - w.x0); };
  dist_[local(a)] = 0;
  queue_.push_back(local(a));
  const std::uint32_t target = local(b);
  for (std::size_t head = 0; head < queue_.size(); ++head) {
    const std::uint32_t li = queue_[head];
    const Coord c{w.x0 + std::int32_t(li % std::uint32_t(w.w)), w.y0 + std::int32_t(li / std::uint32_t(w.w))};
    const std::int32_t dc = dist_[li];
    for (Dir d : kMeshDirs) {
      const Coord nc = step(c, d);
      if (!w.contains(nc)) continue;
      const std::uint32_t ln = local(nc);
      if (dist_[ln] >= 0 || !step_ok(c, d)) continue;
      dist_[ln] = dc + 1;
      if (ln == target) return dc + 1;
      queue_.push_back(ln);
    }
  }
  return -1;
}

std::uint32_t PathFinder::hops(Coord a, Coord b) {
  if (a == b || !grid_.inside(a) || !grid_.inside(b)) return 0;
  if (map_.router_failed(grid_.index(a)) || map_.router_failed(grid_.index(b))) return 0;
  const std::int64_t manhattan = std::abs(std::int64_t(a.x) - b.x) + std::abs(std::int64_t(a.y) - b.y);
  if (manhattan == 1) {
    const Dir d = b.x > a.x ? Dir::East : b.x < a.x ? Dir::West : b.y > a.y ? Dir::South : Dir::North;
    if (!map_.link_failed(a, d)) return 1;
  } else if (clear_l_path(a, b, true) || clear_l_path(a, b, false)) {
    return std::uint32_t(std::min<std::int64_t>(manhattan, 65535));
  }
  ++searches_;
  const Rect full{0, 0, grid_.width, grid_.height};
  for (std::int32_t m : {2, 8, 32, 128, -1}) {
    Rect w = full;
    if (m >= 0) {
      const std::int32_t x0 = std::max(0, std::min(a.x, b.x) - m), y0 = std::max(0, std::min(a.y, b.y) - m);
      const std::int32_t x1 = std::min(grid_.width, std::max(a.x, b.x) + m + 1);
      const std::int32_t y1 = std::min(grid_.height, std::max(a.y, b.y) + m + 1);
      w = {x0, y0, x1 - x0, y1 - y0};
    }
    const bool is_full = w == full;
    const std::int64_t len = bfs(a, b, w);
    // Shortest overall when found within Manhattan + 2m: any path leaving the window is longer.
    if (len >= 0 && (is_full || len <= manhattan + 2 * std::int64_t(m))) return std::uint32_t(std::min<std::int64_t>(len, 65535));
    if (is_full) return 0;
  }
  return 0;
}

Rect largest_mapped_rectangle(const Grid& g, const std::vector<TileIndex>& log_to_phys) {
  std::vector<std::int32_t> height(std::size_t(g.width) + 1, 0);
  std::vector<std::int32_t> stack;
  stack.reserve(std::size_t(g.width) + 1);
  Rect best{};
  for (std::int32_t y = 0; y < g.height; ++y) {
    for (std::int32_t x = 0; x < g.width; ++x)
      height[std::size_t(x)] = log_to_phys[g.index({x, y})] == kNoTile ? 0 : height[std::size_t(x)] + 1;
    height[std::size_t(g.width)] = 0;  // sentinel flushes the stack
    stack.clear();
    for (std::int32_t x = 0; x <= g.width; ++x) {
      while (!stack.empty() && height[std::size_t(stack.back())] >= height[std::size_t(x)]) {
        const std::int32_t h = height[std::size_t(stack.back())];
        stack.pop_back();
        const std::int32_t left = stack.empty() ? 0 : stack.back() + 1;
        const Rect r{left, y - h + 1, x - left, h};
        if (r.area() > best.area()) best = r;
      }
      stack.push_back(x);
    }
  }
  return best;
}

const DefectMap& checked_map(const WaferSpec& spec, const DefectMap& defects, DefectMap& empty_storage) {
  const Grid p = spec.physical();
  if (defects.grid().width == 0 && defects.grid().height == 0 && defects.size() == 0) {
    empty_storage = DefectMap(p);
    return empty_storage;
  }
  if (defects.grid().width != p.width || defects.grid().height != p.height)
    throw InputError(fmt::format("the defect map's grid {} x {} is not the physical grid {} x {} of wafer '{}'",
                                 defects.grid().width, defects.grid().height, p.width, p.height, spec.name));
  return defects;
}

void finish_result(RepairResult& r, const DefectMap& defects) {
  const Grid& g = r.logical;
  r.complete = std::none_of(r.log_to_phys.begin(), r.log_to_phys.end(), [](TileIndex t) { return t == kNoTile; });
  if (r.complete) {
    r.usable = {0, 0, g.width, g.height};
    r.reason.clear();
  } else {
    r.usable = largest_mapped_rectangle(g, r.log_to_phys);
    if (r.reason.empty()) r.reason = "some logical tiles have no healthy physical tile";
  }
  r.hops_east.assign(g.size(), 0);
  r.hops_south.assign(g.size(), 0);
  PathFinder pf(defects);
  // Physical coordinates of the current and the next logical row (one division per tile), so the common
  // case -- the logical neighbour is the physical neighbour and the link is healthy -- costs a compare.
  std::vector<Coord> cur(std::size_t(g.width)), next(std::size_t(g.width));
  const std::int64_t pw = r.physical.width;
  const double inv_pw = 1.0 / double(pw);
  auto fill = [&](std::int32_t y, std::vector<Coord>& out) {
    const TileIndex* row = r.log_to_phys.data() + std::size_t(y) * std::size_t(g.width);
    for (std::int32_t x = 0; x < g.width; ++x) {
      const TileIndex p = row[x];
      if (p == kNoTile) {
        out[std::size_t(x)] = {-1, -1};
        continue;
      }
      // p / width by a multiplication (exact after the correction; a division per tile costs more).
      std::int64_t py = std::int64_t(double(p) * inv_pw);
      if (py * pw > std::int64_t(p)) --py;
      if ((py + 1) * pw <= std::int64_t(p)) ++py;
      out[std::size_t(x)] = {std::int32_t(std::int64_t(p) - py * pw), std::int32_t(py)};
    }
  };
  if (g.height > 0) fill(0, cur);
  for (std::int32_t y = 0; y < g.height; ++y) {
    const bool has_next = y + 1 < g.height;
    if (has_next) fill(y + 1, next);
    const TileIndex row = TileIndex(y) * TileIndex(g.width);
    for (std::int32_t x = 0; x < g.width; ++x) {
      const TileIndex li = row + TileIndex(x);
      const TileIndex p = r.log_to_phys[li];
      if (p == kNoTile) continue;
      const Coord pc = cur[std::size_t(x)];
      if (x + 1 < g.width && r.log_to_phys[li + 1] != kNoTile) {
        const Coord qc = cur[std::size_t(x) + 1];
        r.hops_east[li] = qc.y == pc.y && qc.x == pc.x + 1 && !defects.east_link_failed(p)
                              ? 1
                              : std::uint16_t(pf.hops(pc, qc));
      }
      if (has_next && r.log_to_phys[li + TileIndex(g.width)] != kNoTile) {
        const Coord qc = next[std::size_t(x)];
        r.hops_south[li] = qc.x == pc.x && qc.y == pc.y + 1 && !defects.south_link_failed(p)
                               ? 1
                               : std::uint16_t(pf.hops(pc, qc));
      }
    }
    std::swap(cur, next);
  }
}

}  // namespace wafer::hw::repair
