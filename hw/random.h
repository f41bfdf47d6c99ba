#pragma once
// The project's seeded random numbers: xoshiro256** (Blackman & Vigna) seeded through splitmix64, and
// hand-written samplers. std::*_distribution differ between standard libraries; these do not, so a seed
// gives the same stream on every machine. The samplers use only +, *, /, sqrt (exact in IEEE 754) and
// log/exp/lgamma/floor from the C library; results are identical wherever those agree (glibc on x86-64
// everywhere we run).
//
//   Rng rng(seed);                      // or Rng(seed, stream) for an independent numbered stream
//   rng.next()                          // 64 random bits
//   rng.uniform()                       // [0, 1), 53 bits
//   rng.below(n)                        // integer in [0, n), unbiased (Lemire's multiply-shift rejection)
//   rng.bernoulli(p)                    // true with probability p
//   rng.poisson(mean)                   // exact: inversion for mean < 10, PTRS (Hoermann 1993) above
//   rng.normal()                        // standard normal (Marsaglia polar method; no cached second value)
//   rng.gamma(shape, scale)             // Marsaglia & Tsang (2000); shape < 1 by the u^(1/shape) boost
//
// An Rng is 32 bytes of plain state: copy it, keep one per map / per thread, never share a global one.
#include <cmath>
#include <cstdint>
#include <limits>

namespace wafer::hw {

__extension__ using Uint128 = unsigned __int128;

// One splitmix64 step: a good 64-bit mixer, used to seed and to derive streams.
constexpr std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// A seed for item `index` of a run seeded with `seed` (map i of N, point i of a sweep).
constexpr std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t s = seed ^ (index * 0xD1B54A32D192ED03ull + 0x8CB92BA72F3D8DD7ull);
  splitmix64(s);
  return splitmix64(s);
}

class Rng {
 public:
  explicit constexpr Rng(std::uint64_t seed, std::uint64_t stream = 0) {
    std::uint64_t sm = stream == 0 ? seed : derive_seed(seed, stream);
    for (auto& w : s_) w = splitmix64(sm);
  }

  constexpr std::uint64_t next() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits.
  constexpr double uniform() { return double(next() >> 11) * 0x1.0p-53; }
  // Uniform in (0, 1]: safe for log().
  constexpr double uniform_pos() { return double((next() >> 11) + 1) * 0x1.0p-53; }

  // Uniform integer in [0, n); n > 0. Unbiased (Lemire 2019).
  std::uint64_t below(std::uint64_t n) {
    Uint128 m = Uint128(next()) * n;
    auto lo = std::uint64_t(m);
    if (lo < n) {
      const std::uint64_t threshold = (0 - n) % n;
      while (lo < threshold) {
        m = Uint128(next()) * n;
        lo = std::uint64_t(m);
      }
    }
    return std::uint64_t(m >> 64);
  }

  bool bernoulli(double p) { return uniform() < p; }

  // Standard normal, Marsaglia polar method (the second value is discarded to keep the state plain).
  double normal() {
    for (;;) {
      const double u = 2.0 * uniform() - 1.0, v = 2.0 * uniform() - 1.0;
      const double s = u * u + v * v;
      if (s > 0.0 && s < 1.0) return u * std::sqrt(-2.0 * std::log(s) / s);
    }
  }
  double normal(double mean, double sd) { return mean + sd * normal(); }

  // Gamma with the given shape (> 0) and scale; mean = shape * scale. Marsaglia & Tsang (2000).
  double gamma(double shape, double scale = 1.0) {
    if (!(shape > 0.0)) return 0.0;
    if (shape < 1.0) {  // G(a) = G(a + 1) * U^(1/a)
      const double g = gamma(shape + 1.0, 1.0);
      return scale * g * std::pow(uniform_pos(), 1.0 / shape);
    }
    const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
    for (;;) {
      double x, v;
      do {
        x = normal();
        v = 1.0 + c * x;
      } while (v <= 0.0);
      v = v * v * v;
      const double u = uniform_pos();
      const double x2 = x * x;
      if (u < 1.0 - 0.0331 * x2 * x2) return scale * d * v;
      if (std::log(u) < 0.5 * x2 + d * (1.0 - v + std::log(v))) return scale * d * v;
    }
  }

  // Poisson with the given mean (>= 0). Exact for every mean: sequential-search inversion below 10,
  // Hoermann's transformed rejection with squeeze (PTRS, 1993) above. Returns 0 for mean <= 0 or NaN.
  std::uint64_t poisson(double mean) {
    if (!(mean > 0.0)) return 0;
    if (mean < 10.0) {
      // Inversion: walk the CDF. exp(-10) is far from underflow, so no precision trouble.
      double p = std::exp(-mean), cdf = p;
      const double u = uniform();
      std::uint64_t k = 0;
      while (u >= cdf) {
        ++k;
        p *= mean / double(k);
        const double next_cdf = cdf + p;
        if (next_cdf == cdf) break;  // the tail below double precision
        cdf = next_cdf;
      }
      return k;
    }
    const double smu = std::sqrt(mean), b = 0.931 + 2.53 * smu, a = -0.059 + 0.02483 * b;
    const double inv_alpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2.0);
    const double log_mean = std::log(mean);
    for (;;) {
      const double u = uniform() - 0.5, v = uniform_pos();
      const double us = 0.5 - std::fabs(u);
      const double kf = std::floor((2.0 * a / us + b) * u + mean + 0.43);
      if (us >= 0.07 && v <= vr) return std::uint64_t(kf);
      if (kf < 0.0 || (us < 0.013 && v > us)) continue;
      if (std::log(v) + std::log(inv_alpha) - std::log(a / (us * us) + b) <= -mean + kf * log_mean - std::lgamma(kf + 1.0))
        return std::uint64_t(kf);
    }
  }

 private:
  static constexpr std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  std::uint64_t s_[4]{};
};

}  // namespace wafer::hw
