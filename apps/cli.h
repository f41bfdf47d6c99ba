#pragma once
// The wafer-emu command line: subcommands register themselves (one apps/cmd_<name>.cpp each).
#include <atomic>
#include <boost/program_options.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "hw/defect_map.h"
#include "traces/report.h"

namespace wafer::apps {

namespace po = boost::program_options;

struct Command {
  std::string_view name;
  std::string_view summary;
  int (*run)(const std::vector<std::string>& args);
  int order;  // position in `wafer-emu --help`
};

struct Registrar {
  explicit Registrar(Command c);
};
const std::vector<Command>& commands();

// Parses a subcommand's arguments (every subcommand gets --help and --json PATH). Returns false when
// --help was printed. Bad options throw po::error, reported by main as a one-line error. `check_json`: whether
// --json's path is checked writable here (traces::check_writable); false for a command that checks it itself, after
// what would refuse it for a better reason (table: --json inside --out).
bool parse(const std::vector<std::string>& args, po::options_description& opts, std::string_view command,
           std::string_view usage, po::variables_map& vm, bool check_json = true);

// Prints the report's human summary on stdout and writes --json if given (atomically).
// The version of the results' JSON (`--json` of every subcommand: its top-level `schema_version`); raised
// when a key changes meaning or form (docs/results.md). Set in traces/report.h, where the JSON is built.
inline constexpr int kResultsSchemaVersion = traces::kResultsSchemaVersion;

void finish(const traces::Report& report, const po::variables_map& vm);

// Paths a run reads and writes, each with the option that names it ("--json", "--model", ...).
struct NamedPath {
  std::string option;
  std::string path;
};
// Of the options `names` (without the dashes) given in vm as strings, those whose value is a path: for "wafer" and
// "model", whose values may name a preset or a shipped model, only values with a '/' or ending in .json.
std::vector<NamedPath> given_paths(const po::variables_map& vm, std::initializer_list<const char*> names);
// Refuses, in one line naming both options, an output that would be written over an input or over another output
// (the same file, through links or not): a results file named like the model config it read, a trace like the JSON.
// Outputs that are streams (/dev/stdout, a FIFO: traces::output_path) are written one after the other and may be
// shared. `folders`: outputs that are folders a run replaces whole (table --out): a file output inside one is
// refused too.
void check_apart(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs,
                 const std::vector<NamedPath>& folders = {});
// The files of study folder `dir` (sweep --out) a run reads, named by `option`: its spec.json and points.jsonl, and
// (when spec.json reads) the study file it was made from and the model and wafer files that names (sweep::input_files).
std::vector<NamedPath> study_files(const std::filesystem::path& dir, const std::string& option);
// The files sweep writes in study folder `dir` once the study is complete (summary.csv, summary.json,
// placements.csv, sensitivity.csv) and its workers' memory table, named by `option`: outputs for check_apart,
// listed before the run's own, so
// that no other output is written over them (a report's page named summary.csv replaced the study's summary).
std::vector<NamedPath> study_outputs(const std::filesystem::path& dir, const std::string& option);

// A defect map file to write (`option` PATH): refused unless it ends in .csv or .json (hw::format_defects).
void check_map_path(const std::string& path, const char* option);
// Writes `map` to `path` in the format its extension names, as every output is written (traces::write_text_atomic:
// a file through a temporary file renamed over it, a link's target with the link kept, a stream directly).
void write_defect_map(const std::string& path, const hw::DefectMap& map);

// --seed's value as a whole number in [0, 2^64): InputError otherwise (the option is read as a string, since a
// std::uint64_t option takes "-1" as 2^64 - 1).
std::uint64_t parse_seed(const std::string& s);

// How a child process ended, from its waitpid status: "exited with status N" or "was killed by signal N (Name)".
std::string describe_status(int status);

// Progress for long runs: one line on stderr, rewritten in place on a terminal, at most a few per second.
class Progress {
 public:
  Progress(std::string what, std::int64_t total);
  void tick(std::int64_t done);
  void done();

 private:
  std::string what_;
  std::int64_t total_;
  bool tty_;
  double last_ = -1;
  std::int64_t shown_ = -1;  // the count last drawn (the total is drawn once, however often it is ticked)
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// A step's progress on a terminal (decode): while it lives, a thread of its own redraws one line on stderr about
// four times a second, the tasks the wafers' executors have told counter() (sim::StepOptions::progress: copies
// included) against `total`, from `after` seconds on (WAFER_EMU_PROGRESS_AFTER, default 1: a short step draws
// nothing; 0: drawn from the start, however short the step). When it goes, a line drawn is drawn once more with the final count and ended. Off (counter() null)
// when stderr is not a terminal. The step's results do not depend on it.
class TaskProgress {
 public:
  TaskProgress(std::string what, std::uint64_t total);
  ~TaskProgress();
  TaskProgress(const TaskProgress&) = delete;
  TaskProgress& operator=(const TaskProgress&) = delete;
  std::atomic<std::uint64_t>* counter() { return thread_.joinable() ? &tasks_ : nullptr; }
  // The next step of a run of several (a prefill's chunks): the line's new words and total, its count from 0.
  // Only while no step tells counter().
  void restart(std::string what, std::uint64_t total);

 private:
  void draw(double t, const char* end = "") noexcept;  // (\r, the line, erase to its end, then `end`)
  std::string what_;
  std::uint64_t total_;
  std::atomic<std::uint64_t> tasks_{0};
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace wafer::apps
