// "spare-rows-cols": drop whole physical rows and columns that contain failed tiles, at most spare_rows
// rows and spare_cols columns; the rows and columns that remain (the first logical_height / logical_width
// of them, in order) form the logical grid. Choosing the lines is a covering problem (NP-hard with two
// budgets, the classic memory-redundancy analysis); this uses its standard heuristic: must-repair (a row
// with more failed tiles than the column budget left must be dropped, and vice versa), then greedy (the
// line covering the most uncovered failed tiles, rows first on ties), then a last pass that undoes drops
// made redundant by later ones. When the budgets run out the result is incomplete: failed tiles left in
// the kept grid stay unmapped and the largest rectangle around them is reported.
#include <fmt/format.h>

#include <algorithm>

#include "hw/repair/common.h"
#include "hw/repair/schemes.h"

namespace wafer::hw::repair {
namespace {

class SpareRowsCols final : public RepairScheme {
 public:
  std::string_view name() const override { return "spare-rows-cols"; }
  std::string_view description() const override {
    return "drops whole rows and columns holding failed tiles, within the spare-row and spare-column budgets";
  }

  RepairResult repair(const WaferSpec& spec, const DefectMap& defects_in) const override {
    DefectMap empty;
    const DefectMap& defects = checked_map(spec, defects_in, empty);
    RepairResult r;
    r.scheme = std::string(name());
    r.logical = spec.logical();
    r.physical = spec.physical();
    const Grid L = r.logical, P = r.physical;

    std::vector<TileIndex> failed;
    for (const Defect& d : defects.defects())
      if (d.kind != DefectKind::Link) failed.push_back(P.index(d.at));
    std::sort(failed.begin(), failed.end());
    failed.erase(std::unique(failed.begin(), failed.end()), failed.end());

    std::vector<char> drop_row(std::size_t(P.height), 0), drop_col(std::size_t(P.width), 0);
    std::int64_t rows_left = spec.spare_rows, cols_left = spec.spare_cols;
    std::vector<std::int32_t> row_n(std::size_t(P.height), 0), col_n(std::size_t(P.width), 0);
    auto covered = [&](TileIndex t) {
      const Coord c = P.coord(t);
      return drop_row[std::size_t(c.y)] || drop_col[std::size_t(c.x)];
    };
    auto recount = [&] {
      std::fill(row_n.begin(), row_n.end(), 0);
      std::fill(col_n.begin(), col_n.end(), 0);
      std::size_t open = 0;
      for (TileIndex t : failed)
        if (!covered(t)) {
          const Coord c = P.coord(t);
          ++row_n[std::size_t(c.y)], ++col_n[std::size_t(c.x)], ++open;
        }
      return open;
    };

    std::size_t open = recount();
    // Must-repair: repeat until nothing changes.
    for (bool changed = true; changed && open > 0;) {
      changed = false;
      for (std::int32_t y = 0; y < P.height; ++y)
        if (row_n[std::size_t(y)] > cols_left && rows_left > 0) drop_row[std::size_t(y)] = 1, --rows_left, changed = true;
      if (changed) open = recount();
      bool changed_cols = false;
      for (std::int32_t x = 0; x < P.width; ++x)
        if (col_n[std::size_t(x)] > rows_left && cols_left > 0) drop_col[std::size_t(x)] = 1, --cols_left, changed_cols = true;
      if (changed_cols) open = recount();
      changed = changed || changed_cols;
    }
    // Greedy: the line covering the most open failed tiles.
    while (open > 0 && (rows_left > 0 || cols_left > 0)) {
      std::int32_t best_row = -1, best_col = -1;
      if (rows_left > 0)
        for (std::int32_t y = 0; y < P.height; ++y)
          if (row_n[std::size_t(y)] > 0 && (best_row < 0 || row_n[std::size_t(y)] > row_n[std::size_t(best_row)])) best_row = y;
      if (cols_left > 0)
        for (std::int32_t x = 0; x < P.width; ++x)
          if (col_n[std::size_t(x)] > 0 && (best_col < 0 || col_n[std::size_t(x)] > col_n[std::size_t(best_col)])) best_col = x;
      if (best_row < 0 && best_col < 0) break;
      const bool take_row =
          best_col < 0 || (best_row >= 0 && (row_n[std::size_t(best_row)] > col_n[std::size_t(best_col)] ||
                                             (row_n[std::size_t(best_row)] == col_n[std::size_t(best_col)] && rows_left >= cols_left)));
      if (take_row) drop_row[std::size_t(best_row)] = 1, --rows_left;
      else drop_col[std::size_t(best_col)] = 1, --cols_left;
      open = recount();
    }
    // Undo drops that later drops made redundant (every failed tile on the line is covered the other way).
    if (open == 0) {
      for (std::int32_t y = 0; y < P.height; ++y) {
        if (!drop_row[std::size_t(y)]) continue;
        drop_row[std::size_t(y)] = 0;
        if (std::any_of(failed.begin(), failed.end(), [&](TileIndex t) { return !covered(t); })) drop_row[std::size_t(y)] = 1;
        else ++rows_left;
      }
      for (std::int32_t x = 0; x < P.width; ++x) {
        if (!drop_col[std::size_t(x)]) continue;
        drop_col[std::size_t(x)] = 0;
        if (std::any_of(failed.begin(), failed.end(), [&](TileIndex t) { return !covered(t); })) drop_col[std::size_t(x)] = 1;
        else ++cols_left;
      }
    }

    std::vector<std::int32_t> rows, cols;
    for (std::int32_t y = 0; y < P.height && std::int32_t(rows.size()) < L.height; ++y)
      if (!drop_row[std::size_t(y)]) rows.push_back(y);
    for (std::int32_t x = 0; x < P.width && std::int32_t(cols.size()) < L.width; ++x)
      if (!drop_col[std::size_t(x)]) cols.push_back(x);
    r.log_to_phys.assign(L.size(), kNoTile);
    std::size_t unmapped = 0;
    for (std::int32_t ly = 0; ly < L.height; ++ly)
      for (std::int32_t lx = 0; lx < L.width; ++lx) {
        const TileIndex p = P.index({cols[std::size_t(lx)], rows[std::size_t(ly)]});
        if (defects.tile_failed(p)) ++unmapped;
        else r.log_to_phys[L.index({lx, ly})] = p;
      }
    if (unmapped > 0) {
      std::int64_t used_rows = 0, used_cols = 0;
      for (char c : drop_row) used_rows += c;
      for (char c : drop_col) used_cols += c;
      r.reason = fmt::format("{} failed tiles cannot all be covered by {} spare rows and {} spare columns: {} remain "
                             "in the logical grid after dropping {} rows and {} columns",
                             failed.size(), spec.spare_rows, spec.spare_cols, unmapped, used_rows, used_cols);
    }
    finish_result(r, defects);
    return r;
  }
};

}  // namespace

const RepairScheme& spare_rows_cols_scheme() {
  static const SpareRowsCols scheme;
  return scheme;
}

}  // namespace wafer::hw::repair
