// whole-wafer: every stage over the whole array, layers time-multiplexed on the same tiles.
#include "mapper/placement/strategies.h"

namespace wafer::mapper {
namespace {

class WholeWafer final : public PlacementStrategy {
 public:
  std::string_view name() const override { return "whole-wafer"; }
  bool reads_links() const override { return false; }  // (the grid and require_healthy only)
  std::string_view description() const override {
    return "every operator spread over the whole array; the layers run one after another on the same tiles";
  }
  std::vector<Region> place(const std::vector<StageShape>& stages, const noc::Fabric& fabric) const override {
    hw::Rect all{0, 0, fabric.grid().width, fabric.grid().height};
    placement_detail::require_healthy(fabric, all, name());
    return std::vector<Region>(stages.size(), Region{all, false});
  }
};

}  // namespace

std::unique_ptr<PlacementStrategy> make_whole_wafer() { return std::make_unique<WholeWafer>(); }

}  // namespace wafer::mapper
