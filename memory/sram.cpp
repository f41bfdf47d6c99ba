#include "memory/sram.h"

#include <fmt/format.h>

#include "hw/error.h"

namespace wafer::memory {

void TileSram::check(hw::Coord tile, const SramFootprint& use) const {
  if (use.total() <= capacity_) return;
  throw hw::InputError(fmt::format(
      "tile ({},{}) needs {} bytes of SRAM (weights {}, KV cache {}, activations {}, code {}); a tile has {}",
      tile.x, tile.y, use.total(), use.weights, use.kv_cache, use.activations, use.code, capacity_));
}

}  // namespace wafer::memory
