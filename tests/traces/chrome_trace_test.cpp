// traces::ChromeTrace's writer: its own quoting and fixed-point numbers write what nlohmann::json::dump and
// fmt's "{:.Nf}" write (the trace stays byte for byte what it was when they wrote it).
#include <gtest/gtest.h>

#include <cmath>
#include <unistd.h>
#include <vector>
#include <fstream>
#include <filesystem>
#include <cstdint>
#include <fmt/format.h>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "traces/chrome_trace.h"

namespace wafer::traces {
namespace {

std::string fixed(double v, int decimals) {
  char b[kFixedMax];
  return std::string(b, write_fixed(b, v, decimals));
}

TEST(ChromeTrace, FixedIsFmtsFixed) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double us_per_cycle = 1.0 / (1.1 * 1e3);  // wse3's clock, as the trace converts cycles
  for (int decimals : {0, 3, 4, 6}) {
    for (int i = 0; i < 200000; ++i) {
      const double c = double(rng() % 4'000'000);
      for (double v : {c * us_per_cycle, u(rng) * 100.0, u(rng) * std::pow(10.0, double(rng() % 12)), c / 8.0,
                       (c + 0.5) / std::pow(10.0, decimals)})
        ASSERT_EQ(fixed(v, decimals), fmt::format("{:.{}f}", v, decimals)) << v;
    }
    for (double v : {0.0, -0.0, 0.03125, 0.00005, 0.5, 1.5, 2.5, 1e-300, 999999999.99999, 1e9, 1e15, 1e300, -1.0,
                     -0.00001, std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN(), -std::numeric_limits<double>::max(),
                     std::numeric_limits<double>::max(),
                     std::numeric_limits<double>::denorm_min(), std::nextafter(0.5, 0.0), std::nextafter(0.5, 1.0)})
      EXPECT_EQ(fixed(v, decimals), fmt::format("{:.{}f}", v, decimals)) << v;
  }
}

TEST(ChromeTrace, SpansThatTouchOrNestInCyclesDoSoInTheFileAsAnImporterReadsIt) {
  // Perfetto's JSON importer takes ts and dur to whole nanoseconds each (llround(x * 1000)) and drops a span that
  // starts inside the one before it and ends after it. Spans touching in cycles at 1.1 GHz, each with a child
  // ending a few cycles before it: read so, every span ends where the next starts and every child within its
  // parent. (ts and dur rounded apart, to 4 decimals, overlapped by 0.0001 us: 22 of 788 spans of the tiny decode
  // were dropped.)
  ChromeTrace tr;
  std::mt19937_64 rng(5);
  const double us_per_cycle = 1.0 / (1.1 * 1e3);
  std::vector<std::int64_t> at{int64_t(rng() % 100)};
  for (int i = 0; i < 5000; ++i) at.push_back(at.back() + 2 + std::int64_t(rng() % 300));
  for (std::size_t i = 0; i + 1 < at.size(); ++i) {
    tr.complete("span", "c", double(at[i]) * us_per_cycle, double(at[i + 1] - at[i]) * us_per_cycle, 0, 0);
    const std::int64_t child_end = at[i + 1] - 1 - std::int64_t(rng() % 2);
    tr.complete("child", "c", double(at[i]) * us_per_cycle, double(child_end - at[i]) * us_per_cycle, 0, 0);
  }
  const auto path = std::filesystem::temp_directory_path() / fmt::format("chrome_trace_test_{}.json", ::getpid());
  tr.write_atomic(path);
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in);
  std::filesystem::remove(path);
  std::vector<std::pair<long long, long long>> spans, children;  // [start, end) in ns, as read
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const long long t = std::llround(e["ts"].get<double>() * 1000.0), d = std::llround(e["dur"].get<double>() * 1000.0);
    (e["name"] == "span" ? spans : children).push_back({t, t + d});
  }
  ASSERT_EQ(spans.size(), at.size() - 1);
  ASSERT_EQ(children.size(), at.size() - 1);
  for (std::size_t i = 0; i < spans.size(); ++i) {
    if (i + 1 < spans.size()) {
      ASSERT_EQ(spans[i].second, spans[i + 1].first) << i;
    }
    ASSERT_EQ(children[i].first, spans[i].first) << i;
    ASSERT_LE(children[i].second, spans[i].second) << i;
    ASSERT_LE(std::llabs(spans[i].first - std::llround(double(at[i]) * us_per_cycle * 1e3)), 1) << i;  // (to the ns)
  }
}

TEST(ChromeTrace, QuoteIsNlohmannsDump) {
  for (const std::string& s : std::initializer_list<std::string>{"", "layer 0 / q_proj", "wafer 1 tile (3,4) task 12", "a \"b\" c\\d", "tab\there",
                              "line\nbreak", std::string("nul\0x", 5), "\x7f del", "caf\xc3\xa9", "/ slash"})
    EXPECT_EQ(json_quote(s), nlohmann::json(s).dump()) << s;
}

}  // namespace
}  // namespace wafer::traces
