#pragma once
// Helpers shared by the hw tests.
#include <cmath>
#include <string>

#include "hw/defect_map.h"
#include "hw/wafer_spec.h"

namespace wafer::hw::testing {

// A wafer with an irregular shape, to catch width/height mix-ups.
inline WaferSpec custom_wafer(std::int64_t w = 13, std::int64_t h = 9, std::int64_t spare_cols = 2,
                              std::int64_t spare_rows = 3) {
  WaferSpec s = preset("tiny");
  s.name = "custom";
  s.logical_width = w, s.logical_height = h, s.spare_cols = spare_cols, s.spare_rows = spare_rows;
  return s;
}

// Generator parameters giving `per_wafer` defects per wafer on average.
inline DefectGenParams per_wafer(const WaferSpec& s, double per_wafer, DefectModel model = DefectModel::Poisson,
                                 double alpha = 2.0) {
  DefectGenParams p;
  p.model = model;
  p.alpha = alpha;
  p.density_per_cm2 = per_wafer / s.area_cm2();
  return p;
}

}  // namespace wafer::hw::testing
