// traces::ChromeTrace's writer: its own quoting and fixed-point numbers write what nlohmann::json::dump and
// fmt's "{:.Nf}" write (the trace stays byte for byte what it was when they wrote it).
#include <gtest/gtest.h>

#include <cmath>
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

TEST(ChromeTrace, QuoteIsNlohmannsDump) {
  for (const std::string& s : std::initializer_list<std::string>{"", "layer 0 / q_proj", "wafer 1 tile (3,4) task 12", "a \"b\" c\\d", "tab\there",
                              "line\nbreak", std::string("nul\0x", 5), "\x7f del", "caf\xc3\xa9", "/ slash"})
    EXPECT_EQ(json_quote(s), nlohmann::json(s).dump()) << s;
}

}  // namespace
}  // namespace wafer::traces
