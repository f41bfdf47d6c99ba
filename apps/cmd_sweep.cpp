// wafer-emu sweep: a study of many decode points, resumable, spread over worker processes, summarised over the
// seeds. docs/studies.md.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>
#include <variant>
#include <memory>
#include <optional>
#include <thread>

#include "apps/cli.h"
#include "apps/decode_point.h"
#include "apps/sweep.h"
#include "hw/error.h"
#include "traces/report.h"

namespace wafer::apps {
namespace {

using namespace sweep;
using Clock = std::chrono::steady_clock;

// done/total, rate and ETA on one rewritten stderr line; silent unless stderr is a terminal.
class SweepProgress {
 public:
  SweepProgress(std::int64_t total, std::int64_t already, bool quiet)
      : total_(total), already_(already), on_(!quiet && isatty(STDERR_FILENO) != 0) {}
  // `waiting`: the study's processes on this host waiting for memory (apps::MemoryGate::waiting).
  void tick(std::int64_t done, std::int64_t failed, bool force = false, std::int64_t waiting = 0) {
    if (!on_) return;
    const double t = std::chrono::duration<double>(Clock::now() - start_).count();
    if (!force && last_ >= 0 && t - last_ < 0.25) return;
    last_ = t;
    const double rate = t > 0 ? double(done - already_) / t : 0.0;
    const std::string eta = rate > 0 ? fmt::format("{:.0f} s", double(total_ - done) / rate) : std::string("?");
    const std::string wait = waiting > 0 ? fmt::format(", {} waiting for memory", waiting) : std::string();
    fmt::print(stderr, "\rsweep: {}/{} points ({} failed), {:.2f} points/s, ETA {}{}   ", done, total_, failed, rate, eta,
               wait);
    std::fflush(stderr);
    shown_ = true;
  }
  ~SweepProgress() {
    if (shown_) fmt::print(stderr, "\n");
  }
  bool on() const { return on_; }
  SweepProgress(const SweepProgress&) = delete;
  SweepProgress& operator=(const SweepProgress&) = delete;

 private:
  std::int64_t total_, already_;
  bool on_;
  bool shown_ = false;
  double last_ = -1;
  Clock::time_point start_ = Clock::now();
};

std::pair<std::int64_t, std::int64_t> parse_shard(const std::string& s) {
  const std::size_t slash = s.find('/');
  std::int64_t k = -1, n = 0;
  auto num = [](std::string_view v, std::int64_t& out) {
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    return !v.empty() && ec == std::errc() && p == v.data() + v.size();
  };
  if (slash == std::string::npos || !num(std::string_view(s).substr(0, slash), k) ||
      !num(std::string_view(s).substr(slash + 1), n) || n < 1 || n > 1'000'000 || k < 0 || k >= n)
    throw hw::InputError(fmt::format("--shard '{}': expected K/N with 0 <= K < N", s));
  return {k, n};
}

// Under an MPI launcher (`mpirun -n N`, Open MPI or MPICH) every rank is a process of its own: it takes shard
// rank/size from the launcher's environment. No MPI library is linked: the ranks share only DIR/points.jsonl.
std::optional<std::pair<std::int64_t, std::int64_t>> launcher_shard() {
  for (auto [rank_var, size_var] : {std::pair{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}, std::pair{"PMI_RANK", "PMI_SIZE"}}) {
    const char* r = std::getenv(rank_var);
    const char* n = std::getenv(size_var);
    if (!r || !n) continue;
    const std::string text = fmt::format("{}/{}", r, n);
    try {
      const auto shard = parse_shard(text);
      if (shard.second > 1) return shard;
      return std::nullopt;
    } catch (const hw::InputError&) {
      throw hw::InputError(fmt::format("{}={} / {}={}: not a rank and a size of an MPI launcher", rank_var, r, size_var, n));
    }
  }
  return std::nullopt;
}

std::string self_exe() {
  std::string buf(4096, '\0');
  const ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) throw std::runtime_error(fmt::format("cannot find this program (/proc/self/exe: {})", std::strerror(errno)));
  buf.resize(std::size_t(n));
  return buf;
}

// --jobs N: N workers, each `sweep --shard K/N --quiet` of the same study; the parent shows progress.
int run_workers(const std::string& spec, const std::string& out, std::int64_t jobs, PointsFile& pf, std::int64_t total,
                bool quiet, bool no_cache) {
  const std::string exe = self_exe();
  std::vector<pid_t> pids;
  for (std::int64_t k = 0; k < jobs; ++k) {
    std::vector<std::string> args = {exe, "sweep", "--spec", spec, "--out", out, "--shard", fmt::format("{}/{}", k, jobs), "--quiet"};
    if (no_cache) args.push_back("--no-cache");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error(fmt::format("fork: {}", std::strerror(errno)));
    if (pid == 0) {
      const int null = ::open("/dev/null", O_WRONLY);
      if (null >= 0) ::dup2(null, STDOUT_FILENO);
      ::execv(exe.c_str(), argv.data());
      ::_exit(127);
    }
    pids.push_back(pid);
  }
  SweepProgress progress(total, pf.count(), quiet);
  int worst = 0;
  std::size_t running = pids.size();
  while (running > 0) {
    for (auto& pid : pids) {
      if (pid <= 0) continue;
      int status = 0;
      const pid_t r = ::waitpid(pid, &status, WNOHANG);
      if (r == 0) continue;
      if (r < 0 && errno == EINTR) continue;
      const int code = r < 0 ? 3 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      if (r > 0 && WIFSIGNALED(status))
        fmt::print(stderr, "wafer-emu sweep: a worker {}{}\n", describe_status(status),
                   WTERMSIG(status) == SIGKILL ? ": by the kernel when the machine ran out of memory, or by a user" : "");
      worst = std::max(worst, code);
      pid = -1;
      --running;
    }
    pf.refresh();
    progress.tick(pf.count(), pf.failed(), running == 0, progress.on() ? MemoryGate::waiting(out) : 0);
    if (running > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return worst;
}

int run_sweep(const std::vector<std::string>& args) {
  po::options_description opts("sweep options");
  opts.add_options()
      ("spec", po::value<std::string>()->value_name("FILE"), "the study (docs/studies.md), e.g. configs/studies/tiny.json")
      ("out", po::value<std::string>()->value_name("DIR"), "the study's directory: spec.json, points.jsonl, summary.csv/json")
      ("jobs", po::value<std::int64_t>()->default_value(1)->value_name("N"), "worker processes")
      ("point", po::value<std::int64_t>()->value_name("I"), "run only point I (e.g. one task of a job array)")
      ("shard", po::value<std::string>()->value_name("K/N"), "run only the points whose index is K modulo N")
      ("summarize", po::value<std::string>()->value_name("DIR"), "summarise the points DIR holds, run nothing")
      ("check", "check the study (--spec) as a run would, every point resolved, and print its point count; run and write nothing")
      ("no-cache", "build every point from scratch (no repair, mapping, mesh or memory kept from the process's earlier points); "
                   "the lines are the same but for wall_s")
      ("quiet", "no progress line");
  po::variables_map vm;
  if (!parse(args, opts, "sweep", "--spec FILE --out DIR [--jobs N] [--point I | --shard K/N] [--json PATH]  |  "
                                  "--summarize DIR [--json PATH]  |  --check --spec FILE", vm))
    return 0;
  const bool quiet = vm.count("quiet") > 0;
  if (vm.count("check")) {
    for (const char* o : {"out", "point", "shard", "summarize"})
      if (vm.count(o)) throw hw::InputError(fmt::format("--check reads the study only; --{} does not apply", o));
    if (!vm["jobs"].defaulted()) throw hw::InputError("--check reads the study only; --jobs does not apply");
    if (!vm.count("spec")) throw hw::InputError("--check needs --spec FILE");
    check_apart(given_paths(vm, {"json"}), given_paths(vm, {"spec"}));
    const Study study = load_study(vm["spec"].as<std::string>());
    traces::Report rep(fmt::format("study {}{}: checked, {} points", study.hash,
                                   study.name.empty() ? "" : " (" + study.name + ")", study.points()));
    rep.add_text("study", study.hash, "hash of the study file's content");
    rep.add_text("source", study.path, "the study file");
    rep.add_int("points", study.points(), "points", "every one resolved as decode would take it (nothing mapped)");
    auto& t = rep.add_table("axes", {"axis", "values", "first", "last"}, "in file order; the last varies fastest");
    for (const auto& [k, vs] : study.axes)
      t.rows.push_back({k, std::int64_t(vs.size()), vs.front().is_string() ? vs.front().get<std::string>() : vs.front().dump(),
                        vs.back().is_string() ? vs.back().get<std::string>() : vs.back().dump()});
    finish(rep, vm);
    return 0;
  }
  if (vm.count("summarize")) {
    for (const char* o : {"spec", "out", "point", "shard"})
      if (vm.count(o)) throw hw::InputError(fmt::format("--summarize DIR reads DIR only; --{} does not apply", o));
    const std::filesystem::path dir = vm["summarize"].as<std::string>();
    for (const char* o : {"jobs", "no-cache"})
      if (vm.count(o) && !vm[o].defaulted())
        throw hw::InputError(fmt::format("--summarize DIR reads DIR only; --{} does not apply", o));
    std::vector<NamedPath> outputs = study_outputs(dir, "--summarize");
    for (NamedPath& p : given_paths(vm, {"json"})) outputs.push_back(std::move(p));
    check_apart(outputs, study_files(dir, "--summarize"));
    const Study study = read_dir_study(dir);
    // (a wafer file edited since: its points' µs checked against the new clock were called edited)
    check_inputs(dir, study, "restore the file to summarise them");
    PointsFile pf(dir, study.hash, study.points(), true);
    const auto lines = pf.read_all();
    finish(summarize(dir, study, lines), vm);
    return 0;
  }
  if (!vm.count("spec")) throw hw::InputError("--spec FILE is required (e.g. configs/studies/tiny.json), or --summarize DIR");
  if (!vm.count("out")) throw hw::InputError("--out DIR is required (where the study's points go)");
  const std::int64_t jobs = vm["jobs"].as<std::int64_t>();
  if (jobs < 1 || jobs > 1024) throw hw::InputError(fmt::format("--jobs {} is outside [1, 1024]", jobs));
  if (vm.count("point") && vm.count("shard")) throw hw::InputError("give --point I or --shard K/N, not both");
  std::optional<std::pair<std::int64_t, std::int64_t>> rank;
  if (!vm.count("point") && !vm.count("shard")) rank = launcher_shard();
  const bool partial = vm.count("point") || vm.count("shard") || rank;
  if (partial && !vm["jobs"].defaulted())
    throw hw::InputError(rank ? "--jobs does not apply under an MPI launcher (every rank is a worker)"
                              : "--jobs spreads a whole study; it does not apply with --point or --shard");

  const std::string spec_arg = vm["spec"].as<std::string>(), out = vm["out"].as<std::string>();
  const Study study = load_study(spec_arg);
  const std::int64_t total = study.points();
  std::vector<std::int64_t> mine;
  if (vm.count("point")) {
    const std::int64_t i = vm["point"].as<std::int64_t>();
    if (i < 0 || i >= total)
      throw hw::InputError(fmt::format("--point {}: the study {} has points 0 to {}", i, study.path, total - 1));
    mine.push_back(i);
  } else {
    std::int64_t k = 0, n = 1;
    if (vm.count("shard")) std::tie(k, n) = parse_shard(vm["shard"].as<std::string>());
    if (rank) std::tie(k, n) = *rank;
    for (std::int64_t i = k; i < total; i += n) mine.push_back(i);
  }
  if (vm.count("json")) traces::check_writable(vm["json"].as<std::string>(), "--json");
  {
    std::vector<NamedPath> inputs{{"--spec", spec_arg}};  // (named first: what the command line gave)
    for (const auto& [key, file] : sweep::input_files(study)) inputs.push_back({fmt::format("--spec (its {})", key), file.string()});
    for (NamedPath& p : study_files(out, "--out")) inputs.push_back(std::move(p));
    std::vector<NamedPath> outputs = study_outputs(out, "--out");
    for (NamedPath& p : given_paths(vm, {"json"})) outputs.push_back(std::move(p));
    check_apart(outputs, inputs);
  }

  const std::filesystem::path dir = out;
  prepare_dir(dir, study);
  PointsFile pf(dir, study.hash, total);
  pf.refresh();
  std::vector<std::int64_t> pending;
  for (auto i : mine)
    if (!pf.done(i)) pending.push_back(i);
  const auto t0 = Clock::now();

  if (!partial && jobs > 1 && pending.size() > 1) {
    const int code = run_workers(spec_arg, out, std::min<std::int64_t>(jobs, std::int64_t(pending.size())), pf, total, quiet,
                                 vm.count("no-cache") > 0);
    if (code != 0) {
      fmt::print(stderr, "wafer-emu sweep: error: a worker exited with status {} (its message is above); run again to resume\n", code);
      return code == 2 ? 2 : 3;
    }
  } else if (!pending.empty()) {
    sim::Simulator simulator;
    PointCache cache(simulator, vm.count("no-cache") == 0);
    // The other processes of this study on this host (workers, ranks, array tasks) and this one take turns for
    // memory (apps/memory_gate.h); one alone is never held back.
    MemoryGate gate(dir, [&cache] { cache.release(); });
    Resolver resolver(study);
    // A study run whole in this process gives each point's wafers the CPUs (a pipeline's wafers side by side,
    // as decode does); a worker, a rank or a job-array task shares them with others and keeps to one.
    const std::uint32_t point_threads = partial ? 1 : cpus_available();
    const auto before = std::int64_t(mine.size() - pending.size());
    SweepProgress progress(partial ? std::int64_t(mine.size()) : total, partial ? before : pf.count(), quiet);
    std::int64_t ran = 0;
    for (auto i : pending) {
      if (pf.done(i)) continue;
      pf.append(run_point(cache, resolver, study, i, point_threads, &gate));
      ++ran;
      progress.tick(partial ? before + ran : pf.count(), pf.failed());
    }
    progress.tick(partial ? before + ran : pf.count(), pf.failed(), true);
  }
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();

  if (partial) {
    traces::Report rep(fmt::format("study {}: {} point(s) of {}{}", study.hash, mine.size(), total,
                                   rank ? fmt::format(" (rank {} of {})", rank->first, rank->second) : std::string()));
    rep.add_int("selected", std::int64_t(mine.size()), "points");
    rep.add_int("run", std::int64_t(pending.size()), "points", "the others were already in points.jsonl");
    rep.add("wall_time", wall, "s");
    // Whichever part finishes the study writes the summary files (a job array needs no last job).
    pf.refresh();
    if (pf.count() == total) {
      summarize(dir, study, pf.read_all());
      rep.add_text("summary", (dir / "summary.csv").string(), "the study is complete: summary.csv and summary.json written");
    }
    finish(rep, vm);
    return 0;
  }
  const auto lines = pf.read_all();
  traces::Report rep = summarize(dir, study, lines);
  rep.add_int("points_run", std::int64_t(pending.size()), "points", "by this run; the others were done before");
  rep.add("wall_time", wall, "s", "this run");
  finish(rep, vm);
  return 0;
}

const Registrar reg{{"sweep", "a study of many decode points (axes x seeds), resumable, over N processes; its summary",
                     run_sweep, 50}};

}  // namespace
}  // namespace wafer::apps
