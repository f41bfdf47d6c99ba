// wafer-emu: a cycle-approximate emulator of a wafer-scale processor.
#include <fmt/format.h>

#include <algorithm>
#include <system_error>
#include <charconv>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>

#include "apps/cli.h"
#include "apps/memory_gate.h"
#include "apps/sweep.h"
#include "hw/error.h"
#include "hw/json_input.h"
#include "mapper/model_config.h"
#include "noc/big_array.h"

namespace wafer::apps {

namespace {
std::vector<Command>& registry() {
  static std::vector<Command> r;
  return r;
}
}  // namespace

Registrar::Registrar(Command c) {
  registry().push_back(c);
  std::sort(registry().begin(), registry().end(), [](const Command& a, const Command& b) { return a.order < b.order; });
}
const std::vector<Command>& commands() { return registry(); }

bool parse(const std::vector<std::string>& args, po::options_description& opts, std::string_view command,
           std::string_view usage, po::variables_map& vm, bool check_json) {
  opts.add_options()("json", po::value<std::string>()->value_name("PATH"),
                     "also write the results as JSON (every figure with its unit)")("help,h", "show this help");
  // (no guessing: an option's prefix is no option, so `--con 64` is refused rather than taken as --context, and an
  // option added later cannot change what an abbreviation that worked before meant)
  const po::parsed_options parsed =
      po::command_line_parser(args)
          .options(opts)
          .style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing)
          .run();
  // (a word that is no option's value: ignored by the parser, so refused here)
  for (const auto& o : parsed.options)
    if (o.position_key >= 0 && !o.original_tokens.empty())
      throw hw::InputError(fmt::format("unexpected argument '{}' (options start with --)", o.original_tokens.front()));
  // (an empty value is no path, name or number: each command said so its own way, or not at all (": cannot open
  // study file"); an option's value may be empty only when the option needs none)
  for (const auto& o : parsed.options)
    for (const std::string& v : o.value)
      if (v.empty() && o.position_key < 0 && !o.string_key.empty())
        throw hw::InputError(fmt::format("--{} is empty: give its value", o.string_key));
  po::store(parsed, vm);
  if (vm.count("help")) {
    fmt::print("usage: wafer-emu {} {}\n\n", command, usage);
    std::ostringstream os;
    os << opts;
    fmt::print("{}", os.str());
    return false;
  }
  po::notify(vm);
  if (check_json && vm.count("json")) traces::check_writable(vm["json"].as<std::string>(), "--json");
  return true;
}

std::vector<NamedPath> given_paths(const po::variables_map& vm, std::initializer_list<const char*> names) {
  std::vector<NamedPath> out;
  for (const char* n : names) {
    if (!vm.count(n)) continue;
    // (an option given once per wafer, decode --defects: each of its paths)
    const auto* many = boost::any_cast<std::vector<std::string>>(&vm[n].value());
    for (const std::string& v : many ? *many : std::vector<std::string>{vm[n].as<std::string>()}) {
      // (a shipped model's name: its config file; a wafer preset is no file)
      const std::string path = std::string_view(n) == "model" ? mapper::model_file(v).string() : v;
      if (path.empty() || (std::string_view(n) == "wafer" && !hw::names_file(v))) continue;
      out.push_back({fmt::format("--{}", n), path});
    }
  }
  return out;
}

namespace {
// The file a path names, for comparing: through links and "..", as an absolute path (what does not exist yet, as
// written).
std::filesystem::path identity(const std::filesystem::path& p) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path a = fs::absolute(p, ec).lexically_normal();
  // A link whose target does not exist yet: the target's identity (weakly_canonical keeps the link's own name,
  // so an output through it and one to its target looked like two files; the output is written through the
  // link, traces::output_path). A few links deep at most (a loop ends there).
  for (int depth = 0; depth < 8 && fs::is_symlink(fs::symlink_status(a, ec)) && !fs::exists(a, ec); ++depth) {
    const fs::path target = fs::read_symlink(a, ec);
    if (ec) break;
    a = (target.is_absolute() ? target : a.parent_path() / target).lexically_normal();
  }
  // (absolute first: a relative name whose first part does not exist is otherwise kept relative)
  fs::path c = fs::weakly_canonical(a, ec);
  return ec ? a : c;
}
// Whether `file` is `folder` or lies in it (both identities).
bool within(const std::filesystem::path& file, const std::filesystem::path& folder) {
  auto f = file.begin();
  for (auto d = folder.begin(); d != folder.end(); ++d, ++f)
    if (d->empty()) continue;  // (a trailing separator)
    else if (f == file.end() || *f != *d) return false;
  return true;
}
// Whether two identities name one file: the same path, or two names of one existing file (a hard link: its paths
// differ; refused only when written, after the run, before).
bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code ec;
  return a == b || (std::filesystem::equivalent(a, b, ec) && !ec);
}
// The paths with their identities.
std::vector<std::pair<const NamedPath*, std::filesystem::path>> identified(const std::vector<NamedPath>& paths) {
  std::vector<std::pair<const NamedPath*, std::filesystem::path>> out;
  for (const auto& p : paths) out.push_back({&p, identity(p.path)});
  return out;
}
}  // namespace

void check_apart(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs,
                 const std::vector<NamedPath>& folders) {
  auto files = identified(outputs);  // (the files only: streams are written one after the other)
  std::erase_if(files, [](const auto& f) { return traces::output_path(f.first->path).stream(); });
  const auto ins = identified(inputs), dirs = identified(folders);
  for (std::size_t i = 0; i < files.size(); ++i) {
    const auto& [o, id] = files[i];
    for (std::size_t j = 0; j < i; ++j)
      if (same_file(id, files[j].second))
        throw hw::InputError(fmt::format("{} {} names the file {} writes: one would be written over the other", o->option,
                                         o->path, files[j].first->option));
    for (const auto& [in, in_id] : ins)
      if (same_file(id, in_id))
        throw hw::InputError(fmt::format("{} {} names the file {} reads: it would be written over", o->option, o->path,
                                         in->option));
    for (const auto& [f, d] : dirs)
      if (within(id, d))
        throw hw::InputError(fmt::format("{} {} lies in {} {}, which the run replaces whole", o->option, o->path,
                                         f->option, f->path));
  }
  for (const auto& [f, d] : dirs)
    for (const auto& [in, in_id] : ins)
      if (within(in_id, d))
        throw hw::InputError(fmt::format("{} {} holds {} {}, which the run reads: it replaces the folder whole", f->option,
                                         f->path, in->option, in->path));
}

std::vector<NamedPath> study_files(const std::filesystem::path& dir, const std::string& option) {
  std::vector<NamedPath> out{{option, (dir / "spec.json").string()}, {option, (dir / "points.jsonl").string()}};
  // The study file the folder was made from and the model and wafer files it names, as its spec.json records them
  // (sweep --summarize --json and report --out wrote over them); a folder whose spec.json does not read has none
  // here, and is refused when read.
  try {
    const sweep::Study study = sweep::read_dir_study(dir);
    out.push_back({fmt::format("{} (the study file)", option), study.path});
    for (const auto& [key, file] : sweep::input_files(study))
      out.push_back({fmt::format("{} (the study's {})", option, key), file.string()});
  } catch (const std::exception&) {
  }
  return out;
}

std::vector<NamedPath> study_outputs(const std::filesystem::path& dir, const std::string& option) {
  std::vector<NamedPath> out;
  for (const std::string_view f : sweep::kSummaryFiles) out.push_back({option, (dir / f).string()});
  out.push_back({option, MemoryGate::table(dir).string()});  // (the workers' memory table)
  return out;
}

void finish(const traces::Report& report, const po::variables_map& vm) {
  report.print(stdout);
  std::fflush(stdout);  // (before the JSON: --json /dev/stdout puts it after the text)
  if (vm.count("json")) {
    traces::write_json_atomic(vm["json"].as<std::string>(), traces::results_json(report));
  }
}

Progress::Progress(std::string what, std::int64_t total)
    : what_(std::move(what)), total_(total), tty_(isatty(STDERR_FILENO) != 0) {}

void Progress::tick(std::int64_t done) {
  using clock = std::chrono::steady_clock;
  double t = std::chrono::duration<double>(clock::now() - start_).count();
  if (last_ >= 0 && t - last_ < (tty_ ? 0.25 : 5.0) && done != total_) return;
  if (done == total_ && shown_ == total_) return;  // (a mesh draining ticks the total again and again)
  last_ = t, shown_ = done;
  fmt::print(stderr, "{}{}: {}/{} ({:.0f}%){}", tty_ ? "\r" : "", what_, done, total_,
             total_ ? 100.0 * double(done) / double(total_) : 100.0, tty_ ? "" : "\n");
  std::fflush(stderr);
}
void Progress::done() {
  if (tty_ && last_ >= 0) fmt::print(stderr, "\n");
}

TaskProgress::TaskProgress(std::string what, std::uint64_t total) : what_(std::move(what)), total_(total) {
  double after = 1.0;  // (read whether or not stderr is a terminal: a bad value is an error either way)
  if (const char* env = std::getenv("WAFER_EMU_PROGRESS_AFTER")) {
    char* end = nullptr;
    after = std::strtod(env, &end);
    if (end == env || *end != '\0' || !(after >= 0) || after > 1e6)
      throw hw::InputError(fmt::format("WAFER_EMU_PROGRESS_AFTER '{}' is not a number of seconds from 0 to 1e6", env));
  }
  if (isatty(STDERR_FILENO) == 0) return;
  thread_ = std::thread([this, after] {
    std::unique_lock lock(m_);
    const auto wake = start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(after));
    // (0: drawn at once, even when the step is over before this thread runs)
    if (after > 0 && cv_.wait_until(lock, wake, [this] { return stop_; })) return;
    do draw(std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
    while (!cv_.wait_for(lock, std::chrono::milliseconds(250), [this] { return stop_; }));
  });
}

TaskProgress::~TaskProgress() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(m_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  // (also while an error unwinds the step: the line then ends before the error's own)
  if (drawn_) draw(std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(), "\n");
}

void TaskProgress::restart(std::string what, std::uint64_t total) {
  std::lock_guard lock(m_);  // (the thread draws holding it)
  what_ = std::move(what), total_ = total;
  tasks_.store(0, std::memory_order_relaxed);
}

void TaskProgress::draw(double t, const char* end) noexcept {
  drawn_ = true;
  const std::uint64_t done = tasks_.load(std::memory_order_relaxed);
  try {
    // (the percentage rounded down: 100 % only when every task is in)
    fmt::print(stderr, "\r{}: {} of {} tile tasks ({}%), {:.0f} s\x1b[K{}", what_, done, total_,
               total_ ? std::uint64_t(std::min<long double>(100, 100.0L * done / total_)) : 100, t, end);
    std::fflush(stderr);
  } catch (...) {  // (stderr gone: nothing to tell)
  }
}

std::uint64_t parse_seed(const std::string& s) {
  std::uint64_t seed = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), seed);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size())
    throw hw::InputError(fmt::format("--seed '{}' must be a whole number in [0, 2^64)", s));
  return seed;
}

std::string describe_status(int st) {
  if (WIFEXITED(st)) return fmt::format("exited with status {}", WEXITSTATUS(st));
  if (WIFSIGNALED(st)) return fmt::format("was killed by signal {} ({})", WTERMSIG(st), strsignal(WTERMSIG(st)));
  return "ended";
}

}  // namespace wafer::apps

namespace {
void usage() {
  fmt::print("usage: wafer-emu <subcommand> [options]     (wafer-emu <subcommand> --help for its options)\n\n");
  for (const auto& c : wafer::apps::commands()) fmt::print("  {:<10} {}\n", c.name, c.summary);
}
}  // namespace

int main(int argc, char** argv) {
  // SystemC prints a banner at elaboration; keep stdout for our own output.
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  std::vector<std::string> args(argv + 1, argv + argc);
  // No arguments: the main job, a decode step of the default model on the default wafer with the mapping
  // searched (`decode --placement auto`: the best mapping the search can emulate, its choice explained).
  const bool main_job = args.empty();
  std::string name = main_job ? std::string("decode") : args.front();
  if (main_job) args = {"--placement", "auto"};
  else args.erase(args.begin());
  if (name == "--help" || name == "-h" || name == "help") {
    usage();
    return 0;
  }
  const auto& cmds = wafer::apps::commands();
  auto it = std::find_if(cmds.begin(), cmds.end(), [&](const auto& c) { return c.name == name; });
  if (it == cmds.end() && main_job && !cmds.empty()) {  // main job fallback
    args.clear();
    it = std::find_if(cmds.begin(), cmds.end(), [](const auto& c) { return c.name == "defects"; });
    if (it == cmds.end()) it = cmds.begin();
  }
  if (it == cmds.end()) {
    fmt::print(stderr, "wafer-emu: error: unknown subcommand '{}' (run `wafer-emu --help`)\n", wafer::hw::one_line(name));
    return 2;
  }
  try {
    wafer::noc::huge_page_advice();  // (WAFER_EMU_HUGE_PAGES checked before anything is allocated)
    wafer::noc::probe_huge_pages(true);  // (with it unset, huge pages where measured cheaper: noc::block_advice)
    wafer::noc::offer_heap_huge_pages();  // (the C library's heap too, when the big blocks get them)
    return it->run(args);
  } catch (const wafer::hw::InputError& e) {
    fmt::print(stderr, "wafer-emu {}: error: {}\n", it->name, e.what());
  } catch (const boost::program_options::error& e) {
    fmt::print(stderr, "wafer-emu {}: error: {}\n", it->name, wafer::hw::one_line(e.what()));
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "wafer-emu {}: error: out of memory\n", it->name);
    return 3;
  } catch (const std::system_error& e) {
    // What the system refused (the standard output full or closed, no thread to be had): not the program's fault.
    std::fflush(stdout);
    fmt::print(stderr, "wafer-emu {}: error: {}\n", it->name, wafer::hw::one_line(e.what()));
    return 3;
  } catch (const std::exception& e) {
    fmt::print(stderr, "wafer-emu {}: internal error: {}\n", it->name, wafer::hw::one_line(e.what()));
    return 3;
  }
  return 2;
}
