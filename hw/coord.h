#pragma once
// Coordinates and directions on the 2D mesh. x grows east (columns), y grows south (rows).
#include <array>
#include <cstdint>
#include <functional>

namespace wafer::hw {

using Cycle = std::uint64_t;   // simulated time in core clock cycles
using TileIndex = std::uint32_t;  // y * width + x on one grid (logical or physical, said at the use)
inline constexpr TileIndex kNoTile = 0xFFFFFFFFu;

struct Coord {
  std::int32_t x = 0;
  std::int32_t y = 0;
  friend constexpr bool operator==(Coord, Coord) = default;
};

// Router ports. The four mesh directions, then the ramp to the tile's own core.
enum class Dir : std::uint8_t { North = 0, East = 1, South = 2, West = 3, Ramp = 4 };
inline constexpr std::array<Dir, 4> kMeshDirs{Dir::North, Dir::East, Dir::South, Dir::West};

constexpr Dir opposite(Dir d) {
  switch (d) {
    case Dir::North: return Dir::South;
    case Dir::South: return Dir::North;
    case Dir::East: return Dir::West;
    case Dir::West: return Dir::East;
    case Dir::Ramp: return Dir::Ramp;
  }
  return Dir::Ramp;
}
constexpr Coord step(Coord c, Dir d) {
  switch (d) {
    case Dir::North: return {c.x, c.y - 1};
    case Dir::South: return {c.x, c.y + 1};
    case Dir::East: return {c.x + 1, c.y};
    case Dir::West: return {c.x - 1, c.y};
    case Dir::Ramp: return c;
  }
  return c;
}
constexpr const char* to_string(Dir d) {
  switch (d) {
    case Dir::North: return "N";
    case Dir::East: return "E";
    case Dir::South: return "S";
    case Dir::West: return "W";
    case Dir::Ramp: return "R";
  }
  return "?";
}

// A rectangle of tiles [x0, x0+w) x [y0, y0+h).
struct Rect {
  std::int32_t x0 = 0, y0 = 0, w = 0, h = 0;
  constexpr std::int64_t area() const { return std::int64_t(w) * h; }
  constexpr bool contains(Coord c) const { return c.x >= x0 && c.x < x0 + w && c.y >= y0 && c.y < y0 + h; }
  friend constexpr bool operator==(const Rect&, const Rect&) = default;
};

// A grid's geometry: index <-> coordinate.
struct Grid {
  std::int32_t width = 0, height = 0;
  constexpr std::size_t size() const { return std::size_t(width) * std::size_t(height); }
  constexpr bool inside(Coord c) const { return c.x >= 0 && c.y >= 0 && c.x < width && c.y < height; }
  constexpr TileIndex index(Coord c) const { return TileIndex(c.y) * TileIndex(width) + TileIndex(c.x); }
  constexpr Coord coord(TileIndex i) const { return {std::int32_t(i % width), std::int32_t(i / width)}; }
  friend constexpr bool operator==(Grid, Grid) = default;
};

}  // namespace wafer::hw
