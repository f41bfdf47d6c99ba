// wafer-emu describe: the presets and every wafer parameter with unit, default and meaning.
#include <fmt/format.h>

#include <variant>

#include "apps/cli.h"
#include "hw/wafer_spec.h"

namespace wafer::apps {
namespace {

int run_describe(const std::vector<std::string>& args) {
  po::options_description opts("describe options");
  opts.add_options()("wafer", po::value<std::string>()->value_name("PRESET|FILE"),
                     "describe this wafer (values after any file overrides) instead of all presets");
  po::variables_map vm;
  if (!parse(args, opts, "describe", "[--wafer PRESET|FILE] [--json PATH]", vm)) return 0;
  check_apart(given_paths(vm, {"json"}), given_paths(vm, {"wafer"}));

  std::vector<hw::WaferSpec> wafers;
  if (vm.count("wafer")) wafers.push_back(hw::resolve_wafer(vm["wafer"].as<std::string>()));
  else
    for (const auto& n : hw::preset_names()) wafers.push_back(hw::preset(n));

  traces::Report report("wafer parameters");
  std::vector<std::string> cols{"parameter", "unit"};
  for (const auto& w : wafers) cols.push_back(w.name);
  cols.insert(cols.end(), {"range", "meaning", "source of the default"});
  auto& t = report.add_table("parameters", cols);
  for (const auto& p : hw::wafer_params()) {
    std::vector<std::variant<double, std::int64_t, std::string>> row{std::string(p.key), std::string(p.unit)};
    for (const auto& w : wafers)
      row.push_back(std::visit([&](auto m) -> std::variant<double, std::int64_t, std::string> { return w.*m; }, p.member));
    // (the values a wafer file, a study's axis or validate --fit may give it, both ends included)
    row.emplace_back(fmt::format("[{}, {}]", p.min, p.max));
    row.emplace_back(std::string(p.meaning));
    row.emplace_back(std::string(p.source));
    t.rows.push_back(std::move(row));
  }
  auto& d = report.section("derived", "derived figures");
  for (const auto& w : wafers) {
    auto& s = d.section(w.name);
    s.add_int("logical_tiles", w.logical_tiles(), "tiles");
    s.add_int("physical_tiles", w.physical_tiles(), "tiles");
    s.add("wafer_area", w.area_cm2(), "cm^2");
    s.add("peak_fp16_tflops", 2.0 * double(w.simd_width) * w.clock_ghz * double(w.logical_tiles()) / 1e3, "TFLOP/s");
    s.add("total_sram", double(w.sram_bytes) * double(w.logical_tiles()) / double(1 << 30), "GiB");
  }
  finish(report, vm);
  return 0;
}

const Registrar reg{{"describe", "list wafer presets and every parameter with unit, default and meaning", run_describe, 0}};

}  // namespace
}  // namespace wafer::apps
