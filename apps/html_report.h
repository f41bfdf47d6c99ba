#pragma once
// `wafer-emu report` (docs/report.md): one self-contained HTML page (inline SVG, inline CSS, no script, no
// reference to anything outside the file) from a decode run's `--json` results or a study folder
// (`wafer-emu sweep --out DIR`), and the heatmaps as CSV matrices beside it.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace wafer::apps::report {

struct Output {
  std::string html;
  std::vector<std::pair<std::string, std::string>> csv;  // file name suffix ("wafer_0.link_utilisation") -> text
};

// From decode's results (the JSON of `decode --json`). `source` names the file in the page.
Output from_decode(const nlohmann::json& results, const std::string& source);

// From a study folder: its spec.json (checked like `sweep --summarize` does) and points.jsonl. Throws
// hw::InputError naming the folder or file when there is nothing to show.
Output from_study(const std::filesystem::path& dir);

// Reads a decode result file: InputError naming it when it cannot be read, is not JSON, or is not decode's.
nlohmann::json read_decode_json(const std::filesystem::path& file);

}  // namespace wafer::apps::report
