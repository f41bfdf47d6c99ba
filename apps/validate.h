#pragma once
// `wafer-emu validate`: case files of published measurements, the emulator's prediction for each case, and
// the least-squares fit of the wafer parameters that have no published value. docs/fidelity.md describes
// the case-file schema, the measurement kinds, the sources and the fit.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "apps/point_cache.h"
#include "apps/row_collectives.h"
#include "hw/wafer_spec.h"
#include "mapper/mapper.h"
#include "mapper/model_config.h"
#include "noc/mesh.h"
#include "sim/simulator.h"

namespace wafer::apps::validation {

// What a case measures. Decode kinds map a model and emulate one decode step; the others time a Plan on
// the mesh model alone.
enum class Kind : std::uint8_t {
  LayerCycles,       // critical-path cycles of one decoder layer (the layers' share / layers emulated)
  TokensPerS,        // clock / (published layers x layer cycles), the way the source computes it
  StepCycles,        // the whole decode step
  CollectiveCycles,  // a collective on a 1 x P row, release to last tail arrival
  HopCycles,         // one more hop: a unicast over k + 1 hops minus over k hops (tail arrivals)
};

struct KindInfo {
  Kind kind;
  std::string_view name;  // as written in the case file
  std::string_view unit;  // the only unit a case of this kind may give
  bool decode;            // maps and emulates a model
};
const std::vector<KindInfo>& kinds();
const KindInfo& info(Kind k);

struct Case {
  std::string name, source, note;
  Kind kind = Kind::StepCycles;
  hw::WaferSpec wafer;                  // the case's wafer, as its "wafer" object gives it
  std::vector<std::string> wafer_keys;  // parameters that object sets (the fit refuses to override them)
  std::string preset;                   // its "preset" ("" when it gives every parameter)
  double measured = 0;
  std::string unit;
  std::int64_t layers = 0;    // tokens_per_s: layers of the published model
  double clock_ghz = 0;       // tokens_per_s: the clock the source converts with
  mapper::ModelConfig model;  // decode kinds
  mapper::MapOptions mapping;
  const RowCollective* collective = nullptr;  // collective_cycles
  std::int64_t tiles = 0;     // collective_cycles: P
  std::int64_t hops = 0;      // hop_cycles: k
  std::int64_t wavelets = 1;  // collective_cycles, hop_cycles
};

struct CaseFile {
  std::string path;  // as given (it prefixes every message)
  std::vector<Case> cases;
};

// Reads and checks a case file (schema 1): every key known, every value of the right type and range, units
// that match their kind, models that load, wafers that validate, unique names. Anything else is one
// hw::InputError: "FILE: case 'NAME': key 'K': ...".
CaseFile load_case_file(const std::filesystem::path& file);

// What depends on the run rather than the file: the cycle model's mesh size limit, placement names, the
// mapping options' ranges. Nothing is mapped or emulated.
void check_case(const Case& c, const std::string& file, noc::Fidelity fidelity);

// The emulator's value for one case, in the case's unit, on `spec` (the case's wafer, possibly with fitted
// parameters). Decode cases run on the one Simulator of the process, created on first use, through a
// PointCache (apps/point_cache.h: the fit runs the same cases again and again) unless `cache` is false. A
// mapper or emulator refusal is an InputError naming the case.
class Predictor {
 public:
  explicit Predictor(noc::Fidelity fidelity, bool cache = true) : fidelity_(fidelity), use_cache_(cache) {}
  double predict(const Case& c, const hw::WaferSpec& spec, const std::string& file);

 private:
  noc::Fidelity fidelity_;
  bool use_cache_;
  std::unique_ptr<sim::Simulator> sim_;
  std::unique_ptr<PointCache> cache_;  // on sim_
};

// ---- the fit (docs/fidelity.md) -----------------------------------------------------------------------
// Parameters with no published value: only these may be fitted. Looked up in hw::wafer_params() by name,
// so one that the wafer description does not have yet is refused until it lands.
// (ramp_latency is published: Luczynski et al. measure T_R of about 2 cycles on WSE-2.)
inline constexpr std::string_view kFittable[] = {"task_overhead", "vector_setup", "color_switch", "collective_sync",
                                                 "stream_stage_latency"};

struct FitParam {
  std::string key;
  const hw::ParamInfo* info = nullptr;
  std::int64_t start = 0, lo = 0, hi = 0;
};

// "--fit NAME[=START],...": each name fittable and present in this build's wafer description, no case
// setting it in its wafer; START defaults to the first case's value. InputError naming the parameter.
std::vector<FitParam> parse_fit(std::string_view arg, const std::vector<Case>& cases);

// The spec with the fitted parameters set to `values` (validated again).
hw::WaferSpec with_values(const hw::WaferSpec& spec, const std::vector<FitParam>& params,
                          const std::vector<std::int64_t>& values);

struct FitResult {
  std::vector<std::int64_t> values;   // fitted
  std::vector<double> before, after;  // predictions per case at the start and at the fitted values
  int iterations = 0;                 // Gauss-Newton iterations
  int moves = 0;                      // unit steps of the integer search after them
  int evaluations = 0;                // distinct parameter vectors emulated (every case each)
};

// Predictions of every case at a parameter vector.
using Evaluate = std::function<std::vector<double>(const std::vector<std::int64_t>& values)>;

// Minimises the sum over cases of ((predicted - measured) / measured)^2 over integers within each
// parameter's range: Gauss-Newton on forward differences until a step rounds to no change, then a search
// of unit steps around that point. InputError naming the parameter when no case is sensitive to one, when
// one is a combination of the others (a singular system), or when `max_iterations` pass without convergence.
FitResult fit(const std::vector<FitParam>& params, const std::vector<double>& measured, const Evaluate& evaluate,
              int max_iterations);

}  // namespace wafer::apps::validation
