#pragma once
// Chrome Trace Event JSON (object form {"traceEvents": [...]}) that Perfetto and chrome://tracing open:
// X (complete) events with ts/dur in microseconds, C counters, M metadata naming processes and threads. Events on
// one thread must nest; `lanes()` spreads overlapping intervals over separate tracks. Names and
// categories are interned, so an event costs a few dozen bytes; the file is streamed, written to
// PATH.tmp and renamed (a reader never sees a partial file).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <unordered_map>
#include <vector>

namespace wafer::traces {

class ChromeTrace {
 public:
  void process_name(std::int32_t pid, const std::string& name, std::int32_t sort_index = 0);
  void thread_name(std::int32_t pid, std::int32_t tid, const std::string& name, std::int32_t sort_index = 0);
  // A complete event; `arg` (may be empty) is shown under args.detail.
  void complete(const std::string& name, const std::string& category, double ts_us, double dur_us, std::int32_t pid,
                std::int32_t tid, const std::string& arg = {});
  // The same with interned strings (id()), for writers that repeat a few names over many events.
  std::uint32_t id(const std::string& s) { return intern(s); }
  // A string used once (a task's own detail, a tile's track name): kept without a look-up; writing it is
  // the same as writing an interned one.
  std::uint32_t once(std::string s) {
    strings_.push_back(std::move(s));
    return std::uint32_t(strings_.size() - 1);
  }
  void thread_name(std::int32_t pid, std::int32_t tid, std::uint32_t name, std::int32_t sort_index = 0) {
    meta_.push_back({pid, tid, name, sort_index});
  }
  void complete(std::uint32_t name, std::uint32_t category, double ts_us, double dur_us, std::int32_t pid, std::int32_t tid,
                std::uint32_t arg = 0) {
    events_.push_back({ts_us, dur_us, pid, tid, name, category, arg});
  }
  // A counter sample ("ph": "C"): the series `name` of process `pid` holds `value` from `ts_us` on.
  void counter(const std::string& name, double ts_us, std::int32_t pid, double value);
  std::size_t events() const { return events_.size(); }
  std::size_t counters() const { return counters_.size(); }

  void write_atomic(const std::filesystem::path& path) const;

  // Greedy interval partitioning: for intervals sorted by start, the lane (0, 1, ...) each goes on so
  // that no two intervals on one lane overlap. `start`/`end` in any unit; returns one lane per interval.
  static std::vector<std::uint32_t> lanes(const std::vector<std::pair<double, double>>& intervals);

 private:
  std::uint32_t intern(const std::string& s);
  struct Meta {
    std::int32_t pid, tid;  // tid < 0: process
    std::uint32_t name;
    std::int32_t sort;
  };
  struct Event {
    double ts, dur;
    std::int32_t pid, tid;
    std::uint32_t name, cat, arg;
  };
  std::vector<std::string> strings_{""};
  std::unordered_map<std::string, std::uint32_t> ids_{{"", 0}};
  std::vector<Meta> meta_;
  std::vector<Event> events_;
  struct Counter {
    double ts, value;
    std::int32_t pid;
    std::uint32_t name;
  };
  std::vector<Counter> counters_;
};

// How write_atomic writes a string and a number (public for the tests): `s` as a JSON string, the text
// nlohmann::json(s).dump() gives; `v` with `decimals` (0 to 6) digits after the point, the text fmt's
// "{:.Nf}" gives (correctly rounded), written at `out` (room for kFixedMax chars), returning its end.
std::string json_quote(const std::string& s);
inline constexpr std::size_t kFixedMax = 320;  // "{:.6f}" of the largest double: 309 digits, '.', 6 decimals
char* write_fixed(char* out, double v, int decimals);

}  // namespace wafer::traces
