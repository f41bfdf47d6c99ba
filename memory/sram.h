#pragma once
// Tile SRAM: capacity (enforced) and port bandwidth (the limit a vector op hits when it moves more bytes
// per cycle than the read/write ports carry). Pure C++: no SystemC.
#include <cstdint>
#include <string>

#include "hw/coord.h"
#include "hw/wafer_spec.h"

namespace wafer::memory {

// Width of one SRAM port access (WaferSpec::sram_read_ports / sram_write_ports count 64-bit accesses).
inline constexpr std::uint64_t kPortBytes = 8;

// What one tile's SRAM holds, by use (the same split as firmware::SramUse; memory/ does not see firmware/).
struct SramFootprint {
  std::uint64_t weights = 0, kv_cache = 0, activations = 0, code = 0;
  std::uint64_t total() const { return weights + kv_cache + activations + code; }
};

class TileSram {
 public:
  TileSram() = default;
  explicit TileSram(const hw::WaferSpec& spec)
      : capacity_(std::uint64_t(spec.sram_bytes)),
        read_bytes_per_cycle_(std::uint64_t(spec.sram_read_ports) * kPortBytes),
        write_bytes_per_cycle_(std::uint64_t(spec.sram_write_ports) * kPortBytes) {}

  std::uint64_t capacity() const { return capacity_; }
  std::uint64_t read_bytes_per_cycle() const { return read_bytes_per_cycle_; }
  std::uint64_t write_bytes_per_cycle() const { return write_bytes_per_cycle_; }

  // Cycles the read (write) ports need to move `bytes`: ceil(bytes / port bytes per cycle).
  std::uint64_t read_cycles(std::uint64_t bytes) const { return ceil_div(bytes, read_bytes_per_cycle_); }
  std::uint64_t write_cycles(std::uint64_t bytes) const { return ceil_div(bytes, write_bytes_per_cycle_); }

  // Throws hw::InputError naming the tile and the bytes when `use` exceeds the capacity, e.g.
  // "tile (3,4) needs 52000 bytes of SRAM (weights 40000, KV cache 8000, activations 3000, code 1000); a
  // tile has 49152".
  void check(hw::Coord tile, const SramFootprint& use) const;

 private:
  static std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return b ? (a + b - 1) / b : 0; }
  std::uint64_t capacity_ = 0;
  std::uint64_t read_bytes_per_cycle_ = 16;
  std::uint64_t write_bytes_per_cycle_ = 8;
};

// Running max / mean of per-tile SRAM use over the tiles that hold a program.
struct SramStats {
  std::uint64_t tiles = 0;
  std::uint64_t max_bytes = 0;
  double sum_bytes = 0;
  hw::Coord max_tile;
  void add(hw::Coord tile, std::uint64_t bytes, std::uint64_t times = 1) {
    if (times == 0) return;
    if (bytes > max_bytes || tiles == 0) max_bytes = bytes, max_tile = tile;
    tiles += times;
    sum_bytes += double(bytes) * double(times);
  }
  double mean_bytes() const { return tiles ? sum_bytes / double(tiles) : 0.0; }
};

}  // namespace wafer::memory
