#pragma once
// Analytic yield models (A = area in cm^2, D0 = defects per cm^2, alpha = clustering), and the analytic
// probability that row-shift repair succeeds, to compare against Monte Carlo over generated maps.
#include "hw/defect_map.h"
#include "hw/wafer_spec.h"

namespace wafer::hw {

// Probability of zero defects.
double poisson_yield(double area_cm2, double d0);                     // exp(-A D0)
double negbin_yield(double area_cm2, double d0, double alpha);        // (1 + A D0 / alpha)^-alpha
double murphy_yield(double area_cm2, double d0);                      // ((1 - exp(-A D0)) / (A D0))^2
// Zero-defect yield of a whole wafer under the generator's model (all defect kinds count).
double zero_defect_yield(const WaferSpec& spec, const DefectGenParams& params);

// Probability that "row-shift" repairs a generated map completely, exactly for the generator of
// hw/defect_map.h: given density D, a tile fails (core, SRAM or router defect) with probability
// p = 1 - exp(-D a s) (a = tile area, s = share of tile-killing kinds), independently; a physical row is
// unrepairable when more than spare_cols of its tiles fail (binomial), rows are independent, and repair
// succeeds when at most spare_rows rows are unrepairable. The negative-binomial model integrates this
// over the gamma-distributed D numerically (Simpson in log D, relative error < 1e-6).
double row_shift_success_given_density(const WaferSpec& spec, const DefectGenParams& params, double density_per_cm2);
double row_shift_success_probability(const WaferSpec& spec, const DefectGenParams& params);

// Helpers, exposed for tests: P(Binomial(n, p) <= k) and P(Binomial(n, p) > k), accurate in both tails.
double binomial_cdf(std::int64_t n, double p, std::int64_t k);
double binomial_sf(std::int64_t n, double p, std::int64_t k);

}  // namespace wafer::hw
