// square: every stage on the largest centred square of the array, layers time-multiplexed on the same tiles
// (WaferLLM runs decode on a P x P square of cores; docs/mapping.md section 4).
#include <algorithm>

#include "mapper/placement/strategies.h"

namespace wafer::mapper {
namespace {

class Square final : public PlacementStrategy {
 public:
  std::string_view name() const override { return "square"; }
  bool reads_links() const override { return false; }  // (the grid and require_healthy only)
  std::string_view description() const override {
    return "every operator spread over the largest centred square of the array; the layers run one after "
           "another on the same tiles";
  }
  std::vector<Region> place(const std::vector<StageShape>& stages, const noc::Fabric& fabric) const override {
    const hw::Grid g = fabric.grid();
    const std::int32_t p = std::min(g.width, g.height);
    hw::Rect sq{(g.width - p) / 2, (g.height - p) / 2, p, p};
    placement_detail::require_healthy(fabric, sq, name());
    return std::vector<Region>(stages.size(), Region{sq, false});
  }
};

}  // namespace

std::unique_ptr<PlacementStrategy> make_square() { return std::make_unique<Square>(); }

}  // namespace wafer::mapper
