// Defect maps: storage, the Poisson / negative-binomial generators, CSV and JSON files.
#include "hw/defect_map.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <charconv>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>

#include "hw/error.h"
#include "hw/json_input.h"
#include "hw/random.h"

namespace wafer::hw {

const char* to_string(DefectKind k) {
  switch (k) {
    case DefectKind::Core: return "core";
    case DefectKind::Router: return "router";
    case DefectKind::Sram: return "sram";
    case DefectKind::Link: return "link";
  }
  return "?";
}

const char* to_string(DefectModel m) {
  switch (m) {
    case DefectModel::Poisson: return "poisson";
    case DefectModel::NegBinomial: return "negbin";
  }
  return "?";
}

DefectModel parse_defect_model(std::string_view name) {
  if (name == "poisson") return DefectModel::Poisson;
  if (name == "negbin") return DefectModel::NegBinomial;
  throw InputError(fmt::format("unknown defect model '{}' (known: poisson, negbin)", name));
}

namespace {

bool parse_kind(std::string_view s, DefectKind& k) {
  std::string l(s);
  std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (l == "core") k = DefectKind::Core;
  else if (l == "router") k = DefectKind::Router;
  else if (l == "sram") k = DefectKind::Sram;
  else if (l == "link") k = DefectKind::Link;
  else return false;
  return true;
}

bool parse_dir(std::string_view s, Dir& d) {
  if (s == "N" || s == "n") d = Dir::North;
  else if (s == "E" || s == "e") d = Dir::East;
  else if (s == "S" || s == "s") d = Dir::South;
  else if (s == "W" || s == "w") d = Dir::West;
  else return false;
  return true;
}

std::string prefix(std::string_view where) { return where.empty() ? std::string() : std::string(where) + ": "; }

}  // namespace

DefectMap::DefectMap(Grid physical) : grid_(physical), tile_bits_(physical.size(), 0) {}

bool DefectMap::link_failed(Coord from, Dir d) const {
  const Coord to = step(from, d);
  if (!grid_.inside(from) || !grid_.inside(to) || d == Dir::Ramp) return true;
  if (tile_bits_.empty()) return false;
  switch (d) {
    case Dir::East: return tile_bits_[grid_.index(from)] & kLinkEast;
    case Dir::South: return tile_bits_[grid_.index(from)] & kLinkSouth;
    case Dir::West: return tile_bits_[grid_.index(to)] & kLinkEast;
    case Dir::North: return tile_bits_[grid_.index(to)] & kLinkSouth;
    case Dir::Ramp: break;
  }
  return true;
}

std::size_t DefectMap::count(DefectKind k) const {
  return std::size_t(std::count_if(defects_.begin(), defects_.end(), [k](const Defect& d) { return d.kind == k; }));
}

std::uint8_t DefectMap::flag_of(const Defect& d) {
  switch (d.kind) {
    case DefectKind::Core: return kCore;
    case DefectKind::Sram: return kSram;
    case DefectKind::Router: return kRouterDead;
    case DefectKind::Link: return d.dir == Dir::East ? kLinkEast : kLinkSouth;
  }
  return 0;
}

bool DefectMap::contains(Defect d) const {
  if (!grid_.inside(d.at) || tile_bits_.empty()) return false;
  if (d.kind == DefectKind::Link) {
    if (d.dir == Dir::Ramp || !grid_.inside(step(d.at, d.dir))) return false;
    if (d.dir == Dir::North || d.dir == Dir::West) d = {DefectKind::Link, step(d.at, d.dir), opposite(d.dir)};
  }
  return tile_bits_[grid_.index(d.at)] & flag_of(d);
}

void DefectMap::add(Defect d, std::string_view where) {
  if (!grid_.inside(d.at))
    throw InputError(fmt::format("{}{} defect at ({}, {}) is outside the physical grid {} x {}", prefix(where),
                                 to_string(d.kind), d.at.x, d.at.y, grid_.width, grid_.height));
  if (d.kind == DefectKind::Link) {
    if (d.dir == Dir::Ramp) throw InputError(fmt::format("{}a link defect needs a direction N, E, S or W", prefix(where)));
    const Coord to = step(d.at, d.dir);
    if (!grid_.inside(to))
      throw InputError(fmt::format("{}link defect at ({}, {}) towards {} leaves the physical grid {} x {}", prefix(where),
                                   d.at.x, d.at.y, hw::to_string(d.dir), grid_.width, grid_.height));
    if (d.dir == Dir::North || d.dir == Dir::West) d = {DefectKind::Link, to, opposite(d.dir)};
  } else {
    d.dir = Dir::East;
  }
  std::uint8_t& bits = tile_bits_[grid_.index(d.at)];
  const std::uint8_t flag = flag_of(d);
  if (bits & flag) {
    if (d.kind == DefectKind::Link)
      throw InputError(fmt::format("{}duplicate link defect between ({}, {}) and ({}, {})", prefix(where), d.at.x,
                                   d.at.y, step(d.at, d.dir).x, step(d.at, d.dir).y));
    throw InputError(fmt::format("{}duplicate {} defect at ({}, {})", prefix(where), to_string(d.kind), d.at.x, d.at.y));
  }
  if (d.kind != DefectKind::Link) {
    if (!(bits & kTileDead)) ++dead_tiles_;
    bits |= kTileDead;
  }
  bits |= flag;
  defects_.push_back(d);
}

// ---- generators --------------------------------------------------------------------------------------

void validate(const DefectGenParams& p, const WaferSpec& spec) {
  if (!std::isfinite(p.density_per_cm2) || p.density_per_cm2 < 0)
    throw InputError(fmt::format("defect density {} per cm^2 must be finite and >= 0", p.density_per_cm2));
  if (!std::isfinite(p.alpha) || p.alpha <= 0)
    throw InputError(fmt::format("clustering parameter alpha = {} must be finite and > 0", p.alpha));
  if (p.alpha < 0.01 || p.alpha > 1e4)
    throw InputError(fmt::format("clustering parameter alpha = {} is outside [0.01, 10000]", p.alpha));
  for (double s : {p.share_core, p.share_sram, p.share_router, p.share_link})
    if (!std::isfinite(s) || s < 0) throw InputError(fmt::format("defect kind share {} must be finite and >= 0", s));
  if (p.share_core + p.share_sram + p.share_router + p.share_link <= 0)
    throw InputError("defect kind shares sum to zero");
  const double mean = spec.area_cm2() * p.density_per_cm2;
  if (mean > double(spec.physical_tiles()))
    throw InputError(fmt::format("defect density {} per cm^2 puts {:.0f} defects on average on a wafer of {} tiles",
                                 p.density_per_cm2, mean, spec.physical_tiles()));
}

DefectMap generate_defects(const WaferSpec& spec, const DefectGenParams& p, std::uint64_t seed) {
  validate(p, spec);
  const Grid g = spec.physical();
  DefectMap map(g);
  Rng rng(seed);
  const double area = spec.area_cm2();
  double density = p.density_per_cm2;
  if (p.model == DefectModel::NegBinomial) density = rng.gamma(p.alpha, p.density_per_cm2 / p.alpha);
  const double mean = std::min(area * density, 16.0 * double(g.size()));
  const std::uint64_t n = rng.poisson(mean);

  const double total = p.share_core + p.share_sram + p.share_router + p.share_link;
  const double c_core = p.share_core / total, c_sram = c_core + p.share_sram / total,
               c_router = c_sram + p.share_router / total;
  const std::uint64_t tiles = g.size();
  const std::uint64_t links_e = std::uint64_t(g.width - 1) * std::uint64_t(g.height);
  const std::uint64_t links_s = std::uint64_t(g.width) * std::uint64_t(g.height - 1);
  for (std::uint64_t i = 0; i < n; ++i) {
    const double u = rng.uniform();
    Defect d;
    if (u < c_router || links_e + links_s == 0) {
      d.kind = u < c_core ? DefectKind::Core : u < c_sram ? DefectKind::Sram : DefectKind::Router;
      d.at = g.coord(TileIndex(rng.below(tiles)));
    } else {
      d.kind = DefectKind::Link;
      std::uint64_t r = rng.below(links_e + links_s);
      if (r < links_e) {
        d.dir = Dir::East;
        d.at = {std::int32_t(r % std::uint64_t(g.width - 1)), std::int32_t(r / std::uint64_t(g.width - 1))};
      } else {
        r -= links_e;
        d.dir = Dir::South;
        d.at = {std::int32_t(r % std::uint64_t(g.width)), std::int32_t(r / std::uint64_t(g.width))};
      }
    }
    // Merge a repeated draw: the element has already failed.
    const bool dup = map.contains(d);
    if (!dup) map.add(d);
  }
  return map;
}

// ---- files -------------------------------------------------------------------------------------------

namespace {

std::string trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r')) --e;
  return std::string(s.substr(b, e - b));
}

bool parse_int(const std::string& s, std::int32_t& out) {
  std::int64_t v = 0;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc() || ptr != end || s.empty() || v < -(1ll << 30) || v > (1ll << 30)) return false;
  out = std::int32_t(v);
  return true;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

std::string extension(const std::filesystem::path& file) { return lower(file.extension().string()); }

// Some 30 million defect lines: far beyond any plausible map. Refuse larger files before reading them.
constexpr std::uintmax_t kMaxDefectFileBytes = 512u << 20;

std::string read_all(const std::filesystem::path& file) {
  std::error_code ec;
  const std::uintmax_t bytes = std::filesystem::file_size(file, ec);
  if (!ec && bytes > kMaxDefectFileBytes)
    throw InputError(fmt::format("{}: {} bytes is more than a defect map can hold (limit {} MiB)", file.string(), bytes,
                                 kMaxDefectFileBytes >> 20));
  return read_input_file(file, "defect map", kMaxDefectFileBytes);
}

DefectMap read_csv(const std::filesystem::path& file, const std::string& text, const WaferSpec& spec) {
  const std::string f = file.string();
  // (a map without defects is its header line: an empty file is more likely one cut short)
  if (text.empty())
    throw InputError(fmt::format("{}: the file is empty (a map without defects has its header line 'kind,x,y,dir')", f));
  DefectMap map(spec.physical());
  const Grid g = spec.physical();
  std::istringstream in(text);
  std::string raw;
  bool seen_content = false;
  for (int line = 1; std::getline(in, raw); ++line) {
    const std::string where = fmt::format("{}:{}", f, line);
    std::string s = trim(raw);
    // The comment format_defects writes names the physical grid the map is of: another wafer's map is refused,
    // as a JSON map's "grid" is.
    if (int w = 0, h = 0; std::sscanf(s.c_str(), "# wafer-emu defect map: physical grid %d x %d", &w, &h) == 2 &&
                          (w != g.width || h != g.height))
      throw InputError(fmt::format("{}: the map is of a physical grid {} x {}, the wafer's is {} x {}", where, w, h,
                                   g.width, g.height));
    if (s.empty() || s[0] == '#') continue;
    std::vector<std::string> fields;
    std::size_t start = 0;
    for (;;) {
      std::size_t comma = s.find(',', start);
      fields.push_back(trim(std::string_view(s).substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    const bool first = !seen_content;
    seen_content = true;
    if (first && lower(fields[0]) == "kind") {
      const bool ok = (fields.size() == 3 || fields.size() == 4) && lower(fields[1]) == "x" && lower(fields[2]) == "y" &&
                      (fields.size() == 3 || lower(fields[3]) == "dir");
      if (!ok) throw InputError(fmt::format("{}: bad header '{}' (expected 'kind,x,y,dir')", where, s));
      continue;
    }
    if (fields.size() < 3 || fields.size() > 4)
      throw InputError(fmt::format("{}: expected 'kind,x,y[,dir]', got '{}'", where, s));
    Defect d;
    if (!parse_kind(fields[0], d.kind))
      throw InputError(fmt::format("{}: unknown defect kind '{}' (known: core, router, sram, link)", where, fields[0]));
    if (!parse_int(fields[1], d.at.x)) throw InputError(fmt::format("{}: x '{}' is not an integer", where, fields[1]));
    if (!parse_int(fields[2], d.at.y)) throw InputError(fmt::format("{}: y '{}' is not an integer", where, fields[2]));
    const std::string dir = fields.size() == 4 ? fields[3] : std::string();
    if (d.kind == DefectKind::Link) {
      if (dir.empty()) throw InputError(fmt::format("{}: a link defect needs a direction (N, E, S or W)", where));
      if (!parse_dir(dir, d.dir)) throw InputError(fmt::format("{}: unknown direction '{}' (N, E, S or W)", where, dir));
    } else if (!dir.empty()) {
      throw InputError(fmt::format("{}: a {} defect takes no direction, got '{}'", where, to_string(d.kind), dir));
    }
    map.add(d, where);
  }
  return map;
}

DefectMap read_json(const std::filesystem::path& file, const std::string& text, const WaferSpec& spec) {
  const std::string f = file.string();
  const nlohmann::json j = parse_input_json<nlohmann::json>(text, f);
  if (!j.is_object()) throw InputError(fmt::format("{}: a defect map is a JSON object with a 'defects' array", f));
  for (const auto& [k, v] : j.items())
    if (k != "defects" && k != "grid") throw InputError(fmt::format("{}: unknown key '{}' (known: defects, grid)", f, k));
  const Grid g = spec.physical();
  if (j.contains("grid")) {
    const auto& gj = j["grid"];
    if (!gj.is_object() || !gj.contains("width") || !gj.contains("height") || !gj["width"].is_number_integer() ||
        !gj["height"].is_number_integer() || gj.size() != 2 ||
        (gj["width"].is_number_unsigned() && gj["width"].get<std::uint64_t>() > (1ull << 30)) ||
        (gj["height"].is_number_unsigned() && gj["height"].get<std::uint64_t>() > (1ull << 30)))
      throw InputError(fmt::format("{}: 'grid' must be {{\"width\": integer, \"height\": integer}}", f));
    if (gj["width"].get<std::int64_t>() != g.width || gj["height"].get<std::int64_t>() != g.height)
      throw InputError(fmt::format("{}: grid {} x {} does not match the wafer's physical grid {} x {}", f,
                                   gj["width"].get<std::int64_t>(), gj["height"].get<std::int64_t>(), g.width, g.height));
  }
  if (!j.contains("defects")) throw InputError(fmt::format("{}: missing required field 'defects'", f));
  const auto& arr = j["defects"];
  if (!arr.is_array()) throw InputError(fmt::format("{}: 'defects' must be an array", f));
  DefectMap map(g);
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const std::string where = fmt::format("{}: defects[{}]", f, i);
    const auto& e = arr[i];
    if (!e.is_object()) throw InputError(fmt::format("{}: an entry is an object {{\"kind\", \"x\", \"y\"[, \"dir\"]}}", where));
    for (const auto& [k, v] : e.items())
      if (k != "kind" && k != "x" && k != "y" && k != "dir")
        throw InputError(fmt::format("{}: unknown key '{}' (known: kind, x, y, dir)", where, k));
    for (const char* k : {"kind", "x", "y"})
      if (!e.contains(k)) throw InputError(fmt::format("{}: missing required field '{}'", where, k));
    Defect d;
    if (!e["kind"].is_string() || !parse_kind(e["kind"].get<std::string>(), d.kind))
      throw InputError(fmt::format("{}: unknown defect kind {} (known: core, router, sram, link)", where, e["kind"].dump()));
    for (const char* k : {"x", "y"}) {
      const auto& v = e[k];
      // (an unsigned beyond int64's range reads as a negative int64: 2^64 - 1 as -1)
      if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() > (1ull << 30)) ||
          v.get<std::int64_t>() < -(1ll << 30) || v.get<std::int64_t>() > (1ll << 30))
        throw InputError(fmt::format("{}: '{}' must be an integer, got {}", where, k, v.dump()));
    }
    d.at = {std::int32_t(e["x"].get<std::int64_t>()), std::int32_t(e["y"].get<std::int64_t>())};
    if (d.kind == DefectKind::Link) {
      if (!e.contains("dir")) throw InputError(fmt::format("{}: a link defect needs 'dir' (N, E, S or W)", where));
      if (!e["dir"].is_string() || !parse_dir(e["dir"].get<std::string>(), d.dir))
        throw InputError(fmt::format("{}: unknown direction {} (N, E, S or W)", where, e["dir"].dump()));
    } else if (e.contains("dir")) {
      throw InputError(fmt::format("{}: a {} defect takes no 'dir'", where, to_string(d.kind)));
    }
    map.add(d, where);
  }
  return map;
}

}  // namespace

DefectMap read_defects(const std::filesystem::path& file, const WaferSpec& spec) {
  const std::string ext = extension(file);
  const std::string text = read_all(file);
  if (ext == ".csv") return read_csv(file, text, spec);
  if (ext == ".json") return read_json(file, text, spec);
  // Another name (a pipe, `--defects <(...)`, or /dev/stdin): the content decides, as the two formats cannot be
  // taken for each other: a JSON map is an object, and no line of a CSV map starts with '{'.
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string::npos && text[first] == '{' ? read_json(file, text, spec) : read_csv(file, text, spec);
}

std::string format_defects(const std::filesystem::path& file, const DefectMap& map) {
  const std::string ext = extension(file);
  std::string text;
  if (ext == ".csv") {
    text = fmt::format("# wafer-emu defect map: physical grid {} x {}, {} defects\nkind,x,y,dir\n", map.grid().width,
                       map.grid().height, map.size());
    for (const auto& d : map.defects()) {
      if (d.kind == DefectKind::Link) text += fmt::format("link,{},{},{}\n", d.at.x, d.at.y, to_string(d.dir));
      else text += fmt::format("{},{},{}\n", to_string(d.kind), d.at.x, d.at.y);
    }
  } else if (ext == ".json") {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& d : map.defects()) {
      nlohmann::json e{{"kind", to_string(d.kind)}, {"x", d.at.x}, {"y", d.at.y}};
      if (d.kind == DefectKind::Link) e["dir"] = to_string(d.dir);
      arr.push_back(std::move(e));
    }
    nlohmann::json j{{"grid", {{"width", map.grid().width}, {"height", map.grid().height}}}, {"defects", std::move(arr)}};
    text = j.dump(1) + "\n";
  } else {
    throw InputError(fmt::format("{}: a defect map file ends in .csv or .json", file.string()));
  }
  return text;
}

}  // namespace wafer::hw
