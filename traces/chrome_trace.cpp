#include "traces/chrome_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <queue>

#include "hw/error.h"
#include "traces/report.h"

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

namespace {
// Printable ASCII without a quote or a backslash: JSON quotes it as it is.
bool plain(const std::string& s) {
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c > 0x7E || c == '"' || c == '\\') return false;
  }
  return true;
}
}  // namespace

std::string json_quote(const std::string& s) {
  if (!plain(s)) return nlohmann::json(s).dump();  // escapes, UTF-8
  std::string q;
  q.reserve(s.size() + 2);
  q += '"';
  q += s;
  q += '"';
  return q;
}

char* write_fixed(char* out, double v, int decimals) {
  static constexpr double kScale[] = {1, 10, 100, 1e3, 1e4, 1e5, 1e6};
  static constexpr std::uint64_t kScaleInt[] = {1, 10, 100, 1000, 10000, 100000, 1000000};
  // x = v x 10^decimals rounded to a double is within x 2^-53 of the exact product, so unless its fraction
  // is that close to one half it rounds to the integer the exact product rounds to; otherwise (and for a
  // sign, a huge value, NaN) fmt, which rounds the exact binary value.
  if (decimals >= 0 && decimals <= 6 && v >= 0 && v < 1e9 && !std::signbit(v)) {
    const double x = v * kScale[decimals];
    const double r = std::floor(x), f = x - r;  // (exact: x < 2^50)
    const double margin = x * 0x1p-50 + 0x1p-60;
    if (f < 0.5 - margin || f > 0.5 + margin) {
      const std::uint64_t n = std::uint64_t(r) + (f > 0.5 ? 1 : 0), scale = kScaleInt[decimals];
      const fmt::format_int whole(n / scale);
      out = std::copy_n(whole.data(), whole.size(), out);
      if (decimals > 0) {
        *out = '.';
        std::uint64_t rest = n % scale;
        for (int i = decimals; i > 0; --i) out[i] = char('0' + rest % 10), rest /= 10;
        out += decimals + 1;
      }
      return out;
    }
  }
  return fmt::format_to(out, "{:.{}f}", v, decimals);
}

void ChromeTrace::write_atomic(const std::filesystem::path& path) const {
  const OutputPath out = output_path(path);  // (a file by a temporary one renamed over it, a stream directly)
  std::FILE* f = open_output(out, path);
  // Every string looked at once (names repeat over hundreds of thousands of events): a plain one is copied
  // between quotes, any other quoted (json_quote) once. Each line is copied piece by piece (integers by
  // fmt::format_int, numbers with decimals by write_fixed) into one buffer, room made for it first,
  // written a megabyte at a time.
  std::vector<std::uint32_t> special(strings_.size(), 0);  // 1 + its index in quoted, or 0: plain
  std::vector<std::string> quoted;
  for (std::size_t i = 0; i < strings_.size(); ++i)
    if (!plain(strings_[i])) quoted.push_back(json_quote(strings_[i])), special[i] = std::uint32_t(quoted.size());
  std::vector<char> buf(2u << 20);
  std::size_t used = 0;
  char* p = buf.data();
  bool ok = true;
  // Room for a line of `bytes` besides two numbers (each under kFixedMax) and a few integers: flushes what
  // the buffer holds past a megabyte, and grows it for a longer line.
  auto room = [&](std::size_t bytes) {
    used = std::size_t(p - buf.data());
    if (used >= (1u << 20)) {
      ok = std::fwrite(buf.data(), 1, used, f) == used && ok;
      used = 0;
    }
    const std::size_t need = used + bytes + 2 * kFixedMax + 256;
    if (need > buf.size()) buf.resize(need);
    p = buf.data() + used;
  };
  auto put = [&](std::string_view s) { p = std::copy_n(s.data(), s.size(), p); };
  auto num = [&](std::int64_t v) {
    const fmt::format_int i(v);
    p = std::copy_n(i.data(), i.size(), p);
  };
  auto q = [&](std::uint32_t id) {
    if (special[id]) return put(quoted[special[id] - 1]);
    *p++ = '"', put(strings_[id]), *p++ = '"';
  };
  auto len = [&](std::uint32_t id) { return special[id] ? quoted[special[id] - 1].size() : strings_[id].size() + 2; };
  bool first = true;
  auto sep = [&] {
    put(first ? "\n" : ",\n");
    first = false;
  };
  // Times in µs on a whole-nanosecond grid (3 decimals).
  auto ns = [](double us) { return std::llround(us * 1000.0); };
  auto put_ns = [&](long long t) { p = write_fixed(p, double(t) / 1000.0, 3); };
  room(64);
  // (no displayTimeUnit: a display hint, but Perfetto builds before late 2021 read ts as ns when it said "ns")
  put("{\"traceEvents\": [");
  for (const Meta& m : meta_) {
    room(len(m.name) + 256);
    sep();
    if (m.tid < 0) {
      put(R"({"ph": "M", "name": "process_name", "pid": )"), num(m.pid), put(R"(, "args": {"name": )"), q(m.name), put("}}");
      put(",\n" R"({"ph": "M", "name": "process_sort_index", "pid": )"), num(m.pid), put(R"(, "args": {"sort_index": )"),
          num(m.sort), put("}}");
    } else {
      put(R"({"ph": "M", "name": "thread_name", "pid": )"), num(m.pid), put(R"(, "tid": )"), num(m.tid),
          put(R"(, "args": {"name": )"), q(m.name), put("}}");
      put(",\n" R"({"ph": "M", "name": "thread_sort_index", "pid": )"), num(m.pid), put(R"(, "tid": )"), num(m.tid),
          put(R"(, "args": {"sort_index": )"), num(m.sort), put("}}");
    }
  }
  for (const Event& e : events_) {
    room(len(e.name) + len(e.cat) + len(e.arg) + 128);
    sep();
    put(R"({"ph": "X", "name": )"), q(e.name), put(R"(, "cat": )"), q(e.cat), put(R"(, "ts": )");
    // (the end rounded rather than the length: spans that touch or nest in cycles touch or nest in the file exactly,
    // as the importers read them: Perfetto rounds ts and dur to ns each, and drops a span that overlaps the one before
    // without nesting in it; rounded apart, 22 of 788 spans of the tiny decode were dropped)
    const long long t0 = ns(e.ts), t1 = ns(e.ts + e.dur);
    put_ns(t0), put(R"(, "dur": )"), put_ns(t1 - t0);
    put(R"(, "pid": )"), num(e.pid), put(R"(, "tid": )"), num(e.tid);
    if (e.arg) put(R"(, "args": {"detail": )"), q(e.arg), put("}");
    put("}");
  }
  for (const Counter& c : counters_) {
    room(len(c.name) + 128);
    sep();
    put(R"({"ph": "C", "name": )"), q(c.name), put(R"(, "ts": )"), put_ns(ns(c.ts));
    // (a counter belongs to its process: tid = pid, its own track, never tid 0)
    put(R"(, "pid": )"), num(c.pid), put(R"(, "tid": )"), num(c.pid), put(R"(, "args": {"value": )");
    p = write_fixed(p, std::isfinite(c.value) ? c.value : 0.0, 3), put("}}");
  }
  room(16);
  put("\n]}\n");
  used = std::size_t(p - buf.data());
  ok = std::fwrite(buf.data(), 1, used, f) == used && ok;
  close_output(f, ok, out, path);
}

}  // namespace wafer::traces
