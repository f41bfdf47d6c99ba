#include "traces/chrome_trace.h"

#include <fmt/compile.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <queue>

#include "hw/error.h"

namespace wafer::traces {

std::uint32_t ChromeTrace::intern(const std::string& s) {
  auto [it, added] = ids_.emplace(s, std::uint32_t(strings_.size()));
  if (added) strings_.push_back(s);
  return it->second;
}

void ChromeTrace::process_name(std::int32_t pid, const std::string& name, std::int32_t sort_index) {
  meta_.push_back({pid, -1, intern(name), sort_index});
}
void ChromeTrace::thread_name(std::int32_t pid, std::int32_t tid, const std::string& name, std::int32_t sort_index) {
  meta_.push_back({pid, tid, intern(name), sort_index});
}
void ChromeTrace::complete(const std::string& name, const std::string& category, double ts_us, double dur_us,
                           std::int32_t pid, std::int32_t tid, const std::string& arg) {
  events_.push_back({ts_us, dur_us, pid, tid, intern(name), intern(category), intern(arg)});
}

void ChromeTrace::counter(const std::string& name, double ts_us, std::int32_t pid, double value) {
  counters_.push_back({ts_us, value, pid, intern(name)});
}

std::vector<std::uint32_t> ChromeTrace::lanes(const std::vector<std::pair<double, double>>& iv) {
  std::vector<std::size_t> order(iv.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return iv[a].first < iv[b].first; });
  std::vector<std::uint32_t> out(iv.size(), 0);
  std::vector<double> lane_end;
  // Free lanes by (end, lane): reuse the lowest-numbered free lane for determinism.
  for (std::size_t i : order) {
    std::uint32_t lane = std::uint32_t(lane_end.size());
    for (std::uint32_t l = 0; l < lane_end.size(); ++l)
      if (lane_end[l] <= iv[i].first) {
        lane = l;
        break;
      }
    if (lane == lane_end.size()) lane_end.push_back(0);
    lane_end[lane] = iv[i].second;
    out[i] = lane;
  }
  return out;
}

void ChromeTrace::write_atomic(const std::filesystem::path& path) const {
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw hw::InputError(fmt::format("{}: cannot write output file", path.string()));
  // Every string quoted once (names repeat over hundreds of thousands of events); events formatted with
  // compiled format strings into one buffer, written a megabyte at a time.
  std::vector<std::string> quoted(strings_.size());
  for (std::size_t i = 0; i < strings_.size(); ++i) quoted[i] = nlohmann::json(strings_[i]).dump();
  auto q = [&](std::uint32_t id) -> const std::string& { return quoted[id]; };
  fmt::memory_buffer buf;
  bool ok = true;
  auto flush = [&](bool force) {
    if (!force && buf.size() < (1u << 20)) return;
    ok = std::fwrite(buf.data(), 1, buf.size(), f) == buf.size() && ok;
    buf.clear();
  };
  auto out = std::back_inserter(buf);
  bool first = true;
  auto sep = [&] {
    fmt::format_to(out, FMT_COMPILE("{}"), first ? "\n" : ",\n");
    first = false;
    flush(false);
  };
  fmt::format_to(out, FMT_COMPILE("{}"), "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [");
  for (const Meta& m : meta_) {
    sep();
    if (m.tid < 0) {
      fmt::format_to(out, FMT_COMPILE(R"({{"ph": "M", "name": "process_name", "pid": {}, "args": {{"name": {}}}}})"), m.pid, q(m.name));
      fmt::format_to(out, FMT_COMPILE(",\n" R"({{"ph": "M", "name": "process_sort_index", "pid": {}, "args": {{"sort_index": {}}}}})"),
                     m.pid, m.sort);
    } else {
      fmt::format_to(out, FMT_COMPILE(R"({{"ph": "M", "name": "thread_name", "pid": {}, "tid": {}, "args": {{"name": {}}}}})"), m.pid,
                     m.tid, q(m.name));
      fmt::format_to(out, FMT_COMPILE(",\n" R"({{"ph": "M", "name": "thread_sort_index", "pid": {}, "tid": {}, "args": {{"sort_index": {}}}}})"),
                     m.pid, m.tid, m.sort);
    }
  }
  for (const Event& e : events_) {
    sep();
    fmt::format_to(out, FMT_COMPILE(R"({{"ph": "X", "name": {}, "cat": {}, "ts": {:.4f}, "dur": {:.4f}, "pid": {}, "tid": {})"),
                   q(e.name), q(e.cat), e.ts, e.dur, e.pid, e.tid);
    if (e.arg) fmt::format_to(out, FMT_COMPILE(R"(, "args": {{"detail": {}}})"), q(e.arg));
    buf.push_back('}');
  }
  for (const Counter& c : counters_) {
    sep();
    fmt::format_to(out, FMT_COMPILE(R"({{"ph": "C", "name": {}, "ts": {:.4f}, "pid": {}, "tid": 0, "args": {{"value": {:.3f}}}}})"),
                   q(c.name), c.ts, c.pid, std::isfinite(c.value) ? c.value : 0.0);
  }
  fmt::format_to(out, FMT_COMPILE("{}"), "\n]}\n");
  flush(true);
  ok = std::fflush(f) == 0 && ok;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) {
    std::filesystem::remove(tmp);
    throw hw::InputError(fmt::format("{}: cannot write output file", path.string()));
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace wafer::traces
