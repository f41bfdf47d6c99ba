#pragma once
// Results as named statistics (name, value, unit, description) in nested sections and tables, rendered
// by separate formatters: JSON (every figure with its unit) and a human summary. The JSON's form is
// docs/results.md (schema_version kResultsSchemaVersion).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace wafer::traces {

struct Stat {
  std::string key;
  std::variant<double, std::int64_t, std::string, std::uint64_t> value;  // (unsigned: a seed of 2^63 or more)
  std::string unit;         // empty for text
  std::string description;  // one line, shown by the text formatter
};

// A table's column: its name and the unit of its cells ("" for text, a count or an index).
struct Column {
  std::string name;
  std::string unit;
  // "name [unit]" (the unit in a trailing bracket) or "name": the notation add_table takes.
  static Column parse(std::string_view header);
  // "name [unit]", or "name" without a unit: the text summary's and the CSV files' header.
  std::string header() const;
};

struct Table {
  std::string key;
  std::string description;
  std::vector<Column> columns;
  std::vector<std::vector<std::variant<double, std::int64_t, std::string>>> rows;
};

// A grid of numbers (a heatmap: row-major, `rows` x `cols`), in JSON {"unit", "value": [[row 0], ...]}.
struct Matrix {
  std::string key;
  std::string unit;
  std::string description;
  std::int32_t cols = 0, rows = 0;
  std::vector<double> values;  // rows x cols; NaN for "no data" (null in JSON)
};

class Report {
 public:
  explicit Report(std::string title = {}) : title_(std::move(title)) {}
  const std::string& title() const { return title_; }

  void add(std::string key, double value, std::string unit, std::string description = {});
  void add_int(std::string key, std::int64_t value, std::string unit, std::string description = {});
  void add_uint(std::string key, std::uint64_t value, std::string unit, std::string description = {});
  void add_text(std::string key, std::string value, std::string description = {});
  // Columns written "name [unit]" or "name" (Column::parse); in JSON the table is
  // {"columns": [{"name", "unit"}, ...], "rows": [[cell, ...], ...]}.
  Table& add_table(std::string key, const std::vector<std::string>& columns, std::string description = {});
  Matrix& add_matrix(std::string key, std::int32_t cols, std::int32_t rows, std::vector<double> values, std::string unit,
                     std::string description = {});
  // A nested section; repeated calls with the same key return the same section.
  Report& section(const std::string& key, std::string title = {});

  // Lookups for tests and derived figures. Throw std::out_of_range when absent.
  const Stat& stat(const std::string& key) const;
  double number(const std::string& key) const;
  const Report& sub(const std::string& key) const;
  const std::vector<Stat>& stats() const { return stats_; }

  // This report as a JSON object (nested sections as objects); results_json adds the schema version.
  nlohmann::json to_json() const;
  void print(std::FILE* out, int indent = 0) const;

 private:
  std::string title_;
  std::vector<Stat> stats_;
  std::vector<Table> tables_;
  std::vector<Matrix> matrices_;
  std::vector<std::pair<std::string, std::unique_ptr<Report>>> sections_;
  std::vector<std::string> order_;  // keys of stats, tables and sections, in insertion order
};

// The version of the results' JSON (every `--json` and a study's summary.json: its top-level
// `schema_version`); raised when a key changes meaning or form. docs/results.md.
inline constexpr int kResultsSchemaVersion = 2;
// The whole document: `report.to_json()` with `"schema_version": kResultsSchemaVersion`.
nlohmann::json results_json(const Report& report);

// Where an output named `path` goes. A file (or a new one) is written to a temporary file beside the file the path
// names, through a symbolic link (the link stays), and renamed over it, so a reader never sees half a file. A
// stream is written to directly, appended to as `>> PATH` would: a device, a FIFO or socket, or a name under /dev
// or /proc such as /dev/stdout (a rename would replace the name itself, or the file a descriptor points to).
// A name of one of the process's own descriptors (/dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N) is written
// through that descriptor, after stdout and stderr are flushed, so the output lands after what the process printed
// there (another open of the same file would write at its own offset, over it).
struct OutputPath {
  std::filesystem::path target;  // the file renamed over, or the stream written
  std::filesystem::path tmp;     // beside target; empty for a stream
  int fd = -1;                   // a stream that is one of the process's descriptors
  bool stream() const { return tmp.empty(); }
};
OutputPath output_path(const std::filesystem::path& path);
// Opens `out` for writing as output_path says (a file's temporary file, a stream appended to, a descriptor's copy
// after stdout and stderr are flushed); hw::InputError naming `path` when it cannot.
std::FILE* open_output(const OutputPath& out, const std::filesystem::path& path);
// Closes `f` (from open_output) and, for a file, renames the temporary file over it; `ok`: every write succeeded.
// A failure removes the temporary file and throws hw::InputError naming `path`.
void close_output(std::FILE* f, bool ok, const OutputPath& out, const std::filesystem::path& path);
// Fails with hw::InputError (one line naming the path) when `path` cannot be created or is a folder. Call before
// long work so a bad --json path is refused up front.
// `option` (e.g. "--json"), when given, names the option in the message of an empty path.
void check_writable(const std::filesystem::path& path, std::string_view option = {});
// Renames a finished `tmp` to `path`; when that fails, removes `tmp` and throws hw::InputError naming `path`.
void rename_into_place(const std::filesystem::path& tmp, const std::filesystem::path& path);
// Writes `text` to `path` as output_path says: a file by a temporary file renamed over it, a stream directly.
void write_text_atomic(const std::filesystem::path& path, const std::string& text);
void write_json_atomic(const std::filesystem::path& path, const nlohmann::json& j);

}  // namespace wafer::traces
