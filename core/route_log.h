#pragma once
// The route tables' changes since a cut, and the tables as they were at it: how core::Executor's reuse compares
// the route tables with those at the cut before, in place (in time: the whole tables as before; in space: the rows
// a cut describes against those the cut before described)
// (docs/timing.md "Reuse: paying once for what repeats, exactly", "Route tables compared in place"). Pure: no
// SystemC.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace wafer::core {

// The entries changed, each with its value before the change, in the order the changes were made. An entry is
// its index in the tables (cell c's entry e: c n + e, for cells of n entries each).
using RouteLog = std::vector<std::pair<std::size_t, std::uint8_t>>;

// Sorts a log by entry, each entry's changes kept in the order they were made: its first then holds the
// entry's value from before the log began.
inline void sort_route_log(RouteLog& log) {
  std::stable_sort(log.begin(), log.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
}

// Whether every entry `log` (sorted: sort_route_log) changed holds again the value it held before its first change:
// the tables (entries indexed as in the log) are as they were before the log began.
inline bool entries_restored(const std::uint8_t* tables, const RouteLog& log) {
  for (std::size_t i = 0; i < log.size(); ++i)
    if ((i == 0 || log[i].first != log[i - 1].first) && tables[log[i].first] != log[i].second) return false;
  return true;
}

// Whether entries [a, a + len) of each of the `cells` cells of `tables` (n entries a cell) hold now what entries
// [b, b + len) of the same cell held before the changes `log` (sorted: sort_route_log) records: their values
// now, but for the entries changed, which held the value noted before their first change. The two ranges may
// overlap; entries of [a, a + len) are taken as they are now.
inline bool entries_were(const std::uint8_t* tables, std::size_t n, std::size_t cells, const RouteLog& log,
                         std::size_t a, std::size_t b, std::size_t len) {
  for (std::size_t cell = 0; cell < cells; ++cell) {
    const std::uint8_t* r = tables + cell * n;
    const std::size_t base = cell * n + b;
    auto it = std::lower_bound(log.begin(), log.end(), base, [](const auto& e, std::size_t v) { return e.first < v; });
    std::size_t i = 0;  // entries b .. b + i - 1 are compared
    while (it != log.end() && it->first < base + len) {
      const std::size_t x = it->first - base;
      if (!std::equal(r + a + i, r + a + x, r + b + i) || r[a + x] != it->second) return false;
      i = x + 1;
      for (const std::size_t e = it->first; it != log.end() && it->first == e;) ++it;
    }
    if (!std::equal(r + a + i, r + a + len, r + b + i)) return false;
  }
  return true;
}

}  // namespace wafer::core
