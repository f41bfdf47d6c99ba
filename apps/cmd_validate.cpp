// wafer-emu validate: the emulator's absolute numbers against published measurements (a case file), and a
// least-squares fit of the parameters that have no published value. docs/fidelity.md.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <variant>

#include "apps/cli.h"
#include "apps/journal.h"
#include "apps/sweep.h"
#include "apps/validate.h"
#include "hw/error.h"
#include "traces/report.h"

namespace wafer::apps {
namespace {

using namespace validation;
using Clock = std::chrono::steady_clock;

double error_pct(double predicted, double measured) { return 100.0 * (predicted - measured) / measured; }

double mean_abs(const std::vector<double>& predicted, const std::vector<const Case*>& cases) {
  double s = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) s += std::abs(error_pct(predicted[i], cases[i]->measured));
  return cases.empty() ? 0.0 : s / double(cases.size());
}

// What a case's prediction depends on besides the fitted values, for the journal (apps::Journal): the case file's
// bytes, every case's wafer as the file gives it (a preset's values included) and its model file's bytes, and the
// fidelity; hashed.
std::string validate_settings(const CaseFile& file, noc::Fidelity fidelity) {
  nlohmann::ordered_json j;
  j["journal"] = 1;
  j["cases_file"] = hash_file(file.path);
  auto& cases = j["cases"] = nlohmann::ordered_json::array();
  for (const Case& c : file.cases) {
    nlohmann::ordered_json e;
    e["name"] = c.name;
    e["wafer"] = wafer_settings(c.wafer);
    if (info(c.kind).decode) e["model"] = hash_file(c.model.source);
    cases.push_back(std::move(e));
  }
  j["fidelity"] = std::string(noc::to_string(fidelity));
  return sweep::hash_text(j.dump());
}

// --only NAME[,NAME...]: exact names, or a prefix ending in '*'.
std::vector<const Case*> select(const CaseFile& file, const std::string& only) {
  std::vector<const Case*> out;
  if (only.empty()) {
    for (const auto& c : file.cases) out.push_back(&c);
    return out;
  }
  std::vector<std::string> pats;
  for (std::size_t pos = 0; pos <= only.size();) {
    std::size_t end = only.find(',', pos);
    if (end == std::string::npos) end = only.size();
    pats.push_back(only.substr(pos, end - pos));
    pos = end + 1;
  }
  auto match = [](const std::string& pat, const std::string& name) {
    if (!pat.empty() && pat.back() == '*') return name.starts_with(pat.substr(0, pat.size() - 1));
    return name == pat;
  };
  for (std::size_t i = 0; i < pats.size(); ++i) {
    const std::string& p = pats[i];
    if (p.empty()) throw hw::InputError(fmt::format("--only '{}': an empty name", only));
    if (std::find(pats.begin(), pats.begin() + std::ptrdiff_t(i), p) != pats.begin() + std::ptrdiff_t(i))
      throw hw::InputError(fmt::format("--only '{}': names '{}' twice", only, p));
    bool any = false;
    for (const auto& c : file.cases) any = any || match(p, c.name);
    if (!any) throw hw::InputError(fmt::format("--only '{}': no case of {} is named so", p, file.path));
  }
  for (const auto& c : file.cases)
    for (const auto& p : pats)
      if (match(p, c.name)) {
        out.push_back(&c);
        break;
      }
  return out;
}

int run_validate(const std::vector<std::string>& args) {
  po::options_description opts("validate options");
  opts.add_options()
      ("cases", po::value<std::string>()->value_name("FILE"), "case file (docs/fidelity.md), e.g. configs/validation/public.json")
      ("only", po::value<std::string>()->value_name("NAME,..."), "run only these cases (a name ending in * matches a prefix)")
      ("check", "check the file and every case's settings, emulate nothing")
      ("fit", po::value<std::string>()->value_name("PARAM[=START],..."),
       "fit these parameters (task_overhead, vector_setup, color_switch, collective_sync, stream_stage_latency) by "
       "least squares over the cases")
      ("max-iterations", po::value<int>()->default_value(10)->value_name("N"), "Gauss-Newton iterations before the fit gives up")
      ("wafer-out", po::value<std::string>()->value_name("PATH"), "with --fit: write the fitted values as a wafer file")
      ("fidelity", po::value<std::string>()->default_value("approx")->value_name("approx|cycle"), "mesh timing model")
      ("no-cache", "build every decode case's step from scratch (no mapping, mesh model or freed memory kept from the one "
                   "before; the results are the same)");
  po::variables_map vm;
  if (!parse(args, opts, "validate", "--cases FILE [--only NAME,...] [--check] [--fit PARAM,...] [--wafer-out PATH] "
                                     "[--fidelity approx|cycle] [--json PATH]", vm))
    return 0;
  if (!vm.count("cases")) throw hw::InputError("--cases FILE is required (e.g. configs/validation/public.json)");
  const noc::Fidelity fidelity = noc::parse_fidelity(vm["fidelity"].as<std::string>());
  const bool check = vm.count("check") > 0;
  const int max_iterations = vm["max-iterations"].as<int>();
  if (max_iterations < 1 || max_iterations > 1000)
    throw hw::InputError(fmt::format("--max-iterations {} is outside [1, 1000]", max_iterations));
  if (vm.count("wafer-out") && !vm.count("fit")) throw hw::InputError("--wafer-out needs --fit (it writes the fitted values)");
  if (check && vm.count("fit")) throw hw::InputError("--check emulates nothing, so it cannot --fit");
  if (check && vm.count("no-cache")) throw hw::InputError("--check emulates nothing: --no-cache does not apply");
  if (!vm["max-iterations"].defaulted() && !vm.count("fit")) throw hw::InputError("--max-iterations applies to --fit");
  if (vm.count("wafer-out")) traces::check_writable(vm["wafer-out"].as<std::string>(), "--wafer-out");
  // With --json to a file, each prediction made is kept in a journal beside it (below; none when --json is a stream,
  // /dev/stdout or a pipe: nothing names the run there).
  const bool journaled = vm.count("json") && !traces::output_path(vm["json"].as<std::string>()).stream();
  {
    // (the journal beside --json is an output too: --wafer-out over it was written, then removed with the journal)
    std::vector<NamedPath> outputs = given_paths(vm, {"json", "wafer-out"});
    if (journaled)
      outputs.push_back({"--json (its journal)", Journal::beside(vm["json"].as<std::string>()).string()});
    check_apart(outputs, given_paths(vm, {"cases"}));
  }

  const CaseFile file = load_case_file(vm["cases"].as<std::string>());
  const std::vector<const Case*> cases = select(file, vm.count("only") ? vm["only"].as<std::string>() : std::string());
  for (const Case* c : cases) check_case(*c, file.path, fidelity);
  std::vector<FitParam> params;
  if (vm.count("fit")) {
    std::vector<Case> chosen;
    for (const Case* c : cases) chosen.push_back(*c);
    params = parse_fit(vm["fit"].as<std::string>(), chosen);
  }
  // --wafer-out: the cases' preset, the parameters their wafers set (so that the file gives the fit's wafer) and the
  // fitted values; every case must start from one preset and set the same parameters to the same values.
  nlohmann::ordered_json wafer_out;
  if (vm.count("wafer-out")) {
    const Case& first = *cases.front();
    for (const Case* c : cases)
      if (c->preset.empty() || c->preset != first.preset)
        throw hw::InputError(fmt::format("--wafer-out writes {{\"preset\": ..., fitted values}}, but case '{}' {} ; "
                                         "every case must start from one preset",
                                         c->name, c->preset.empty() ? "gives no preset" : "starts from " + c->preset));
    wafer_out["preset"] = first.preset;
    for (const hw::ParamInfo& p : hw::wafer_params()) {
      auto sets = [&](const Case& c) {
        return std::find(c.wafer_keys.begin(), c.wafer_keys.end(), p.key) != c.wafer_keys.end();
      };
      auto value = [&](const Case& c) {
        return std::visit([&](auto m) { return nlohmann::ordered_json(c.wafer.*m); }, p.member);
      };
      for (const Case* c : cases)
        if (sets(*c) != sets(first) || (sets(first) && value(*c) != value(first)))
          throw hw::InputError(fmt::format("--wafer-out writes the cases' wafer with the fitted values, but case '{}' "
                                           "sets '{}' {} case '{}': every case's wafer must set the same parameters alike",
                                           c->name, p.key, sets(*c) == sets(first) ? "to another value than" : "unlike",
                                           first.name));
      if (sets(first)) wafer_out[std::string(p.key)] = value(first);
    }
  }

  traces::Report rep(fmt::format("validate: {} case(s) of {}", cases.size(), file.path));
  auto& cfg = rep.section("config", "configuration");
  cfg.add_text("cases_file", file.path);
  cfg.add_int("cases", std::int64_t(cases.size()), "cases", fmt::format("of {} in the file", file.cases.size()));
  cfg.add_text("fidelity", noc::to_string(fidelity));

  if (check) {
    auto& t = rep.add_table("cases", {"case", "kind", "measured", "unit", "source"}, "checked, not emulated");
    for (const Case* c : cases)
      t.rows.push_back({c->name, std::string(info(c->kind).name), c->measured, c->unit, c->source});
    rep.add_text("check", "ok: the file parses and every case's settings are valid");
    finish(rep, vm);
    return 0;
  }

  // With --json, each prediction made is kept in a journal beside it (apps::Journal: the case, the fitted values, the
  // prediction), so that a run stopped part way takes them from there when the same command runs again rather than
  // emulating them again: the fit asks for the same parameter vectors in the same order, so it goes the same way.
  std::optional<Journal> journal;
  std::map<std::pair<std::string, std::string>, double> made;  // (case, values as JSON) -> prediction
  if (journaled) {
    journal.emplace(Journal::beside(vm["json"].as<std::string>()), validate_settings(file, fidelity), "--json", "validation");
    // (each record as the run writes it, else refused in words of this command's, not the JSON reader's: a prediction
    // is a positive figure, a case one of the file's, a second record of the same case and values the same)
    try {
      std::size_t line = 1;  // (line 1: its settings)
      for (const nlohmann::json& r : journal->kept()) {
        ++line;
        auto bad = [&](const std::string& what) { throw std::runtime_error(fmt::format("line {}: {}", line, what)); };
        if (!r.is_object() || !r.contains("case") || !r["case"].is_string() || !r.contains("values") || !r.contains("predicted"))
          bad("a record without its case, values and prediction");
        const std::string name = r["case"].get<std::string>();
        if (std::none_of(file.cases.begin(), file.cases.end(), [&](const Case& c) { return c.name == name; }))
          bad(fmt::format("case '{}' is not one of {}'s", name, file.path));
        const double v = r["predicted"].is_number() ? r["predicted"].get<double>() : 0;
        if (!(v > 0) || !std::isfinite(v))
          bad(fmt::format("case '{}' predicted {}, not a positive figure", name, r["predicted"].dump()));
        const auto key = std::make_pair(name, r["values"].dump());
        if (const auto it = made.find(key); it != made.end() && it->second != v)
          bad(fmt::format("case '{}' at {} predicted twice, {} and {}", name, key.second, it->second, v));
        made[key] = v;
      }
    } catch (const std::exception& e) {
      throw hw::InputError(fmt::format("--json: the journal {} does not fit this validation ({}); remove it to start "
                                       "afresh",
                                       journal->path().string(), e.what()));
    }
    if (!made.empty())
      fmt::print(stderr, "validate: resuming from {}: {} predictions made before\n", journal->path().string(), made.size());
  }

  // Every case at one parameter vector; progress on stderr once a run takes more than a second.
  Predictor predictor(fidelity, vm.count("no-cache") == 0);
  const auto t0 = Clock::now();
  int evaluation = 0;
  auto evaluate = [&](const std::vector<std::int64_t>& values) {
    ++evaluation;
    Progress progress(params.empty() ? std::string("validate: cases")
                                     : fmt::format("validate: fit evaluation {}, cases", evaluation),
                      std::int64_t(cases.size()));
    bool shown = false;
    nlohmann::json at = nlohmann::json::object();  // (the fitted parameters' values, none without --fit)
    for (std::size_t j = 0; j < params.size(); ++j) at[params[j].key] = values[j];
    const std::string at_text = at.dump();
    std::vector<double> out;
    for (std::size_t i = 0; i < cases.size(); ++i) {
      if (const auto it = made.find({cases[i]->name, at_text}); it != made.end()) {
        out.push_back(it->second);
      } else {
        const hw::WaferSpec spec = params.empty() ? cases[i]->wafer : with_values(cases[i]->wafer, params, values);
        out.push_back(predictor.predict(*cases[i], spec, file.path));
        if (journal) journal->append({{"case", cases[i]->name}, {"values", at}, {"predicted", out.back()}});
      }
      if (std::chrono::duration<double>(Clock::now() - t0).count() >= 1.0) {
        progress.tick(std::int64_t(i + 1));
        shown = true;
      }
    }
    if (shown) progress.done();
    return out;
  };

  // A refusal (a case the mapper refuses, a fit that cannot tell its parameters apart or does not converge) is the
  // run's answer, given again by the same command: its journal goes with it. (A killed run's stays.)
  auto refusal_ends_journal = [&](auto&& f) {
    try {
      return f();
    } catch (const hw::InputError&) {
      if (journal) journal->remove();
      throw;
    }
  };
  auto cell_kind = [](const Case* c) { return std::string(info(c->kind).name); };
  if (params.empty()) {
    const std::vector<double> predicted = refusal_ends_journal([&] { return evaluate({}); });
    auto& t = rep.add_table("cases", {"case", "kind", "predicted", "measured", "unit", "error [%]"},
                            "error = (predicted - measured) / measured");
    for (std::size_t i = 0; i < cases.size(); ++i)
      t.rows.push_back({cases[i]->name, cell_kind(cases[i]), predicted[i], cases[i]->measured, cases[i]->unit,
                        error_pct(predicted[i], cases[i]->measured)});
    rep.add("mean_abs_error", mean_abs(predicted, cases), "%", "mean of |error| over the cases");
    finish(rep, vm);
    if (journal) journal->remove();
    return 0;
  }

  std::vector<double> measured;
  for (const Case* c : cases) measured.push_back(c->measured);
  const FitResult fr = refusal_ends_journal([&] { return fit(params, measured, evaluate, max_iterations); });

  auto& t = rep.add_table("cases", {"case", "kind", "predicted", "measured", "unit", "error [%]"},
                          "at the fitted values; error = (predicted - measured) / measured");
  for (std::size_t i = 0; i < cases.size(); ++i)
    t.rows.push_back({cases[i]->name, cell_kind(cases[i]), fr.after[i], cases[i]->measured, cases[i]->unit,
                      error_pct(fr.after[i], cases[i]->measured)});
  rep.add("mean_abs_error", mean_abs(fr.after, cases), "%", "mean of |error| over the cases, at the fitted values");

  auto& f = rep.section("fit", "least squares over the cases: minimises the sum of squared relative errors");
  auto& pt = f.add_table("parameters", {"parameter", "unit", "start", "fitted", "min", "max"}, "integers within their range");
  for (std::size_t j = 0; j < params.size(); ++j)
    pt.rows.push_back({params[j].key, std::string(params[j].info->unit), params[j].start, fr.values[j], params[j].lo,
                       params[j].hi});
  f.add_int("iterations", fr.iterations, "iterations", "Gauss-Newton on forward differences");
  f.add_int("unit_steps", fr.moves, "steps", "integer search around the Gauss-Newton point");
  f.add_int("evaluations", fr.evaluations, "evaluations", "parameter vectors emulated, every case each");
  auto& rt = f.add_table("residuals", {"case", "unit", "measured", "before", "error before [%]", "after", "error after [%]"},
                         "before: at the start values; after: at the fitted values");
  for (std::size_t i = 0; i < cases.size(); ++i)
    rt.rows.push_back({cases[i]->name, cases[i]->unit, cases[i]->measured, fr.before[i],
                       error_pct(fr.before[i], cases[i]->measured), fr.after[i],
                       error_pct(fr.after[i], cases[i]->measured)});
  f.add("mean_abs_error_before", mean_abs(fr.before, cases), "%");
  f.add("mean_abs_error_after", mean_abs(fr.after, cases), "%");
  if (vm.count("wafer-out")) {
    for (std::size_t j = 0; j < params.size(); ++j) wafer_out[params[j].key] = fr.values[j];
    traces::write_text_atomic(vm["wafer-out"].as<std::string>(), wafer_out.dump(2) + "\n");
    f.add_text("wafer_out", vm["wafer-out"].as<std::string>(), "the fitted values as a wafer file (--wafer PATH)");
  }
  finish(rep, vm);
  if (journal) journal->remove();
  return 0;
}

const Registrar reg{{"validate",
                     "emulate published measurements (a case file): predicted vs measured, and fit unpublished parameters",
                     run_validate, 40}};

}  // namespace
}  // namespace wafer::apps
