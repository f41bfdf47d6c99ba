// Analytic yields and the analytic row-shift success probability.
#include "hw/yield.h"

#include <gtest/gtest.h>

#include <cmath>

#include "test_util.h"

using namespace wafer::hw;
using wafer::hw::testing::custom_wafer;
using wafer::hw::testing::per_wafer;

TEST(Yield, ClosedForms) {
  EXPECT_NEAR(poisson_yield(462.25, 0.1), std::exp(-46.225), 1e-30);
  EXPECT_NEAR(negbin_yield(2.0, 0.5, 2.0), std::pow(1.5, -2.0), 1e-15);
  EXPECT_NEAR(negbin_yield(2.0, 0.5, 1e7), std::exp(-1.0), 1e-6);  // alpha -> infinity: Poisson
  EXPECT_NEAR(murphy_yield(1.0, 1.0), std::pow(1 - std::exp(-1.0), 2), 1e-15);
  EXPECT_NEAR(murphy_yield(1.0, 0.0), 1.0, 1e-15);
  // Clustering helps yield: negative binomial above Poisson at the same mean.
  EXPECT_GT(negbin_yield(1.0, 1.0, 2.0), poisson_yield(1.0, 1.0));
}

TEST(Yield, BinomialTails) {
  // Against a direct sum.
  for (double p : {1e-6, 0.01, 0.3, 0.9}) {
    for (int k : {0, 2, 10, 49}) {
      double cdf = 0;
      for (int j = 0; j <= k; ++j)
        cdf += std::exp(std::lgamma(51.0) - std::lgamma(j + 1.0) - std::lgamma(51.0 - j) + j * std::log(p) +
                        (50 - j) * std::log1p(-p));
      EXPECT_NEAR(binomial_cdf(50, p, k), cdf, 1e-12) << p << " " << k;
      EXPECT_NEAR(binomial_sf(50, p, k), 1 - cdf, 1e-12) << p << " " << k;
    }
  }
  // The far upper tail is accurate, not lost to 1 - cdf cancellation.
  const double tiny = binomial_sf(1000, 1e-6, 3);
  EXPECT_GT(tiny, 0.0);
  EXPECT_NEAR(tiny / (std::exp(std::lgamma(1001.0) - std::lgamma(5.0) - std::lgamma(997.0)) * 1e-24), 1.0, 1e-2);
  EXPECT_EQ(binomial_cdf(10, 0.5, 10), 1.0);
  EXPECT_EQ(binomial_sf(10, 0.0, 0), 0.0);
}

TEST(Yield, RowShiftProbability) {
  const WaferSpec s = custom_wafer(24, 24, 2, 2);
  DefectGenParams p;
  p.density_per_cm2 = 0;
  EXPECT_EQ(row_shift_success_probability(s, p), 1.0);
  // Decreasing in density.
  double last = 1.0;
  for (double per : {5.0, 20.0, 40.0, 80.0}) {
    const double y = row_shift_success_probability(s, per_wafer(s, per));
    EXPECT_LT(y, last);
    last = y;
  }
  // A hand computation: per tile p = 1 - exp(-m), row fails with > 2 of 26 tiles, at most 2 of 26 rows fail.
  const auto pp = per_wafer(s, 30);
  const double m = 30.0 / (26 * 26) * 0.9, pt = 1 - std::exp(-m);
  const double q = binomial_sf(26, pt, 2);
  EXPECT_NEAR(row_shift_success_probability(s, pp), binomial_cdf(26, q, 2), 1e-12);
  // Negative binomial: tends to Poisson for large alpha; differs for small alpha.
  auto nb = per_wafer(s, 30, DefectModel::NegBinomial, 5000.0);
  EXPECT_NEAR(row_shift_success_probability(s, nb), row_shift_success_probability(s, pp), 2e-3);
  nb.alpha = 0.5;
  EXPECT_GT(row_shift_success_probability(s, nb), row_shift_success_probability(s, pp));
  // The whole-wafer presets at the default density: row-shift almost always succeeds.
  DefectGenParams d;
  EXPECT_GT(row_shift_success_probability(preset("wse3"), d), 0.999);
  d.model = DefectModel::NegBinomial;
  EXPECT_GT(row_shift_success_probability(preset("wse3"), d), 0.99);
}
