#pragma once
// The project's input files read as JSON (wafer files, defect maps, model configs, studies, validation cases): an
// object that gives a key twice is an error naming the file and the key. The JSON parser itself keeps the last and
// drops the others, which would silently ignore a setting a person wrote.
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "hw/error.h"

namespace wafer::hw {

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
