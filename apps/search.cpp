#include "apps/search.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <numeric>
#include <optional>
#include <thread>

#include "apps/cli.h"
#include "core/costs.h"
#include "core/executor.h"
#include "hw/error.h"
#include "mapper/meshgemv.h"
#include "mapper/placement.h"

namespace wafer::apps {

using mapper::AllreduceAlgo;
using mapper::Kernel;

std::vector<SearchCandidate> enumerate_candidates(const DecodePoint& base, const noc::WaferFabrics& fabrics) {
  std::vector<SearchCandidate> out;
  auto add = [&](mapper::MapOptions o, std::string label) {
    SearchCandidate c;
    c.options = o;
    c.label = std::move(label);
    out.push_back(std::move(c));
  };
  for (const auto& name : mapper::placement_names()) {
    if (name == "square" && fabrics.of(0).grid().width == fabrics.of(0).grid().height) continue;
    mapper::MapOptions o = base.options;
    o.placement = name, o.kernel = Kernel::Bands;
    add(o, fmt::format("bands / {}", name));
  }
  // The meshgemv kernel on the placements that give every stage one region.
  const hw::Grid g = fabrics.of(0).grid();
  for (const char* name : {"whole-wafer", "square"}) {
    if (std::string_view(name) == "square" && g.width == g.height) continue;  // the whole wafer already is one
    const std::int32_t side = std::string_view(name) == "square" ? std::min(g.width, g.height) : std::max(g.width, g.height);
    const std::int32_t root = mapper::detail::tree_group(side, 0);
    for (AllreduceAlgo a : {AllreduceAlgo::Chain, AllreduceAlgo::Centre}) {
      mapper::MapOptions o = base.options;
      o.placement = name, o.kernel = Kernel::MeshGemv, o.allreduce = a, o.group = 0;
      add(o, fmt::format("meshgemv / {} / {}", name, mapper::to_string(a)));
    }
    std::vector<std::int32_t> groups{0};  // round(sqrt(n)) of each line
    for (std::int32_t gs : {std::max(1, root / 2), root * 2})
      if (gs != root && std::find(groups.begin(), groups.end(), gs) == groups.end()) groups.push_back(gs);
    for (std::int32_t gs : groups) {
      mapper::MapOptions o = base.options;
      o.placement = name, o.kernel = Kernel::MeshGemv, o.allreduce = AllreduceAlgo::Tree, o.group = gs;
      add(o, gs == 0 ? fmt::format("meshgemv / {} / tree, groups of sqrt(line)", name)
                     : fmt::format("meshgemv / {} / tree, groups of {}", name, gs));
    }
  }
  return out;
}

namespace {
// Task records of `b` bytes as "about 1.2 GB" or "about 24 MB".
std::string records_text(std::uint64_t bytes) { return "about " + size_text(bytes); }
// The task records of a run of `task_runs` tasks (core::Executor::record_bytes, estimated from the count).
std::string records(std::int64_t task_runs) {
  return records_text(core::Executor::record_bytes(std::uint64_t(std::max<std::int64_t>(0, task_runs))));
}
// The task records of the largest wafer of `m` (as apps::check_memory counts them).
std::string records(const mapper::Mapping& m) {
  const std::vector<std::uint64_t> bytes = wafer_records(m);
  return records_text(bytes.empty() ? 0 : *std::max_element(bytes.begin(), bytes.end()));
}

// Zero-load network cycles of one allreduce of `wl` wavelets along a line of n tiles, as the meshgemv
// kernel runs it (docs/mapping.md section 3b), beyond the tasks of the done tile's program (which the closed form
// sums apart: its Complete tasks, one per blocking level, with their activations): per level, the longest chain
// into its root (stream stages of hop + 2 ramps + stage each), the sum's tail, and one activation and vector
// setup where the chain has a tile between its end and the root (the first adding tile's Stream task, whose own
// partial comes from the task before it on that tile, so it is armed only once that task ends; the tiles nearer
// the root are armed by then); then the broadcast to the farthest tile.
double line_cycles(const hw::WaferSpec& s, AllreduceAlgo a, std::int32_t n, std::int32_t group, double wl) {
  if (n <= 1) return 0;
  // (the core's delays as it charges them: 0 acts as 1)
  const double h = double(s.hop_latency), R = double(s.ramp_latency), st = double(core::CostModel::react(s.stream_stage_latency));
  const double stage = h + 2 * R + st, act = double(core::CostModel::react(s.task_overhead)) + double(s.vector_setup);
  // A level whose farthest tile lies L stages from its root.
  auto level = [&](std::int32_t L, double per) { return L < 1 ? 0.0 : double(L) * per + (L >= 2 ? act : 0.0) + (wl - 1); };
  const double bcast = 2 * R + (wl - 1);
  const std::int32_t root = mapper::detail::final_position(n, a, group);
  const double far = double(std::max(root, n - 1 - root)) * h;
  switch (a) {
    case AllreduceAlgo::Chain: return level(n - 1, stage) + far + bcast;
    case AllreduceAlgo::Centre: return level(std::max(root, n - 1 - root), stage) + far + bcast;
    case AllreduceAlgo::Tree: {
      // (groups of g, each reduced to its middle tile; the group roots' chain then into the middle group's)
      const std::int32_t g = mapper::detail::tree_group(n, group), G = (n + g - 1) / g, c = G / 2;
      return level(std::max(g / 2, g - 1 - g / 2), stage) + level(std::max(c, G - 1 - c), double(g) * h + 2 * R + st) +
             far + bcast;
    }
  }
  return 0;
}

}  // namespace

double meshgemv_closed_form(const hw::WaferSpec& spec, const mapper::Mapping& m) {
  const firmware::Image& im = m.images.at(0);
  const firmware::Program* p = im.program_at(im.done_tile);
  if (!p) return -1;
  const core::CostModel costs(spec, std::uint32_t(m.options.weight_bits / 8));
  double cycles = 0;
  for (const auto& t : p->tasks) {
    cycles += double(costs.task_overhead);
    for (const auto& op : t.ops) cycles += double(costs.cycles(op));
    for (const auto& s : t.sends)
      if (s.dest.kind != firmware::Dest::Kind::Tile)
        cycles += line_cycles(spec, m.options.allreduce, s.dest.span, m.options.group, double(s.wavelets));
  }
  return cycles;
}

SearchResult search(sim::Simulator& simulator, const DecodePoint& base, const noc::WaferFabrics& fabrics,
                    const SearchBudget& budget, bool core_to_spare) {
  MeshPrepare mesh(simulator, base.spec, fabrics.of(0), base.fidelity, core_to_spare && simulator.keeps_mesh());
  SearchResult r;
  r.candidates = enumerate_candidates(base, fabrics);
  // Each candidate planned first (mapper::MapOptions::plan_only): every check up to SRAM and the task count,
  // without stamping the whole wafer. A meshgemv candidate is ranked by its closed form, which needs the plan's
  // done tile's program and task count only; its full mapping is made if it is emulated. Another kernel's is
  // made at once when the budget could emulate it, and kept rather than made again; one the budget leaves out
  // (a whole-wafer or square bands mapping, hundreds of millions of task runs) is never stamped. With a core to
  // spare, two threads take the candidates in turn (each writes its own; the first error other than a refusal,
  // by candidate, is thrown as one at a time would).
  std::vector<std::optional<mapper::Mapping>> full(r.candidates.size());
  std::vector<std::exception_ptr> failed(r.candidates.size());
  auto map_candidate = [&](std::size_t i) {
    SearchCandidate& c = r.candidates[i];
    DecodePoint p = base;
    p.options = c.options;
    p.options.plan_only = true;
    try {
      const mapper::Mapping m = map_point(p, fabrics);
      c.task_runs = m.task_runs();
      if (c.options.kernel == Kernel::MeshGemv) {
        c.predicted = meshgemv_closed_form(base.spec, m);
      } else if (c.task_runs <= budget.task_runs) {
        p.options.plan_only = false;
        full[i] = map_point(p, fabrics);
      }
    } catch (const hw::InputError& e) {
      c.rejected = e.what();
    } catch (...) {
      failed[i] = std::current_exception();
    }
  };
  {
    std::atomic<std::size_t> next{0};
    auto take = [&] {
      for (std::size_t i; (i = next.fetch_add(1)) < r.candidates.size();) map_candidate(i);
    };
    std::optional<std::thread> other;
    if (core_to_spare && r.candidates.size() > 1) other.emplace(take);
    take();
    if (other) other->join();
  }
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < r.candidates.size(); ++i) {
    if (failed[i]) std::rethrow_exception(failed[i]);
    if (r.candidates[i].rejected.empty()) order.push_back(i);
  }
  if (order.empty()) {
    std::string why;
    for (const auto& c : r.candidates) why += fmt::format("; {}: {}", c.label, c.rejected);
    throw hw::InputError(fmt::format("--placement auto: no candidate maps{}", why));
  }
  // Closed forms first (cheapest predicted), then the kernels without one, cheapest to emulate first.
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto &ca = r.candidates[a], &cb = r.candidates[b];
    if ((ca.predicted >= 0) != (cb.predicted >= 0)) return ca.predicted >= 0;
    if (ca.predicted >= 0) return ca.predicted < cb.predicted;
    return ca.task_runs < cb.task_runs;
  });
  // Emulated, within the budget of task runs: the best `formula_slots` by closed form, and the kernels
  // without one (they can only be compared by emulating them), cheapest first.
  std::int64_t left = budget.task_runs;
  int emulated = 0, by_formula = 0;
  // Which candidates to emulate is decided first (it depends on their task runs and firmware, not on the
  // results), then they are emulated together (emulate_points: their wafers side by side on base.threads
  // threads, the same results as one at a time), then compared in the order decided.
  struct Pending {
    std::size_t i;  // the candidate
    DecodePoint p;
    mapper::Mapping m;
  };
  std::vector<Pending> pending;
  std::vector<std::pair<std::size_t, std::size_t>> same_as;  // (candidate, the pending one whose firmware it has)
  // (the mesh built before any candidate's memory is checked: what the check finds free does not depend on how
  // far the build has come)
  mesh.join();
  for (std::size_t i : order) {
    SearchCandidate& c = r.candidates[i];
    if (c.predicted >= 0 && by_formula >= budget.formula_slots) {
      c.skipped = fmt::format("not emulated: the {} best closed forms were", budget.formula_slots);
      continue;
    }
    if (emulated >= budget.emulations) {
      c.skipped = fmt::format("not emulated: {} candidates already were", budget.emulations);
      continue;
    }
    if (c.task_runs > left) {
      c.skipped = fmt::format("not emulated: {} task runs, {} left of the budget", c.task_runs, left);
      continue;
    }
    DecodePoint p = base;
    p.options = c.options;
    p.keep_task_runs = false;
    mapper::Mapping m;
    if (full[i]) {
      m = std::move(*full[i]);
    } else {
      try {
        m = map_point(p, fabrics);
      } catch (const hw::InputError& e) {  // a check only the full mapping makes (a plan stops at SRAM)
        c.rejected = e.what();
        continue;
      }
    }
    // The same firmware as a candidate already emulated (e.g. a placement that differs from another only
    // around defects, on a perfect wafer): the same step, not emulated again.
    const auto same = std::find_if(pending.begin(), pending.end(), [&](const Pending& d) { return d.m.images == m.images; });
    if (same != pending.end()) {
      same_as.push_back({i, std::size_t(same - pending.begin())});
      c.skipped = fmt::format("the same firmware as {}: its emulated cycles", r.candidates[same->i].label);
      continue;
    }
    // (What the results say of memory names the records, not what the machine has free: that changes from one
    // run to the next, and the results must not.)
    try {
      check_memory(m);
    } catch (const hw::InputError&) {
      c.skipped = fmt::format("not emulated: {} of task records, more than the memory available", records(m));
      continue;
    }
    left -= c.task_runs;
    ++emulated;
    by_formula += c.predicted >= 0;
    pending.push_back({i, std::move(p), std::move(m)});
  }
  std::vector<DecodePoint> points;
  std::vector<const mapper::Mapping*> mappings;
  std::uint64_t total = 0;
  for (const Pending& d : pending) points.push_back(d.p), mappings.push_back(&d.m), total += std::uint64_t(d.m.task_runs());
  // (on a terminal, a search that runs a while shows how far it has got: apps::TaskProgress)
  std::optional<TaskProgress> progress;
  if (!points.empty())
    progress.emplace(fmt::format("decode: search: emulating {} candidate{}", points.size(), points.size() == 1 ? "" : "s"), total);
  for (DecodePoint& p : points) p.progress = progress->counter();
  std::vector<sim::StepResult> steps =
      emulate_points(simulator, points, fabrics, mappings, base.threads, core_to_spare ? std::max(2u, base.threads) : 0);
  progress.reset();  // (its line ends here)
  for (std::size_t j = 0; j < pending.size(); ++j) {
    SearchCandidate& c = r.candidates[pending[j].i];
    c.emulated = double(steps[j].latency);
    if (r.chosen < 0 || c.emulated < r.candidates[std::size_t(r.chosen)].emulated) {
      r.chosen = int(pending[j].i);
      r.chosen_run = SearchResult::Run{pending[j].m, std::move(steps[j])};
    }
  }
  for (const auto& [i, j] : same_as) r.candidates[i].emulated = r.candidates[pending[j].i].emulated;
  if (r.chosen < 0) {  // nothing fitted the budget: the best closed form, else the cheapest to emulate
    r.chosen = int(order.front());
    r.chosen_by_formula = true;
    return r;
  }
  // Closed forms and emulations are different measures, so the choice rests on emulation; a candidate the
  // closed form puts well ahead but the budget left out is named.
  // (Against the choice's own closed form when it has one, else against its emulated cycles.)
  const SearchCandidate& ch = r.candidates[std::size_t(r.chosen)];
  const double best = ch.predicted >= 0 ? ch.predicted : ch.emulated;
  const SearchCandidate* hint = nullptr;
  for (const auto& c : r.candidates)
    if (c.emulated < 0 && c.predicted >= 0 && c.predicted < best && (!hint || c.predicted < hint->predicted)) hint = &c;
  if (hint) {
    // Would a larger budget do? Not when the run's task records exceed the memory (apps::check_memory).
    const std::string why =
        memory_shortfall(hint->task_runs).empty()
            ? fmt::format("{} task runs; --search-budget sets the budget", hint->task_runs)
            : fmt::format("{} task runs: {} of task records, more than the memory available", hint->task_runs,
                          records(hint->task_runs));
    r.note = fmt::format("{} is predicted {:.0f} cycles by its closed form ({:+.0f} % against the choice) but was not "
                         "emulated ({})",
                         hint->label, hint->predicted, 100.0 * (hint->predicted - best) / best, why);
  }
  return r;
}

}  // namespace wafer::apps
