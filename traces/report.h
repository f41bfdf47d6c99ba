#pragma once
// Results as named statistics (name, value, unit, description) in nested sections and tables, rendered
// by separate formatters: JSON (every figure with its unit) and a human summary.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

namespace wafer::traces {

struct Stat {
  std::string key;
  std::variant<double, std::int64_t, std::string> value;
  std::string unit;         // empty for text
  std::string description;  // one line, shown by the text formatter
};

struct Table {
  std::string key;
  std::string description;
  std::vector<std::string> columns;  // "name" or "name [unit]"
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
  void add_text(std::string key, std::string value, std::string description = {});
  Table& add_table(std::string key, std::vector<std::string> columns, std::string description = {});
  Matrix& add_matrix(std::string key, std::int32_t cols, std::int32_t rows, std::vector<double> values, std::string unit,
                     std::string description = {});
  // A nested section; repeated calls with the same key return the same section.
  Report& section(const std::string& key, std::string title = {});

  // Lookups for tests and derived figures. Throw std::out_of_range when absent.
  const Stat& stat(const std::string& key) const;
  double number(const std::string& key) const;
  const Report& sub(const std::string& key) const;
  const std::vector<Stat>& stats() const { return stats_; }

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

// Fails with hw::InputError (one line naming the path) when `path` cannot be created. Call before long
// work so a bad --json path is refused up front.
void check_writable(const std::filesystem::path& path);
// Writes to PATH.tmp then renames, so a reader never sees a partial file.
void write_text_atomic(const std::filesystem::path& path, const std::string& text);
void write_json_atomic(const std::filesystem::path& path, const nlohmann::json& j);

}  // namespace wafer::traces
