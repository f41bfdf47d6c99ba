#include "noc/routing/fabric.h"

#include <algorithm>
#include <stdexcept>

#include "hw/error.h"

namespace wafer::noc {

namespace {

std::string coord_str(Coord c) { return "(" + std::to_string(c.x) + "," + std::to_string(c.y) + ")"; }

void insert_sorted(std::vector<std::int32_t>& v, std::int32_t x) {
  auto it = std::lower_bound(v.begin(), v.end(), x);
  if (it == v.end() || *it != x) v.insert(it, x);
}

bool clear_between(const std::vector<std::vector<std::int32_t>>& cuts, std::int32_t line, std::int32_t a,
                   std::int32_t b) {
  if (cuts.empty()) return true;
  const auto& v = cuts[std::size_t(line)];
  if (v.empty()) return true;
  std::int32_t lo = std::min(a, b), hi = std::max(a, b);
  auto it = std::lower_bound(v.begin(), v.end(), lo);
  return it == v.end() || *it >= hi;  // links lo..hi-1 are used
}

}  // namespace

WaferFabrics::WaferFabrics(std::vector<const Fabric*> each) : each_(std::move(each)) {
  if (each_.empty() || std::find(each_.begin(), each_.end(), nullptr) != each_.end())
    throw std::logic_error("WaferFabrics: a fabric for every wafer is needed");
}

Fabric Fabric::perfect(Grid grid) {
  if (grid.width <= 0 || grid.height <= 0)
    throw hw::InputError("fabric: grid " + std::to_string(grid.width) + " x " + std::to_string(grid.height) +
                         " is empty");
  if (std::int64_t(grid.width) * grid.height > hw::kMaxPhysicalTiles)
    throw hw::InputError("fabric: grid " + std::to_string(grid.width) + " x " + std::to_string(grid.height) +
                         " exceeds " + std::to_string(hw::kMaxPhysicalTiles) + " tiles");
  Fabric f;
  f.grid_ = grid;
  f.fault_.assign(grid.size(), 0);
  f.hops_east_.assign(grid.size(), 1);
  f.hops_south_.assign(grid.size(), 1);
  // Links leaving the grid are absent (not faults).
  for (std::int32_t y = 0; y < grid.height; ++y) {
    f.fault_[grid.index({0, y})] |= 1u << unsigned(Dir::West);
    f.fault_[grid.index({grid.width - 1, y})] |= 1u << unsigned(Dir::East);
    f.hops_east_[grid.index({grid.width - 1, y})] = 0;
  }
  for (std::int32_t x = 0; x < grid.width; ++x) {
    f.fault_[grid.index({x, 0})] |= 1u << unsigned(Dir::North);
    f.fault_[grid.index({x, grid.height - 1})] |= 1u << unsigned(Dir::South);
    f.hops_south_[grid.index({x, grid.height - 1})] = 0;
  }
  return f;
}

Fabric Fabric::from_repair(const hw::RepairResult& r) {
  const std::size_t n = r.logical.size();
  if (r.log_to_phys.size() != n || r.hops_east.size() != n || r.hops_south.size() != n)
    throw hw::InputError("fabric: repair result of scheme '" + r.scheme + "' has per-tile tables of sizes " +
                         std::to_string(r.log_to_phys.size()) + "/" + std::to_string(r.hops_east.size()) + "/" +
                         std::to_string(r.hops_south.size()) + " for a " + std::to_string(r.logical.width) +
                         " x " + std::to_string(r.logical.height) + " logical grid");
  Fabric f = perfect(r.logical);
  const Grid& g = r.logical;
  for (TileIndex t = 0; t < n; ++t)
    if (r.log_to_phys[t] == hw::kNoTile) f.fail_router(t);
  for (TileIndex t = 0; t < n; ++t) {
    Coord c = g.coord(t);
    if (r.log_to_phys[t] == hw::kNoTile) continue;
    if (c.x + 1 < g.width && r.log_to_phys[t + 1] != hw::kNoTile) {
      if (r.hops_east[t] == 0) f.fail_link(t, Dir::East);
      else f.set_hops(t, Dir::East, r.hops_east[t]);
    }
    if (c.y + 1 < g.height && r.log_to_phys[t + TileIndex(g.width)] != hw::kNoTile) {
      if (r.hops_south[t] == 0) f.fail_link(t, Dir::South);
      else f.set_hops(t, Dir::South, r.hops_south[t]);
    }
  }
  return f;
}

bool Fabric::same_faults(const Fabric& other) const {
  if (!(grid_ == other.grid_)) return false;
  if (fault_free() && other.fault_free()) return true;  // (every router and link works in both)
  return fault_ == other.fault_;  // (the grid's edges alike in both)
}

bool Fabric::rows_alike(std::int32_t y, std::int32_t rows, std::int32_t dy) const {
  if (y < 0 || rows < 0 || dy <= 0 || y + dy + rows > grid_.height) return false;
  const std::size_t w = std::size_t(grid_.width), a = std::size_t(y) * w, n = std::size_t(rows) * w, d = std::size_t(dy) * w;
  auto alike = [&](const auto& v, std::size_t from, std::size_t count) {
    return std::equal(v.begin() + std::ptrdiff_t(from), v.begin() + std::ptrdiff_t(from + count),
                      v.begin() + std::ptrdiff_t(from + d));
  };
  const std::size_t north = y > 0 ? w : 0;  // the row above holds the first row's links north
  return alike(fault_, a, n) && alike(hops_east_, a, n) && alike(hops_south_, a - north, n + north);
}

std::uint32_t Fabric::link_hops(TileIndex t, Dir d) const {
  switch (d) {
    case Dir::East: return hops_east_[t];
    case Dir::South: return hops_south_[t];
    case Dir::West: return grid_.coord(t).x > 0 ? hops_east_[t - 1] : 0;
    case Dir::North: return grid_.coord(t).y > 0 ? hops_south_[t - TileIndex(grid_.width)] : 0;
    case Dir::Ramp: return 0;
  }
  return 0;
}

void Fabric::cut(TileIndex t, Dir d) {
  Coord c = grid_.coord(t);
  Coord n = hw::step(c, d);
  if (!grid_.inside(n)) return;
  fault_[t] |= std::uint8_t(1u << unsigned(d));
  fault_[grid_.index(n)] |= std::uint8_t(1u << unsigned(hw::opposite(d)));
  TileIndex west_or_north = std::min(t, grid_.index(n));
  (d == Dir::East || d == Dir::West ? hops_east_ : hops_south_)[west_or_north] = 0;
  if (row_cuts_.empty()) {
    row_cuts_.resize(std::size_t(grid_.height));
    col_cuts_.resize(std::size_t(grid_.width));
  }
  if (d == Dir::East || d == Dir::West) insert_sorted(row_cuts_[std::size_t(c.y)], std::min(c.x, n.x));
  else insert_sorted(col_cuts_[std::size_t(c.x)], std::min(c.y, n.y));
}

void Fabric::fail_router(TileIndex t) {
  if (t >= grid_.size()) throw hw::InputError("fabric: router " + std::to_string(t) + " is outside the grid");
  if (fault_[t] & kRouterDead) return;
  fault_[t] |= kRouterDead;
  for (Dir d : hw::kMeshDirs) cut(t, d);
  faults_.push_back({t, Dir::Ramp});
}

void Fabric::fail_link(TileIndex t, Dir d) {
  if (t >= grid_.size() || d == Dir::Ramp || !grid_.inside(hw::step(grid_.coord(t), d)))
    throw hw::InputError("fabric: link " + coord_str(grid_.coord(t)) + " " + to_string(d) + " is not inside the " +
                         std::to_string(grid_.width) + " x " + std::to_string(grid_.height) + " grid");
  // Canonical form: from the west / north end.
  if (d == Dir::West || d == Dir::North) {
    t = grid_.index(hw::step(grid_.coord(t), d));
    d = hw::opposite(d);
  }
  bool already = fault_[t] & (1u << unsigned(d));
  cut(t, d);
  if (!already) faults_.push_back({t, d});
}

void Fabric::set_hops(TileIndex t, Dir d, std::uint16_t hops) {
  if (t >= grid_.size() || d == Dir::Ramp || !grid_.inside(hw::step(grid_.coord(t), d)))
    throw hw::InputError("fabric: link " + coord_str(grid_.coord(t)) + " " + to_string(d) + " is not inside the grid");
  if (hops == 0) {
    fail_link(t, d);
    return;
  }
  if (d == Dir::West || d == Dir::North) {
    t = grid_.index(hw::step(grid_.coord(t), d));
    d = hw::opposite(d);
  }
  (d == Dir::East ? hops_east_ : hops_south_)[t] = hops;
}

std::string Fabric::describe(const Fault& f) const {
  Coord c = grid_.coord(f.tile);
  if (f.dir == Dir::Ramp) return "router " + coord_str(c);
  return "link " + coord_str(c) + "-" + coord_str(hw::step(c, f.dir));
}

bool Fabric::row_clear(std::int32_t y, std::int32_t xa, std::int32_t xb) const {
  return clear_between(row_cuts_, y, xa, xb);
}
bool Fabric::column_clear(std::int32_t x, std::int32_t ya, std::int32_t yb) const {
  return clear_between(col_cuts_, x, ya, yb);
}

}  // namespace wafer::noc
