// serpentine-bands: the array is split into a west and an east half; stages fill band rows two at a time
// in a snake (west->east on even band rows, east->west on odd ones). Stages in the west half keep their
// residual column on the east side and those in the east half are mirrored (residual column on the west
// side), so every stage's output lands one hop from the next stage's input, along the middle seam.
#include "mapper/placement/strategies.h"

#include <algorithm>

namespace wafer::mapper {
namespace {

class SerpentineBands final : public PlacementStrategy {
 public:
  std::string_view name() const override { return "serpentine-bands"; }
  bool reads_links() const override { return false; }  // (the grid and require_healthy only)
  std::string_view description() const override {
    return "half-width bands in snake order whose data flow alternates direction (mirrored every other "
           "stage), so one layer's output lands next to the next layer's input";
  }
  std::vector<Region> place(const std::vector<StageShape>& stages, const noc::Fabric& fabric) const override {
    const hw::Grid& g = fabric.grid();
    placement_detail::require_healthy(fabric, {0, 0, g.width, g.height}, name());
    const std::int32_t west_w = g.width / 2, east_w = g.width - west_w;
    if (west_w < 1) {  // a one-column array cannot be split: plain bands
      auto h = placement_detail::band_heights(stages, g.height, name());
      std::vector<Region> out;
      std::int32_t y = 0;
      for (std::int32_t hh : h) out.push_back({{0, y, g.width, hh}, false}), y += hh;
      return out;
    }
    // Band rows hold two stages each; a band row's height follows the larger of its two stages.
    std::vector<StageShape> pairs;
    for (std::size_t i = 0; i < stages.size(); i += 2) {
      StageShape p = stages[i];
      bool layer = stages[i].is_layer;
      if (i + 1 < stages.size()) {
        p.bytes = std::max(stages[i].bytes, stages[i + 1].bytes);
        layer = layer && stages[i + 1].is_layer;
      }
      p.is_layer = layer;
      pairs.push_back(p);
    }
    auto h = placement_detail::band_heights(pairs, g.height, name());
    std::vector<Region> out(stages.size());
    std::int32_t y = 0;
    for (std::size_t b = 0; b < pairs.size(); ++b) {
      hw::Rect west{0, y, west_w, h[b]}, east{west_w, y, east_w, h[b]};
      // Even band rows flow west -> east, odd ones east -> west.
      std::size_t first = 2 * b, second = 2 * b + 1;
      bool even = b % 2 == 0;
      out[first] = even ? Region{west, false} : Region{east, true};
      if (second < stages.size()) out[second] = even ? Region{east, true} : Region{west, false};
      y += h[b];
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<PlacementStrategy> make_serpentine_bands() { return std::make_unique<SerpentineBands>(); }

}  // namespace wafer::mapper
