// Every repair scheme, by name. A new scheme: one hw/repair/<name>.cpp, one line in schemes.h and here.
#include <fmt/format.h>

#include <vector>

#include "hw/error.h"
#include "hw/repair.h"
#include "hw/repair/schemes.h"

namespace wafer::hw {

namespace {
const std::vector<const RepairScheme*>& schemes() {
  static const std::vector<const RepairScheme*> all{&repair::row_shift_scheme(), &repair::spare_rows_cols_scheme()};
  return all;
}
}  // namespace

std::vector<std::string> repair_scheme_names() {
  std::vector<std::string> names;
  for (const auto* s : schemes()) names.emplace_back(s->name());
  return names;
}

const RepairScheme& repair_scheme(std::string_view name) {
  for (const auto* s : schemes())
    if (s->name() == name) return *s;
  throw InputError(fmt::format("unknown repair scheme '{}' (known: {})", name, fmt::join(repair_scheme_names(), ", ")));
}

}  // namespace wafer::hw
