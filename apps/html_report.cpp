#include "apps/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "apps/cli.h"
#include "apps/sweep.h"
#include "hw/json_input.h"
#include "hw/wafer_spec.h"
#include "hw/error.h"

namespace wafer::apps::report {

namespace {

using json = nlohmann::json;

// ---- small helpers -----------------------------------------------------------------------------------------

std::string esc(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

// A figure as the page shows it: a whole number whole (cycles, bytes and counts exactly, whatever their size), a
// fraction to 4 significant digits, beyond 10,000 to the unit; `digits` more where figures differ in the 5th
// (a study's latencies).
std::string num(double v, int digits = 4) {
  if (!std::isfinite(v)) return "-";
  const double a = std::fabs(v);
  if ((v == std::floor(v) && a < 1e15) || a >= 1e4) return fmt::format("{:.0f}", v);
  if (a < 1e-3) return fmt::format("{:.3g}", v);
  return fmt::format("{:.{}g}", v, digits);
}

// A statistic {"value", "unit"} of a results object, or NaN.
double value(const json& j, const std::string& key) {
  if (!j.is_object() || !j.contains(key)) return NAN;
  const json& s = j[key];
  if (s.is_object() && s.contains("value") && s["value"].is_number()) return s["value"].get<double>();
  if (s.is_number()) return s.get<double>();
  return NAN;
}
std::string text(const json& j, const std::string& key) {
  if (!j.is_object() || !j.contains(key)) return "";
  const json& s = j[key];
  if (s.is_string()) return s.get<std::string>();
  if (s.is_object() && s.contains("value")) {
    const json& v = s["value"];
    std::string u = s.value("unit", "");
    if (v.is_number()) return num(v.get<double>()) + (u.empty() ? "" : " " + u);
    if (v.is_string()) return v.get<std::string>();
  }
  if (s.is_number()) return num(s.get<double>());
  return "";
}

// A table of the results (docs/results.md): {"columns": [{"name", "unit"}, ...], "rows": [[cell, ...], ...]}.
// Cells are found by column name and unit; an absent table, column or cell reads as the fallback.
struct ResultTable {
  std::vector<std::pair<std::string, std::string>> columns;  // name, unit
  const json* rows = nullptr;

  std::size_t size() const { return rows ? rows->size() : 0; }
  int column(const std::string& name, const std::string& unit = {}) const {
    for (std::size_t c = 0; c < columns.size(); ++c)
      if (columns[c].first == name && columns[c].second == unit) return int(c);
    return -1;
  }
  const json* cell(std::size_t row, int c) const {
    if (!rows || c < 0 || row >= rows->size()) return nullptr;
    const json& r = (*rows)[row];
    return r.is_array() && std::size_t(c) < r.size() ? &r[std::size_t(c)] : nullptr;
  }
  double number(std::size_t row, const std::string& name, const std::string& unit, double fallback = 0.0) const {
    const json* v = cell(row, column(name, unit));
    return v && v->is_number() ? v->get<double>() : fallback;
  }
  std::string str(std::size_t row, const std::string& name, const std::string& fallback = "?") const {
    const json* v = cell(row, column(name));
    return v && v->is_string() ? v->get<std::string>() : fallback;
  }
};
ResultTable result_table(const json& j, const std::string& key) {
  ResultTable t;
  if (!j.is_object() || !j.contains(key)) return t;
  const json& tj = j[key];
  if (!tj.is_object() || !tj.contains("columns") || !tj.contains("rows") || !tj["columns"].is_array() || !tj["rows"].is_array())
    return t;
  for (const auto& c : tj["columns"])
    t.columns.emplace_back(c.is_object() ? c.value("name", std::string()) : std::string(),
                           c.is_object() ? c.value("unit", std::string()) : std::string());
  t.rows = &tj["rows"];
  return t;
}

// Colour scales: a perceptual ramp (dark blue -> teal -> yellow), 32 steps.
std::string ramp(double t) {
  static const std::array<std::array<double, 3>, 5> k{{{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}}};
  t = std::clamp(t, 0.0, 1.0);
  const double x = t * double(k.size() - 1);
  const std::size_t i = std::min<std::size_t>(k.size() - 2, std::size_t(x));
  const double f = x - double(i);
  auto c = [&](int ch) { return int(std::lround(k[i][std::size_t(ch)] * (1 - f) + k[i + 1][std::size_t(ch)] * f)); };
  return fmt::format("#{:02x}{:02x}{:02x}", c(0), c(1), c(2));
}
constexpr int kLevels = 32;

const std::array<const char*, 12> kCauseColours{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
                                                 "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#17becf", "#8c564b"};
std::string layer_colour(int i, int n) {
  if (i == -1) return "#eeeeee";
  if (i == -2) return "#555555";
  const double hue = std::fmod(double(i) * 137.508, 360.0);
  const int light = 45 + (i % 3) * 10;
  (void)n;
  return fmt::format("hsl({:.0f},65%,{}%)", hue, light);
}

struct Matrix {
  std::string unit;
  int cols = 0, rows = 0;
  std::vector<double> v;  // NaN: no data
  bool ok() const { return cols > 0 && rows > 0; }
  double at(int x, int y) const { return v[std::size_t(y) * std::size_t(cols) + std::size_t(x)]; }
};
Matrix matrix(const json& j, const std::string& key) {
  Matrix m;
  if (!j.is_object() || !j.contains(key) || !j[key].is_object() || !j[key].contains("value")) return m;
  const json& rows = j[key]["value"];
  if (!rows.is_array() || rows.empty() || !rows[0].is_array()) return m;
  m.unit = j[key].value("unit", "");
  m.rows = int(rows.size());
  m.cols = int(rows[0].size());
  m.v.assign(std::size_t(m.rows) * std::size_t(m.cols), NAN);
  for (int y = 0; y < m.rows; ++y)
    for (int x = 0; x < m.cols && x < int(rows[std::size_t(y)].size()); ++x) {
      const json& c = rows[std::size_t(y)][std::size_t(x)];
      if (c.is_number()) m.v[std::size_t(y) * std::size_t(m.cols) + std::size_t(x)] = c.get<double>();
    }
  return m;
}
std::string csv_of(const Matrix& m) {
  std::string o;
  for (int y = 0; y < m.rows; ++y) {
    for (int x = 0; x < m.cols; ++x) {
      if (x) o += ',';
      const double v = m.at(x, y);
      if (std::isfinite(v)) o += fmt::format("{}", v);
    }
    o += '\n';
  }
  return o;
}

// A matrix as an SVG picture: horizontal runs of one colour merged into one rect; `colour(v)` gives the
// fill ("" for none). `px` pixels per cell side (the picture is at most ~640 px wide).
template <class F>
std::string svg_cells(const Matrix& m, F&& colour, const std::string& label, const std::string& extra = {}) {
  const double px = std::clamp(640.0 / double(std::max(m.cols, m.rows)), 1.0, 40.0);
  std::string o = fmt::format(
      R"(<svg class="map" role="img" aria-label="{}" width="{:.0f}" height="{:.0f}" viewBox="0 0 {} {}" shape-rendering="crispEdges"><rect width="{}" height="{}" fill="#f4f4f4"/>)",
      esc(label), px * m.cols, px * m.rows, m.cols, m.rows, m.cols, m.rows);
  for (int y = 0; y < m.rows; ++y) {
    int x = 0;
    while (x < m.cols) {
      const std::string c = colour(m.at(x, y));
      int e = x + 1;
      while (e < m.cols && colour(m.at(e, y)) == c) ++e;
      if (!c.empty()) o += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="1" fill="{}"/>)", x, y, e - x, c);
      x = e;
    }
  }
  o += extra;
  o += "</svg>";
  return o;
}

std::string legend_ramp(double lo, double hi, const std::string& unit) {
  std::string o = R"(<svg class="legend" width="260" height="34" viewBox="0 0 260 34">)";
  for (int i = 0; i < kLevels; ++i)
    o += fmt::format(R"(<rect x="{}" y="0" width="7" height="14" fill="{}"/>)", 10 + i * 7, ramp((i + 0.5) / kLevels));
  o += fmt::format(R"(<text x="10" y="30" font-size="11">{}</text><text x="234" y="30" font-size="11" text-anchor="end">{} {}</text></svg>)",
                   esc(num(lo)), esc(num(hi)), esc(unit));
  return o;
}

// A heatmap with its legend and a one-line summary.
std::string heatmap(const Matrix& m, const std::string& title, const std::string& what, bool fixed_percent) {
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  std::size_t n = 0;
  for (double v : m.v)
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v), sum += v, ++n;
  if (!n) lo = hi = 0;
  // Percentages from 0 to the largest value (a fixed 0-100 scale hides low utilisation); counts likewise.
  (void)fixed_percent;
  double top = hi;
  double bottom = std::min(0.0, lo);
  const bool flat = top <= bottom;  // (every cell the same: one colour, and the legend says that value only)
  if (flat) top = bottom + 1;
  auto colour = [&](double v) -> std::string {
    if (!std::isfinite(v)) return "";
    const int q = std::clamp(int((v - bottom) / (top - bottom) * kLevels), 0, kLevels - 1);
    return ramp((q + 0.5) / kLevels);
  };
  std::string o = fmt::format(R"(<figure><figcaption><b>{}</b> [{}] {}<br>min {}, mean {}, max {}</figcaption>)", esc(title),
                              esc(m.unit), esc(what), num(lo), num(n ? sum / double(n) : 0.0), num(hi));
  o += svg_cells(m, colour, title);
  o += "<br>" + legend_ramp(bottom, flat ? bottom : top, m.unit);
  o += "</figure>";
  return o;
}

// Horizontal stacked bars: rows of (label, values per series); one colour per series.
std::string stacked_bars(const std::vector<std::pair<std::string, std::vector<double>>>& rows,
                         const std::vector<std::string>& series, const std::string& unit, const std::string& label,
                         int lw = 170) {
  double maxv = 0;
  for (const auto& r : rows) {
    double s = 0;
    for (double v : r.second) s += std::max(0.0, v);
    maxv = std::max(maxv, s);
  }
  if (maxv <= 0) maxv = 1;
  const int bw = 560, rh = 16, top = 8;
  const int h = top + int(rows.size()) * rh + 24 + int((series.size() + 3) / 4) * 16;
  std::string o = fmt::format(R"(<svg class="bars" role="img" aria-label="{}" width="{}" height="{}" viewBox="0 0 {} {}">)",
                              esc(label), lw + bw + 90, h, lw + bw + 90, h);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const int y = top + int(i) * rh;
    o += fmt::format(R"(<text x="{}" y="{}" font-size="11" text-anchor="end">{}</text>)", lw - 6, y + 11, esc(rows[i].first));
    double x = lw, total = 0;
    for (std::size_t s = 0; s < rows[i].second.size() && s < series.size(); ++s) {
      const double v = std::max(0.0, rows[i].second[s]);
      total += v;
      const double w = v / maxv * bw;
      if (w > 0)
        o += fmt::format(R"(<rect x="{:.2f}" y="{}" width="{:.2f}" height="{}" fill="{}"><title>{}: {} {}</title></rect>)", x, y + 1,
                         w, rh - 3, kCauseColours[s % kCauseColours.size()], esc(series[s]), num(v), esc(unit));
      x += w;
    }
    o += fmt::format(R"(<text x="{:.1f}" y="{}" font-size="10">{}</text>)", x + 4, y + 11, esc(num(total)));
  }
  const int ly = top + int(rows.size()) * rh + 10;
  for (std::size_t s = 0; s < series.size(); ++s) {
    const int x = lw + int(s % 4) * 150, y = ly + int(s / 4) * 16;
    o += fmt::format(R"(<rect x="{}" y="{}" width="10" height="10" fill="{}"/><text x="{}" y="{}" font-size="11">{}</text>)", x, y,
                     kCauseColours[s % kCauseColours.size()], x + 14, y + 9, esc(series[s]));
  }
  o += "</svg>";
  return o;
}

std::string table(const std::vector<std::string>& head, const std::vector<std::vector<std::string>>& rows) {
  std::string o = "<table><tr>";
  for (const auto& h : head) o += "<th>" + esc(h) + "</th>";
  o += "</tr>";
  for (const auto& r : rows) {
    o += "<tr>";
    for (const auto& c : r) o += "<td>" + esc(c) + "</td>";
    o += "</tr>";
  }
  return o + "</table>";
}

const char* kStyle = R"(body{font-family:sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:12px;margin:8px 0}td,th{border:1px solid #ddd;padding:2px 6px;text-align:right}
th{background:#f0f0f0}td:first-child,th:first-child{text-align:left}figure{display:inline-block;margin:8px 16px 8px 0;vertical-align:top}
figcaption{font-size:12px;margin-bottom:4px;max-width:640px}.note{font-size:12px;color:#555}.kpi{font-size:15px}
svg.map{border:1px solid #bbb;image-rendering:pixelated}
)";

std::string page(const std::string& title, const std::string& body) {
  return fmt::format(R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{}</title><style>{}</style></head>
<body>
{}
</body></html>
)",
                     esc(title), kStyle, body);
}

}  // namespace

// ---- decode ------------------------------------------------------------------------------------------------

namespace {
// The form of decode's results (docs/results.md), so that a file edited or cut by hand is refused in one line rather
// than drawn: every table's rows as long as its columns, every matrix rectangular with numbers or nulls, the
// regions' counts whole and within the grid's bounds, their matrices of their section's rows x columns.
void check_form(const json& j, const std::string& where, const std::string& file) {
  auto bad = [&](const std::string& what) {
    throw hw::InputError(fmt::format("{}: {} {} (edited?)", file, where.empty() ? "the results" : where, what));
  };
  if (!j.is_object()) return;
  if (j.contains("columns") && j["columns"].is_array()) {  // (a table; the regions' "columns" is a count)
    if (!j.contains("rows") || !j["rows"].is_array()) bad("is a table without a list of rows");
    for (const json& row : j["rows"]) {
      if (!row.is_array() || row.size() != j["columns"].size())
        bad(fmt::format("has a row of other than its {} columns", j["columns"].size()));
      // (a column with a unit holds figures: the breakdown's tables hold finite numbers of 0 or more; the search's
      // candidates table writes -1 for a figure it has not)
      for (std::size_t c = 0; c < row.size() && where.starts_with("breakdown"); ++c)
        if (const json& col = j["columns"][c]; col.is_object() && col.contains("unit") && col["unit"].is_string() &&
                                               !col["unit"].get<std::string>().empty() &&
                                               !(row[c].is_number() && std::isfinite(row[c].get<double>()) && row[c].get<double>() >= 0))
          bad(fmt::format("has {} in its column {} [{}], which holds figures of 0 or more", row[c].dump(),
                          col.value("name", std::string("?")), col["unit"].get<std::string>()));
    }
    return;
  }
  if (j.contains("value") && j["value"].is_array()) {
    const json& m = j["value"];
    if (m.empty() || !m[0].is_array() || m[0].empty()) bad("is a matrix without rows");
    for (const json& row : m) {
      if (!row.is_array() || row.size() != m[0].size()) bad("is a matrix whose rows differ in length");
      for (const json& c : row)
        if (!c.is_number() && !c.is_null()) bad("is a matrix holding other than numbers");
    }
    return;
  }
  for (auto it = j.begin(); it != j.end(); ++it) check_form(it.value(), where.empty() ? it.key() : where + "." + it.key(), file);
}

// The cells of a regions section (regions, or a physical wafer's repair section): whole counts within bounds, and
// every matrix in `sections` of `rows` x `columns`.
void check_cells(const json& sec, const std::string& where, const std::string& file,
                 std::initializer_list<const char*> matrices) {
  auto count = [&](const char* k, std::int64_t most) {
    const json* v = sec.contains(k) && sec[k].is_object() && sec[k].contains("value") ? &sec[k]["value"] : nullptr;
    if (!v || !v->is_number_integer() || v->get<std::int64_t>() < 1 || v->get<std::int64_t>() > most)
      throw hw::InputError(fmt::format("{}: {}.{} is no whole count from 1 to {} (edited?)", file, where, k, most));
    return v->get<std::int64_t>();
  };
  const std::int64_t cols = count("columns", 4096), rows = count("rows", 4096);
  count("cell_side", 1 << 20);
  for (auto it = sec.begin(); it != sec.end(); ++it) {
    const json& m = it.value();
    const bool named = std::find(matrices.begin(), matrices.end(), it.key()) != matrices.end();
    if (named && !(m.is_object() && m.contains("value") && m["value"].is_array()))
      throw hw::InputError(fmt::format("{}: {}.{} is no matrix (edited?)", file, where, it.key()));
    if (!m.is_object() || !m.contains("value") || !m["value"].is_array()) continue;
    if (std::int64_t(m["value"].size()) != rows || std::int64_t(m["value"][0].size()) != cols)
      throw hw::InputError(fmt::format("{}: {}.{} is not {} x {} cells as the section says (edited?)", file, where, it.key(),
                                       cols, rows));
  }
}
// The cells of matrix `name` of a regions section (its form checked: check_form, check_cells): numbers from `lo` to
// `hi` (whole ones when `whole`) or nulls; their sum. A heatmap's scale is its cells' range, so one cell of -5 % or
// 500 % redrew the whole map, and a layer index no layer has was drawn as one.
double check_cell_values(const json& sec, const std::string& where, const std::string& file, const char* name, double lo,
                         double hi, bool whole, const std::set<std::int64_t>* allowed = nullptr) {
  double sum = 0;
  if (!sec.contains(name)) return sum;
  for (const json& row : sec[name]["value"])
    for (const json& c : row) {
      if (c.is_null()) continue;
      const double v = c.get<double>();
      if (!(v >= lo && v <= hi) || (whole && v != std::floor(v)) ||
          (allowed && !allowed->count(std::int64_t(v))))
        throw hw::InputError(fmt::format(
            "{}: {}.{} holds {}: a cell holds {} (edited?)", file, where, name, c.dump(),
            allowed ? std::string("an index of the layers table, -1 (idle) or -2 (several)")
                    : fmt::format("{}{} {}{}", whole ? "a whole number, " : "", lo, hi >= 1e18 ? "" : fmt::format("to {} ", hi),
                                  sec[name].value("unit", std::string("")) + (hi >= 1e18 ? " or more" : ""))));
      sum += v;
    }
  return sum;
}
// A physical wafer's repair section: per-cell counts whole and at most a cell's tiles (defects any number of 0 or
// more: a tile's links are defects of their own), summing to the section's counts.
void check_repair_cells(const json& rp, const std::string& where, const std::string& file) {
  const double tiles = std::pow(double(rp["cell_side"]["value"].get<std::int64_t>()), 2);
  for (const auto& [m, total, most] : {std::tuple{"defect_map", "defects", 1e18}, std::tuple{"spares_used", "spare_tiles_used", tiles},
                                       std::tuple{"displaced", "displaced_tiles", tiles}}) {
    const double sum = check_cell_values(rp, where, file, m, 0, most, true);
    const json* t = rp.contains(total) && rp[total].is_object() && rp[total].contains("value") ? &rp[total]["value"] : nullptr;
    if (rp.contains(m) && !(t && t->is_number_unsigned() && double(t->get<std::uint64_t>()) == sum))
      throw hw::InputError(fmt::format("{}: {}.{}'s cells sum to {}, not its {} {} (edited?)", file, where, m, sum, total,
                                       t ? t->dump() : std::string("(none)")));
  }
}
// Two figures that a result computes one from the other, equal but for rounding (relative 1e-9, absolute below 1).
bool near(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); }
// What a prefill's chunks and a mixed step's sequences say of the step (docs/mapping.md 3c, 3d): a prefill's chunks,
// one after another, take the prompt's tokens in order up to the context and their cycles sum to the latency (the
// time to first token); a mixed step's sequences hold its tokens, each at its tokens per latency. Each was drawn as
// edited.
void check_phases(const json& j, const std::string& file) {
  auto bad = [&](const std::string& what) { throw hw::InputError(fmt::format("{}: {} (edited?)", file, what)); };
  auto figure = [&](const json& sec, const char* key) -> double {
    const json* v = sec.is_object() && sec.contains(key) && sec[key].is_object() && sec[key].contains("value") ? &sec[key]["value"] : nullptr;
    if (!v || !v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() < 0)
      bad(fmt::format("'{}' is not {{\"value\": a figure of 0 or more}}", key));
    return v->get<double>();
  };
  const double latency = double(j["latency_cycles"]["value"].get<std::uint64_t>()), us = j["latency_us"]["value"].get<double>();
  const double clock = j["config"]["clock"]["value"].get<double>();
  // (a section deleted, or added: the page drew a prefill or a mixed step as a decode step, or the other way)
  for (const auto& [section, key] : {std::pair{"prefill", "prefill_tokens"}, std::pair{"mixed", "step"}})
    if (j.contains(section) != j["config"].contains(key))
      bad(fmt::format("{} but {}", j.contains(section) ? fmt::format("holds a {} section", section) : fmt::format("has no {} section", section),
                      j["config"].contains(key) ? fmt::format("config.{} is given", key) : fmt::format("config has no {}", key)));
  // The table's rows as numbers by column name and unit (form checked: check_form).
  auto rows_of = [&](const json& sec, const char* table, std::initializer_list<std::pair<const char*, const char*>> cols) {
    const ResultTable t = result_table(sec, table);
    if (!t.rows) bad(fmt::format("no table '{}'", table));
    std::vector<int> at;
    for (const auto& [name, unit] : cols) {
      at.push_back(t.column(name, unit));
      if (at.back() < 0) bad(fmt::format("{} has no column {} [{}]", table, name, unit));
    }
    std::vector<std::vector<double>> out(t.size());
    for (std::size_t i = 0; i < t.size(); ++i)
      for (int c : at) {
        const json* v = t.cell(i, c);
        if (!v || !v->is_number()) bad(fmt::format("{} holds {} where a number is", table, v ? v->dump() : std::string("nothing")));
        out[i].push_back(v->get<double>());
      }
    return out;
  };
  if (j.contains("prefill")) {
    const json& p = j["prefill"];
    const double prompt = figure(j["config"], "prefill_tokens"), context = figure(j["config"], "context");
    const double chunks = figure(p, "chunks"), most = figure(p, "chunk_tokens");
    const auto rows = rows_of(p, "per_chunk", {{"first token", ""}, {"tokens", ""}, {"context", "tokens"}, {"latency", "cycles"}, {"latency", "us"}});
    if (double(rows.size()) != chunks) bad(fmt::format("prefill.per_chunk has {} rows for its {} chunks", rows.size(), chunks));
    double first = 0, cycles = 0;
    for (const auto& r : rows) {
      if (r[0] != first || r[1] < 1 || r[1] > most || r[1] != std::floor(r[1]) || r[2] != context - prompt + first + r[1])
        bad(fmt::format("prefill.per_chunk has a chunk of {} tokens from token {} at context {}, not the prompt's next of at "
                        "most {} tokens",
                        r[1], r[0], r[2], most));
      if (r[3] != std::floor(r[3]) || !near(r[4], r[3] / (clock * 1e3)))
        bad(fmt::format("prefill.per_chunk has a chunk of {} cycles and {} µs at {} GHz", r[3], r[4], clock));
      first += r[1], cycles += r[3];
    }
    if (first != prompt) bad(fmt::format("prefill.per_chunk's chunks hold {} tokens, not the prompt's {}", first, prompt));
    if (cycles != latency) bad(fmt::format("prefill.per_chunk's chunks take {} cycles, not the latency's {}", cycles, latency));
    if (!near(figure(j, "ttft_us"), us)) bad("ttft_us is not latency_us");
  }
  if (j.contains("mixed")) {
    const json& m = j["mixed"];
    const auto rows = rows_of(m, "per_sequence", {{"tokens", ""}, {"rate", "tokens/s"}});
    if (double(rows.size()) != figure(m, "sequences"))
      bad(fmt::format("mixed.per_sequence has {} rows for its {} sequences", rows.size(), figure(m, "sequences")));
    double tokens = 0;
    for (const auto& r : rows) {
      if (r[0] < 1 || r[0] != std::floor(r[0]) || !near(r[1], r[0] * 1e6 / us))
        bad(fmt::format("mixed.per_sequence has a sequence of {} tokens at {} tokens/s, not its tokens per latency_us {}", r[0],
                        r[1], us));
      tokens += r[0];
    }
    if (tokens != figure(m, "step_tokens")) bad(fmt::format("mixed.per_sequence holds {} tokens, not step_tokens {}", tokens, figure(m, "step_tokens")));
    if (figure(m, "prefill_sequences") + figure(m, "decode_sequences") != double(rows.size()))
      bad("mixed's prefill_sequences and decode_sequences do not sum to its sequences");
  }
}
// What decode's figures say of each other: the latency in µs is its cycles at the wafer's clock; the critical path's
// causes (the per-layer table's columns in cycles, but its total) are whole cycles that sum to the latency, and the
// path's other counts whole too; a pipeline's regions hold a section per wafer, wafer_0 to wafer_{N-1}.
void check_sums(const json& j, const std::string& file) {
  auto bad = [&](const std::string& what) { throw hw::InputError(fmt::format("{}: {} (edited?)", file, what)); };
  const auto latency = j["latency_cycles"]["value"].get<std::uint64_t>();
  if (latency > (std::uint64_t(1) << 53))  // (beyond what the page's numbers show exactly; a step runs some 10^10 at most)
    bad(fmt::format("latency_cycles {} is more cycles than a step runs", latency));
  const json& cfg = j["config"];
  const json* clock = cfg.contains("clock") && cfg["clock"].is_object() && cfg["clock"].contains("value") ? &cfg["clock"]["value"] : nullptr;
  if (!clock || !clock->is_number() || !(clock->get<double>() > 0) || !std::isfinite(clock->get<double>()))
    bad("config.clock is not {\"value\": a clock in GHz}");
  if (const hw::ParamInfo& pi = *hw::wafer_param("clock_ghz"); !(clock->get<double>() >= pi.min && clock->get<double>() <= pi.max))
    bad(fmt::format("config.clock {} GHz is outside a wafer's {} to {}", clock->get<double>(), pi.min, pi.max));
  const double us = j["latency_us"]["value"].get<double>(), want = double(latency) / (clock->get<double>() * 1e3);
  if (!near(us, want))
    bad(fmt::format("latency_us {} is not latency_cycles {} at the clock's {} GHz ({} µs)", us, latency, clock->get<double>(), want));
  const json& bd = j["breakdown"];
  std::uint64_t sum = 0;
  bool any = false;
  if (bd.contains("per_layer") && bd["per_layer"].is_object() && bd["per_layer"].contains("columns"))
    for (const json& col : bd["per_layer"]["columns"]) {
      if (!col.is_object() || col.value("unit", std::string()) != "cycles" || col.value("name", std::string()) == "total") continue;
      const std::string name = col.value("name", std::string());
      const json* v = bd.contains(name) && bd[name].is_object() && bd[name].contains("value") ? &bd[name]["value"] : nullptr;
      if (!v || !v->is_number_unsigned()) bad(fmt::format("breakdown.{} is not {{\"value\": a whole number of cycles}}", name));
      // (each at most the latency, so the sum cannot wrap: 2^63 + 1916 and 2^63 + 8160 summed to the latency)
      if (v->get<std::uint64_t>() > latency) bad(fmt::format("breakdown.{} is more cycles than the latency's {}", name, latency));
      sum += v->get<std::uint64_t>(), any = true;
      if (sum > latency) break;
    }
  if (any && sum != latency)
    bad(fmt::format("the breakdown's causes sum to {} cycles, not the latency's {}", sum, latency));
  // The per-layer and per-operator tables: each row's total its causes' cycles, the rows' totals the latency.
  for (const char* name : {"per_layer", "per_op"}) {
    const ResultTable t = result_table(bd, name);
    std::optional<std::size_t> total;
    std::vector<std::size_t> causes;
    for (std::size_t c = 0; c < t.columns.size(); ++c) {
      if (t.columns[c].second != "cycles") continue;
      if (t.columns[c].first == "total") total = c;
      else causes.push_back(c);
    }
    if (!total) continue;
    std::uint64_t rows_sum = 0;
    for (const json& row : *t.rows) {
      std::uint64_t of_causes = 0;
      for (std::size_t c : causes) {
        if (!row[c].is_number_unsigned() || row[c].get<std::uint64_t>() > latency)
          bad(fmt::format("breakdown.{} holds {} cycles where a step's are whole and at most its latency", name, row[c].dump()));
        of_causes += row[c].get<std::uint64_t>();
      }
      if (!row[*total].is_number_unsigned() || row[*total].get<std::uint64_t>() != of_causes)
        bad(fmt::format("breakdown.{} has a row whose total {} is not its causes' {} cycles", name, row[*total].dump(), of_causes));
      rows_sum += of_causes;  // (each row at most 10 x 2^53: no wrap)
    }
    if (rows_sum != latency) bad(fmt::format("breakdown.{}'s rows sum to {} cycles, not the latency's {}", name, rows_sum, latency));
  }
  if (const json* t = j.contains("tokens_per_s") && j["tokens_per_s"].is_object() ? &j["tokens_per_s"] : nullptr;
      t && us > 0 && !(t->contains("value") && (*t)["value"].is_number() &&
                       std::abs((*t)["value"].get<double>() - 1e6 / us) <= 1e-9 * (1e6 / us)))
    bad(fmt::format("tokens_per_s is not one token per latency_us {}", us));
  for (auto it = bd.begin(); it != bd.end(); ++it)
    if (it.value().is_object() && it.value().contains("value") && !it.value()["value"].is_number_unsigned())
      bad(fmt::format("breakdown.{} is not {{\"value\": a whole count}}", it.key()));
  if (j.contains("regions") && j["regions"].is_object()) {
    const json* w = cfg.contains("wafers") && cfg["wafers"].is_object() && cfg["wafers"].contains("value") ? &cfg["wafers"]["value"] : nullptr;
    const std::int64_t wafers = w && w->is_number_unsigned() ? w->get<std::int64_t>() : -1;
    std::int64_t sections = 0;
    for (auto it = j["regions"].begin(); it != j["regions"].end(); ++it)
      if (it.key().starts_with("wafer_")) ++sections;
    bool each = wafers >= 1 && sections == wafers;
    for (std::int64_t k = 0; each && k < wafers; ++k) each = j["regions"].contains(fmt::format("wafer_{}", k));
    if (!each)
      bad(fmt::format("regions holds {} wafer sections for config.wafers {}: decode writes wafer_0 to wafer_N-1", sections,
                      w ? w->dump() : std::string("(none)")));
  }
}
}  // namespace

json read_decode_json(const std::filesystem::path& file) {
  const json j = hw::parse_input_json<json>(hw::read_input_file(file, "results file"), file.string());
  if (!j.is_object() || !j.contains("latency_cycles") || !j.contains("breakdown") || !j.contains("config"))
    throw hw::InputError(fmt::format("{}: not the results of wafer-emu decode --json (no latency_cycles, breakdown, config)",
                                     file.string()));
  const auto v = j.find("schema_version");
  if (v == j.end() || !v->is_number_integer() || v->get<std::int64_t>() != kResultsSchemaVersion)
    throw hw::InputError(fmt::format("{}: results of schema_version {} (this wafer-emu reads {}); rerun decode --json",
                                     file.string(), v == j.end() ? std::string("none") : v->dump(), kResultsSchemaVersion));
  // (a latency that is no count of cycles is no result decode writes: the page would show it as "-")
  if (const json& l = j["latency_cycles"]; !l.is_object() || !l.contains("value") || !l["value"].is_number_unsigned() ||
                                           !j["breakdown"].is_object() || !j["config"].is_object())
    throw hw::InputError(fmt::format("{}: latency_cycles is not {{\"value\": a whole number of cycles}}, or breakdown "
                                     "or config not an object: not decode's results",
                                     file.string()));
  if (const json* l = j.contains("latency_us") && j["latency_us"].is_object() ? &j["latency_us"] : nullptr;
      !l || !l->contains("value") || !(*l)["value"].is_number() || !std::isfinite((*l)["value"].get<double>()) ||
      (*l)["value"].get<double>() < 0)
    throw hw::InputError(fmt::format("{}: latency_us is not {{\"value\": a time of 0 µs or more}} (edited?)", file.string()));
  check_form(j, "", file.string());
  check_sums(j, file.string());
  check_phases(j, file.string());
  if (j.contains("regions")) {
    const json& reg = j["regions"];
    if (!reg.is_object()) throw hw::InputError(fmt::format("{}: regions is not a section (edited?)", file.string()));
    check_cells(reg, "regions", file.string(), {});
    // (the layers table's indices: what a cell of a wafer's `layer` may hold, beside -1 idle and -2 several)
    std::set<std::int64_t> layers{-1, -2};
    const ResultTable lt = result_table(reg, "layers");
    for (std::size_t i = 0; i < lt.size(); ++i)
      if (const json* ix = lt.cell(i, lt.column("index")); ix && ix->is_number_integer()) layers.insert(ix->get<std::int64_t>());
    const double cell_tiles = std::pow(double(reg["cell_side"]["value"].get<std::int64_t>()), 2);
    for (auto it = reg.begin(); it != reg.end(); ++it) {
      if (!it.value().is_object() || !it.key().starts_with("wafer_")) continue;
      // (a wafer's matrices are the regions' cells; its physical wafer, when it has its own map, has its own)
      json cells = it.value();
      cells.erase("repair");
      for (const char* k : {"columns", "rows", "cell_side"}) cells[k] = reg[k];
      const std::string where = "regions." + it.key();
      check_cells(cells, where, file.string(), {"link_utilisation", "tile_busy", "sram_use", "tiles_used", "extra_hops", "layer"});
      for (const char* m : {"link_utilisation", "tile_busy", "sram_use"}) check_cell_values(cells, where, file.string(), m, 0, 100, false);
      check_cell_values(cells, where, file.string(), "tiles_used", 0, cell_tiles, true);
      check_cell_values(cells, where, file.string(), "extra_hops", 0, 1e18, true);
      check_cell_values(cells, where, file.string(), "layer", -2, 1e18, true, &layers);
      if (it.value().contains("repair")) {
        check_cells(it.value()["repair"], where + ".repair", file.string(), {"defect_map", "spares_used", "displaced"});
        check_repair_cells(it.value()["repair"], where + ".repair", file.string());
      }
    }
    if (reg.contains("repair")) {
      check_cells(reg["repair"], "regions.repair", file.string(), {"defect_map", "spares_used", "displaced"});
      check_repair_cells(reg["repair"], "regions.repair", file.string());
    }
  }
  return j;
}

Output from_decode(const json& r, const std::string& source) {
  Output out;
  const json& cfg = r["config"];
  const json& bd = r["breakdown"];
  std::string b;
  const bool mixed = r.contains("mixed") && r["mixed"].is_object();  // decode --step (docs/mapping.md 3d)
  const bool prefill = r.contains("prefill") && r["prefill"].is_object();  // decode --prefill (3c)
  const std::string title = fmt::format(
      "{} on {}: {}", text(cfg, "model"), text(cfg, "wafer"),
      mixed     ? "mixed step " + text(cfg, "step")
      : prefill ? fmt::format("prefill of {} tokens at context {}", num(value(cfg, "prefill_tokens")), num(value(cfg, "context")))
                : std::string("decode step"));
  b += "<h1>" + esc(title) + "</h1>";
  if (prefill)
    b += fmt::format(R"(<p class="kpi">time to first token <b>{} µs</b> ({} cycles) for {} tokens a sequence in {} chunk(s) )"
                     R"(of at most {}: {} prompt tokens/s per sequence, {} for the batch</p>)",
                     num(value(r, "ttft_us")), num(value(r, "latency_cycles")), num(value(cfg, "prefill_tokens")),
                     num(value(r["prefill"], "chunks")), num(value(r["prefill"], "chunk_tokens")),
                     num(value(r, "prompt_tokens_per_s")), num(value(r, "prompt_tokens_per_s_aggregate")));
  else if (mixed)
    b += fmt::format(R"(<p class="kpi">latency <b>{} µs</b> for the step ({} cycles): {} new tokens of {} sequences, {} tokens/s</p>)",
                     num(value(r, "latency_us")), num(value(r, "latency_cycles")), num(value(r["mixed"], "step_tokens")),
                     num(value(r["mixed"], "sequences")), num(value(r, "tokens_per_s_aggregate")));
  else
    b += fmt::format(R"(<p class="kpi">latency <b>{} µs</b> per token ({} cycles), {} tokens/s per user, {} tokens/s for the batch</p>)",
                     num(value(r, "latency_us")), num(value(r, "latency_cycles")), num(value(r, "tokens_per_s")),
                     num(value(r, "tokens_per_s_aggregate")));
  b += "<p class=note>from " + esc(source) + " (wafer-emu report; docs/report.md)</p>";
  {
    std::vector<std::vector<std::string>> rows;
    for (auto it = cfg.begin(); it != cfg.end(); ++it) rows.push_back({it.key(), text(cfg, it.key())});
    b += "<h2>Configuration</h2>" + table({"setting", "value"}, rows);
  }
  if (const ResultTable ch = prefill ? result_table(r["prefill"], "per_chunk") : ResultTable{}; ch.size() > 0) {
    std::vector<std::vector<std::string>> rows;
    for (std::size_t i = 0; i < ch.size(); ++i)
      rows.push_back({num(ch.number(i, "first token", "", NAN)), num(ch.number(i, "tokens", "", NAN)),
                      num(ch.number(i, "context", "tokens", NAN)), num(ch.number(i, "latency", "cycles", NAN)),
                      num(ch.number(i, "latency", "us", NAN))});  // (a cell that is no number reads "-", not 0)
    b += "<h2>Chunks of the prompt</h2><p class=note>one after another; the figures below the critical path's (the "
         "wafer's maps, SRAM and network) are the last chunk's (docs/mapping.md section 3c)</p>" +
         table({"first token", "tokens", "context [tokens]", "latency [cycles]", "latency [us]"}, rows);
  }
  if (const ResultTable seqs = mixed ? result_table(r["mixed"], "per_sequence") : ResultTable{}; seqs.size() > 0) {
    std::vector<std::vector<std::string>> rows;
    for (std::size_t i = 0; i < seqs.size(); ++i) {
      auto cell = [&](const char* name, const char* unit) {
        const json* v = seqs.cell(i, seqs.column(name, unit));
        return !v ? std::string("-") : v->is_string() ? v->get<std::string>() : v->is_number() ? num(v->get<double>()) : std::string("-");
      };
      rows.push_back({cell("sequence", ""), cell("kind", ""), cell("tokens", ""), cell("context", "tokens")});
    }
    b += "<h2>Sequences of the step</h2>" + table({"sequence", "kind", "new tokens", "context [tokens]"}, rows);
  }

  // Causes: the per-layer table's columns in cycles but its total.
  const ResultTable per_layer = result_table(bd, "per_layer"), per_op = result_table(bd, "per_op");
  std::vector<std::string> causes;
  for (const auto& [name, unit] : per_layer.columns)
    if (unit == "cycles" && name != "total") causes.push_back(name);
  b += "<h2>Where the time goes: the critical path by cause</h2>";
  {
    std::vector<double> v;
    std::vector<std::vector<std::string>> rows;
    const double lat = value(r, "latency_cycles");
    for (const auto& c : causes) {
      v.push_back(value(bd, c));
      rows.push_back({c, num(value(bd, c)), num(lat > 0 ? 100.0 * value(bd, c) / lat : 0.0)});
    }
    b += stacked_bars({{"step", v}}, causes, "cycles", "critical path by cause");
    b += table({"cause", "cycles", "share [%]"}, rows);
  }
  // Per layer.
  if (per_layer.rows) {
    std::vector<std::pair<std::string, std::vector<double>>> bars;
    std::vector<std::vector<std::string>> rows;
    for (std::size_t i = 0; i < per_layer.size(); ++i) {
      std::vector<double> v;
      std::vector<std::string> cells{per_layer.str(i, "layer"), num(per_layer.number(i, "total", "cycles")),
                                     num(per_layer.number(i, "total", "us")), num(per_layer.number(i, "share", "%"))};
      for (const auto& c : causes) {
        const double x = per_layer.number(i, c, "cycles");
        v.push_back(x);
        cells.push_back(num(x));
      }
      bars.emplace_back(per_layer.str(i, "layer"), std::move(v));
      rows.push_back(std::move(cells));
    }
    std::vector<std::string> head{"layer", "total [cycles]", "total [us]", "share [%]"};
    for (const auto& c : causes) head.push_back(c + " [cycles]");
    b += "<h2>Per layer and cause</h2>" + stacked_bars(bars, causes, "cycles", "critical path per layer");
    b += table(head, rows);
  }
  if (per_op.rows) {
    std::vector<std::pair<std::string, std::vector<double>>> bars;
    for (std::size_t i = 0; i < per_op.size(); ++i) {
      std::vector<double> v;
      for (const auto& c : causes) v.push_back(per_op.number(i, c, "cycles"));
      bars.emplace_back(per_op.str(i, "operator"), std::move(v));
    }
    b += "<h2>Per operator and cause</h2>" + stacked_bars(bars, causes, "cycles", "critical path per operator");
  }

  // The wafer.
  const json* reg = r.contains("regions") && r["regions"].is_object() ? &r["regions"] : nullptr;
  if (!reg) {
    b += "<h2>The wafer</h2><p class=note>These results have no <code>regions</code> section (written by an older wafer-emu): "
         "no maps.</p>";
  } else {
    const int cell = int(value(*reg, "cell_side"));
    b += fmt::format("<h2>The wafer</h2><p class=note>{} x {} logical tiles as {} x {} cells of {} x {} tiles.</p>",
                     num(value(*reg, "logical_width")), num(value(*reg, "logical_height")), num(value(*reg, "columns")),
                     num(value(*reg, "rows")), cell, cell);
    // Layer legend.
    std::map<int, std::string> names;
    const ResultTable layers = result_table(*reg, "layers");
    for (std::size_t i = 0; i < layers.size(); ++i) names[int(layers.number(i, "index", "", -1))] = layers.str(i, "layer");
    const int nl = int(names.size());
    for (int k = 0; reg->contains(fmt::format("wafer_{}", k)); ++k) {
      const std::string wk = fmt::format("wafer_{}", k);
      const json& w = (*reg)[wk];
      b += fmt::format("<h2>Wafer {}</h2>", k);
      const Matrix lay = matrix(w, "layer");
      if (lay.ok()) {
        std::set<int> present;
        for (double v : lay.v)
          if (std::isfinite(v)) present.insert(int(v));
        b += "<figure><figcaption><b>Placement</b>: the layer held by most used tiles of each cell</figcaption>";
        b += svg_cells(lay, [&](double v) { return std::isfinite(v) ? layer_colour(int(v), nl) : std::string(); }, "placement");
        b += "<div class=note>";
        for (int id : present) {
          const std::string nm = id == -1 ? "idle" : names.count(id) ? names[id] : fmt::format("layer #{}", id);
          b += fmt::format(R"(<span style="white-space:nowrap"><svg width="10" height="10"><rect width="10" height="10" fill="{}"/></svg> {}</span> )",
                           layer_colour(id, nl), esc(nm));
        }
        b += "</div></figure>";
        out.csv.emplace_back(wk + ".layer", csv_of(lay));
      }
      struct H {
        const char* key;
        const char* title;
        const char* what;
        bool percent;
      };
      for (const H& h : {H{"link_utilisation", "Link utilisation", "busy cycles of the cell's outgoing links over the step", true},
                         H{"tile_busy", "Tiles busy", "share of the step the cell's cores ran tasks", true},
                         H{"sram_use", "SRAM use", "bytes allocated over the cell's SRAM", true},
                         H{"tiles_used", "Tiles used", "tiles with a program", false},
                         H{"extra_hops", "Repair detours", "physical hops beyond one of the links east and south of the cell's tiles", false}}) {
        const Matrix m = matrix(w, h.key);
        if (!m.ok()) continue;
        b += heatmap(m, h.title, h.what, h.percent);
        out.csv.emplace_back(wk + "." + h.key, csv_of(m));
      }
    }
    // One physical wafer's defects and repair (`prefix`: its CSVs' names).
    auto physical = [&](const json& rp, const std::string& prefix) {
      std::vector<std::vector<std::string>> rows;
      for (const char* k : {"scheme", "complete", "defects", "failed_tiles", "usable_tiles", "spare_tiles_used", "displaced_tiles",
                            "links_detoured", "extra_hops", "links_without_path"})
        rows.push_back({k, text(rp, k)});
      b += table({"", "value"}, rows);
      const Matrix dm = matrix(rp, "defect_map"), sp = matrix(rp, "spares_used"), mv = matrix(rp, "displaced");
      if (dm.ok() && sp.ok() && mv.ok()) {
        // One picture: displaced tiles grey, spares used blue, defects red (on top), a spare used that has a defect
        // (a link's: the tile works) purple.
        Matrix kind = dm;
        for (std::size_t i = 0; i < kind.v.size(); ++i)
          kind.v[i] = dm.v[i] > 0 && sp.v[i] > 0 ? 4 : dm.v[i] > 0 ? 3 : sp.v[i] > 0 ? 2 : mv.v[i] > 0 ? 1 : 0;
        const std::array<const char*, 5> col{"", "#b8b8b8", "#2f6fdf", "#e02020", "#8e44ad"};
        b += fmt::format("<figure><figcaption><b>The physical wafer</b> ({} x {} tiles, cells of {} x {}): "
                         "<span style=\"color:#e02020\">■</span> defects, <span style=\"color:#2f6fdf\">■</span> spare tiles used, "
                         "<span style=\"color:#8e44ad\">■</span> both, "
                         "<span style=\"color:#888\">■</span> tiles repair displaced</figcaption>",
                         num(value(rp, "physical_width")), num(value(rp, "physical_height")), num(value(rp, "cell_side")),
                         num(value(rp, "cell_side")));
        b += svg_cells(kind, [&](double v) { return std::string(col[std::size_t(std::clamp(int(v), 0, 4))]); }, "defects and repair");
        b += "</figure>";
        out.csv.emplace_back(prefix + "defect_map", csv_of(dm));
        out.csv.emplace_back(prefix + "spares_used", csv_of(sp));
        out.csv.emplace_back(prefix + "displaced", csv_of(mv));
      }
    };
    // Maps of their own: each wafer's (regions.wafer_K.repair); one map for every wafer: regions.repair.
    bool own = false;
    for (int k = 0; reg->contains(fmt::format("wafer_{}", k)); ++k) {
      const json& w = (*reg)[fmt::format("wafer_{}", k)];
      if (!w.is_object() || !w.contains("repair") || !w["repair"].is_object()) continue;
      if (!own) b += "<h2>Defects and repair</h2><p class=note>Each wafer has a defect map of its own.</p>";
      own = true;
      b += fmt::format("<h3>Wafer {}</h3>", k);
      physical(w["repair"], fmt::format("wafer_{}.repair.", k));
    }
    if (!own && reg->contains("repair") && (*reg)["repair"].is_object()) {
      const json& rp = (*reg)["repair"];
      const double wafers = value(cfg, "wafers");
      b += "<h2>Defects and repair</h2>";
      if (wafers > 1)
        b += fmt::format("<p class=note>One map is every wafer's (docs/mapping.md section 5): the counts below are "
                         "each of the {} wafers'.</p>", num(wafers));
      physical(rp, "repair.");
    } else if (!own) {
      b += "<h2>Defects and repair</h2><p class=note>No defects given: the wafer is perfect, repair was not needed.</p>";
    }
  }
  out.html = page(title, b);
  return out;
}

// ---- study -------------------------------------------------------------------------------------------------

Output from_study(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  const fs::path pf = dir / "points.jsonl";
  std::error_code ec;
  if (!fs::exists(pf, ec))
    throw hw::InputError(fmt::format("{}: holds no results (no points.jsonl: not a wafer-emu sweep --out folder)", dir.string()));
  if (!fs::is_regular_file(pf, ec))  // (a device or a pipe in its place: /dev/zero was read until the memory ran out)
    throw hw::InputError(fmt::format("{}: is not a file (a device, a pipe or a folder): not a study's points", pf.string()));
  std::ifstream in(pf, std::ios::binary);
  if (!in) throw hw::InputError(fmt::format("{}: cannot read", pf.string()));
  std::vector<std::pair<std::size_t, json>> pts;  // (line number, point)
  std::string line;
  std::size_t lineno = 0;
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);
  // (read as sweep --summarize reads them, sweep::PointsFile: a line that is no JSON, a blank one included, is
  // damage but for the last, which may be being written; a line without a whole index is not a point's)
  for (const auto& l : lines) {
    ++lineno;
    try {
      json j = json::parse(l);
      if (!j.is_object() || !j.contains("index") || !j["index"].is_number_integer())
        throw hw::InputError(fmt::format("{}:{}: not a point line", pf.string(), lineno));
      if (const std::string k = hw::repeated_key<json>(l); !k.empty())  // (as sweep::PointsFile)
        throw hw::InputError(fmt::format("{}:{}: key '{}' is given twice in one line (edited?)", pf.string(), lineno, k));
      pts.emplace_back(lineno, std::move(j));
    } catch (const json::exception&) {
      if (lineno == lines.size()) continue;  // a last line being written
      throw hw::InputError(fmt::format("{}:{}: a line that is not JSON before the last line; the file is damaged", pf.string(), lineno));
    }
  }
  if (pts.empty()) throw hw::InputError(fmt::format("{}: holds no results (no finished point)", pf.string()));
  const sweep::Study st = sweep::read_dir_study(dir);  // its schema and hash checked as sweep --summarize does
  sweep::check_inputs(dir, st, "restore the file to draw them");  // (as sweep --summarize)
  // Each point of this study, within its count, the first line of an index taken, its settings the study's at its
  // index (as sweep --summarize reads them: sweep::PointsFile).
  std::set<std::int64_t> seen;
  sweep::Resolver resolver(st);  // (each point's wafer clock)
  std::vector<std::pair<json, json>> kept;  // (point, its settings)
  for (auto& [n, j] : pts) {
    if (!j.contains("study") || j["study"] != st.hash)
      throw hw::InputError(fmt::format("{}:{}: a point of study {}, not of this folder's {}", pf.string(), n,
                                       j.contains("study") ? j["study"].dump() : std::string("none"), st.hash));
    if (!j.contains("index") || !j["index"].is_number_integer() || j["index"].get<std::int64_t>() < 0 ||
        j["index"].get<std::int64_t>() >= st.points())
      throw hw::InputError(fmt::format("{}:{}: point {} is outside the study's {} points", pf.string(), n,
                                       j.contains("index") ? j["index"].dump() : std::string("(none)"), st.points()));
    if (!seen.insert(j["index"].get<std::int64_t>()).second) continue;
    sweep::check_point_line(sweep::ojson::parse(lines[n - 1]), st, j["index"].get<std::int64_t>(),  // (as written: in order)
                            fmt::format("{}:{}", pf.string(), n), &resolver);
    json settings = json::parse(st.settings(j["index"].get<std::int64_t>()).dump());
    kept.emplace_back(std::move(j), std::move(settings));
  }

  // Group by every setting but the seed; placement and density first in the label.
  struct Group {
    std::string placement, density, rest;
    std::vector<double> lat;
    std::int64_t failed = 0;
    std::map<std::string, std::int64_t> reasons;
    std::map<std::string, double> causes;  // summed over ok points
  };
  std::map<std::tuple<std::string, double, std::string>, Group> groups;
  std::set<std::string> cause_names;
  for (const auto& [p, s] : kept) {
    std::string placement = s.contains("placement") ? s["placement"].dump() : "\"layer-bands\"";
    placement.erase(std::remove(placement.begin(), placement.end(), '"'), placement.end());
    const double dens = s.contains("density") && s["density"].is_number() ? s["density"].get<double>() : -1.0;
    std::string rest;
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (it.key() == "seed" || it.key() == "placement" || it.key() == "density") continue;
      if (st.axis_of(it.key()).empty()) continue;  // (not swept: by an axis of its own or a joint one)
      std::string v = it.value().dump();
      v.erase(std::remove(v.begin(), v.end(), '"'), v.end());
      rest += (rest.empty() ? "" : ", ") + it.key() + " " + v;
    }
    Group& g = groups[{placement, dens, rest}];
    g.placement = placement;
    g.density = dens < 0 ? "no defects" : fmt::format("{} /cm²", num(dens));
    g.rest = rest;
    if (p["status"] == "ok" && p.contains("latency_us") && p["latency_us"].is_number()) {
      g.lat.push_back(p["latency_us"].get<double>());
      if (p.contains("breakdown_cycles") && p["breakdown_cycles"].is_object())
        for (auto it = p["breakdown_cycles"].begin(); it != p["breakdown_cycles"].end(); ++it)
          if (it.value().is_number()) g.causes[it.key()] += it.value().get<double>(), cause_names.insert(it.key());
    } else {
      ++g.failed;
      std::string why = p.contains("failure") && p["failure"].is_object()
                            ? p["failure"].value("stage", std::string("?")) + ": " + p["failure"].value("reason", std::string("?"))
                            : std::string("failed");
      ++g.reasons[sweep::reason_class(why)];
    }
  }
  std::int64_t ok = 0, failed = 0;
  double lo = INFINITY, hi = -INFINITY;
  for (auto& [k, g] : groups) {
    std::sort(g.lat.begin(), g.lat.end());
    ok += std::int64_t(g.lat.size()), failed += g.failed;
    if (!g.lat.empty()) lo = std::min(lo, g.lat.front()), hi = std::max(hi, g.lat.back());
  }
  std::string b;
  const std::string title = fmt::format("Study {} ({})", st.name.empty() ? st.hash : st.name, st.hash);
  b += "<h1>" + esc(title) + "</h1>";
  b += fmt::format(R"(<p class="kpi">{} of {} point{} finished: {} ok, {} failed; {} settings</p>)", kept.size(), st.points(),
                   st.points() == 1 ? "" : "s", ok,
                   failed, groups.size());
  b += "<p class=note>from " + esc(dir.string()) + " (wafer-emu report; docs/report.md). Settings group the points of every seed.</p>";

  // Distributions: one row per setting, a box from p5 to p95, the median, the points as dots.
  b += "<h2>Latency per token, per placement and defect density</h2>";
  if (ok == 0) {
    b += "<p class=note>No point finished ok: nothing to plot.</p>";
  } else {
    if (hi <= lo) hi = lo + 1;
    const double pad = (hi - lo) * 0.05;
    const double x0 = lo - pad, x1 = hi + pad;
    const int lw = 330, pw = 560, rh = 22, top = 10;
    const int h = top + int(groups.size()) * rh + 40;
    b += fmt::format(R"(<svg class="dist" role="img" aria-label="latency distributions" width="{}" height="{}" viewBox="0 0 {} {}">)",
                     lw + pw + 70, h, lw + pw + 70, h);
    auto X = [&](double v) { return lw + (v - x0) / (x1 - x0) * pw; };
    int i = 0;
    for (const auto& [k, g] : groups) {
      const int y = top + i * rh;
      const std::string label = g.placement + ", " + g.density + (g.rest.empty() ? "" : ", " + g.rest);
      b += fmt::format(R"(<text x="{}" y="{}" font-size="11" text-anchor="end">{}</text>)", lw - 8, y + 14, esc(label));
      b += fmt::format(R"(<line x1="{}" x2="{}" y1="{}" y2="{}" stroke="#eee"/>)", lw, lw + pw, y + 10, y + 10);
      if (!g.lat.empty()) {
        const double p5 = sweep::percentile(g.lat, 5), p50 = sweep::percentile(g.lat, 50), p95 = sweep::percentile(g.lat, 95);
        b += fmt::format(R"(<rect x="{:.1f}" y="{}" width="{:.1f}" height="14" fill="#9ecae1" stroke="#3182bd"><title>p5 {} µs, p50 {} µs, p95 {} µs, {} points</title></rect>)",
                         X(p5), y + 3, std::max(1.0, X(p95) - X(p5)), num(p5, 6), num(p50, 6), num(p95, 6), g.lat.size());
        b += fmt::format(R"(<line x1="{0:.1f}" x2="{0:.1f}" y1="{1}" y2="{2}" stroke="#08306b" stroke-width="2"/>)", X(p50), y + 1, y + 19);
        for (double v : g.lat) b += fmt::format(R"(<circle cx="{:.1f}" cy="{}" r="2" fill="#e6550d" fill-opacity="0.7"/>)", X(v), y + 10);
      }
      if (g.failed) b += fmt::format(R"(<text x="{}" y="{}" font-size="10" fill="#a00">{} failed</text>)", lw + pw + 8, y + 14, g.failed);
      ++i;
    }
    const int ay = top + int(groups.size()) * rh + 4;
    b += fmt::format(R"(<line x1="{}" x2="{}" y1="{}" y2="{}" stroke="#333"/>)", lw, lw + pw, ay, ay);
    for (int t = 0; t <= 4; ++t) {
      const double v = x0 + (x1 - x0) * t / 4.0;
      b += fmt::format(R"(<line x1="{0:.1f}" x2="{0:.1f}" y1="{1}" y2="{2}" stroke="#333"/><text x="{0:.1f}" y="{3}" font-size="10" text-anchor="middle">{4}</text>)",
                       X(v), ay, ay + 4, ay + 16, num(v, 6));
    }
    b += fmt::format(R"(<text x="{}" y="{}" font-size="11" text-anchor="middle">latency per token [µs] (box p5-p95, bar the median, dots the points)</text></svg>)",
                     lw + pw / 2, ay + 32);
  }
  // The table.
  {
    std::vector<std::vector<std::string>> rows;
    for (const auto& [k, g] : groups) {
      auto pc = [&](double p) { return g.lat.empty() ? std::string("-") : num(sweep::percentile(g.lat, p), 6); };
      double mean = 0;
      for (double v : g.lat) mean += v;
      std::string reasons;
      for (const auto& [r, n] : g.reasons) reasons += fmt::format("{}{} x {}", reasons.empty() ? "" : "; ", n, r);
      rows.push_back({g.placement, g.density, g.rest, std::to_string(g.lat.size() + std::size_t(g.failed)), std::to_string(g.lat.size()),
                      std::to_string(g.failed), g.lat.empty() ? "-" : num(mean / double(g.lat.size()), 6), pc(5), pc(50), pc(95), pc(100),
                      reasons.empty() ? "-" : reasons});
    }
    b += table({"placement", "density", "other settings", "points", "ok", "failed", "mean [µs]", "p5 [µs]", "p50 [µs]", "p95 [µs]",
                "max [µs]", "failures"},
               rows);
  }
  // Mean cause split per setting.
  if (!cause_names.empty()) {
    std::vector<std::string> series(cause_names.begin(), cause_names.end());
    std::vector<std::pair<std::string, std::vector<double>>> bars;
    for (const auto& [k, g] : groups) {
      if (g.lat.empty()) continue;
      std::vector<double> v;
      for (const auto& c : series) v.push_back(g.causes.count(c) ? g.causes.at(c) / double(g.lat.size()) : 0.0);
      bars.emplace_back(g.placement + ", " + g.density + (g.rest.empty() ? "" : ", " + g.rest), std::move(v));
    }
    b += "<h2>Critical path by cause, mean over the seeds</h2>" + stacked_bars(bars, series, "cycles", "causes per setting", 420);
  }
  Output out;
  out.html = page(title, b);
  return out;
}

}  // namespace wafer::apps::report
