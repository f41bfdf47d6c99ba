// The registered placement strategies. Add a strategy: one file with its factory, one line here.
#include <fmt/format.h>

#include "hw/error.h"
#include "mapper/placement/strategies.h"

namespace wafer::mapper {
namespace {

const std::vector<std::unique_ptr<PlacementStrategy>>& table() {
  static const auto t = [] {
    std::vector<std::unique_ptr<PlacementStrategy>> v;
    v.push_back(make_whole_wafer());
    v.push_back(make_layer_bands());
    v.push_back(make_serpentine_bands());
    v.push_back(make_defect_aware());
    v.push_back(make_square());
    return v;
  }();
  return t;
}

}  // namespace

std::vector<std::string> placement_names() {
  std::vector<std::string> names;
  for (const auto& s : table()) names.emplace_back(s->name());
  return names;
}

const PlacementStrategy& placement(std::string_view name) {
  for (const auto& s : table())
    if (s->name() == name) return *s;
  throw hw::InputError(fmt::format("unknown placement '{}' (known: {})", name, fmt::join(placement_names(), ", ")));
}

}  // namespace wafer::mapper
