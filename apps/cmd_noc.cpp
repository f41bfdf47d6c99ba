// wafer-emu noc: synthetic traffic on the mesh, timed by the approx model or the cycle reference.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <cmath>
#include <numeric>

#include "apps/cli.h"
#include "hw/defect_map.h"
#include "hw/error.h"
#include "hw/repair.h"
#include "hw/wafer_spec.h"
#include "noc/cycle.h"
#include "noc/mesh.h"
#include "noc/routing/fabric.h"
#include "noc/routing/traffic.h"

namespace wafer::apps {
namespace {

struct ProgressCtx {
  Progress* progress;
  std::int64_t window;
};
void progress_cb(void* ctx, hw::Cycle now) {
  auto* p = static_cast<ProgressCtx*>(ctx);
  p->progress->tick(std::min(std::int64_t(now), p->window));  // the drain after the window shows as 100 %
}

int run_noc(const std::vector<std::string>& args) {
  po::options_description opts("noc options");
  opts.add_options()
      ("wafer", po::value<std::string>()->default_value("small")->value_name("PRESET|FILE"), "the wafer")
      ("defects", po::value<std::string>()->value_name("FILE"), "defect map (CSV or JSON, physical coordinates)")
      ("density", po::value<double>()->value_name("D"), "generate a Poisson defect map with D defects per cm^2")
      ("seed", po::value<std::string>()->default_value("1")->value_name("S"), "seed of the defect map and the traffic")
      ("pattern", po::value<std::string>()->default_value("uniform")->value_name("NAME"),
       "uniform|transpose|hotspot|neighbour|row-reduce|column-broadcast")
      ("rate", po::value<double>()->default_value(0.01, "0.01")->value_name("R"), "injected wavelets per tile per cycle, in [0, 1]")
      ("burst-wavelets", po::value<std::int64_t>()->default_value(8)->value_name("W"), "wavelets per burst")
      ("cycles", po::value<std::int64_t>()->default_value(1000)->value_name("N"), "injection window (then the mesh drains)")
      ("colors", po::value<std::int64_t>()->default_value(4)->value_name("C"), "colors the bursts are spread over")
      ("fidelity", po::value<std::string>()->default_value("approx")->value_name("approx|cycle"), "timing model")
      ("top-links", po::value<std::int64_t>()->default_value(10)->value_name("N"), "how many of the most loaded links to list");
  po::variables_map vm;
  if (!parse(args, opts, "noc", "[--wafer W] [--defects FILE | --density D] [--seed S] [--pattern P] [--rate R] "
                                "[--burst-wavelets W] [--cycles N] [--fidelity approx|cycle] [--json PATH]", vm))
    return 0;

  check_apart(given_paths(vm, {"json"}), given_paths(vm, {"defects", "wafer"}));
  // Plain-number checks first: nothing is allocated before the input is known to be sane.
  const double rate = vm["rate"].as<double>();
  if (!(rate >= 0.0 && rate <= 1.0)) throw hw::InputError(fmt::format("--rate {} is outside [0, 1] (wavelets per tile per cycle)", rate));
  const std::int64_t burst = vm["burst-wavelets"].as<std::int64_t>();
  if (burst < 1 || burst > 1'000'000) throw hw::InputError(fmt::format("--burst-wavelets {} is outside [1, 1000000]", burst));
  const std::int64_t cycles = vm["cycles"].as<std::int64_t>();
  if (cycles < 1 || cycles > 1'000'000'000) throw hw::InputError(fmt::format("--cycles {} is outside [1, 1000000000]", cycles));
  const std::int64_t colors = vm["colors"].as<std::int64_t>();
  if (colors < 1 || colors > 64) throw hw::InputError(fmt::format("--colors {} is outside [1, 64]", colors));
  const std::int64_t top = vm["top-links"].as<std::int64_t>();
  if (top < 0) throw hw::InputError(fmt::format("--top-links {} is negative", top));
  const noc::Pattern pattern = noc::parse_pattern(vm["pattern"].as<std::string>());
  const noc::Fidelity fidelity = noc::parse_fidelity(vm["fidelity"].as<std::string>());
  if (vm.count("defects") && vm.count("density")) throw hw::InputError("give --defects FILE or --density D, not both");
  const std::uint64_t seed = parse_seed(vm["seed"].as<std::string>());

  const hw::WaferSpec spec = hw::resolve_wafer(vm["wafer"].as<std::string>());
  if (fidelity == noc::Fidelity::Cycle &&
      (spec.logical_width > noc::kCycleMaxSide || spec.logical_height > noc::kCycleMaxSide))
    throw hw::InputError(fmt::format("the cycle fidelity supports meshes up to {} x {} tiles; wafer '{}' is {} x {}",
                                     noc::kCycleMaxSide, noc::kCycleMaxSide, spec.name, spec.logical_width,
                                     spec.logical_height));
  if (colors > spec.colors) throw hw::InputError(fmt::format("--colors {} exceeds the wafer's {} colors", colors, spec.colors));

  traces::Report report(fmt::format("noc: {} traffic on {} ({} fidelity)", noc::to_string(pattern), spec.name,
                                    noc::to_string(fidelity)));
  auto& setup = report.section("setup", "workload");
  setup.add_text("wafer", spec.name);
  setup.add_int("mesh_width", spec.logical_width, "tiles");
  setup.add_int("mesh_height", spec.logical_height, "tiles");
  setup.add_text("pattern", noc::to_string(pattern));
  setup.add("offered_rate", rate, "wavelets/tile/cycle", "injected wavelets per tile per cycle");
  setup.add_int("burst_wavelets", burst, "wavelets");
  setup.add_int("injection_cycles", cycles, "cycles");
  setup.add_uint("seed", seed, "");
  setup.add_text("fidelity", noc::to_string(fidelity));

  noc::Fabric fabric;
  if (vm.count("defects") || vm.count("density")) {
    hw::DefectMap map;
    if (vm.count("defects")) {
      map = hw::read_defects(vm["defects"].as<std::string>(), spec);
    } else {
      hw::DefectGenParams gp;
      gp.density_per_cm2 = vm["density"].as<double>();
      if (!(gp.density_per_cm2 >= 0.0 && gp.density_per_cm2 <= 1000.0))
        throw hw::InputError(fmt::format("--density {} is outside [0, 1000] defects per cm^2", gp.density_per_cm2));
      map = hw::generate_defects(spec, gp, seed);
    }
    hw::RepairResult rep = hw::repair_scheme("row-shift").repair(spec, map);
    auto& d = report.section("defects", "defects and repair (row-shift)");
    d.add_int("defects", std::int64_t(map.size()), "defects");
    d.add_text("repair_complete", rep.complete ? "yes" : "no");
    if (!rep.complete) d.add_text("repair_reason", rep.reason);
    fabric = noc::Fabric::from_repair(rep);
    std::int64_t longer = 0;
    for (std::size_t t = 0; t < rep.hops_east.size(); ++t)
      longer += (rep.hops_east[t] > 1) + (rep.hops_south[t] > 1);
    d.add_int("stretched_links", longer, "links", "logical links spanning more than one physical hop after repair");
    d.add_int("unrepaired_faults", std::int64_t(fabric.faults().size()), "faults", "failed routers/links routing must avoid");
  } else {
    fabric = noc::Fabric::perfect(spec.logical());
  }

  noc::TrafficParams tp;
  tp.pattern = pattern;
  tp.rate = rate;
  tp.burst_wavelets = std::uint32_t(burst);
  tp.cycles = std::uint64_t(cycles);
  tp.seed = seed;
  tp.colors = std::uint32_t(colors);
  tp.stage_latency = std::uint32_t(spec.stream_stage_latency);
  const noc::Plan plan = noc::make_traffic(fabric, tp);

  auto mesh = noc::make_mesh(fidelity, fabric, noc::MeshParams::from(spec));
  Progress progress("noc: simulated cycles", cycles);
  ProgressCtx pctx{&progress, cycles};
  mesh->set_progress(&progress_cb, &pctx, 1 << 14);
  // (synthetic traffic may deadlock of itself on the cycle model: multicasts whose branches wait on each other where
  // they fork, docs/routing.md; it is the traffic's outcome, said in one line, not the model's failure)
  const auto timing = [&] {
    try {
      return mesh->execute(plan);
    } catch (const noc::Deadlock& e) {
      throw hw::InputError(fmt::format("{} traffic at --rate {} deadlocks on the cycle model: {}; lower --rate (the "
                                       "approx model does not model deadlock)",
                                       noc::to_string(pattern), vm["rate"].as<double>(), e.found));
    }
  }();
  progress.done();

  // Figures.
  const std::size_t n = timing.size();
  std::vector<hw::Cycle> lat(n);
  double sum = 0, wait = 0, head_travel = 0, queueing = 0, window_wavelets = 0;
  hw::Cycle makespan = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto& t = timing[i];
    lat[i] = t.tail - plan.flows[i].release;
    sum += double(lat[i]);
    wait += double(t.wait);
    head_travel += double(t.head - t.inject);
    queueing += double(t.inject - plan.flows[i].release);
    makespan = std::max(makespan, t.tail + 1);
    if (t.tail < hw::Cycle(cycles)) window_wavelets += plan.flows[i].wavelets;
  }
  std::sort(lat.begin(), lat.end());
  std::size_t healthy = 0;
  for (hw::TileIndex t = 0; t < fabric.grid().size(); ++t) healthy += fabric.router_ok(t);
  auto& r = report.section("results", "results");
  r.add_int("bursts_delivered", std::int64_t(n), "bursts");
  // (no burst delivered, no latency: not a figure of 0 cycles; nan, null in the JSON)
  const double none = std::numeric_limits<double>::quiet_NaN();
  // (none injected at all: each tile's first burst is due, on average, after burst / rate cycles)
  const std::string why =
      n ? ""
      : rate <= 0
          ? std::string("no burst delivered: at rate 0 no tile injects")
          : fmt::format("no burst delivered: a tile injects a burst of {} wavelets every {} cycles on average at rate "
                        "{}, beyond the {} cycles injected (raise --rate or --cycles, or lower --burst-wavelets)",
                        burst,
                        // (whole below 10^12; beyond, three digits: --rate 1e-300 gave an integer of 301 digits)
                        double(burst) / rate < 1e12 ? fmt::format("{:.0f}", double(burst) / rate)
                                                    : fmt::format("{:.3g}", double(burst) / rate),
                        rate, cycles);
  r.add("mean_latency", n ? sum / double(n) : none, "cycles", n ? "creation to tail arrival, source queueing included" : why);
  if (n) {
    r.add_int("p99_latency", std::int64_t(lat[(99 * n + 99) / 100 - 1]), "cycles");
    r.add_int("max_latency", std::int64_t(lat.back()), "cycles");
  } else {
    r.add("p99_latency", none, "cycles", why);
    r.add("max_latency", none, "cycles", why);
  }
  r.add("mean_source_queueing", n ? queueing / double(n) : none, "cycles", n ? "creation to the head leaving the source" : why);
  r.add("accepted_throughput", window_wavelets / (double(healthy) * double(cycles)), "wavelets/tile/cycle",
        "wavelets of bursts completed within the injection window, per tile per cycle");
  r.add("link_wait_share", head_travel > 0 ? wait / head_travel : 0.0, "fraction",
        "share of head travel time spent waiting for busy links and delivery ramps");
  r.add_int("makespan", std::int64_t(makespan), "cycles", "until the last tail arrived");
  r.add_int("link_traversals", std::int64_t(mesh->stats().link_traversals), "links");

  // The most loaded links.
  std::vector<noc::LinkId> links;
  for (noc::LinkId l = 0; l < fabric.links(); ++l)
    if (mesh->link_busy(l)) links.push_back(l);
  const std::size_t k = std::min<std::size_t>(std::size_t(top), links.size());
  std::partial_sort(links.begin(), links.begin() + std::ptrdiff_t(k), links.end(), [&](noc::LinkId a, noc::LinkId b) {
    return mesh->link_busy(a) != mesh->link_busy(b) ? mesh->link_busy(a) > mesh->link_busy(b) : a < b;
  });
  auto& tl = report.add_table("most_loaded_links", {"x", "y", "dir", "busy [cycles]", "utilisation [fraction]"},
                              "links that carried wavelets the most cycles, utilisation = busy / makespan");
  for (std::size_t i = 0; i < k; ++i) {
    hw::Coord c = fabric.grid().coord(noc::link_tile(links[i]));
    tl.rows.push_back({std::int64_t(c.x), std::int64_t(c.y), std::string(hw::to_string(noc::link_dir(links[i]))),
                       std::int64_t(mesh->link_busy(links[i])), double(mesh->link_busy(links[i])) / double(makespan)});
  }
  finish(report, vm);
  return 0;
}

const Registrar reg{{"noc", "synthetic traffic on the mesh, timed by the approx model or the cycle reference", run_noc, 30}};

}  // namespace
}  // namespace wafer::apps
