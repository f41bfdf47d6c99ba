// defect-aware: works on the largest rectangle of the repaired array whose routers and links are all
// healthy (the whole array when repair is complete), stacks bands there, and puts the residual column (the
// column every stage's reductions and hand-offs run along) on the side whose vertical links cross the fewest
// extra physical hops left by repair.
#include "mapper/placement/strategies.h"

#include <fmt/format.h>

#include "hw/error.h"

namespace wafer::mapper {
namespace {

class DefectAware final : public PlacementStrategy {
 public:
  std::string_view name() const override { return "defect-aware"; }
  std::string_view description() const override {
    return "bands on the largest healthy rectangle of the repaired array, residual column on the side with the "
           "fewest long (repaired) links";
  }
  std::vector<Region> place(const std::vector<StageShape>& stages, const noc::Fabric& fabric) const override {
    hw::Rect r = placement_detail::largest_healthy_rect(fabric);
    if (r.area() == 0)
      throw hw::InputError("defect-aware: no healthy tile is left on the array after repair");
    const hw::Grid& g = fabric.grid();
    auto column_cost = [&](std::int32_t x) {
      std::int64_t c = 0;
      for (std::int32_t y = r.y0; y + 1 < r.y0 + r.h; ++y) c += fabric.link_hops(g.index({x, y}), hw::Dir::South);
      return c;
    };
    // Mirrored = residual column on the west side.
    bool mirrored = r.w > 1 && column_cost(r.x0) < column_cost(r.x0 + r.w - 1);
    auto h = placement_detail::band_heights(stages, r.h, name());
    std::vector<Region> out;
    std::int32_t y = r.y0;
    for (std::int32_t hh : h) {
      out.push_back({{r.x0, y, r.w, hh}, mirrored});
      y += hh;
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<PlacementStrategy> make_defect_aware() { return std::make_unique<DefectAware>(); }

}  // namespace wafer::mapper
