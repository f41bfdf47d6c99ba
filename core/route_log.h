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

// Which chunks of a table of bytes (2^kBits entries each) have been written since the table was all zero, so that
// comparisons and copies read only those: a chunk never written is zero. (Where the kernel keeps no shared zero
// page, as on the 2-core VM, a read of a page never written faults it in at the cost of a write: the reuse's
// comparisons span every band of the route tables, of which a step writes a few percent.) Pure: the caller marks
// every entry it writes (mark, mark_range).
class WrittenChunks {
 public:
  static constexpr unsigned kBits = 12;
  // A table of `entries`, all zero.
  void reset(std::size_t entries) { w_.assign((entries >> kBits) + 1, 0); }
  void mark(std::size_t at) { w_[at >> kBits] = 1; }
  void mark_range(std::size_t a, std::size_t len) {
    if (len > 0) std::fill(w_.begin() + std::ptrdiff_t(a >> kBits), w_.begin() + std::ptrdiff_t(((a + len - 1) >> kBits) + 1), 1);
  }
  bool written(std::size_t at) const { return w_[at >> kBits] != 0; }
  // Whether entries [a, a + len) of `t` equal entries [b, b + len).
  bool equal(const std::uint8_t* t, std::size_t a, std::size_t b, std::size_t len) const {
    for (std::size_t i = 0; i < len;) {  // (pieces that end at a chunk boundary of either range)
      const std::size_t m = std::min({len - i, rest(a + i), rest(b + i)});
      const bool wa = written(a + i), wb = written(b + i);
      if (wa && wb ? !std::equal(t + a + i, t + a + i + m, t + b + i) : (wa || wb) && !zeros(t + (wa ? a : b) + i, m))
        return false;
      i += m;
    }
    return true;
  }
  // Whether entries [a, a + len) of `t` are all zero.
  bool zero(const std::uint8_t* t, std::size_t a, std::size_t len) const {
    for (std::size_t i = 0; i < len;) {
      const std::size_t m = std::min(len - i, rest(a + i));
      if (written(a + i) && !zeros(t + a + i, m)) return false;
      i += m;
    }
    return true;
  }
  // Sets entries [a, a + len) of `t` to zero, writing only the chunks written.
  void clear(std::uint8_t* t, std::size_t a, std::size_t len) const {
    for (std::size_t i = 0; i < len;) {
      const std::size_t m = std::min(len - i, rest(a + i));
      if (written(a + i)) std::fill(t + a + i, t + a + i + m, std::uint8_t(0));
      i += m;
    }
  }

 private:
  // Entries from `at` to the end of its chunk.
  static std::size_t rest(std::size_t at) { return (((at >> kBits) + 1) << kBits) - at; }
  static bool zeros(const std::uint8_t* p, std::size_t m) {
    return std::all_of(p, p + m, [](std::uint8_t v) { return v == 0; });
  }
  std::vector<std::uint8_t> w_;
};

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
// With `written` (the chunks of `tables` written, WrittenChunks), the chunks never written are not read.
inline bool entries_were(const std::uint8_t* tables, std::size_t n, std::size_t cells, const RouteLog& log,
                         std::size_t a, std::size_t b, std::size_t len, const WrittenChunks* written = nullptr) {
  for (std::size_t cell = 0; cell < cells; ++cell) {
    const std::size_t c0 = cell * n, base = c0 + b;
    // (entries [a + i, a + j) against [b + i, b + j); entry a + x)
    auto same = [&](std::size_t i, std::size_t j) {
      return written ? written->equal(tables, c0 + a + i, c0 + b + i, j - i)
                     : std::equal(tables + c0 + a + i, tables + c0 + a + j, tables + c0 + b + i);
    };
    auto at = [&](std::size_t x) -> std::uint8_t { return written && !written->written(c0 + a + x) ? 0 : tables[c0 + a + x]; };
    auto it = std::lower_bound(log.begin(), log.end(), base, [](const auto& e, std::size_t v) { return e.first < v; });
    std::size_t i = 0;  // entries b .. b + i - 1 are compared
    while (it != log.end() && it->first < base + len) {
      const std::size_t x = it->first - base;
      if (!same(i, x) || at(x) != it->second) return false;
      i = x + 1;
      for (const std::size_t e = it->first; it != log.end() && it->first == e;) ++it;
    }
    if (!same(i, len)) return false;
  }
  return true;
}

}  // namespace wafer::core
