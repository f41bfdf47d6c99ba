// hw/random.h: a pinned stream (the same numbers on every machine) and the samplers' moments.
#include "hw/random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace wafer::hw;

namespace {
struct Moments {
  double mean = 0, var = 0;
};
template <class F>
Moments moments(int n, F draw) {
  double s = 0, s2 = 0;
  for (int i = 0; i < n; ++i) {
    const double x = draw();
    s += x, s2 += x * x;
  }
  Moments m;
  m.mean = s / n;
  m.var = (s2 - s * s / n) / (n - 1);
  return m;
}
}  // namespace

TEST(Random, StreamIsPinned) {
  // If this changes, every seeded result of the project changes: do it only on purpose.
  Rng r(42);
  const std::uint64_t a = r.next(), b = r.next();
  Rng again(42);
  EXPECT_EQ(again.next(), a);
  EXPECT_EQ(again.next(), b);
  EXPECT_EQ(a, 1546998764402558742ull);
  EXPECT_EQ(b, 6990951692964543102ull);
  EXPECT_NE(Rng(43).next(), a);
  EXPECT_NE(Rng(42, 1).next(), a);
}

TEST(Random, UniformAndBelow) {
  Rng r(1);
  auto m = moments(200000, [&] { return r.uniform(); });
  EXPECT_NEAR(m.mean, 0.5, 4 * std::sqrt(1.0 / 12 / 200000));
  std::vector<int> counts(7, 0);
  for (int i = 0; i < 70000; ++i) ++counts[r.below(7)];
  for (int c : counts) EXPECT_NEAR(c, 10000, 4 * std::sqrt(10000 * 6.0 / 7));
  for (int i = 0; i < 1000; ++i) {
    const double u = r.uniform();
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
  }
}

TEST(Random, PoissonSmallAndLargeMeans) {
  Rng r(2);
  const int n = 100000;
  for (double mu : {0.3, 3.0, 9.9, 10.0, 50.0, 1000.0}) {
    auto m = moments(n, [&] { return double(r.poisson(mu)); });
    EXPECT_NEAR(m.mean, mu, 4.5 * std::sqrt(mu / n)) << "mean " << mu;
    // SE of the variance of a Poisson sample: sqrt((mu + 2 mu^2) / n).
    EXPECT_NEAR(m.var, mu, 4.5 * std::sqrt((mu + 2 * mu * mu) / n)) << "mean " << mu;
  }
  // Exact small-mean probabilities: P(0) for mean 1.5.
  int zeros = 0;
  for (int i = 0; i < n; ++i) zeros += r.poisson(1.5) == 0;
  const double p0 = std::exp(-1.5);
  EXPECT_NEAR(double(zeros) / n, p0, 4.5 * std::sqrt(p0 * (1 - p0) / n));
  EXPECT_EQ(r.poisson(0.0), 0u);
  EXPECT_EQ(r.poisson(-1.0), 0u);
}

TEST(Random, GammaAndNormal) {
  Rng r(3);
  const int n = 100000;
  for (double shape : {0.3, 1.0, 2.0, 10.0}) {
    const double scale = 1.7;
    auto m = moments(n, [&] { return r.gamma(shape, scale); });
    const double mean = shape * scale, var = shape * scale * scale;
    EXPECT_NEAR(m.mean, mean, 4.5 * std::sqrt(var / n)) << "shape " << shape;
    // Fourth central moment of a gamma: 3 k (k + 2) scale^4.
    EXPECT_NEAR(m.var, var, 4.5 * std::sqrt((3 * shape * (shape + 2) * std::pow(scale, 4) - var * var) / n)) << shape;
  }
  auto m = moments(n, [&] { return r.normal(); });
  EXPECT_NEAR(m.mean, 0.0, 4.5 / std::sqrt(n));
  EXPECT_NEAR(m.var, 1.0, 4.5 * std::sqrt(2.0 / n));
}
