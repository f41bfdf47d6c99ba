#include "hw/yield.h"

#include <algorithm>
#include <cmath>

namespace wafer::hw {

double poisson_yield(double a, double d0) { return std::exp(-a * d0); }
double negbin_yield(double a, double d0, double alpha) { return std::pow(1.0 + a * d0 / alpha, -alpha); }
double murphy_yield(double a, double d0) {
  const double x = a * d0;
  if (x < 1e-8) return 1.0 - x;  // the limit, without cancellation
  const double r = -std::expm1(-x) / x;
  return r * r;
}

double zero_defect_yield(const WaferSpec& spec, const DefectGenParams& p) {
  return p.model == DefectModel::Poisson ? poisson_yield(spec.area_cm2(), p.density_per_cm2)
                                         : negbin_yield(spec.area_cm2(), p.density_per_cm2, p.alpha);
}

namespace {

double log_term(std::int64_t n, double logp, double log1mp, std::int64_t j) {
  return std::lgamma(double(n) + 1) - std::lgamma(double(j) + 1) - std::lgamma(double(n - j) + 1) + double(j) * logp +
         double(n - j) * log1mp;
}

// Sum of P(X = j) for j in [lo, hi], walking away from the mode so the terms shrink; stops when negligible.
double sum_terms(std::int64_t n, double p, std::int64_t lo, std::int64_t hi, bool upward) {
  const double logp = std::log(p), log1mp = std::log1p(-p);
  double sum = 0;
  for (std::int64_t j = upward ? lo : hi; upward ? j <= hi : j >= lo; j += upward ? 1 : -1) {
    const double t = std::exp(log_term(n, logp, log1mp, j));
    sum += t;
    if (t < sum * 1e-18) break;
  }
  return sum;
}

}  // namespace

double binomial_cdf(std::int64_t n, double p, std::int64_t k) {
  if (k < 0) return 0.0;
  if (k >= n || p <= 0.0) return 1.0;
  if (p >= 1.0) return 0.0;
  if (double(k) < double(n) * p) return std::min(1.0, sum_terms(n, p, 0, k, false));  // lower tail: small
  return std::max(0.0, 1.0 - binomial_sf(n, p, k));
}

double binomial_sf(std::int64_t n, double p, std::int64_t k) {
  if (k < 0) return 1.0;
  if (k >= n || p <= 0.0) return 0.0;
  if (p >= 1.0) return 1.0;
  if (double(k) >= double(n) * p) return std::min(1.0, sum_terms(n, p, k + 1, n, true));  // upper tail: small
  return std::max(0.0, 1.0 - binomial_cdf(n, p, k));
}

double row_shift_success_given_density(const WaferSpec& spec, const DefectGenParams& p, double density) {
  const double total = p.share_core + p.share_sram + p.share_router + p.share_link;
  const double kill = total > 0 ? (p.share_core + p.share_sram + p.share_router) / total : 0.0;
  const double tile_cm2 = spec.tile_area_mm2 / 100.0;
  // The generator caps the mean number of defects at 16 per tile (see generate_defects).
  const double wafer_mean = std::min(spec.area_cm2() * density, 16.0 * double(spec.physical_tiles()));
  const double per_tile = spec.area_cm2() > 0 ? wafer_mean * tile_cm2 / spec.area_cm2() : 0.0;
  const double p_tile = -std::expm1(-per_tile * kill);
  const std::int64_t width = spec.logical_width + spec.spare_cols, height = spec.logical_height + spec.spare_rows;
  const double q_row = binomial_sf(width, p_tile, spec.spare_cols);
  return binomial_cdf(height, q_row, spec.spare_rows);
}

namespace {

// Regularised lower incomplete gamma P(a, x) (series for x < a + 1, continued fraction above).
double gamma_p(double a, double x) {
  if (x <= 0) return 0.0;
  const double lg = std::lgamma(a);
  if (x < a + 1.0) {
    double ap = a, del = 1.0 / a, sum = del;
    for (int i = 0; i < 100000; ++i) {
      ap += 1.0;
      del *= x / ap;
      sum += del;
      if (std::fabs(del) < std::fabs(sum) * 1e-16) break;
    }
    return std::min(1.0, sum * std::exp(-x + a * std::log(x) - lg));
  }
  double b = x + 1.0 - a, c = 1.0 / 1e-300, d = 1.0 / b, h = d;
  for (int i = 1; i < 100000; ++i) {
    const double an = -i * (i - a);
    b += 2.0;
    d = an * d + b;
    if (std::fabs(d) < 1e-300) d = 1e-300;
    c = b + an / c;
    if (std::fabs(c) < 1e-300) c = 1e-300;
    d = 1.0 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1.0) < 1e-16) break;
  }
  return std::max(0.0, 1.0 - std::exp(-x + a * std::log(x) - lg) * h);
}

}  // namespace

double row_shift_success_probability(const WaferSpec& spec, const DefectGenParams& p) {
  if (p.model == DefectModel::Poisson || p.density_per_cm2 <= 0)
    return row_shift_success_given_density(spec, p, p.density_per_cm2);
  // D = theta * s, s ~ Gamma(alpha, 1); in t = ln s the weight is exp(alpha t - e^t) / Gamma(alpha).
  const double alpha = p.alpha, theta = p.density_per_cm2 / alpha, lga = std::lgamma(alpha);
  auto f = [&](double t) { return row_shift_success_given_density(spec, p, theta * std::exp(t)); };
  auto w = [&](double t) { return std::exp(alpha * t - std::exp(t) - lga); };
  const double t_hi = std::log(alpha + 12.0 * std::sqrt(alpha) + 40.0);
  // Below t_c repair always succeeds (to double precision): integrate the weight there in closed form.
  double lo = -60.0 / alpha - 50.0, hi = t_hi;
  if (f(hi) >= 1.0) return 1.0;
  if (f(lo) < 1.0) lo = -745.0;  // pathological: failures even at vanishing density
  for (int i = 0; i < 100; ++i) {
    const double mid = 0.5 * (lo + hi);
    (f(mid) >= 1.0 ? lo : hi) = mid;
  }
  const double t_c = lo;
  const double below = gamma_p(alpha, std::exp(t_c));
  const std::int64_t n = std::clamp<std::int64_t>(std::int64_t(std::ceil((t_hi - t_c) / 0.002)) / 2 * 2 + 2, 200, 200000);
  const double h = (t_hi - t_c) / double(n);
  double num = 0, den = 0;
  for (std::int64_t i = 0; i <= n; ++i) {
    const double t = t_c + h * double(i);
    const double c = (i == 0 || i == n) ? 1.0 : (i % 2 ? 4.0 : 2.0);
    const double wt = w(t);
    num += c * wt * f(t);
    den += c * wt;
  }
  num *= h / 3.0, den *= h / 3.0;
  return std::clamp((below + num) / (below + den), 0.0, 1.0);
}

}  // namespace wafer::hw
