#pragma once
// The wafer-emu command line: subcommands register themselves (one apps/cmd_<name>.cpp each).
#include <boost/program_options.hpp>
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

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
// --help was printed. Bad options throw po::error, reported by main as a one-line error.
bool parse(const std::vector<std::string>& args, po::options_description& opts, std::string_view command,
           std::string_view usage, po::variables_map& vm);

// Prints the report's human summary on stdout and writes --json if given (atomically).
// The version of the results' JSON (`--json` of every subcommand: its top-level `schema_version`); raised
// when a key changes meaning or form (docs/results.md). Set in traces/report.h, where the JSON is built.
inline constexpr int kResultsSchemaVersion = traces::kResultsSchemaVersion;

void finish(const traces::Report& report, const po::variables_map& vm);

// A defect map file to write (`option` PATH): refused unless it ends in .csv or .json (hw::write_defects).
void check_map_path(const std::string& path, const char* option);

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
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace wafer::apps
