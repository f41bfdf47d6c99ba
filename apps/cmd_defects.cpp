// wafer-emu defects: generate defect maps (or read one), repair them, and compare Monte Carlo outcomes with
// the analytic yield models.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <exception>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "apps/cli.h"
#include "apps/decode_point.h"
#include "apps/journal.h"
#include "hw/defect_map.h"
#include "hw/error.h"
#include "hw/random.h"
#include "hw/repair.h"
#include "hw/wafer_spec.h"
#include "hw/yield.h"
#include "traces/report.h"

namespace wafer::apps {
namespace {

constexpr std::int64_t kMaxMaps = 1'000'000;

// What one repaired map contributes to the statistics.
struct MapFigures {
  std::int64_t defects = 0, dead_tiles = 0, usable_tiles = 0;
  bool complete = false;
  std::int64_t links = 0;          // logical links whose two ends are mapped
  std::int64_t links_no_path = 0;  // ... of which no healthy physical path exists
  std::int64_t extra_hops = 0;     // sum over links with a path of (hops - 1)
  std::int64_t max_extra = 0;
};

MapFigures measure(const hw::DefectMap& map, const hw::RepairResult& r) {
  MapFigures f;
  f.defects = std::int64_t(map.size());
  f.dead_tiles = std::int64_t(map.dead_tiles());
  f.complete = r.complete;
  f.usable_tiles = r.usable.area();
  const hw::RepairLinks l = hw::repair_links(r);
  f.links = l.links, f.links_no_path = l.no_path, f.extra_hops = l.extra_hops, f.max_extra = l.max_extra;
  return f;
}

// The Monte Carlo sums over maps 0 .. maps - 1, added in map order; a journal's record (exact: nlohmann writes a double
// with the digits that read back as the same double).
struct Totals {
  std::int64_t maps = 0;
  double sum_d = 0, sum_d2 = 0, sum_dead = 0, sum_usable = 0;
  std::int64_t zero = 0, complete = 0, min_usable = std::numeric_limits<std::int64_t>::max();
  std::int64_t links = 0, no_path = 0, extra = 0, max_extra = 0;

  void add(const MapFigures& f) {
    ++maps;
    sum_d += double(f.defects), sum_d2 += double(f.defects) * double(f.defects), sum_dead += double(f.dead_tiles);
    zero += f.defects == 0;
    complete += f.complete;
    sum_usable += double(f.usable_tiles);
    min_usable = std::min(min_usable, f.usable_tiles);
    links += f.links, no_path += f.links_no_path, extra += f.extra_hops;
    max_extra = std::max(max_extra, f.max_extra);
  }
  nlohmann::json to_json() const {
    return {{"maps", maps},         {"sum_defects", sum_d}, {"sum_defects_squared", sum_d2}, {"sum_failed_tiles", sum_dead},
            {"sum_usable", sum_usable}, {"zero", zero},       {"complete", complete},          {"min_usable", min_usable},
            {"links", links},       {"no_path", no_path},   {"extra_hops", extra},           {"max_extra", max_extra}};
  }
  // A record of `spec`'s maps; std::out_of_range saying what does not fit, the JSON library's words kept out.
  static Totals from_json(const nlohmann::json& j, const hw::WaferSpec& spec) {
    for (const char* k : {"maps", "sum_defects", "sum_defects_squared", "sum_failed_tiles", "sum_usable", "zero",
                          "complete", "min_usable", "links", "no_path", "extra_hops", "max_extra"}) {
      const auto it = j.is_object() ? j.find(k) : j.end();
      if (it == j.end()) throw std::out_of_range(fmt::format("no '{}'", k));
      if (!it->is_number() || (!std::string_view(k).starts_with("sum_") && !it->is_number_integer()))
        throw std::out_of_range(fmt::format("'{}' is {}, no {}", k, it->dump(), std::string_view(k).starts_with("sum_") ? "sum" : "count"));
    }
    Totals t;
    t.maps = j.at("maps").get<std::int64_t>();
    t.sum_d = j.at("sum_defects").get<double>(), t.sum_d2 = j.at("sum_defects_squared").get<double>();
    t.sum_dead = j.at("sum_failed_tiles").get<double>(), t.sum_usable = j.at("sum_usable").get<double>();
    t.zero = j.at("zero").get<std::int64_t>(), t.complete = j.at("complete").get<std::int64_t>();
    t.min_usable = j.at("min_usable").get<std::int64_t>();
    t.links = j.at("links").get<std::int64_t>(), t.no_path = j.at("no_path").get<std::int64_t>();
    t.extra = j.at("extra_hops").get<std::int64_t>(), t.max_extra = j.at("max_extra").get<std::int64_t>();
    // (sums a run could have made: a record edited or damaged in place would otherwise be taken, a fraction of maps
    // above 1, say)
    auto bad = [](const char* what) { throw std::out_of_range(fmt::format("its {} cannot come from the maps it counts", what)); };
    if (t.zero < 0 || t.zero > t.maps) bad("zero-defect count");
    if (t.complete < 0 || t.complete > t.maps) bad("complete count");
    if (t.links < 0 || t.no_path < 0 || t.no_path > t.links) bad("link counts");
    if (t.extra < 0 || t.max_extra < 0 || t.min_usable < 0) bad("hop or tile counts");
    for (double v : {t.sum_d, t.sum_d2, t.sum_dead, t.sum_usable})
      if (!std::isfinite(v) || v < 0) bad("sums");
    if (t.sum_d2 < t.sum_d) bad("sums");  // (each map's defects squared is at least its defects)
    // (a map's usable tiles are at most the logical array's and at least the fewest seen; its failed tiles at most
    // the physical grid's: 9e15 usable tiles gave a mean of 4.5e12 on a wafer of 893,064)
    const double logical = double(spec.logical_width) * double(spec.logical_height), physical = double(spec.physical().size());
    if (t.min_usable > std::int64_t(logical) || t.sum_usable > double(t.maps) * logical ||
        t.sum_usable < double(t.maps) * double(t.min_usable))
      bad("usable tiles");
    if (t.sum_dead > double(t.maps) * physical) bad("failed tiles");
    // (a map has at most the logical array's links, a link's detour is within the physical grid, the longest is one
    // of the sums, which have at most the longest on every link with a path: links 0 with 1e15 extra hops gave a
    // mean of 2e6 hops a link)
    const double w = double(spec.logical_width), h = double(spec.logical_height);
    if (double(t.links) > double(t.maps) * ((w - 1) * h + w * (h - 1))) bad("link counts");
    if (double(t.max_extra) > physical || t.max_extra > t.extra ||
        double(t.extra) > double(t.links - t.no_path) * double(t.max_extra))
      bad("hop counts");
    return t;
  }
};

// What a defect study's figures depend on, for its journal: the wafer's every parameter, the defect model and its
// parameters, the seed, the number of maps and the repair scheme.
std::string defects_settings(const hw::WaferSpec& spec, const hw::DefectGenParams& gen, std::uint64_t seed, std::int64_t maps,
                             const hw::RepairScheme& scheme) {
  nlohmann::ordered_json j;
  j["journal"] = 1;
  j["wafer"] = wafer_settings(spec);
  j["model"] = hw::to_string(gen.model);
  j["density"] = gen.density_per_cm2, j["alpha"] = gen.alpha;
  j["seed"] = seed, j["maps"] = maps;
  j["repair"] = std::string(scheme.name());
  return j.dump();
}

std::string rect_text(const hw::Rect& r) { return fmt::format("{} x {} at ({}, {})", r.w, r.h, r.x0, r.y0); }

int run_defects(const std::vector<std::string>& args) {
  po::options_description opts("defects options");
  opts.add_options()                                                                                  //
      ("wafer", po::value<std::string>()->default_value("wse3")->value_name("PRESET|FILE"), "wafer preset or file")  //
      ("density", po::value<double>()->default_value(0.1, "0.1")->value_name("D0"), "defect density D0 [defects/cm^2]")    //
      ("alpha", po::value<double>()->default_value(2.0)->value_name("A"),
       "negative-binomial clustering parameter (smaller = more clustered)")                             //
      ("model", po::value<std::string>()->default_value("poisson")->value_name("poisson|negbin"), "defect model")  //
      ("seed", po::value<std::string>()->default_value("1")->value_name("N"), "random seed (map i uses a seed derived from it)")  //
      ("maps", po::value<std::int64_t>()->default_value(100)->value_name("N"), "number of maps to generate and repair")  //
      ("repair", po::value<std::string>()->default_value("row-shift")->value_name("SCHEME"),
       fmt::format("repair scheme: {}", fmt::join(hw::repair_scheme_names(), ", ")).c_str())  //
      ("in", po::value<std::string>()->value_name("FILE"), "repair this defect map (.csv or .json; a name with neither, a pipe: read by its content) instead of generating")  //
      ("out", po::value<std::string>()->value_name("FILE"), "write the first map (or the --in map) as .csv or .json")  //
      ("threads", po::value<std::int64_t>()->value_name("N"),
       "maps generated and repaired side by side (default and most: the CPUs the process may use; the same figures for "
       "any N)");
  po::variables_map vm;
  if (!parse(args, opts, "defects",
             "[--wafer W] [--density D0] [--alpha A] [--model poisson|negbin] [--seed N] [--maps N] [--repair SCHEME] "
             "[--in FILE] [--out FILE] [--threads N] [--json PATH]",
             vm))
    return 0;

  // Validate everything before any work.
  const hw::WaferSpec spec = hw::resolve_wafer(vm["wafer"].as<std::string>());
  const hw::RepairScheme& scheme = hw::repair_scheme(vm["repair"].as<std::string>());
  hw::DefectGenParams gen;
  gen.model = hw::parse_defect_model(vm["model"].as<std::string>());
  gen.density_per_cm2 = vm["density"].as<double>();
  gen.alpha = vm["alpha"].as<double>();
  try {
    hw::validate(gen, spec);
  } catch (const hw::InputError& e) {  // (the option that gave the value: the generator's words name the parameter)
    throw hw::InputError(fmt::format("{}: {}", std::string_view(e.what()).find("alpha") != std::string_view::npos ? "--alpha" : "--density", e.what()));
  }
  if (!vm["alpha"].defaulted() && gen.model != hw::DefectModel::NegBinomial && !vm.count("in"))
    throw hw::InputError("--alpha applies to --model negbin (clustered defects)");
  const std::int64_t maps = vm["maps"].as<std::int64_t>();
  if (maps < 1 || maps > kMaxMaps) throw hw::InputError(fmt::format("--maps {} is outside [1, {}]", maps, kMaxMaps));
  const std::uint64_t seed = parse_seed(vm["seed"].as<std::string>());
  if (vm.count("threads")) {
    const std::int64_t n = vm["threads"].as<std::int64_t>();
    if (n < 1 || n > 1024) throw hw::InputError(fmt::format("--threads {} is outside [1, 1024]", n));
  }
  const bool from_file = vm.count("in") > 0;
  if (from_file)
    for (const char* o : {"maps", "density", "alpha", "model", "seed", "threads"})
      if (vm.count(o) && !vm[o].defaulted())
        throw hw::InputError(fmt::format("--{} does not apply with --in (the given map is repaired as it is)", o));
  if (vm.count("out")) {
    check_map_path(vm["out"].as<std::string>(), "--out");
    traces::check_writable(vm["out"].as<std::string>(), "--out");
  }
  check_apart(given_paths(vm, {"out", "json"}), given_paths(vm, {"in", "wafer"}));

  traces::Report report(from_file ? fmt::format("defect map {} on {}, repaired by {}", vm["in"].as<std::string>(),
                                                spec.name, scheme.name())
                                  : fmt::format("defect study: {} maps on {}, {} D0 = {} /cm^2, repaired by {}", maps,
                                                spec.name, hw::to_string(gen.model), gen.density_per_cm2, scheme.name()));
  auto& w = report.section("wafer", "wafer");
  w.add_text("name", spec.name);
  w.add_int("logical_tiles", spec.logical_tiles(), "tiles", fmt::format("{} x {}", spec.logical_width, spec.logical_height));
  w.add_int("physical_tiles", spec.physical_tiles(), "tiles",
            fmt::format("{} x {} incl. {} spare columns, {} spare rows", spec.logical_width + spec.spare_cols,
                        spec.logical_height + spec.spare_rows, spec.spare_cols, spec.spare_rows));
  w.add("area", spec.area_cm2(), "cm^2", "silicon area of the physical tiles");

  if (from_file) {
    const hw::DefectMap map = hw::read_defects(vm["in"].as<std::string>(), spec);
    const hw::RepairResult r = scheme.repair(spec, map);
    const MapFigures f = measure(map, r);
    auto& m = report.section("map", "defect map");
    m.add_text("file", vm["in"].as<std::string>());
    m.add_int("defects", f.defects, "defects");
    for (auto k : {hw::DefectKind::Core, hw::DefectKind::Sram, hw::DefectKind::Router, hw::DefectKind::Link})
      m.add_int(fmt::format("{}_defects", hw::to_string(k)), std::int64_t(map.count(k)), "defects");
    m.add_int("failed_tiles", f.dead_tiles, "tiles", "tiles with a core, SRAM or router defect");
    auto& rp = report.section("repair", "repair");
    rp.add_text("scheme", std::string(scheme.name()));
    rp.add_text("complete", r.complete ? "yes" : "no", "every logical tile has a distinct healthy physical tile");
    if (!r.complete) rp.add_text("reason", r.reason);
    rp.add_text("usable_rectangle", rect_text(r.usable), "largest logical rectangle of tiles on healthy physical ones (links without a path not counted)");
    rp.add_int("usable_tiles", f.usable_tiles, "tiles");
    rp.add("extra_hops_per_link_mean", f.links - f.links_no_path > 0 ? double(f.extra_hops) / double(f.links - f.links_no_path) : 0.0,
           "hops", "physical hops beyond 1 per logical link, mean over links with a path");
    rp.add_int("extra_hops_per_link_max", f.max_extra, "hops");
    rp.add_int("links_without_path", f.links_no_path, "links", "logical links between mapped tiles with no healthy path");
    if (vm.count("out")) write_defect_map(vm["out"].as<std::string>(), map);
    finish(report, vm);
    return 0;
  }

  // Monte Carlo over generated maps: map i from its own seed (derive_seed(seed, i)), so the maps can be generated
  // and repaired in any order and on any thread; their figures are summed in map order (Totals), the same sums
  // for any --threads. With --json, the sums so far are kept in a journal beside it (apps::Journal), so that a run
  // stopped part way resumes from them when the same command runs again.
  if (vm.count("out")) write_defect_map(vm["out"].as<std::string>(), hw::generate_defects(spec, gen, hw::derive_seed(seed, 0)));
  std::optional<Journal> journal;
  Totals t;
  // (none when --json is a stream, /dev/stdout or a pipe: nothing names the run there)
  if (vm.count("json") && !traces::output_path(vm["json"].as<std::string>()).stream()) {
    const std::string json = vm["json"].as<std::string>();
    journal.emplace(Journal::beside(json), defects_settings(spec, gen, seed, maps, scheme), "--json", "defect study");
    if (!journal->kept().empty()) {
      try {
        t = Totals::from_json(journal->kept().back(), spec);
        if (t.maps < 1 || t.maps >= maps) throw std::out_of_range(fmt::format("{} maps done of {}", t.maps, maps));
      } catch (const std::exception& e) {
        throw hw::InputError(fmt::format("--json: the journal {} does not fit this study ({}); remove it to start the study "
                                         "afresh",
                                         journal->path().string(), e.what()));
      }
      fmt::print(stderr, "defects: resuming from {}: {} of {} maps done before\n", journal->path().string(), t.maps, maps);
    }
  }
  // (no more than the CPUs: a thread holds a map and its repair, about 8 MB on wse3, and more would only wait)
  const std::uint32_t cpus = cpus_available();
  const std::uint32_t threads = vm.count("threads") ? std::min(std::uint32_t(vm["threads"].as<std::int64_t>()), cpus) : cpus;
  Progress progress("defects: maps", maps);
  const bool show_progress = maps >= 20;
  auto saved = std::chrono::steady_clock::now();
  // In blocks of maps (each map's figures by the thread that took it, then summed in order), a block grown while
  // it takes under 50 ms so that small wafers do not pay a thread's start per handful of maps.
  std::int64_t block = 4 * std::int64_t(threads);
  std::vector<MapFigures> figures;
  while (t.maps < maps) {
    const std::int64_t first = t.maps, count = std::min(block, maps - first);
    const auto t0 = std::chrono::steady_clock::now();
    figures.assign(std::size_t(count), MapFigures{});
    std::atomic<std::int64_t> next{0};
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(count));
    auto work = [&] {
      for (std::int64_t j; (j = next.fetch_add(1)) < count;) {
        try {
          const hw::DefectMap map = hw::generate_defects(spec, gen, hw::derive_seed(seed, std::uint64_t(first + j)));
          figures[std::size_t(j)] = measure(map, scheme.repair(spec, map));
        } catch (...) {
          errors[std::size_t(j)] = std::current_exception();
        }
      }
    };
    {
      std::vector<std::thread> helpers;
      for (std::uint32_t h = 1; h < threads && std::int64_t(h) < count; ++h) helpers.emplace_back(work);
      work();
      for (auto& h : helpers) h.join();
    }
    for (const auto& e : errors)
      if (e) std::rethrow_exception(e);  // (the first map's error, whichever thread met it first)
    for (const MapFigures& f : figures) t.add(f);
    const auto now = std::chrono::steady_clock::now();
    if (now - t0 < std::chrono::milliseconds(50) && block < 65536) block *= 2;
    if (journal && t.maps < maps && now - saved >= std::chrono::seconds(1)) journal->append(t.to_json()), saved = now;
    if (show_progress) progress.tick(t.maps);
  }
  if (show_progress) progress.done();
  const double sum_d = t.sum_d, sum_d2 = t.sum_d2, sum_dead = t.sum_dead, sum_usable = t.sum_usable;
  const std::int64_t zero = t.zero, complete = t.complete, min_usable = t.min_usable;
  const std::int64_t links = t.links, no_path = t.no_path, extra = t.extra, max_extra = t.max_extra;
  const double n = double(maps);
  const double mean_d = sum_d / n;
  const double sd_d = maps > 1 ? std::sqrt(std::max(0.0, (sum_d2 - sum_d * sum_d / n) / (n - 1))) : 0.0;

  auto& d = report.section("defects", "defects per wafer");
  d.add_text("model", hw::to_string(gen.model));
  d.add("density", gen.density_per_cm2, "defects/cm^2", "D0");
  if (gen.model == hw::DefectModel::NegBinomial) d.add("alpha", gen.alpha, "", "clustering parameter");
  d.add_uint("seed", seed, "");
  d.add_int("maps", maps, "maps");
  d.add("mean", mean_d, "defects");
  d.add("expected_mean", spec.area_cm2() * gen.density_per_cm2, "defects", "A D0 (merged repeat draws make it slightly less)");
  const double m0 = spec.area_cm2() * gen.density_per_cm2;
  d.add("std", sd_d, "defects");
  d.add("expected_std", gen.model == hw::DefectModel::Poisson ? std::sqrt(m0) : std::sqrt(m0 + m0 * m0 / gen.alpha), "defects",
        gen.model == hw::DefectModel::Poisson ? "Poisson: sqrt(A D0)" : "negative binomial: sqrt(m + m^2/alpha), m = A D0");
  d.add("failed_tiles_mean", sum_dead / n, "tiles", "tiles with a core, SRAM or router defect");

  auto& rp = report.section("repair", "repair");
  rp.add_text("scheme", std::string(scheme.name()));
  const double success = double(complete) / n;
  rp.add("success_rate", success, "fraction", "maps repaired to the full logical grid");
  rp.add("success_rate_stderr", std::sqrt(success * (1 - success) / n), "fraction", "Monte Carlo standard error");
  rp.add("usable_tiles_mean", sum_usable / n, "tiles", "largest logical rectangle of tiles on healthy physical ones");
  rp.add_int("usable_tiles_min", min_usable, "tiles");
  rp.add("extra_hops_per_link_mean", links - no_path > 0 ? double(extra) / double(links - no_path) : 0.0, "hops",
         "physical hops beyond 1 per logical link (mean over links with a path)");
  rp.add_int("extra_hops_per_link_max", max_extra, "hops");
  rp.add("links_without_path_mean", double(no_path) / n, "links", "logical links with no healthy physical path, per map");

  auto& y = report.section("yield", "yield: analytic beside Monte Carlo");
  const double y0 = hw::zero_defect_yield(spec, gen);
  y.add("zero_defect_analytic", y0, "fraction",
        gen.model == hw::DefectModel::Poisson ? "exp(-A D0)" : "(1 + A D0/alpha)^-alpha");
  y.add("zero_defect_monte_carlo", double(zero) / n, "fraction", "maps without any defect");
  y.add("zero_defect_monte_carlo_stderr", std::sqrt(y0 * (1 - y0) / n), "fraction",
        "its standard error were the analytic yield the true one: sqrt(y (1 - y) / maps), to compare the two by");
  y.add("murphy", hw::murphy_yield(spec.area_cm2(), gen.density_per_cm2), "fraction", "Murphy's model, for reference");
  if (scheme.name() == "row-shift")
    y.add("repair_analytic", hw::row_shift_success_probability(spec, gen), "fraction",
          "row-shift success: rows independent, at most spare_rows rows with more than spare_cols failed tiles");
  else
    y.add_text("repair_analytic", "n/a", fmt::format("no closed form for {}", scheme.name()));
  y.add("repair_monte_carlo", success, "fraction");
  finish(report, vm);
  if (journal) journal->remove();
  return 0;
}

const Registrar reg{{"defects", "generate defect maps, repair them with spare tiles, yield and extra hops", run_defects, 10}};

}  // namespace

void check_map_path(const std::string& path, const char* option) {
  const std::string ext = [&] {
    std::string e = std::filesystem::path(path).extension().string();
    std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return e;
  }();
  if (ext != ".csv" && ext != ".json")
    throw hw::InputError(fmt::format("{} {}: a defect map file ends in .csv or .json", option, path));
}

void write_defect_map(const std::string& path, const hw::DefectMap& map) {
  traces::write_text_atomic(path, hw::format_defects(path, map));
}

}  // namespace wafer::apps
