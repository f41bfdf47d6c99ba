// layer-bands: a band of full-width rows per stage, top to bottom in data-flow order.
#include "mapper/placement/strategies.h"

namespace wafer::mapper {
namespace {

class LayerBands final : public PlacementStrategy {
 public:
  std::string_view name() const override { return "layer-bands"; }
  bool reads_links() const override { return false; }  // (the grid and require_healthy only)
  std::string_view description() const override {
    return "one band of full-width rows per layer (embedding and head included), heights proportional to the "
           "bytes each holds; the residual stream runs down the east column";
  }
  std::vector<Region> place(const std::vector<StageShape>& stages, const noc::Fabric& fabric) const override {
    const hw::Grid& g = fabric.grid();
    placement_detail::require_healthy(fabric, {0, 0, g.width, g.height}, name());
    auto h = placement_detail::band_heights(stages, g.height, name());
    std::vector<Region> out;
    std::int32_t y = 0;
    for (std::int32_t hh : h) {
      out.push_back({{0, y, g.width, hh}, false});
      y += hh;
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<PlacementStrategy> make_layer_bands() { return std::make_unique<LayerBands>(); }

}  // namespace wafer::mapper
