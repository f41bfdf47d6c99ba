// "row-shift": each physical row independently maps logical x to the x-th healthy tile of that row, so a
// row absorbs up to spare_cols failed tiles by shifting toward the spare columns. Rows with more failed
// tiles cannot be repaired; the spare rows skip them (logical row y -> the y-th repairable physical row).
// When more rows are unrepairable than there are spare rows, the worst ones (most failed tiles) are
// skipped, the others keep the healthy tiles they have, and the result is incomplete.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "hw/repair/common.h"
#include "hw/repair/schemes.h"

namespace wafer::hw::repair {
namespace {

class RowShift final : public RepairScheme {
 public:
  std::string_view name() const override { return "row-shift"; }
  std::string_view description() const override {
    return "each row shifts toward the spare columns past its failed tiles; spare rows skip rows with more "
           "failed tiles than spare columns";
  }

  RepairResult repair(const WaferSpec& spec, const DefectMap& defects_in) const override {
    DefectMap empty;
    const DefectMap& defects = checked_map(spec, defects_in, empty);
    RepairResult r;
    r.scheme = std::string(name());
    r.logical = spec.logical();
    r.physical = spec.physical();
    const Grid L = r.logical, P = r.physical;
    const std::int64_t spare_cols = spec.spare_cols, spare_rows = spec.spare_rows;

    std::vector<std::int32_t> dead(std::size_t(P.height), 0);
    // Failed tiles per row (a tile with two defects counts once): O(defects log defects), not O(tiles).
    std::vector<TileIndex> failed;
    for (const Defect& d : defects.defects())
      if (d.kind != DefectKind::Link) failed.push_back(P.index(d.at));
    std::sort(failed.begin(), failed.end());
    failed.erase(std::unique(failed.begin(), failed.end()), failed.end());
    for (TileIndex t : failed) ++dead[t / TileIndex(P.width)];

    std::vector<std::int32_t> bad;
    for (std::int32_t y = 0; y < P.height; ++y)
      if (dead[std::size_t(y)] > spare_cols) bad.push_back(y);

    // Rows to skip: every unrepairable row when the spare rows suffice, else the worst spare_rows of them.
    std::vector<char> skip(std::size_t(P.height), 0);
    std::vector<std::int32_t> worst = bad;
    std::stable_sort(worst.begin(), worst.end(),
                     [&](std::int32_t a, std::int32_t b) { return dead[std::size_t(a)] > dead[std::size_t(b)]; });
    if (std::int64_t(worst.size()) > spare_rows) worst.resize(std::size_t(spare_rows));
    for (std::int32_t y : worst) skip[std::size_t(y)] = 1;

    r.log_to_phys.assign(L.size(), kNoTile);
    std::int32_t ly = 0;
    for (std::int32_t py = 0; py < P.height && ly < L.height; ++py) {
      if (skip[std::size_t(py)]) continue;
      TileIndex* row = r.log_to_phys.data() + std::size_t(ly) * std::size_t(L.width);
      const TileIndex base = TileIndex(py) * TileIndex(P.width);
      if (dead[std::size_t(py)] == 0) {
        for (std::int32_t lx = 0; lx < L.width; ++lx) row[lx] = base + TileIndex(lx);
      } else {
        std::int32_t lx = 0;
        for (std::int32_t px = 0; px < P.width && lx < L.width; ++px)
          if (!defects.tile_failed(base + TileIndex(px))) row[lx++] = base + TileIndex(px);
      }
      ++ly;
    }

    if (std::int64_t(bad.size()) > spare_rows) {
      std::string rows;
      for (std::size_t i = 0; i < bad.size() && i < 3; ++i)
        rows += fmt::format("{}row {}: {} failed tiles", i ? ", " : "", bad[i], dead[std::size_t(bad[i])]);
      if (bad.size() > 3) rows += ", ...";
      r.reason = fmt::format("{} physical rows have more failed tiles than the {} spare columns ({}); only {} spare rows "
                             "can skip them",
                             bad.size(), spare_cols, rows, spare_rows);
    }
    finish_result(r, defects);
    return r;
  }
};

}  // namespace

const RepairScheme& row_shift_scheme() {
  static const RowShift scheme;
  return scheme;
}

}  // namespace wafer::hw::repair
