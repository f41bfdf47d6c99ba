#pragma once
// Factories of the registered placement strategies (one file each); registry.cpp lists them.
#include <memory>

#include "mapper/placement.h"

namespace wafer::mapper {

std::unique_ptr<PlacementStrategy> make_whole_wafer();
std::unique_ptr<PlacementStrategy> make_layer_bands();
std::unique_ptr<PlacementStrategy> make_serpentine_bands();
std::unique_ptr<PlacementStrategy> make_defect_aware();
std::unique_ptr<PlacementStrategy> make_square();

}  // namespace wafer::mapper
