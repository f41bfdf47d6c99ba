// "spare-rows-cols": drop whole physical rows and columns that contain failed tiles, at most spare_rows
// rows and spare_cols columns; the rows and columns that remain (the first logical_height / logical_width
// of them, in order) form the logical grid. Choosing the lines is a covering problem (NP-hard with two
// budgets, the classic memory-redundancy analysis); this uses its standard heuristic: must-repair (a row
// with more failed tiles than the column budget left must be dropped, and vice versa), then greedy (the
// line covering the most uncovered failed tiles, rows first on ties), then a last pass that undoes drops
// made redundant by later ones. Where greedy leaves failed tiles, an exact search (must-repair at every
// choice, then the first open tile's row or its column; bounds: once no line must go, r rows and c columns
// cover at most 2rc tiles, no more than the r fullest rows and the c fullest columns hold, and no fewer lines
// than a largest matching of the tiles' rows and columns cover them)
// finds a cover if one exists, within kSearchWork steps. When none exists (or
// the search stops) the result is incomplete: failed tiles left in the kept grid stay unmapped and the
// largest rectangle around them is reported. (Until 2026-12-07 greedy alone: on `small`, failed tiles on
// (10,7), (10,8), (20,7), (20,8), (1,30), (2,30), (3,40), (4,40) took rows 7 and 8 first and were called
// impossible to cover, where columns 10 and 20 with rows 30 and 40 cover them.)
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <set>

#include "hw/repair/common.h"
#include "hw/repair/schemes.h"

namespace wafer::hw::repair {
namespace {

// The exact search's budget, in steps (a tile looked at; a matching counts rows x tiles): some 0.1 s at most.
constexpr std::uint64_t kSearchWork = std::uint64_t(1) << 26;

// The size of a largest matching between the open tiles' rows and columns (a tile is an edge): by Konig's theorem
// the fewest lines that cover them, whatever the split between rows and columns (augmenting paths, Kuhn).
std::size_t fewest_lines(const std::vector<Coord>& open) {
  std::map<std::int32_t, std::vector<std::int32_t>> cols_of;  // row -> its tiles' columns
  for (const Coord& c : open) cols_of[c.y].push_back(c.x);
  std::map<std::int32_t, std::int32_t> row_of;  // column -> the row matched to it
  std::size_t matched = 0;
  for (const auto& [row, cs] : cols_of) {
    std::set<std::int32_t> seen;
    std::function<bool(std::int32_t)> augment = [&](std::int32_t y) {
      for (std::int32_t x : cols_of[y]) {
        if (!seen.insert(x).second) continue;
        const auto it = row_of.find(x);
        if (it == row_of.end() || augment(it->second)) {
          row_of[x] = y;
          return true;
        }
      }
      return false;
    };
    if (augment(row)) ++matched;
  }
  return matched;
}

// An exact cover of the open tiles by at most `rows` rows and `cols` columns, depth first; the lines chosen are
// appended to `row_out` / `col_out`. `work` counts the steps taken; past kSearchWork the search gives up (returns
// false with `gave_up` set).
bool exact_cover(const std::vector<Coord>& open, std::int64_t rows, std::int64_t cols, std::vector<std::int32_t>& row_out,
                 std::vector<std::int32_t>& col_out, std::uint64_t& work, bool& gave_up) {
  if (open.empty()) return true;
  if (gave_up || (work += open.size()) > kSearchWork) {
    gave_up = true;
    return false;
  }
  auto without = [&](bool row, std::int32_t line) {
    std::vector<Coord> rest;
    for (const Coord& c : open)
      if ((row ? c.y : c.x) != line) rest.push_back(c);
    return rest;
  };
  auto take = [&](bool row, std::int32_t line) {
    std::vector<std::int32_t>& out = row ? row_out : col_out;
    out.push_back(line);
    if (exact_cover(without(row, line), rows - row, cols - !row, row_out, col_out, work, gave_up)) return true;
    out.pop_back();
    return false;
  };
  // Must-repair: a row holding more open tiles than the columns left must go, and vice versa.
  std::map<std::int32_t, std::int64_t> per_row, per_col;
  for (const Coord& c : open) ++per_row[c.y], ++per_col[c.x];
  for (const auto& [y, n] : per_row)
    if (n > cols) return rows > 0 && take(true, y);
  for (const auto& [x, n] : per_col)
    if (n > rows) return cols > 0 && take(false, x);
  if (std::int64_t(open.size()) > 2 * rows * cols) return false;
  // No more than the `rows` fullest rows and the `cols` fullest columns hold.
  auto most = [](const std::map<std::int32_t, std::int64_t>& per, std::int64_t lines) {
    std::vector<std::int64_t> n;
    for (const auto& [line, count] : per) n.push_back(count);
    const std::size_t k = std::size_t(std::min<std::int64_t>(lines, std::int64_t(n.size())));
    std::partial_sort(n.begin(), n.begin() + std::ptrdiff_t(k), n.end(), std::greater<>());
    return std::accumulate(n.begin(), n.begin() + std::ptrdiff_t(k), std::int64_t(0));
  };
  if (std::int64_t(open.size()) > most(per_row, rows) + most(per_col, cols)) return false;
  if ((work += per_row.size() * open.size()) > kSearchWork) {
    gave_up = true;
    return false;
  }
  if (std::int64_t(fewest_lines(open)) > rows + cols) return false;
  const Coord t = open.front();
  return (rows > 0 && take(true, t.y)) || (!gave_up && cols > 0 && take(false, t.x));
}

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
    // (what must-repair dropped, for the exact search should greedy fall short)
    std::vector<std::int32_t> must_rows, must_cols;
    for (std::int32_t y = 0; y < P.height; ++y)
      if (drop_row[std::size_t(y)]) must_rows.push_back(y);
    for (std::int32_t x = 0; x < P.width; ++x)
      if (drop_col[std::size_t(x)]) must_cols.push_back(x);
    const std::int64_t must_rows_left = rows_left, must_cols_left = cols_left;
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
    // Greedy left failed tiles: the exact search, from the must-repair drops (a cover holds them all).
    std::uint64_t work = 0;
    bool gave_up = false;
    if (open > 0) {
      const std::vector<char> greedy_row = drop_row, greedy_col = drop_col;
      std::fill(drop_row.begin(), drop_row.end(), 0), std::fill(drop_col.begin(), drop_col.end(), 0);
      for (std::int32_t y : must_rows) drop_row[std::size_t(y)] = 1;
      for (std::int32_t x : must_cols) drop_col[std::size_t(x)] = 1;
      std::vector<Coord> left;
      for (TileIndex t : failed)
        if (!covered(t)) left.push_back(P.coord(t));
      std::vector<std::int32_t> rows_found, cols_found;
      if (exact_cover(left, must_rows_left, must_cols_left, rows_found, cols_found, work, gave_up)) {
        for (std::int32_t y : rows_found) drop_row[std::size_t(y)] = 1;
        for (std::int32_t x : cols_found) drop_col[std::size_t(x)] = 1;
        rows_left = must_rows_left - std::int64_t(rows_found.size()), cols_left = must_cols_left - std::int64_t(cols_found.size());
        open = recount();
      } else {
        // (no cover: the greedy's lines, which cover the most it found)
        drop_row = greedy_row, drop_col = greedy_col;
        open = recount();
      }
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
      r.reason = fmt::format("{} failed tiles {} by {} spare rows and {} spare columns: {} remain "
                             "in the logical grid after dropping {} rows and {} columns",
                             failed.size(),
                             gave_up ? std::string("were not covered (the search for a cover stopped at its budget)")
                                     : std::string("cannot all be covered"),
                             spec.spare_rows, spec.spare_cols, unmapped, used_rows, used_cols);
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
