// wafer-emu report: one self-contained HTML page (inline SVG) from a decode run's --json results or a study
// folder, and the heatmaps as CSV matrices beside it. docs/report.md.
#include <fmt/format.h>

#include <chrono>
#include <filesystem>

#include "apps/cli.h"
#include "apps/html_report.h"
#include "hw/error.h"
#include "traces/report.h"

namespace wafer::apps {
namespace {

int run_report(const std::vector<std::string>& args) {
  po::options_description opts("report options");
  opts.add_options()
      ("in", po::value<std::string>()->value_name("RESULTS.json|DIR"),
       "decode's --json results, or a study folder (sweep --out DIR)")
      ("out", po::value<std::string>()->default_value("report.html")->value_name("PATH"),
       "the HTML page; the heatmaps go beside it as PATH-stem.NAME.csv");
  po::variables_map vm;
  // The input may be given without --in, anywhere: a word that is no option's value becomes --in WORD.
  std::vector<std::string> a;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const bool value = i > 0 && (args[i - 1] == "--in" || args[i - 1] == "--out" || args[i - 1] == "--json");
    if (!value && !args[i].starts_with("-")) a.push_back("--in");
    a.push_back(args[i]);
  }
  if (!parse(a, opts, "report", "--in RESULTS.json|DIR [--out report.html]", vm)) return 0;
  if (!vm.count("in")) throw hw::InputError("--in RESULTS.json|DIR is required (decode --json results or a sweep --out folder)");
  const auto t0 = std::chrono::steady_clock::now();
  const std::filesystem::path in = vm["in"].as<std::string>();
  const std::filesystem::path out = vm["out"].as<std::string>();
  std::error_code ec;
  if (!std::filesystem::exists(in, ec)) throw hw::InputError(fmt::format("{}: no such file or folder", in.string()));
  traces::check_writable(out, "--out");
  const bool study = std::filesystem::is_directory(in, ec);
  // (a study's summary files are sweep's outputs: none of the report's is written over them)
  std::vector<NamedPath> outputs = study ? study_outputs(in, "the study's sweep") : std::vector<NamedPath>{};
  for (NamedPath& p : given_paths(vm, {"out", "json"})) outputs.push_back(std::move(p));
  const std::vector<NamedPath> inputs = study ? study_files(in, "--in") : given_paths(vm, {"in"});
  check_apart(outputs, inputs);

  report::Output o = study ? report::from_study(in) : report::from_decode(report::read_decode_json(in), in.string());
  // The CSVs first, the page last: the page names them. (None beside a page sent to a stream, /dev/stdout or a
  // pipe: there is no folder of its own to put them in.)
  std::filesystem::path stem = out;
  stem.replace_extension();
  std::vector<std::string> written;
  const bool stream = traces::output_path(out).stream();
  std::vector<std::filesystem::path> csvs;
  for (const auto& [name, text] : o.csv) {
    if (stream) break;
    std::filesystem::path p = stem;
    p += "." + name + ".csv";
    csvs.push_back(p);
  }
  {
    // (the CSVs' names are known once the page is drawn: --json named like one of them was written over it)
    std::vector<NamedPath> all;
    for (const auto& p : csvs) all.push_back({"--out (a CSV beside the page)", p.string()});
    for (NamedPath& p : outputs) all.push_back(std::move(p));
    check_apart(all, inputs);
  }
  try {
    for (std::size_t i = 0; i < csvs.size(); ++i) {
      traces::write_text_atomic(csvs[i], o.csv[i].second);
      written.push_back(csvs[i].string());
    }
    traces::write_text_atomic(out, o.html);
  } catch (const hw::InputError&) {
    // (nothing left behind: the CSVs written before the one that failed, or before the page, go too)
    for (const auto& p : written) std::filesystem::remove(p, ec);
    throw;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  traces::Report rep("report");
  rep.add_text("page", out.string());
  rep.add_int("page_bytes", std::int64_t(o.html.size()), "bytes");
  rep.add_int("csv_files", std::int64_t(written.size()), "files", written.empty() ? "" : fmt::format("{} ...", written.front()));
  rep.add("render", s, "s", "reading, drawing and writing");
  finish(rep, vm);
  return 0;
}

const Registrar reg{{"report", "an HTML page (inline SVG) of a decode run's results or a study folder", run_report, 70}};

}  // namespace
}  // namespace wafer::apps
