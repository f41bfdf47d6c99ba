#pragma once
// The repair schemes, one file each (hw/repair/<scheme>.cpp); registry.cpp lists them by name.
#include "hw/repair.h"

namespace wafer::hw::repair {

const RepairScheme& row_shift_scheme();        // "row-shift"
const RepairScheme& spare_rows_cols_scheme();  // "spare-rows-cols"

}  // namespace wafer::hw::repair
