#include "apps/validate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "apps/decode_point.h"
#include "hw/error.h"
#include "hw/json_input.h"
#include "mapper/placement.h"

namespace wafer::apps::validation {

using hw::InputError;
using json = nlohmann::json;

const std::vector<KindInfo>& kinds() {
  static const std::vector<KindInfo> table = {
      {Kind::LayerCycles, "layer_cycles", "cycles", true},
      {Kind::TokensPerS, "tokens_per_s", "tokens/s", true},
      {Kind::StepCycles, "step_cycles", "cycles", true},
      {Kind::CollectiveCycles, "collective_cycles", "cycles", false},
      {Kind::HopCycles, "hop_cycles", "cycles", false},
  };
  return table;
}

const KindInfo& info(Kind k) {
  for (const auto& i : kinds())
    if (i.kind == k) return i;
  throw std::logic_error("validate: a kind without a table entry");
}

namespace {

std::string kind_names() {
  std::string s;
  for (const auto& k : kinds()) s += (s.empty() ? "" : ", ") + std::string(k.name);
  return s;
}

// Keys a case may hold, by what they serve (a key of another kind "does not apply", any other is unknown).
const std::vector<std::string_view> kCommonKeys = {"name", "source", "note", "wafer", "measured"};
const std::vector<std::string_view> kDecodeKeys = {"model", "context", "batch", "mapping"};
const std::vector<std::string_view> kCollectiveKeys = {"collective", "tiles", "wavelets"};
const std::vector<std::string_view> kHopKeys = {"hops", "wavelets"};
const std::vector<std::string_view> kMappingKeys = {"placement", "kernel", "allreduce", "group",
                                                    "weights",   "weight_bits", "wafers"};

bool contains(const std::vector<std::string_view>& v, std::string_view k) {
  return std::find(v.begin(), v.end(), k) != v.end();
}
std::string join(const std::vector<std::string_view>& v) {
  std::string s;
  for (auto k : v) s += (s.empty() ? "" : ", ") + std::string(k);
  return s;
}

// One JSON object being read: every message names `where` and the key (with `path` before it).
class Obj {
 public:
  Obj(const json& j, std::string where, std::string path = {}) : j_(j), where_(std::move(where)), path_(std::move(path)) {}

  [[noreturn]] void fail(std::string_view key, std::string_view what) const {
    throw InputError(fmt::format("{}: key '{}{}': {}", where_, path_, key, what));
  }
  bool has(std::string_view key) const { return j_.contains(key); }
  const json* find(std::string_view key) const {
    auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }
  const json& need(std::string_view key, std::string_view what) const {
    const json* v = find(key);
    if (!v) fail(key, fmt::format("missing (give {})", what));
    return *v;
  }
  std::string text(std::string_view key, bool required, std::string_view what = "a string") const {
    const json* v = required ? &need(key, what) : find(key);
    if (!v) return {};
    if (!v->is_string()) fail(key, fmt::format("{} must be a string", v->dump()));
    std::string s = v->get<std::string>();
    if (s.empty()) fail(key, "must not be empty");
    return s;
  }
  std::int64_t integer(std::string_view key, std::int64_t lo, std::int64_t hi, std::optional<std::int64_t> fallback,
                       std::string_view what) const {
    const json* v = fallback ? find(key) : &need(key, what);
    if (!v) return *fallback;
    if (!v->is_number()) fail(key, fmt::format("{} must be a whole number", v->dump()));
    const double d = v->get<double>();
    if (!std::isfinite(d) || std::floor(d) != d) fail(key, fmt::format("{} must be a whole number", v->dump()));
    if (d < double(lo) || d > double(hi)) fail(key, fmt::format("{} is outside [{}, {}]", v->dump(), lo, hi));
    return v->is_number_integer() ? v->get<std::int64_t>() : std::int64_t(d);
  }
  double number(std::string_view key, bool required, double lo, double hi, std::string_view what) const {
    const json* v = required ? &need(key, what) : find(key);
    if (!v) return 0;
    if (!v->is_number()) fail(key, fmt::format("{} must be a number", v->dump()));
    const double d = v->get<double>();
    if (!std::isfinite(d) || d < lo || d > hi) fail(key, fmt::format("{} is outside [{:g}, {:g}]", v->dump(), lo, hi));
    return d;
  }
  const json& object(std::string_view key, std::string_view what) const {
    const json& v = need(key, what);
    if (!v.is_object()) fail(key, "must be a JSON object");
    return v;
  }
  // Every key must be one of `allowed`; `elsewhere` lists keys that exist for other kinds of case.
  void only(const std::vector<std::string_view>& allowed, const std::vector<std::string_view>& elsewhere = {},
            std::string_view kind = {}) const {
    for (auto it = j_.begin(); it != j_.end(); ++it) {
      if (contains(allowed, it.key())) continue;
      if (contains(elsewhere, it.key())) fail(it.key(), fmt::format("does not apply to a {} case", kind));
      fail(it.key(), fmt::format("unknown key (known here: {})", join(allowed)));
    }
  }
  const std::string& where() const { return where_; }

 private:
  const json& j_;
  std::string where_, path_;
};

mapper::ModelConfig read_model(const Obj& o, const std::filesystem::path& dir, const std::string& case_name) {
  const json& v = o.need("model", "a shipped model name, a path to a config.json, or an inline config object");
  if (v.is_string() && v.get<std::string>().empty()) o.fail("model", "must not be empty");
  if (!v.is_string() && !v.is_object())
    o.fail("model", fmt::format("{} must be a model name, a path to a config.json or a config object", v.dump()));
  try {
    if (v.is_object()) {
      mapper::ModelConfig m = mapper::parse_model_config(v, "inline config");
      m.name = case_name + " model";
      return m;
    }
    const std::string s = v.get<std::string>();
    if (!hw::names_file(s)) return mapper::load_model(s);
    std::filesystem::path p(s);
    if (p.is_relative()) p = dir / p;
    return mapper::load_model(p.string());
  } catch (const InputError& e) {
    o.fail("model", e.what());
  }
}

void read_mapping(const Obj& c, Case& k) {
  const json* m = c.find("mapping");
  if (!m) return;
  if (!m->is_object()) c.fail("mapping", "must be a JSON object");
  Obj o(*m, c.where(), "mapping.");
  o.only(kMappingKeys);
  mapper::MapOptions& mo = k.mapping;
  if (o.has("placement")) {
    mo.placement = o.text("placement", true);
    try {
      mapper::placement(mo.placement);
    } catch (const InputError& e) {
      o.fail("placement", e.what());
    }
  }
  if (o.has("kernel")) {
    std::string s = o.text("kernel", true);
    if (s != "bands" && s != "meshgemv") o.fail("kernel", fmt::format("'{}' is not bands or meshgemv", s));
    mo.kernel = mapper::parse_kernel(s);
  }
  if (o.has("allreduce")) {
    std::string s = o.text("allreduce", true);
    if (s != "chain" && s != "centre" && s != "tree") o.fail("allreduce", fmt::format("'{}' is not chain, centre or tree", s));
    mo.allreduce = mapper::parse_allreduce(s);
  }
  mo.group = int(o.integer("group", 0, 8192, mo.group, "tiles per group"));
  // (as decode: the bands kernel reduces along its rows)
  for (const char* key : {"allreduce", "group"})
    if (o.has(key) && mo.kernel != mapper::Kernel::MeshGemv)
      o.fail(key, "applies to kernel meshgemv (the bands kernel reduces along its rows)");
  if (o.has("weights")) {
    std::string s = o.text("weights", true);
    if (s != "resident" && s != "stream") o.fail("weights", fmt::format("'{}' is not resident or stream", s));
    mo.weights = mapper::parse_weight_mode(s);
  }
  mo.weight_bits = int(o.integer("weight_bits", 8, 16, mo.weight_bits, "16 or 8"));
  if (mo.weight_bits != 8 && mo.weight_bits != 16) o.fail("weight_bits", fmt::format("{} is not 16 or 8", mo.weight_bits));
  mo.wafers = int(o.integer("wafers", 1, 64, mo.wafers, "wafers in a pipeline"));
}

Case read_case(const json& cj, std::size_t index, const std::string& file, const std::filesystem::path& dir) {
  if (!cj.is_object())
    throw InputError(fmt::format("{}: case #{}: must be a JSON object", file, index + 1));
  Case k;
  {
    Obj pre(cj, fmt::format("{}: case #{}", file, index + 1));
    k.name = pre.text("name", true, "a unique name");
    // (it heads a row of the results' table and labels its lines: a newline split the row in two)
    if (std::any_of(k.name.begin(), k.name.end(), hw::is_control))
      pre.fail("name", fmt::format("{} must be one line of text (no control characters)", json(k.name).dump()));
  }
  Obj c(cj, fmt::format("{}: case '{}'", file, k.name));
  k.source = c.text("source", true, "where the measured value comes from");
  k.note = c.text("note", false);

  // What is measured decides which other keys apply.
  const json& mj = c.object("measured", "an object with kind, value and unit");
  Obj m(mj, c.where(), "measured.");
  const std::string kind = m.text("kind", true, "one of " + kind_names());
  const KindInfo* ki = nullptr;
  for (const auto& i : kinds())
    if (i.name == kind) ki = &i;
  if (!ki) m.fail("kind", fmt::format("unknown kind '{}' (known: {})", kind, kind_names()));
  k.kind = ki->kind;
  std::vector<std::string_view> measured_keys = {"kind", "value", "unit"};
  if (k.kind == Kind::TokensPerS) measured_keys.insert(measured_keys.end(), {"layers", "clock_ghz"});
  m.only(measured_keys, {"layers", "clock_ghz"}, kind);
  // (positive: errors are relative to it; from 1e-6, as a value of 1e-300 gave errors of 1e303 %)
  k.measured = m.number("value", true, 1e-6, 1e15, "the measured value, a positive number");
  k.unit = m.text("unit", true, fmt::format("the unit, '{}' for {}", ki->unit, kind));
  if (k.unit != ki->unit) m.fail("unit", fmt::format("'{}' does not match kind {} (its unit is '{}')", k.unit, kind, ki->unit));

  std::vector<std::string_view> allowed = kCommonKeys, elsewhere;
  const auto& own = ki->decode ? kDecodeKeys : k.kind == Kind::CollectiveCycles ? kCollectiveKeys : kHopKeys;
  allowed.insert(allowed.end(), own.begin(), own.end());
  for (const auto* other : {&kDecodeKeys, &kCollectiveKeys, &kHopKeys})
    for (auto key : *other)
      if (!contains(allowed, key)) elsewhere.push_back(key);
  c.only(allowed, elsewhere, kind);

  // The wafer: the rules of a wafer file (hw::wafer_from_json).
  const json& wj = c.object("wafer", "an object: {\"preset\": ..., \"<parameter>\": value}");
  if (auto it = wj.find("preset"); it != wj.end() && it->is_string()) k.preset = it->get<std::string>();
  k.wafer = hw::wafer_from_json(wj, c.where() + ": key 'wafer'", k.preset.empty() ? "case " + k.name : k.preset,
                                &k.wafer_keys);

  if (k.kind == Kind::TokensPerS) {
    k.layers = m.integer("layers", 1, 4096, std::nullopt, "the published model's layer count");
    k.clock_ghz = m.has("clock_ghz") ? m.number("clock_ghz", true, 1e-3, 100, "GHz") : k.wafer.clock_ghz;
  }

  if (ki->decode) {
    k.model = read_model(c, dir, k.name);
    k.mapping.context = c.integer("context", 1, std::int64_t(1) << 26, std::nullopt, "the KV-cache length in tokens");
    k.mapping.batch = c.integer("batch", 1, 65536, 1, "sequences");
    if (k.model.max_position > 0 && k.mapping.context > k.model.max_position)
      c.fail("context", fmt::format("{} is beyond the model's max_position_embeddings {}", k.mapping.context,
                                    k.model.max_position));
    read_mapping(c, k);
  } else if (k.kind == Kind::CollectiveCycles) {
    const std::string name = c.text("collective", true, "one of " + row_collective_names());
    k.collective = find_row_collective(name);
    if (!k.collective) c.fail("collective", fmt::format("unknown collective '{}' (known: {})", name, row_collective_names()));
    k.tiles = c.integer("tiles", 2, hw::kMaxTilesPerSide, std::nullopt, "P, the tiles of the row");
    if (k.tiles > k.wafer.logical_width)
      c.fail("tiles", fmt::format("{} tiles do not fit in a row of the case's wafer ({} tiles wide)", k.tiles,
                                  k.wafer.logical_width));
    k.wavelets = c.integer("wavelets", 1, 1 << 20, std::nullopt, "B, the wavelets each tile contributes");
  } else {
    k.hops = c.integer("hops", 1, hw::kMaxTilesPerSide, std::nullopt, "k: the case measures k + 1 hops minus k hops");
    if (k.hops + 2 > k.wafer.logical_width)
      c.fail("hops", fmt::format("{} + 1 hops need {} tiles in a row; the case's wafer is {} tiles wide", k.hops,
                                 k.hops + 2, k.wafer.logical_width));
    k.wavelets = c.integer("wavelets", 1, 1 << 20, 1, "wavelets of the unicast");
  }
  return k;
}

}  // namespace

CaseFile load_case_file(const std::filesystem::path& file) {
  CaseFile out;
  out.path = file.string();
  const std::string& f = out.path;
  const json j = hw::parse_input_json<json>(hw::read_input_file(file, "case file"), f);
  if (!j.is_object()) throw InputError(fmt::format("{}: a case file is a JSON object {{\"schema\": 1, \"cases\": [...]}}", f));
  Obj top(j, f);
  top.only({"schema", "cases", "note"});
  const std::int64_t schema = top.integer("schema", 0, 1 << 20, std::nullopt, "1");
  if (schema != 1) top.fail("schema", fmt::format("{} is not a schema this build reads (1)", schema));
  top.text("note", false);
  const json& cases = top.need("cases", "an array of cases");
  if (!cases.is_array()) top.fail("cases", "must be an array");
  if (cases.empty()) top.fail("cases", "is empty: nothing to validate");
  const std::filesystem::path dir = file.parent_path();
  std::set<std::string> names;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    Case c = read_case(cases[i], i, f, dir);
    if (!names.insert(c.name).second)
      throw InputError(fmt::format("{}: case '{}': key 'name': another case has the same name", f, c.name));
    out.cases.push_back(std::move(c));
  }
  return out;
}

void check_case(const Case& c, const std::string& file, noc::Fidelity fidelity) {
  if (fidelity != noc::Fidelity::Cycle) return;
  std::int64_t w = 0, h = 1;
  if (info(c.kind).decode) w = c.wafer.logical_width, h = c.wafer.logical_height;
  else if (c.kind == Kind::CollectiveCycles) w = c.tiles;
  else w = c.hops + 2;
  if (w > noc::kCycleMaxSide || h > noc::kCycleMaxSide)
    throw InputError(fmt::format("{}: case '{}': --fidelity cycle handles meshes up to {}x{}; this case needs {} x {} "
                                 "tiles (use approx)",
                                 file, c.name, noc::kCycleMaxSide, noc::kCycleMaxSide, w, h));
}

double Predictor::predict(const Case& c, const hw::WaferSpec& spec, const std::string& file) {
  const std::string where = fmt::format("{}: case '{}'", file, c.name);
  if (info(c.kind).decode) {
    if (!sim_) sim_ = std::make_unique<sim::Simulator>(), cache_ = std::make_unique<PointCache>(*sim_, use_cache_);
    const DecodePoint point{spec, c.model, c.mapping, fidelity_, false, {}, false, 0, 0, true};
    const std::shared_ptr<const noc::Fabric> fabric = cache_->perfect(spec);
    std::shared_ptr<const mapper::Mapping> mapping;
    try {
      mapping = cache_->map(point, fabric);
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: the mapper refuses it: {}", where, e.what()));
    }
    sim::StepResult r;
    try {
      r = cache_->emulate(point, *fabric, *mapping);
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: the emulator refuses it: {}", where, e.what()));
    }
    if (c.kind == Kind::StepCycles) return double(r.latency);
    const double layer = double(decoder_layer_cycles(r)) / double(c.model.layers);
    if (!(layer > 0))
      throw InputError(fmt::format("{}: no decoder layer on the step's critical path: {} has no layer cycles", where,
                                   info(c.kind).name));
    if (c.kind == Kind::LayerCycles) return layer;
    return c.clock_ghz * 1e9 / (double(c.layers) * layer);
  }
  try {
    if (c.kind == Kind::CollectiveCycles)
      return double(time_row_collective(*c.collective, spec, fidelity_, std::int32_t(c.tiles), std::uint32_t(c.wavelets)));
    const auto k = std::int32_t(c.hops);
    return double(time_unicast(spec, fidelity_, k + 1, std::uint32_t(c.wavelets))) -
           double(time_unicast(spec, fidelity_, k, std::uint32_t(c.wavelets)));
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", where, e.what()));
  }
}

// ---- the fit ------------------------------------------------------------------------------------------

std::vector<FitParam> parse_fit(std::string_view arg, const std::vector<Case>& cases) {
  std::string fittable;
  for (auto k : kFittable) fittable += (fittable.empty() ? "" : ", ") + std::string(k);
  std::vector<FitParam> out;
  std::size_t pos = 0;
  if (arg.empty()) throw InputError(fmt::format("--fit: name the parameters to fit ({})", fittable));
  while (pos <= arg.size()) {
    std::size_t end = arg.find(',', pos);
    if (end == std::string_view::npos) end = arg.size();
    const std::string item(arg.substr(pos, end - pos));
    pos = end + 1;
    const std::size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    if (key.empty()) throw InputError(fmt::format("--fit '{}': an empty parameter name ({})", arg, fittable));
    const hw::ParamInfo* pinfo = hw::wafer_param(key);
    const bool may = std::find(std::begin(kFittable), std::end(kFittable), key) != std::end(kFittable);
    if (!pinfo) throw InputError(fmt::format("--fit '{}': unknown parameter (fittable: {})", key, fittable));
    if (!may)
      throw InputError(fmt::format("--fit '{}': it has a published value ({}); only parameters without one may be "
                                   "fitted: {}",
                                   key, pinfo->source, fittable));
    if (!std::holds_alternative<std::int64_t hw::WaferSpec::*>(pinfo->member))
      throw InputError(fmt::format("--fit '{}': not a whole-number parameter", key));
    for (const auto& p : out)
      if (p.key == key) throw InputError(fmt::format("--fit '{}': named twice", key));
    for (const auto& c : cases)
      if (std::find(c.wafer_keys.begin(), c.wafer_keys.end(), key) != c.wafer_keys.end())
        throw InputError(fmt::format("--fit '{}': case '{}' sets it in its wafer; leave a fitted parameter to the fit",
                                     key, c.name));
    FitParam fp;
    fp.key = key;
    fp.info = pinfo;
    fp.lo = std::int64_t(std::ceil(pinfo->min));
    fp.hi = std::int64_t(std::floor(pinfo->max));
    const auto member = std::get<std::int64_t hw::WaferSpec::*>(pinfo->member);
    fp.start = cases.empty() ? fp.lo : cases.front().wafer.*member;
    if (eq != std::string::npos) {
      const std::string v = item.substr(eq + 1);
      std::size_t used = 0;
      long long s = 0;
      try {
        s = std::stoll(v, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (v.empty() || used != v.size())
        throw InputError(fmt::format("--fit '{}': the start '{}' is not a whole number", item, v));
      fp.start = s;
    }
    // A task's delays after its trigger act as 1 at 0 (core::CostModel::react): 0 and 1 are one point, which the
    // fit's forward differences would find insensitive, so it searches from 1 and takes a start of 0 as 1.
    if (key == "task_overhead" || key == "stream_stage_latency") {
      fp.lo = std::max<std::int64_t>(fp.lo, 1);
      if (fp.start == 0) fp.start = 1;
    }
    if (fp.start < fp.lo || fp.start > fp.hi)
      throw InputError(fmt::format("--fit '{}': the start {} is outside [{}, {}] {}", key, fp.start, fp.lo, fp.hi,
                                   pinfo->unit));
    out.push_back(std::move(fp));
  }
  return out;
}

hw::WaferSpec with_values(const hw::WaferSpec& spec, const std::vector<FitParam>& params,
                          const std::vector<std::int64_t>& values) {
  hw::WaferSpec s = spec;
  for (std::size_t j = 0; j < params.size(); ++j) s.*std::get<std::int64_t hw::WaferSpec::*>(params[j].info->member) = values[j];
  hw::validate(s, s.name);
  return s;
}

FitResult fit(const std::vector<FitParam>& params, const std::vector<double>& measured, const Evaluate& evaluate,
              int max_iterations) {
  const std::size_t k = params.size(), n = measured.size();
  FitResult out;
  std::map<std::vector<std::int64_t>, std::vector<double>> seen;
  auto predictions = [&](const std::vector<std::int64_t>& v) -> const std::vector<double>& {
    auto it = seen.find(v);
    if (it == seen.end()) {
      it = seen.emplace(v, evaluate(v)).first;
      ++out.evaluations;
    }
    return it->second;
  };
  auto residuals = [&](const std::vector<std::int64_t>& v) {
    const auto& p = predictions(v);
    std::vector<double> r(n);
    for (std::size_t i = 0; i < n; ++i) r[i] = (p[i] - measured[i]) / measured[i];
    return r;
  };
  auto cost = [&](const std::vector<std::int64_t>& v) {
    double s = 0;
    for (double x : residuals(v)) s += x * x;
    return s;
  };
  auto better = [](double a, double b) { return a < b - 1e-12 * std::max(1.0, std::abs(b)); };
  auto clamp = [&](std::size_t j, double x) {
    return std::clamp<std::int64_t>(std::llround(x), params[j].lo, params[j].hi);
  };

  std::vector<std::int64_t> theta(k);
  for (std::size_t j = 0; j < k; ++j) theta[j] = params[j].start;
  out.before = predictions(theta);

  // Gauss-Newton on forward differences, at integer points.
  bool converged = false;
  std::vector<std::int64_t> last_from = theta;
  for (int it = 0; it < max_iterations; ++it) {
    const std::vector<double> r = residuals(theta);
    std::vector<std::vector<double>> J(n, std::vector<double>(k, 0.0));
    std::vector<double> norm(k, 0.0);
    for (std::size_t j = 0; j < k; ++j) {
      std::int64_t step = std::max<std::int64_t>(1, std::llround(0.1 * double(std::abs(theta[j]))));
      if (theta[j] + step > params[j].hi) step = -step;
      if (theta[j] + step < params[j].lo)
        throw InputError(fmt::format("--fit '{}': its range [{}, {}] leaves nothing to fit", params[j].key,
                                     params[j].lo, params[j].hi));
      std::vector<std::int64_t> t = theta;
      t[j] += step;
      const std::vector<double> rj = residuals(t);
      for (std::size_t i = 0; i < n; ++i) {
        J[i][j] = (rj[i] - r[i]) / double(step);
        norm[j] += J[i][j] * J[i][j];
      }
      norm[j] = std::sqrt(norm[j]);
      if (!(norm[j] > 0))
        throw InputError(fmt::format("--fit '{}': no case is sensitive to it (from {} to {} no prediction changes); "
                                     "it cannot be fitted on these cases",
                                     params[j].key, theta[j], theta[j] + step));
    }
    // Normal equations on unit-norm columns: A d = -g, Gaussian elimination with partial pivoting.
    std::vector<std::vector<double>> A(k, std::vector<double>(k + 1, 0.0));
    for (std::size_t a = 0; a < k; ++a) {
      for (std::size_t b = 0; b < k; ++b)
        for (std::size_t i = 0; i < n; ++i) A[a][b] += J[i][a] / norm[a] * J[i][b] / norm[b];
      for (std::size_t i = 0; i < n; ++i) A[a][k] -= J[i][a] / norm[a] * r[i];
    }
    for (std::size_t a = 0; a < k; ++a) {
      std::size_t piv = a;
      for (std::size_t b = a + 1; b < k; ++b)
        if (std::abs(A[b][a]) > std::abs(A[piv][a])) piv = b;
      if (std::abs(A[piv][a]) < 1e-9)
        throw InputError(fmt::format("--fit '{}': these cases do not tell it apart from the other fitted parameters "
                                     "(a singular system); fit fewer parameters or add cases",
                                     params[a].key));
      std::swap(A[a], A[piv]);
      for (std::size_t b = a + 1; b < k; ++b) {
        const double f = A[b][a] / A[a][a];
        for (std::size_t c = a; c <= k; ++c) A[b][c] -= f * A[a][c];
      }
    }
    std::vector<double> d(k, 0.0);
    for (std::size_t a = k; a-- > 0;) {
      double s = A[a][k];
      for (std::size_t b = a + 1; b < k; ++b) s -= A[a][b] * d[b];
      d[a] = s / A[a][a];
    }
    for (std::size_t j = 0; j < k; ++j) d[j] /= norm[j];
    // The step, halved until it lowers the cost; failing that, every integer point along the step's ray up
    // to twice its length (a narrow valley can need a longer or shorter step than the rounding gives).
    ++out.iterations;
    const double now = cost(theta);
    auto at = [&](double f) {
      std::vector<std::int64_t> cand(k);
      for (std::size_t j = 0; j < k; ++j) cand[j] = clamp(j, double(theta[j]) + f * d[j]);
      return cand;
    };
    bool moved = false;
    for (double f = 1.0; f >= 1.0 / 8 && !moved; f /= 2) {
      const auto cand = at(f);
      if (cand != theta && better(cost(cand), now)) last_from = theta, theta = cand, moved = true;
    }
    if (!moved) {
      std::vector<std::int64_t> best = theta;
      double best_cost = now;
      for (int step = 1; step <= 16; ++step) {
        const auto cand = at(step / 8.0);
        if (cand == theta) continue;
        if (const double c = cost(cand); better(c, best_cost)) best = cand, best_cost = c;
      }
      if (best != theta) last_from = theta, theta = best, moved = true;
    }
    if (!moved) {
      converged = true;
      break;
    }
  }
  if (!converged) {
    std::size_t j = 0;
    for (std::size_t a = 0; a < k; ++a)
      if (std::abs(theta[a] - last_from[a]) > std::abs(theta[j] - last_from[j])) j = a;
    throw InputError(fmt::format("--fit '{}': no convergence after {} Gauss-Newton iteration(s) (it still moved from {} "
                                 "to {}); raise --max-iterations",
                                 params[j].key, max_iterations, last_from[j], theta[j]));
  }

  // Unit steps around the Gauss-Newton point (the objective is only defined on integers).
  constexpr int kMaxMoves = 1000;
  for (;;) {
    bool improved = false;
    for (std::size_t j = 0; j < k && !improved; ++j)
      for (int dir : {+1, -1}) {
        std::vector<std::int64_t> cand = theta;
        cand[j] += dir;
        if (cand[j] < params[j].lo || cand[j] > params[j].hi) continue;
        if (better(cost(cand), cost(theta))) {
          theta = cand;
          improved = true;
          if (++out.moves > kMaxMoves)
            throw InputError(fmt::format("--fit '{}': the integer search did not settle within {} unit steps",
                                         params[j].key, kMaxMoves));
          break;
        }
      }
    if (!improved) break;
  }
  out.values = theta;
  out.after = predictions(theta);
  return out;
}

}  // namespace wafer::apps::validation
