#pragma once
// The project's input files read as JSON (wafer files, defect maps, model configs, studies, validation cases): an
// object that gives a key twice is an error naming the file and the key. The JSON parser itself keeps the last and
// drops the others, which would silently ignore a setting a person wrote.
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
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
// as a map without defects, a JSON input as malformed), when it is a device (/dev/zero behind a link named *.csv
// was read until the limit), when it holds more than `limit` bytes, and when it is a pipe nothing was written to.
// A pipe is read (`--model <(jq ... config.json)` is a pipe): it is opened without waiting for a writer, and one no
// process writes to within kPipeWriterWaitMs, or whose writer is silent for kPipeSilenceMs without closing it, is
// refused rather than waited on for ever (a FIFO no process writes, a writer stopped half-way).
inline constexpr int kPipeWriterWaitMs = 2000;
inline constexpr int kPipeSilenceMs = 10000;
inline std::string read_input_file(const std::filesystem::path& file, std::string_view what,
                                   std::uint64_t limit = kMaxInputBytes) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw InputError(fmt::format("{}: cannot open {}", file.string(), what));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw InputError(fmt::format("{}: cannot read {}", file.string(), what));
  if (S_ISDIR(st.st_mode)) throw InputError(fmt::format("{}: is a folder, not a {}", file.string(), what));
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode))
    throw InputError(fmt::format("{}: is a device, not a {} (give a file)", file.string(), what));
  const bool pipe = S_ISFIFO(st.st_mode);
  bool waited = false;
  std::string text;
  std::vector<char> block(std::size_t(1) << 20);
  for (;;) {
    const ssize_t n = ::read(fd, block.data(), block.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && pipe && (errno == EAGAIN || errno == EWOULDBLOCK)) {  // a writer that has not written yet
      pollfd p{fd, POLLIN, 0};
      const int ready = ::poll(&p, 1, kPipeSilenceMs);
      if (ready < 0 && errno != EINTR) throw InputError(fmt::format("{}: cannot read {}", file.string(), what));
      if (ready == 0)
        throw InputError(fmt::format("{}: a pipe silent for {} s after {} bytes (its writer neither wrote nor closed it), "
                                     "not a whole {}", file.string(), kPipeSilenceMs / 1000, text.size(), what));
      continue;
    }
    if (n < 0) throw InputError(fmt::format("{}: cannot read {}", file.string(), what));
    if (n == 0 && pipe && text.empty() && !waited) {  // (no writer yet: one started just before may not have opened it)
      waited = true;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, kPipeWriterWaitMs) > 0) continue;
      throw InputError(fmt::format("{}: a pipe no process wrote to within {} s, not a {}", file.string(),
                                   kPipeWriterWaitMs / 1000, what));
    }
    if (n == 0) break;
    text.append(block.data(), std::size_t(n));
    if (text.size() > limit)
      throw InputError(fmt::format("{}: more than {} MiB: too large for a {} (refused)", file.string(), limit >> 20, what));
  }
  if (pipe && text.empty()) throw InputError(fmt::format("{}: a pipe closed with nothing written to it, not a {}", file.string(), what));
  note_input_file(file, what);
  return text;
}

// How deep the input files' JSON may nest (theirs nest a few levels): deeper is refused while it is read, before a
// document that deep is built (copying one recursed until the stack overflowed).
inline constexpr int kMaxInputDepth = 256;

// The checks parse_input_json makes, as a SAX pass before the document is built: the depth, and each object's keys
// (nlohmann's callback parser took time quadratic in the objects of a document: a JSON defect map of 136 k defects
// read in 4.4 s against 0.27 s as CSV).
template <class Json>
struct InputJsonChecks : nlohmann::json_sax<Json> {
  using number_integer_t = typename Json::number_integer_t;
  using number_unsigned_t = typename Json::number_unsigned_t;
  using number_float_t = typename Json::number_float_t;
  using string_t = typename Json::string_t;
  using binary_t = typename Json::binary_t;
  const std::string& file;
  std::vector<std::set<std::string>> open;  // per object being read, its keys so far
  std::string twice;                        // the first key some object repeats
  int depth = 0;
  std::size_t error_at = 0;  // a parse error's byte
  int error_id = 0;          // and its nlohmann exception id (0: none)
  explicit InputJsonChecks(const std::string& f) : file(f) {}
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    deeper();
    open.emplace_back();
    return true;
  }
  bool key(string_t& k) override {
    if (!open.back().insert(k).second && twice.empty()) twice = k;
    return true;
  }
  bool end_object() override {
    --depth;
    open.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    deeper();
    return true;
  }
  bool end_array() override {
    --depth;
    return true;
  }
  bool parse_error(std::size_t at, const std::string&, const nlohmann::detail::exception& e) override {
    error_at = at, error_id = e.id;
    return false;
  }
  void deeper() {
    if (++depth > kMaxInputDepth)
      throw InputError(fmt::format("{}: JSON nested deeper than {} levels (refused)", file, kMaxInputDepth));
  }
};

// The first key some object of `text` (JSON that parses) gives twice, or "" (the parser keeps the last and drops
// the other without a word): for text read as lines of JSON rather than as an input file (a study's points).
template <class Json>
std::string repeated_key(const std::string& text) {
  InputJsonChecks<Json> checks(text);
  Json::sax_parse(text, &checks);
  return checks.twice;
}

// Json::parse(text) (nlohmann::json or ordered_json), with every failure an InputError naming `file`: "malformed
// JSON at byte N", a number beyond a double, nesting deeper than kMaxInputDepth, and "key 'K' is given twice in one
// object" for the first key some object repeats.
template <class Json>
Json parse_input_json(const std::string& text, const std::string& file) {
  InputJsonChecks<Json> checks(file);
  if (!Json::sax_parse(text, &checks)) {
    if (checks.error_id / 100 == 4)  // (out_of_range: 406, a number beyond a double)
      throw InputError(fmt::format("{}: malformed JSON: a number beyond the range of a double", file));
    throw InputError(fmt::format("{}: malformed JSON at byte {}", file, checks.error_at));
  }
  if (!checks.twice.empty()) throw InputError(fmt::format("{}: key '{}' is given twice in one object", file, checks.twice));
  try {
    return Json::parse(text);
  } catch (const typename Json::exception& e) {  // (what the pass above let through, if anything)
    throw InputError(fmt::format("{}: malformed JSON ({})", file, e.what()));
  }
}

}  // namespace wafer::hw
