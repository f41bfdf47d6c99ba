#pragma once
// A long run's journal beside its output (`.<output's name>.partial.jsonl`), so that a run stopped (killed, a
// worker lost, the machine down) resumes where it stopped when the same command runs again: one JSON line per
// record, after a first line naming the run's settings (a journal of other settings is refused, never mixed).
// Each line is written whole and flushed to disk; a last line cut short (a process killed mid-line) is dropped.
// The journal is locked while a run holds it (a second run on the same output is refused) and removed once
// the output is in place, or when the run ends without a record. `table` records a point a line (docs/tables.md "A run stopped part way resumes"),
// `defects` its Monte Carlo sums so far, `validate` a prediction a line (docs/architecture.md "Conventions").
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hw/wafer_spec.h"

namespace wafer::apps {

// A wafer as a journal's settings name it: its name and every parameter (hw::wafer_params).
nlohmann::ordered_json wafer_settings(const hw::WaferSpec& spec);
// A file's bytes as a journal's settings name them: hashed (sweep::hash_text; a file that cannot be opened, as
// empty). InputError when it is not a file (a pipe, read once already).
std::string hash_file(const std::filesystem::path& path);

class Journal {
 public:
  // `option` names the output in the errors ("--out"), `run` what writes it ("table").
  Journal(const std::filesystem::path& path, const std::string& settings, std::string option, std::string run);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // The journal's path beside `output` (a file, or a folder named without a trailing slash).
  static std::filesystem::path beside(const std::filesystem::path& output);
  // The records of earlier runs, in the order they were written.
  const std::vector<nlohmann::json>& kept() const { return kept_; }
  std::size_t records() const { return kept_.size() + added_; }
  const std::filesystem::path& path() const { return path_; }
  void append(const nlohmann::json& record);
  // The output is in place: nothing to resume.
  void remove();

 private:
  void write_line(const nlohmann::json& j);
  std::filesystem::path path_;
  std::string option_, run_;
  int fd_ = -1;
  std::size_t added_ = 0;
  std::vector<nlohmann::json> kept_;
};

}  // namespace wafer::apps
