// The logical links of a repair, counted once each (the figures `defects`, a study's points and decode's regions give).
#include <algorithm>

#include "hw/repair.h"

namespace wafer::hw {

RepairLinks repair_links(const RepairResult& r) {
  RepairLinks f;
  const Grid& g = r.logical;
  for (std::int32_t y = 0; y < g.height; ++y) {
    const std::size_t row = std::size_t(y) * std::size_t(g.width);
    for (std::int32_t x = 0; x < g.width; ++x) {
      const std::size_t i = row + std::size_t(x);
      if (r.log_to_phys[i] == kNoTile) continue;
      auto count = [&](std::size_t j, std::uint16_t h) {
        if (r.log_to_phys[j] == kNoTile) return;
        ++f.links;
        if (h == 0) {
          ++f.no_path;
          return;
        }
        f.extra_hops += h - 1;
        f.max_extra = std::max<std::int64_t>(f.max_extra, h - 1);
        f.detoured += h > 1;
      };
      if (x + 1 < g.width) count(i + 1, r.hops_east[i]);
      if (y + 1 < g.height) count(i + std::size_t(g.width), r.hops_south[i]);
    }
  }
  return f;
}

}  // namespace wafer::hw
