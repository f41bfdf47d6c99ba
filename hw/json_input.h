#pragma once
// The project's input files read as JSON (wafer files, defect maps, model configs, studies, validation cases): an
// object that gives a key twice is an error naming the file and the key. The JSON parser itself keeps the last and
// drops the others, which would silently ignore a setting a person wrote.
#include <fmt/format.h>

#include <cstdint>
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
#include "hw/input_files.h"

namespace wafer::hw {

// Whether a --wafer or --model argument names a file rather than a preset or a shipped model: it holds a '/' or
// ends in .json (hw::resolve_wafer, mapper::load_model, and the studies and case files that take either).
inline bool names_file(std::string_view arg) { return arg.find('/') != std::string_view::npos || arg.ends_with(".json"); }

// The most bytes an input file read whole may hold (a wafer file, a model config, a study, a case file, results for
// `report`: kilobytes to a few megabytes). Beyond, the file is refused before it fills the memory (/dev/zero given
// as a model config was read until the kernel killed the process).
inline constexpr std::uint64_t kMaxInputBytes = std::uint64_t(256) << 20;

// The bytes of the input file `file`, which `what` names in errors ("wafer file", "model config", ...): InputError
// when it cannot be opened, when it is a folder (a folder opens as an empty stream: a defect map named *.csv read
// as a map without defects, a JSON input as malformed), or when it holds more than `limit` bytes.
inline std::string read_input_file(const std::filesystem::path& file, std::string_view what,
                                   std::uint64_t limit = kMaxInputBytes) {
  if (std::error_code ec; std::filesystem::is_directory(file, ec))
    throw InputError(fmt::format("{}: is a folder, not a {}", file.string(), what));
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open {}", file.string(), what));
  std::string text;
  std::vector<char> block(std::size_t(1) << 20);
  while (in) {
    in.read(block.data(), std::streamsize(block.size()));
    text.append(block.data(), std::size_t(in.gcount()));
    if (text.size() > limit)
      throw InputError(fmt::format("{}: more than {} MiB: too large for a {} (refused)", file.string(), limit >> 20, what));
  }
  if (in.bad()) throw InputError(fmt::format("{}: cannot read {}", file.string(), what));
  note_input_file(file, what);
  return text;
}

// How deep the input files' JSON may nest (theirs nest a few levels): deeper is refused while it is read, before a
// document that deep is built (copying one recursed until the stack overflowed).
inline constexpr int kMaxInputDepth = 256;

// Json::parse(text) (nlohmann::json or ordered_json), with every failure an InputError naming `file`: "malformed
// JSON at byte N", a number beyond a double, nesting deeper than kMaxInputDepth, and "key 'K' is given twice in one
// object" for the first key some object repeats.
template <class Json>
Json parse_input_json(const std::string& text, const std::string& file) {
  std::vector<std::set<std::string>> open;  // per object being read, its keys so far
  std::string twice;
  int depth = 0;
  typename Json::parser_callback_t check = [&](int, typename Json::parse_event_t event, Json& parsed) {
    using Event = typename Json::parse_event_t;
    if (event == Event::object_start || event == Event::array_start) {
      if (++depth > kMaxInputDepth)
        throw InputError(fmt::format("{}: JSON nested deeper than {} levels (refused)", file, kMaxInputDepth));
    } else if (event == Event::object_end || event == Event::array_end) {
      --depth;
    }
    if (event == Event::object_start) open.emplace_back();
    else if (event == Event::object_end) open.pop_back();
    else if (event == Event::key && !open.back().insert(parsed.template get<std::string>()).second && twice.empty())
      twice = parsed.template get<std::string>();
    return true;
  };
  Json j;
  try {
    j = Json::parse(text, check);
  } catch (const typename Json::parse_error& e) {
    throw InputError(fmt::format("{}: malformed JSON at byte {}", file, e.byte));
  } catch (const typename Json::out_of_range&) {
    throw InputError(fmt::format("{}: malformed JSON: a number beyond the range of a double", file));
  } catch (const typename Json::exception& e) {
    throw InputError(fmt::format("{}: malformed JSON ({})", file, e.what()));
  }
  if (!twice.empty()) throw InputError(fmt::format("{}: key '{}' is given twice in one object", file, twice));
  return j;
}

}  // namespace wafer::hw
