#include "apps/sweep.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <fstream>
#include <numeric>
#include <sstream>

#include "apps/file_lock.h"
#include "apps/search.h"
#include "hw/error.h"
#include "hw/input_files.h"
#include "hw/json_input.h"
#include "hw/repair.h"
#include "hw/wafer_spec.h"
#include "mapper/model_config.h"
#include "mapper/placement.h"
#include "noc/routing/fabric.h"

namespace wafer::apps::sweep {

using hw::InputError;

namespace {

// The settings a study may fix or sweep, besides the wafer parameters of `wafer-emu describe`.
const std::vector<std::string_view> kKeys = {"wafer",   "model",     "context", "batch",        "kv_capacity", "placement",
                                             "kernel",  "allreduce", "group",   "weights",      "weight_bits", "wafers",
                                             "fidelity", "density",  "defect_model", "alpha",   "seed",        "repair"};
const std::vector<std::string_view> kTopKeys = {"schema", "name", "note", "fixed", "axes"};

bool is_key(std::string_view k) { return std::find(kKeys.begin(), kKeys.end(), k) != kKeys.end(); }
std::string join(const std::vector<std::string_view>& v) {
  std::string s;
  for (auto k : v) s += (s.empty() ? "" : ", ") + std::string(k);
  return s;
}

[[noreturn]] void fail(const std::string& where, const std::string& key, const std::string& what) {
  throw InputError(fmt::format("{}: key '{}': {}", where, key, what));
}

// Whether JSON number `v` is a whole number in [lo, hi], compared as the number written: one beyond 2^63 is unsigned
// to the parser (read as a signed one it wraps, and was said as -1), and a double above 2^53 is a whole number
// near the one written (a seed above 2^53 ran as 2^53 under its own label).
bool whole_in(const ojson& v, std::int64_t lo, std::int64_t hi) {
  if (v.is_number_unsigned()) {
    const std::uint64_t u = v.get<std::uint64_t>();
    return hi >= 0 && u <= std::uint64_t(hi) && (lo <= 0 || u >= std::uint64_t(lo));
  }
  if (v.is_number_integer()) return lo <= v.get<std::int64_t>() && v.get<std::int64_t>() <= hi;
  const double d = v.get<double>();
  return std::floor(d) == d && d >= double(lo) && d <= double(hi);
}

// A value of the right JSON type for its key (names and ranges are check_value's).
void check_type(const std::string& where, const std::string& path, const std::string& key, const ojson& v) {
  static const std::vector<std::string_view> text = {"wafer",   "model",    "placement",    "kernel", "allreduce",
                                                     "weights", "fidelity", "defect_model", "repair"};
  static const std::vector<std::string_view> number = {"density", "alpha"};
  if (std::find(text.begin(), text.end(), key) != text.end()) {
    if (!v.is_string() || v.get<std::string>().empty()) fail(where, path, fmt::format("{} must be a non-empty string", v.dump()));
  } else if (std::find(number.begin(), number.end(), key) != number.end() || hw::wafer_param(key)) {
    if (!v.is_number()) fail(where, path, fmt::format("{} must be a number", v.dump()));
  } else {
    if (!v.is_number()) fail(where, path, fmt::format("{} must be a whole number", v.dump()));
    const double d = v.get<double>();
    if (!std::isfinite(d) || std::floor(d) != d) fail(where, path, fmt::format("{} must be a whole number", v.dump()));
    if (key == "seed" && !whole_in(v, 0, std::int64_t(1) << 53))
      fail(where, path, fmt::format("{} is outside [0, 2^53]", v.dump()));
  }
}

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

std::string hash_text(const std::string& s) { return fmt::format("{:016x}", fnv1a(s)); }

std::int64_t Study::points() const {
  std::int64_t n = 1;
  for (const auto& a : axes) n *= std::int64_t(a.second.size());
  return n;
}

ojson Study::axis_values(std::int64_t index) const {
  ojson v = ojson::object();
  std::vector<std::size_t> pick(axes.size());
  for (std::size_t a = axes.size(); a-- > 0;) {
    const auto n = std::int64_t(axes[a].second.size());
    pick[a] = std::size_t(index % n);
    index /= n;
  }
  for (std::size_t a = 0; a < axes.size(); ++a) v[axes[a].first] = axes[a].second[pick[a]];
  return v;
}

ojson Study::settings(std::int64_t index) const {
  ojson s = ojson::object();
  for (const auto& [k, v] : fixed) s[k] = v;
  const ojson picked = axis_values(index);
  for (auto a = picked.begin(); a != picked.end(); ++a) {
    if (!joint(a.key())) {
      s[a.key()] = *a;
      continue;
    }
    for (auto it = a->begin(); it != a->end(); ++it) s[it.key()] = *it;
  }
  return s;
}

bool Study::joint(const std::string& axis) { return !is_key(axis) && !hw::wafer_param(axis); }

std::string Study::axis_of(const std::string& setting) const {
  for (const auto& [k, vs] : axes)
    if (k == setting || (joint(k) && !vs.empty() && vs[0].contains(setting))) return k;
  return {};
}

Study parse_study(const ojson& j, const std::string& where, const std::filesystem::path& dir) {
  Study st;
  st.path = where;
  st.dir = dir;
  st.spec = j;
  if (!j.is_object()) throw InputError(fmt::format("{}: a study is a JSON object {{\"schema\": 1, \"fixed\": ..., \"axes\": ...}}", where));
  for (auto it = j.begin(); it != j.end(); ++it)
    if (std::find(kTopKeys.begin(), kTopKeys.end(), it.key()) == kTopKeys.end())
      fail(where, it.key(), fmt::format("unknown key (known here: {})", join(kTopKeys)));
  auto sch = j.find("schema");
  if (sch == j.end()) fail(where, "schema", fmt::format("missing (give {})", kSchema));
  if (!sch->is_number_integer() || sch->get<std::int64_t>() != kSchema)
    fail(where, "schema", fmt::format("{} is not a schema this build reads ({})", sch->dump(), kSchema));
  for (const char* k : {"name", "note"})
    if (auto it = j.find(k); it != j.end() && !it->is_string()) fail(where, k, "must be a string");
  st.name = j.value("name", std::string());
  ojson hashed = j;
  hashed.erase("note");
  st.hash = hash_text(hashed.dump());

  auto key_ok = [&](const std::string& path, const std::string& k, const char* hint = "") {
    if (!is_key(k) && !hw::wafer_param(k))
      fail(where, path, fmt::format("unknown setting (known: {}, or a wafer parameter of `wafer-emu describe`{})", join(kKeys), hint));
  };
  if (auto f = j.find("fixed"); f != j.end()) {
    if (!f->is_object()) fail(where, "fixed", "must be a JSON object {\"setting\": value}");
    for (auto it = f->begin(); it != f->end(); ++it) {
      const std::string path = "fixed." + it.key();
      key_ok(path, it.key());
      if (it->is_array() || it->is_object()) fail(where, path, "a fixed setting is one value (sweep a list under \"axes\")");
      check_type(where, path, it.key(), *it);
      st.fixed.emplace_back(it.key(), *it);
    }
  }
  // Every setting swept, with the axis that sweeps it (a setting in two axes, or in an axis and under "fixed", is
  // an error naming the second place).
  std::vector<std::pair<std::string, std::string>> swept;
  auto sweep_once = [&](const std::string& path, const std::string& k) {
    for (const auto& [f, v] : st.fixed)
      if (f == k) fail(where, path, "is also under \"fixed\" (give it in one place)");
    for (const auto& [w, by] : swept)
      if (w == k) fail(where, path, fmt::format("is swept by axis '{}' already (give it in one place)", by));
  };
  if (auto a = j.find("axes"); a != j.end()) {
    if (!a->is_object()) fail(where, "axes", "must be a JSON object {\"setting\": [values]}");
    for (auto it = a->begin(); it != a->end(); ++it) {
      const std::string path = "axes." + it.key();
      // A joint axis: a name that is no setting, over objects of settings that change together.
      const bool joint = Study::joint(it.key());
      if (joint && it->is_array() && it->empty()) fail(where, path, "is empty: an axis needs at least one value");
      if (!joint || !it->is_array() || !(*it)[0].is_object()) {
        key_ok(path, it.key(), "; an axis of several settings at once takes objects of settings");
        sweep_once(path, it.key());
        swept.emplace_back(it.key(), it.key());
      }
      std::vector<ojson> values;
      if (it->is_object()) {  // a range of whole numbers
        for (auto r = it->begin(); r != it->end(); ++r)
          if (r.key() != "from" && r.key() != "count")
            fail(where, path + "." + r.key(), "unknown key (a range is {\"from\": N, \"count\": K})");
        auto from = it->find("from"), count = it->find("count");
        if (from == it->end() || !from->is_number_integer()) fail(where, path + ".from", "missing or not a whole number");
        if (count == it->end() || !count->is_number_integer()) fail(where, path + ".count", "missing or not a whole number");
        constexpr std::int64_t kLimit = std::int64_t(1) << 53;
        if (!whole_in(*count, 1, kMaxPoints))
          fail(where, path + ".count", fmt::format("{} is outside [1, {}]", count->dump(), kMaxPoints));
        if (!whole_in(*from, -kLimit, kLimit))
          fail(where, path + ".from", fmt::format("{} is outside [-2^53, 2^53]", from->dump()));
        const std::int64_t c = count->get<std::int64_t>(), f0 = from->get<std::int64_t>();
        for (std::int64_t i = 0; i < c; ++i) values.emplace_back(f0 + i);
      } else if (it->is_array()) {
        if (it->empty()) fail(where, path, "is empty: an axis needs at least one value");
        for (const auto& v : *it) values.push_back(v);
      } else {
        fail(where, path, fmt::format("{} must be a list of values or a range {{\"from\": N, \"count\": K}}", it->dump()));
      }
      std::vector<std::string> keys;  // a joint axis's settings: its first value's, every value's
      for (std::size_t i = 0; i < values.size(); ++i) {
        const std::string at = fmt::format("{}[{}]", path, i);
        if (!joint) {
          check_type(where, at, it.key(), values[i]);
        } else {
          const ojson& v = values[i];
          if (!v.is_object() || v.empty())
            fail(where, at, fmt::format("{} must be an object of settings, as the axis's first value is", v.dump()));
          std::vector<std::string> ks;
          for (auto m = v.begin(); m != v.end(); ++m) {
            const std::string mp = at + "." + m.key();
            key_ok(mp, m.key());
            if (m->is_array() || m->is_object()) fail(where, mp, "a setting of a joint axis's value is one value");
            check_type(where, mp, m.key(), *m);
            if (i == 0) sweep_once(mp, m.key());
            ks.push_back(m.key());
          }
          if (i == 0) keys = ks;
          else if (ks != keys)
            fail(where, at, fmt::format("sets {} where the axis's first value sets {} (every value sets the same settings)",
                                        fmt::join(ks, ", "), fmt::join(keys, ", ")));
        }
      }
      // A value listed twice: the first value that equals one before it, found by sorting, since an axis may
      // hold up to kMaxPoints values, too many to compare pairwise (a range of 72,292 seeds took 13 s so). JSON's
      // order is consistent with its equality (numbers compare by value whatever their type), so equal values end
      // up side by side, in list order (a stable sort). A range is not checked: its whole numbers all differ.
      if (!it->is_object()) {
        std::vector<std::size_t> order(values.size());
        std::iota(order.begin(), order.end(), std::size_t(0));
        std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return values[x] < values[y]; });
        std::size_t twice = values.size();
        for (std::size_t k = 1; k < order.size(); ++k)
          if (values[order[k - 1]] == values[order[k]]) twice = std::min(twice, order[k]);
        if (twice < values.size())
          fail(where, fmt::format("{}[{}]", path, twice), fmt::format("{} is listed twice", values[twice].dump()));
      }
      for (const auto& k : keys) swept.emplace_back(k, it.key());
      st.axes.emplace_back(it.key(), std::move(values));
      if (double(st.points()) > double(kMaxPoints))
        fail(where, path, fmt::format("the study would have more than {} points", kMaxPoints));
    }
  }
  return st;
}

hw::WaferSpec Resolver::wafer(const std::string& arg, const std::string& key) {
  auto it = wafers_.find(arg);
  if (it != wafers_.end()) return it->second;
  try {
    std::string a = arg;
    if (hw::names_file(arg) && std::filesystem::path(arg).is_relative()) a = (study_.dir / arg).string();
    return wafers_.emplace(arg, hw::resolve_wafer(a)).first->second;
  } catch (const InputError& e) {
    fail(study_.path, key, e.what());
  }
}

const mapper::ModelConfig& Resolver::model(const std::string& arg, const std::string& key) {
  auto it = models_.find(arg);
  if (it != models_.end()) return it->second;
  try {
    std::string a = arg;
    if (hw::names_file(arg) && std::filesystem::path(arg).is_relative()) a = (study_.dir / arg).string();
    return models_.emplace(arg, mapper::load_model(a)).first->second;
  } catch (const InputError& e) {
    fail(study_.path, key, e.what());
  }
}

void Resolver::check_value(const std::string& key, const ojson& v, const std::string& path) {
  const std::string& w = study_.path;
  auto one_of = [&](std::initializer_list<std::string_view> names) {
    const std::string s = v.get<std::string>();
    if (std::find(names.begin(), names.end(), s) == names.end())
      fail(w, path, fmt::format("'{}' is not one of {}", s, join(std::vector<std::string_view>(names))));
  };
  auto range = [&](double lo, double hi) {
    const double d = v.get<double>();
    if (!(d >= lo && d <= hi)) fail(w, path, fmt::format("{} is outside [{}, {}]", v.dump(), lo, hi));
  };
  try {
    if (key == "wafer") wafer(v.get<std::string>(), path);
    else if (key == "model") model(v.get<std::string>(), path);
    else if (key == "placement") {
      if (v.get<std::string>() != "auto") mapper::placement(v.get<std::string>());  // auto: decode's search
    } else if (key == "repair") hw::repair_scheme(v.get<std::string>());
    else if (key == "kernel") one_of({"bands", "meshgemv"});
    else if (key == "allreduce") one_of({"chain", "centre", "tree"});
    else if (key == "weights") one_of({"resident", "stream"});
    else if (key == "fidelity") one_of({"approx", "cycle"});
    else if (key == "defect_model") one_of({"poisson", "negbin"});
    else if (key == "context") range(1, double(std::int64_t(1) << 26));
    else if (key == "batch") range(1, 65536);
    else if (key == "kv_capacity") range(1, double(mapper::kMaxKvCapacity));
    else if (key == "group") range(0, 8192);
    else if (key == "wafers") range(1, 64);
    else if (key == "weight_bits") {
      if (v.get<double>() != 8 && v.get<double>() != 16) fail(w, path, fmt::format("{} is not 16 or 8", v.dump()));
    } else if (key == "density") range(0, 1e4);
    else if (key == "alpha") range(1e-6, 1e6);
    else if (const hw::ParamInfo* p = hw::wafer_param(key)) {
      range(p->min, p->max);
      if (std::holds_alternative<std::int64_t hw::WaferSpec::*>(p->member) && std::floor(v.get<double>()) != v.get<double>())
        fail(w, path, fmt::format("{} must be a whole number", v.dump()));
    }
  } catch (const InputError& e) {
    const std::string msg = e.what();
    if (msg.starts_with(w + ": key ")) throw;
    fail(w, path, msg);
  }
}

Resolved Resolver::resolve(const ojson& s, std::int64_t index) {
  const std::string& w = study_.path;
  auto where = [&](const std::string& key) {
    for (const auto& [k, v] : study_.fixed)
      if (k == key) return "fixed." + key;
    if (const std::string a = study_.axis_of(key); !a.empty())
      return "axes." + a + (a == key ? "" : "." + key) + fmt::format(" (point {})", index);
    return key + " (not given: decode's default)";
  };
  auto text = [&](const char* k, const char* dflt) { return s.contains(k) ? s[k].get<std::string>() : std::string(dflt); };
  auto integer = [&](const char* k, std::int64_t dflt) { return s.contains(k) ? std::int64_t(s[k].get<double>()) : dflt; };
  Resolved r;
  const std::string wafer_arg = text("wafer", kDefaultWafer.data());
  hw::WaferSpec spec = wafer(wafer_arg, where("wafer"));
  std::string last_param;
  for (auto it = s.begin(); it != s.end(); ++it) {
    const hw::ParamInfo* p = hw::wafer_param(it.key());
    if (!p) continue;
    last_param = it.key();
    std::visit(
        [&](auto m) {
          using T = std::remove_reference_t<decltype(spec.*m)>;
          spec.*m = T(it->template get<double>());
        },
        p->member);
  }
  if (!last_param.empty()) {
    try {
      hw::validate(spec, spec.name);
    } catch (const InputError& e) {
      fail(w, where(last_param), e.what());
    }
  }
  mapper::MapOptions& mo = r.point.options;
  mo.context = integer("context", 4096);
  mo.batch = integer("batch", 1);
  mo.kv_capacity = integer("kv_capacity", 0);  // (decode's --kv-capacity; 0: what the point holds)
  mo.placement = text("placement", "layer-bands");
  mo.weights = mapper::parse_weight_mode(text("weights", "resident"));
  mo.wafers = int(integer("wafers", 1));
  mo.weight_bits = int(integer("weight_bits", 16));
  mo.kernel = mapper::parse_kernel(text("kernel", "bands"));
  mo.allreduce = mapper::parse_allreduce(text("allreduce", "tree"));
  mo.group = int(integer("group", 0));
  // (as decode: the bands kernel reduces along its rows, so two points differing in these alone would be one)
  for (const char* k : {"allreduce", "group"})
    if (s.contains(k) && mo.kernel != mapper::Kernel::MeshGemv)
      fail(w, where(k), "applies to kernel meshgemv (the bands kernel reduces along its rows)");
  r.point.fidelity = noc::parse_fidelity(text("fidelity", "approx"));
  if (r.point.fidelity == noc::Fidelity::Cycle &&
      (spec.logical_width > noc::kCycleMaxSide || spec.logical_height > noc::kCycleMaxSide))
    fail(w, where("fidelity"), fmt::format("cycle handles meshes up to {0}x{0}; wafer '{1}' is {2}x{3} (use approx)",
                                           noc::kCycleMaxSide, spec.name, spec.logical_width, spec.logical_height));
  // (as the mapper refuses it: a reserve is at least what the point holds)
  if (mo.kv_capacity > 0 && mo.kv_capacity < mo.batch * mo.context)
    fail(w, where("kv_capacity"), fmt::format("{} is fewer positions than the point's KV cache holds ({} = batch {} x "
                                              "context {})",
                                              mo.kv_capacity, mo.batch * mo.context, mo.batch, mo.context));
  const mapper::ModelConfig& m = model(text("model", kDefaultModel.data()), where("model"));
  if (m.max_position > 0 && mo.context > m.max_position)
    fail(w, where("context"), fmt::format("{} is beyond {}'s max_position_embeddings {}", mo.context, m.name, m.max_position));
  r.point.model = m;
  r.defects = s.contains("density");
  r.gen.model = hw::parse_defect_model(text("defect_model", "poisson"));
  if (s.contains("density")) r.gen.density_per_cm2 = s["density"].get<double>();
  if (s.contains("alpha")) {
    if (r.gen.model != hw::DefectModel::NegBinomial)
      fail(w, where("alpha"), "applies to defect_model negbin (the Poisson model has no clustering to set)");
    r.gen.alpha = s["alpha"].get<double>();
  }
  if (!r.defects)
    for (const char* k : {"defect_model", "alpha", "seed"})
      if (s.contains(k)) fail(w, where(k), "applies to generated defects: give \"density\" too");
  if (r.defects) {
    try {
      hw::validate(r.gen, spec);
    } catch (const InputError& e) {
      fail(w, where("density"), e.what());
    }
  }
  r.seed = std::uint64_t(integer("seed", 1));
  r.repair = text("repair", "row-shift");
  r.point.spec = std::move(spec);
  return r;
}

std::optional<double> Resolver::clock_ghz(const ojson& s) {
  if (s.contains("clock_ghz") && s["clock_ghz"].is_number()) return s["clock_ghz"].get<double>();
  try {
    return wafer(s.contains("wafer") && s["wafer"].is_string() ? s["wafer"].get<std::string>() : std::string(kDefaultWafer), "wafer").clock_ghz;
  } catch (const InputError&) {  // (a wafer file moved or removed since the study ran)
    return std::nullopt;
  }
}

void check_study(const Study& study) {
  Resolver res(study);
  for (const auto& [k, v] : study.fixed) res.check_value(k, v, "fixed." + k);
  for (const auto& [k, vs] : study.axes)
    for (std::size_t i = 0; i < vs.size(); ++i) {
      if (!Study::joint(k)) {
        res.check_value(k, vs[i], fmt::format("axes.{}[{}]", k, i));
        continue;
      }
      for (auto m = vs[i].begin(); m != vs[i].end(); ++m) res.check_value(m.key(), *m, fmt::format("axes.{}[{}].{}", k, i, m.key()));
    }
  for (std::int64_t i = 0; i < study.points(); ++i) res.resolve(study.settings(i), i);
}

Study load_study(const std::filesystem::path& file) {
  const std::string f = file.string();
  const ojson j = hw::parse_input_json<ojson>(hw::read_input_file(file, "study file"), f);
  Study st = parse_study(j, f, file.parent_path());
  // (its model and wafer files are read by every worker and hashed to resume: a pipe, read once, left a study folder
  // without the file's hash and points that failed for want of it)
  for (const auto& [key, path] : input_files(st))
    if (struct stat fs {}; ::stat(path.c_str(), &fs) == 0 && S_ISFIFO(fs.st_mode))
      throw InputError(fmt::format("{}: {} is a pipe: a study reads its files again for each worker and to resume; give a file",
                                   f, key));
  check_study(st);
  return st;
}

// ---- one point ---------------------------------------------------------------------------------------------

ojson run_point(PointCache& cache, Resolver& resolver, const Study& study, std::int64_t index, std::uint32_t threads,
                MemoryGate* gate) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  auto since = [](Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); };
  const ojson settings = study.settings(index);
  Resolved r = resolver.resolve(settings, index);
  r.point.threads = threads;
  const hw::WaferSpec& spec = r.point.spec;
  ojson line;
  line["study"] = study.hash;
  line["index"] = index;
  line["hash"] = hash_text(settings.dump());
  line["settings"] = settings;

  // Defects -> repair -> fabric, as `wafer-emu decode --density D --seed S --repair R` does: a map per wafer (kept
  // by the cache while the wafer, the defect parameters, the seed, the scheme and the wafer count stay the same).
  PointCache::Fabrics fabric_ptrs;
  ojson kept = ojson::array();  // what this point took from an earlier one (wall_s.kept)
  bool reused = false;
  ojson rep;
  std::int64_t usable = spec.logical_tiles();
  const auto t_repair = Clock::now();
  if (r.defects) {
    const std::size_t wafers = std::size_t(r.point.options.wafers);
    const std::shared_ptr<const WaferRepairs> repaired = cache.repaired(spec, r.gen, r.seed, r.repair, wafers, &reused);
    // Per wafer, and summed over the wafers (the repair complete when every wafer's is; the usable tiles the fewest
    // a wafer has, what a pipeline's wafers each need).
    std::int64_t defects = 0, failed = 0, extra = 0, no_path = 0;
    bool complete = true;
    std::string reason;
    ojson each = ojson::array();
    for (std::size_t k = 0; k < repaired->maps.size(); ++k) {
      fabric_ptrs.push_back(std::shared_ptr<const noc::Fabric>(repaired, &repaired->fabrics[k]));
      const hw::DefectMap& map = repaired->maps[k];
      const hw::RepairResult& rr = repaired->repairs[k];
      usable = k == 0 ? rr.usable.area() : std::min(usable, std::int64_t(rr.usable.area()));
      const hw::RepairLinks& links = repaired->links[k];
      defects += std::int64_t(map.size()), failed += std::int64_t(map.dead_tiles()), extra += links.extra_hops,
          no_path += links.no_path;
      // (every wafer whose repair failed, as decode's config line names them)
      if (!rr.complete)
        reason += (reason.empty() ? "" : "; ") + (wafers > 1 ? fmt::format("wafer {}: {}", k, rr.reason) : rr.reason);
      complete = complete && rr.complete;
      each.push_back({{"defects", map.size()}, {"failed_tiles", map.dead_tiles()}, {"complete", rr.complete},
                      {"usable_tiles", rr.usable.area()}, {"extra_hops", links.extra_hops}, {"links_without_path", links.no_path}});
    }
    rep["defects"] = defects;
    rep["failed_tiles"] = failed;
    rep["scheme"] = repaired->repairs.front().scheme;
    rep["complete"] = complete;
    if (!complete) rep["reason"] = reason;
    rep["extra_hops"] = extra;
    rep["links_without_path"] = no_path;
    if (wafers > 1) rep["per_wafer"] = each;
  } else {
    fabric_ptrs.push_back(cache.perfect(spec, &reused));
    rep["defects"] = 0;
    rep["scheme"] = "not needed";
    rep["complete"] = true;
    rep["extra_hops"] = 0;
    rep["links_without_path"] = 0;
  }
  if (reused && r.defects) kept.push_back("repair");
  const noc::WaferFabrics fabrics = view(fabric_ptrs);
  line["repair"] = rep;
  line["usable_tiles"] = usable;
  line["extra_hops"] = rep["extra_hops"];

  const auto t_map = Clock::now();
  const double repair_s = std::chrono::duration<double>(t_map - t_repair).count();
  std::string stage = "map";
  double mapping_s = 0, wait_s = 0;
  auto admit = [&](const mapper::Mapping& m, std::uint32_t at_once) {
    return gate ? std::optional<MemoryGate::Admission>(gate->admit(step_records(m, at_once), &wait_s)) : std::nullopt;
  };
  try {
    std::shared_ptr<const mapper::Mapping> mapping;
    sim::StepResult res;
    if (r.point.options.placement == "auto") {
      // As `decode --placement auto`: the search (mapping and emulating candidates), then the chosen mapping,
      // whose emulation is the search's own when it made one.
      DecodePoint base = r.point;
      base.threads = 1;  // (as decode: the candidates one at a time)
      SearchResult sr = search(cache.simulator(), base, fabrics);
      const SearchCandidate& ch = sr.candidates[std::size_t(sr.chosen)];
      line["search"] = {{"chosen", ch.label}, {"chosen_by", sr.chosen_by_formula ? "closed form" : "emulation"}};
      if (!sr.note.empty()) line["search"]["note"] = sr.note;
      DecodePoint p = r.point;
      p.options = ch.options;
      if (sr.chosen_run) {
        mapping = std::make_shared<const mapper::Mapping>(std::move(sr.chosen_run->mapping));
        res = std::move(sr.chosen_run->step);
        mapping_s = since(t_map);
      } else {
        mapping = cache.map(p, fabric_ptrs, &reused);
        mapping_s = since(t_map);
        if (reused) kept.push_back("mapping");
        stage = "emulate";
        const auto admission = admit(*mapping, p.threads);
        res = cache.emulate(p, fabrics, *mapping);
      }
    } else {
      mapping = cache.map(r.point, fabric_ptrs, &reused);
      mapping_s = since(t_map);
      if (reused) kept.push_back("mapping");
      stage = "emulate";
      const auto admission = admit(*mapping, r.point.threads);
      res = cache.emulate(r.point, fabrics, *mapping);
    }
    if (res.mesh_kept) kept.push_back("mesh");
    const double us = res.latency_us;
    line["status"] = "ok";
    line["latency_cycles"] = std::int64_t(res.latency);
    line["latency_us"] = us;
    line["tokens_per_s"] = us > 0 ? 1e6 / us : 0.0;
    line["tokens_per_s_aggregate"] = us > 0 ? 1e6 * double(r.point.options.batch) / us : 0.0;
    ojson bd = ojson::object();
    for (std::size_t c = 0; c < core::kCauses; ++c) bd[core::to_string(core::Cause(c))] = std::int64_t(res.breakdown.cause[c]);
    line["breakdown_cycles"] = bd;
    line["tiles_used"] = mapping->tiles_used();
    line["wall_s"] = {{"total", since(t0)},           {"repair", repair_s},       {"mapping", mapping_s},
                      {"elaboration", res.elaboration_s}, {"emulation", res.emulation_s}, {"kept", kept}};
    if (gate) line["wall_s"]["memory_wait"] = wait_s;
  } catch (const InputError& e) {
    line["status"] = "failed";
    line["failure"] = {{"stage", stage}, {"reason", e.what()}};
    line["wall_s"] = {{"total", since(t0)}, {"repair", repair_s}, {"mapping", stage == "map" ? since(t_map) : mapping_s},
                      {"kept", kept}};
    if (gate) line["wall_s"]["memory_wait"] = wait_s;
  }
  return line;
}

// ---- DIR/points.jsonl --------------------------------------------------------------------------------------

PointsFile::PointsFile(const std::filesystem::path& dir, std::string study_hash, std::int64_t points, bool read_only)
    : path_(dir / "points.jsonl"), study_(std::move(study_hash)), points_(points), read_only_(read_only) {
  // (O_NONBLOCK: opened for reading alone, a FIFO waits for a writer; a regular file ignores it)
  fd_ = read_only ? ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)
                  : ::open(path_.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0 && read_only && errno == ENOENT) return;  // (no point written yet: none to read)
  if (fd_ < 0) throw InputError(fmt::format("{}: cannot open ({})", path_.string(), std::strerror(errno)));
  // (a device or a pipe in its place: /dev/zero was read until the memory ran out, a FIFO failed to seek)
  if (!regular_file(fd_)) {
    ::close(fd_);
    throw InputError(fmt::format("{}: is not a file (a device or a pipe): not a study's points", path_.string()));
  }
}

PointsFile::~PointsFile() {
  if (fd_ >= 0) ::close(fd_);
}

void PointsFile::refresh() {
  if (fd_ < 0) return;
  FileLock lock(fd_);
  refresh_locked();
}

void PointsFile::refresh_locked() {
  const off_t end = ::lseek(fd_, 0, SEEK_END);
  if (end < 0) throw std::runtime_error(fmt::format("{}: lseek: {}", path_.string(), std::strerror(errno)));
  if (end < offset_) throw InputError(fmt::format("{}: the file shrank while the study ran", path_.string()));
  const std::string buf = read_from(fd_, off_t(offset_), path_.string());  // (appends are made under the lock)
  std::size_t pos = 0;
  while (pos < buf.size()) {
    const std::size_t nl = buf.find('\n', pos);
    ojson j;
    bool whole = nl != std::string::npos;
    if (whole) {
      try {
        j = ojson::parse(buf.substr(pos, nl - pos));
      } catch (const ojson::exception&) {
        whole = false;
      }
    }
    if (!whole) {
      // Only the last line may be cut short (a writer killed mid-line): cut it off; anything else is damage.
      if (nl != std::string::npos && nl + 1 < buf.size())
        throw InputError(fmt::format("{}: byte {}: a line that is not JSON before the last line; the file is damaged",
                                     path_.string(), offset_ + std::int64_t(pos)));
      if (read_only_) break;  // (a reader leaves it to the next run, which cuts it off)
      if (::ftruncate(fd_, off_t(offset_ + std::int64_t(pos))) != 0)
        throw std::runtime_error(fmt::format("{}: truncate: {}", path_.string(), std::strerror(errno)));
      break;
    }
    if (!j.is_object() || !j.contains("study") || !j.contains("index") || !j["index"].is_number_integer())
      throw InputError(fmt::format("{}: byte {}: not a point line", path_.string(), offset_ + std::int64_t(pos)));
    if (const std::string k = hw::repeated_key<ojson>(buf.substr(pos, nl - pos)); !k.empty())
      throw InputError(fmt::format("{}: byte {}: key '{}' is given twice in one line (edited?)", path_.string(),
                                   offset_ + std::int64_t(pos), k));
    if (j["study"] != study_)
      throw InputError(fmt::format("{}: holds points of study {}, not {}; never mixed (use another --out)", path_.string(),
                                   j["study"].dump(), study_));
    const std::int64_t i = j["index"].get<std::int64_t>();
    if (i < 0 || i >= points_)
      throw InputError(fmt::format("{}: point {} is outside the study's {} points", path_.string(), i, points_));
    if (done_.insert(i).second && j.value("status", std::string()) != "ok") ++failed_;
    pos = nl + 1;
  }
  offset_ += std::int64_t(pos);
}

void PointsFile::append(const ojson& line) {
  {
    FileLock lock(fd_);
    refresh_locked();
    if (done(line["index"].get<std::int64_t>())) return;
    if (const int e = write_all(fd_, line.dump() + "\n"))  // (a line cut short is cut off by the next run)
      throw InputError(fmt::format("{}: writing point {} failed ({}); the points before it are kept: run the same "
                                   "command again to go on", path_.string(), line["index"].get<std::int64_t>(),
                                   std::strerror(e)));
    refresh_locked();
  }
  // Other processes see the line as soon as it is written (the lock orders the writes); the fsync is for a crash
  // of the machine only, so it waits outside the lock: workers of cheap points no longer queue behind each
  // other's disk flushes.
  if (::fsync(fd_) != 0)
    throw InputError(fmt::format("{}: writing point {} failed at its flush to disk ({}); run the same command again to "
                                 "go on", path_.string(), line["index"].get<std::int64_t>(), std::strerror(errno)));
}

void check_point_line(const ojson& p, const Study& study, std::int64_t index, const std::string& where, Resolver* resolver) {
  auto bad = [&](const std::string& what) {
    throw InputError(fmt::format("{}: point {} {} (edited?)", where, index, what));
  };
  const std::string status = p.contains("status") && p["status"].is_string() ? p["status"].get<std::string>() : "";
  if (status != "ok" && status != "failed") bad(fmt::format("has status {} (a run writes ok or failed)", p.value("status", ojson()).dump()));
  const ojson settings = study.settings(index);
  if (!p.contains("hash") || p["hash"] != hash_text(settings.dump()))
    bad("does not hold the hash of the study's settings at its index");
  if (!p.contains("settings") || p["settings"] != settings) bad("does not hold the study's settings at its index");
  if (p.contains("repair") && !(p["repair"].is_object() && p["repair"].contains("complete") && p["repair"]["complete"].is_boolean()))
    bad("holds a repair without a true or false 'complete'");
  for (const char* k : {"usable_tiles", "extra_hops", "tiles_used"})
    if (p.contains(k) && !(p[k].is_number_integer() && p[k].get<std::int64_t>() >= 0))
      bad(fmt::format("holds {} {}, no count", k, p[k].dump()));
  if (p.contains("repair") && p["repair"].is_object()) {
    const ojson& r = p["repair"];
    for (const char* k : {"defects", "failed_tiles", "extra_hops", "links_without_path"})
      if (r.contains(k) && !(r[k].is_number_integer() && r[k].get<std::int64_t>() >= 0))
        bad(fmt::format("holds repair.{} {}, no count", k, r[k].dump()));
    if (r.contains("extra_hops") && p.contains("extra_hops") && r["extra_hops"] != p["extra_hops"])
      bad(fmt::format("holds extra_hops {} where its repair says {}", p["extra_hops"].dump(), r["extra_hops"].dump()));
  }
  if (status == "ok") {
    if (!(p.contains("latency_cycles") && p["latency_cycles"].is_number_integer() && p["latency_cycles"].get<std::int64_t>() > 0))
      bad("is ok but holds no whole latency in cycles a step could have");
    if (!(p.contains("latency_us") && p["latency_us"].is_number() && std::isfinite(p["latency_us"].get<double>()) &&
          p["latency_us"].get<double>() > 0))
      bad("is ok but holds no latency a step could have");
    // The µs are the cycles at the wafer's clock: the point's, when its wafer can be read (resolver), and one a
    // wafer file may give in any case (hw::wafer_params' range of clock_ghz).
    const double ghz = double(p["latency_cycles"].get<std::int64_t>()) / p["latency_us"].get<double>() / 1e3;
    if (const std::optional<double> clock = resolver ? resolver->clock_ghz(settings) : std::nullopt;
        clock && std::abs(p["latency_us"].get<double>() - double(p["latency_cycles"].get<std::int64_t>()) / (*clock * 1e3)) >
                     1e-9 * p["latency_us"].get<double>())
      bad(fmt::format("holds latency_us {} for latency_cycles {}, not their time at its wafer's {} GHz",
                      p["latency_us"].dump(), p["latency_cycles"].dump(), *clock));
    if (const hw::ParamInfo& pi = *hw::wafer_param("clock_ghz"); !(ghz >= pi.min * (1 - 1e-9) && ghz <= pi.max * (1 + 1e-9)))
      bad(fmt::format("holds latency_us {} for latency_cycles {}: a clock of {} GHz, outside {} to {}", p["latency_us"].dump(),
                      p["latency_cycles"].dump(), ghz, pi.min, pi.max));
    // Its causes: whole cycles that sum to the latency (as decode's breakdown).
    const ojson* bd = p.contains("breakdown_cycles") && p["breakdown_cycles"].is_object() ? &p["breakdown_cycles"] : nullptr;
    if (!bd || bd->empty()) bad("is ok but holds no breakdown_cycles");
    std::uint64_t sum = 0;
    for (auto it = bd->begin(); it != bd->end(); ++it) {
      // (each at most the latency, so the sum cannot wrap: 2^63 + c and 2^63 + c' summed to the latency)
      if (!it.value().is_number_unsigned() || it.value().get<std::uint64_t>() > p["latency_cycles"].get<std::uint64_t>())
        bad(fmt::format("holds breakdown_cycles.{} {}, no count of cycles within its latency", it.key(), it.value().dump()));
      sum += it.value().get<std::uint64_t>();
    }
    if (sum != p["latency_cycles"].get<std::uint64_t>())
      bad(fmt::format("holds breakdown_cycles summing to {}, not its latency_cycles {}", sum, p["latency_cycles"].dump()));
    if (p.contains("failure")) bad("is ok but holds a failure");
  } else if (!(p.contains("failure") && p["failure"].is_object() && p["failure"].contains("stage") &&
               (p["failure"]["stage"] == "map" || p["failure"]["stage"] == "emulate") && p["failure"].contains("reason") &&
               p["failure"]["reason"].is_string() && !p["failure"]["reason"].get<std::string>().empty())) {
    bad("failed but holds no failure {stage: map or emulate, reason}");
  }
}

std::map<std::int64_t, ojson> PointsFile::read_all() {
  if (fd_ < 0) return {};
  FileLock lock(fd_);
  refresh_locked();
  std::map<std::int64_t, ojson> out;
  std::ifstream in(path_, std::ios::binary);
  std::string l;
  std::int64_t pos = 0;
  while (pos < offset_ && std::getline(in, l)) {
    pos += std::int64_t(l.size()) + 1;
    ojson j = ojson::parse(l);
    out.emplace(j["index"].get<std::int64_t>(), std::move(j));
  }
  return out;
}

// ---- DIR ---------------------------------------------------------------------------------------------------

std::vector<std::pair<std::string, std::filesystem::path>> input_files(const Study& study) {
  std::vector<std::pair<std::string, std::filesystem::path>> out;
  auto note = [&](const std::string& key, const ojson& v) {
    if ((key != "model" && key != "wafer") || !v.is_string()) return;
    const std::string arg = v.get<std::string>();
    std::filesystem::path file;
    if (hw::names_file(arg)) file = std::filesystem::path(arg).is_relative() ? study.dir / arg : std::filesystem::path(arg);
    else if (key == "model") file = mapper::model_file(arg);  // (a shipped model's config; a wafer preset is no file)
    if (file.empty() || std::any_of(out.begin(), out.end(), [&](const auto& f) { return f.first == key + " " + arg; }))
      return;
    out.push_back({key + " " + arg, file});
  };
  bool model = false;  // (a study that names none runs the default model, whose config is as much an input)
  for (const auto& [k, v] : study.fixed) note(k, v), model = model || k == "model";
  for (const auto& [k, vs] : study.axes)
    for (const ojson& v : vs) {
      if (v.is_object() && Study::joint(k))
        for (auto it = v.begin(); it != v.end(); ++it) note(it.key(), it.value()), model = model || it.key() == "model";
      else
        note(k, v), model = model || k == "model";
    }
  if (!model) note("model", ojson(std::string(kDefaultModel)));
  return out;
}

ojson input_digests(const Study& study) {
  ojson out = ojson::object();
  for (const auto& [key, file] : input_files(study)) try {
      out[key] = hash_text(hw::read_input_file(file, key.starts_with("model") ? "model config" : "wafer file"));
    } catch (const InputError&) {  // (the point that names it fails, saying why)
    }
  return out;
}

namespace {
// The temporary files (write_temp) of runs killed before their rename: DIR/NAME.tmp.PID of a study's own files
// (spec.json, kSummaryFiles) whose process no longer exists (a live one may be writing it).
void remove_stale_temps(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::size_t dot = name.rfind(".tmp.");
    if (dot == std::string::npos) continue;
    const std::string file = name.substr(0, dot), digits = name.substr(dot + 5);
    const bool ours = file == "spec.json" || std::find(std::begin(kSummaryFiles), std::end(kSummaryFiles), file) != std::end(kSummaryFiles);
    if (!ours || digits.empty() ||
        digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos)
      continue;
    const pid_t pid = pid_t(std::stol(digits));
    if (pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH) fs::remove(it->path(), ec), ec.clear();
  }
}
}  // namespace

void prepare_dir(const std::filesystem::path& dir, const Study& study) {
  namespace fs = std::filesystem;
  const fs::path spec = dir / "spec.json";
  std::error_code ec;
  remove_stale_temps(dir);
  auto same_study = [&] {
    const Study old = read_dir_study(dir);
    if (old.hash != study.hash)
      throw InputError(fmt::format("{}: holds study {} ({}), not this one ({}: {}); never mixed (use another --out)",
                                   dir.string(), old.hash, old.path, study.path, study.hash));
    // The files the study names, as they were when its first points ran: a model config edited since would mix
    // points of two models in one study.
    check_inputs(dir, study, "never mixed (restore the file, or use another --out)");
  };
  if (fs::exists(spec, ec)) return same_study();
  // (a rank of the same study may have written spec.json and its first points since the test above: the
  // spec is always in place before any point, so points without it now are another study's)
  if (fs::exists(dir / "points.jsonl", ec)) {
    if (fs::exists(spec, ec)) return same_study();
    throw InputError(fmt::format("{}: has points.jsonl but no spec.json: points of an unknown study (use another --out)",
                                 dir.string()));
  }
  // Ranks of one study start together: another may create the directory between the test and the
  // creation, which is as good as creating it.
  if (!fs::create_directory(dir, ec) && !fs::is_directory(dir))
    throw InputError(fmt::format("{}: cannot create the study directory ({})", dir.string(), ec ? ec.message() : "exists"));
  ojson out;
  out["schema"] = kSchema;
  out["study"] = study.hash;
  out["source"] = study.path;
  out["points"] = study.points();
  out["inputs"] = input_digests(study);  // (hash_text of each model and wafer file the study names)
  out["spec"] = study.spec;
  // Created once, by a hard link that fails where the file exists: two runs started at once on a new DIR, each
  // having found no spec.json, would otherwise each put theirs in place, the later over the earlier's points. The
  // one that finds it there compares, as a run started later does. (A file system without hard links: renamed.)
  const fs::path tmp = write_temp(spec, out.dump(2) + "\n");
  if (::link(tmp.c_str(), spec.c_str()) == 0) {
    fs::remove(tmp, ec);
    return;
  }
  const int e = errno;
  if (e == EEXIST) {
    fs::remove(tmp, ec);
    return same_study();
  }
  fs::rename(tmp, spec, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw InputError(fmt::format("{}: cannot write output file ({})", spec.string(), std::strerror(e)));
  }
}

std::filesystem::path write_temp(const std::filesystem::path& path, const std::string& text) {
  hw::refuse_overwriting_input(path);
  std::filesystem::path tmp = path;
  tmp += fmt::format(".tmp.{}", ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw InputError(fmt::format("{}: cannot write output file ({})", path.string(), std::strerror(errno)));
  int e = write_all(fd, text);
  if (::close(fd) != 0 && e == 0) e = errno;
  if (e != 0) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);  // (no PATH.tmp.PID left behind)
    throw InputError(fmt::format("{}: cannot write output file ({})", path.string(), std::strerror(e)));
  }
  return tmp;
}

void check_inputs(const std::filesystem::path& dir, const Study& study, const std::string& remedy) {
  const std::filesystem::path spec = dir / "spec.json";
  const ojson was = hw::parse_input_json<ojson>(hw::read_input_file(spec, "study directory's spec"), spec.string());
  if (!was.contains("inputs") || !was["inputs"].is_object()) return;  // (a folder of an older build has none)
  const ojson now = input_digests(study);
  for (auto it = was["inputs"].begin(); it != was["inputs"].end(); ++it)
    if (now.contains(it.key()) && now[it.key()] != it.value())
      throw InputError(fmt::format("{}: its points ran with {} of other content (hash {}, now {}); {}", dir.string(),
                                   it.key(), it.value().dump(), now[it.key()].dump(), remedy));
}

void write_shared(const std::filesystem::path& path, const std::string& text) {
  const std::filesystem::path tmp = write_temp(path, text);
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code rm;
    std::filesystem::remove(tmp, rm);
    throw InputError(fmt::format("{}: cannot write output file ({})", path.string(), ec.message()));
  }
}

Study read_dir_study(const std::filesystem::path& dir) {
  const std::filesystem::path f = dir / "spec.json";
  const ojson j =
      hw::parse_input_json<ojson>(hw::read_input_file(f, "study directory's spec (is it a sweep --out directory?)"), f.string());
  if (!j.is_object() || !j.contains("schema") || j["schema"] != kSchema || !j.contains("spec") || !j.contains("study"))
    throw InputError(fmt::format("{}: not a spec.json of this build's studies (schema {})", f.string(), kSchema));
  Study st = parse_study(j["spec"], f.string(), dir);
  if (st.hash != j["study"]) throw InputError(fmt::format("{}: its spec does not match its hash (edited?)", f.string()));
  if (j.contains("points") && j["points"] != st.points())
    throw InputError(fmt::format("{}: says {} points where its spec has {} (edited?)", f.string(), j["points"].dump(),
                                 st.points()));
  st.path = j.value("source", f.string());
  // (the study file's folder, where its relative model and wafer paths start, as load_study has it)
  if (j.contains("source")) st.dir = std::filesystem::path(st.path).parent_path();
  return st;
}

// ---- statistics --------------------------------------------------------------------------------------------

double percentile(const std::vector<double>& x, double p) {
  if (x.empty()) return 0;
  const double h = p / 100.0 * double(x.size() - 1);
  const auto lo = std::size_t(std::floor(h));
  if (lo + 1 >= x.size()) return x.back();
  return x[lo] + (h - double(lo)) * (x[lo + 1] - x[lo]);
}

std::string reason_class(const std::string& reason) {
  std::string out;
  for (std::size_t i = 0; i < reason.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(reason[i]))) {
      auto digit = [&](std::size_t k) { return k < reason.size() && std::isdigit(static_cast<unsigned char>(reason[k])); };
      while (digit(i + 1) || (i + 2 < reason.size() && reason[i + 1] == '.' && digit(i + 2))) ++i;
      out += '#';
    } else {
      out += reason[i];
    }
  }
  return out;
}

}  // namespace wafer::apps::sweep
