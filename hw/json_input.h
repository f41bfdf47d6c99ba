#pragma once
// The project's input files read as JSON (wafer files, defect maps, model configs, studies, validation cases): an
// object that gives a key twice is an error naming the file and the key. The JSON parser itself keeps the last and
// drops the others, which would silently ignore a setting a person wrote.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "hw/error.h"

namespace wafer::hw {

// Whether a --wafer or --model argument names a file rather than a preset or a shipped model: it holds a '/' or
// ends in .json (hw::resolve_wafer, mapper::load_model, and the studies and case files that take either).
inline bool names_file(std::string_view arg) { return arg.find('/') != std::string_view::npos || arg.ends_with(".json"); }

// The bytes of the input file `file`, which `what` names in errors ("wafer file", "model config", ...): InputError
// when it cannot be opened, or when it is a folder (a folder opens as an empty stream: a defect map named *.csv read
// as a map without defects, a JSON input as malformed).
inline std::string read_input_file(const std::filesystem::path& file, std::string_view what) {
  if (std::error_code ec; std::filesystem::is_directory(file, ec))
    throw InputError(fmt::format("{}: is a folder, not a {}", file.string(), what));
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open {}", file.string(), what));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Json::parse(text) (nlohmann::json or ordered_json), and InputError "FILE: key 'K' is given twice in one object"
// for the first key some object repeats. Malformed text throws what Json::parse throws (the caller words it).
template <class Json>
Json parse_input_json(const std::string& text, const std::string& file) {
  std::vector<std::set<std::string>> open;  // per object being read, its keys so far
  std::string twice;
  typename Json::parser_callback_t check = [&](int, typename Json::parse_event_t event, Json& parsed) {
    using Event = typename Json::parse_event_t;
    if (event == Event::object_start) open.emplace_back();
    else if (event == Event::object_end) open.pop_back();
    else if (event == Event::key && !open.back().insert(parsed.template get<std::string>()).second && twice.empty())
      twice = parsed.template get<std::string>();
    return true;
  };
  Json j = Json::parse(text, check);
  if (!twice.empty()) throw InputError(fmt::format("{}: key '{}' is given twice in one object", file, twice));
  return j;
}

}  // namespace wafer::hw
