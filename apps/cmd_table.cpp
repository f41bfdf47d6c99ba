// wafer-emu table: latency tables for serving simulators (docs/tables.md). Every decode point (context x
// batch) and every prefill point (prompt tokens x context, one sequence) is mapped and emulated as `decode`
// would; the per-operator critical-path breakdown of each step becomes one tidy CSV and the exporters'
// files (LLMServingSim's perf bundle, Vidur's profiling CSVs), written into a temporary folder renamed to
// --out at the end; the points done meanwhile are kept in a journal beside it, for a stopped run to resume.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "apps/cli.h"
#include "apps/decode_point.h"
#include "apps/journal.h"
#include "apps/point_cache.h"
#include "apps/sweep.h"
#include "apps/table_jobs.h"
#include "hw/error.h"
#include "hw/input_files.h"
#include "hw/wafer_spec.h"
#include "mapper/mapper.h"
#include "mapper/model_config.h"
#include "mapper/placement.h"
#include "noc/mesh.h"
#include "noc/routing/fabric.h"
#include "sim/simulator.h"

namespace wafer::apps {
namespace {

namespace fs = std::filesystem;
using hw::Cycle;

// "128,512,2048": positive, strictly increasing integers.
std::vector<std::int64_t> parse_list(const std::string& opt, const std::string& s) {
  std::vector<std::int64_t> out;
  if (s.find_first_not_of(", ") == std::string::npos)
    throw hw::InputError(fmt::format("--{} is empty: give comma-separated values", opt));
  std::size_t i = 0;
  while (i <= s.size()) {
    const std::size_t j = std::min(s.find(',', i), s.size());
    const std::string item = s.substr(i, j - i);
    std::size_t used = 0;
    long long v = 0;
    bool range = false;
    try {
      v = std::stoll(item, &used);
    } catch (const std::out_of_range&) {
      range = true;
    } catch (...) {
      used = 0;
    }
    if (range)
      throw hw::InputError(fmt::format("--{} '{}': {} is out of range (a 64-bit integer)", opt, s, item));
    if (item.empty() || used != item.size())
      throw hw::InputError(fmt::format("--{} '{}': '{}' is not an integer", opt, s, item));
    if (v < 1) throw hw::InputError(fmt::format("--{} '{}': {} must be at least 1", opt, s, v));
    if (!out.empty() && v <= out.back())
      throw hw::InputError(fmt::format("--{} '{}': values must be sorted increasing and distinct", opt, s));
    out.push_back(v);
    i = j + 1;
  }
  return out;
}

// A step's operators as the table lists them: apps::op_cycles but the names of the single-operator test
// kernels.
std::vector<std::pair<std::string, Cycle>> table_ops(std::vector<std::pair<std::string, Cycle>> ops) {
  std::erase_if(ops, [](const auto& o) { return o.first == "gemv" || o.first == "rms_norm"; });
  return ops;
}

// Decoder-layer operators (their step time is over every layer; the exporters give one layer's).
bool layer_op(const std::string& op) {
  static const std::set<std::string> ops{"layernorm", "qkv_proj", "rotary_emb", "attention", "o_proj",
                                         "moe_router", "gate_up_proj", "act_fn", "down_proj"};
  return ops.count(op) > 0;
}

struct Point {
  std::string phase;  // decode | prefill
  std::int64_t tokens = 0, context = 0, batch = 0;  // tokens processed in the step (decode: batch)
  std::int64_t chunk = 0, chunks = 1;
  Cycle latency = 0;
  std::vector<std::pair<std::string, Cycle>> ops;  // critical-path cycles per operator, over the step
  Cycle op(const std::string& name) const {
    for (const auto& [n, c] : ops)
      if (n == name) return c;
    return 0;
  }
};

// A time in the CSVs: the shortest digits that read back as the same double (6 significant digits lost a few
// microseconds of a slow clock's steps), and never in exponent form, which tools reading decimals refuse.
std::string num(double v) {
  std::string s = fmt::format("{}", v);
  const std::size_t e = s.find('e');
  if (e == std::string::npos) return s;
  const std::size_t dot = s.find('.');
  const int decimals = (dot == std::string::npos || dot > e ? 0 : int(e - dot - 1)) - std::stoi(s.substr(e + 1));
  return fmt::format("{:.{}f}", v, std::max(0, decimals));
}

// A YAML double-quoted scalar: the names in meta.yaml come from a wafer file's `name` and the model's path, which may
// hold ': ' or ' #' (plain, they made the file no YAML, or cut the name short).
std::string yaml_string(const std::string& v) {
  std::string out = "\"";
  for (const char c : v) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    else out += c;
  }
  return out + "\"";
}

class Writer {
 public:
  Writer(const fs::path& p) : path_(p), f_((hw::refuse_overwriting_input(p), p)) {
    if (!f_) throw hw::InputError(fmt::format("--out: cannot write {}", p.string()));
  }
  std::ofstream& operator*() { return f_; }
  ~Writer() = default;
  void close() {
    f_.close();
    if (!f_) throw hw::InputError(fmt::format("--out: writing {} failed", path_.string()));
  }

 private:
  fs::path path_;
  std::ofstream f_;
};

// A point done (`why` empty) or not mapped (`why` the mapper's reason), in the table's journal (apps::Journal,
// `.<out>.partial.jsonl`: a stopped run resumes from it; the files of a resumed run are those of a run in one go,
// test cli.table_resume).
void record(Journal& journal, const Point& p, const std::string& why) {
  nlohmann::json j{{"phase", p.phase}, {"tokens", p.tokens}, {"context", p.context}, {"batch", p.batch}};
  if (!why.empty()) {
    j["not_mapped"] = why;
  } else {
    j["chunk"] = p.chunk, j["chunks"] = p.chunks, j["latency"] = p.latency;
    auto& ops = j["ops"] = nlohmann::json::array();
    for (const auto& [name, c] : p.ops) ops.push_back({name, c});
  }
  journal.append(j);
}

// skipped.txt's line for a point the mapper refused, `why`.
std::string not_mapped(const Point& p, const std::string& why) {
  return fmt::format("{} tokens {} context {} batch {}: {}", p.phase, p.tokens, p.context, p.batch, why);
}

// A point of the grid as an earlier run recorded it (Journal::kept), with why it was not mapped (else empty).
struct Resumed {
  Point p;
  std::string why;
};

// The run's figures (--jobs N: steps, mappings and meshes summed over the workers; chunks_reused counted by
// the parent as one process would have counted them).
struct Figures {
  std::int64_t steps_emulated = 0, chunks_reused = 0, mappings_reused = 0, mappings_built = 0, meshes_reused = 0;
};

// --jobs N (N > 1): the points' steps on N worker processes (apps/table_jobs.h). The parent plans every point
// as run_prefill would (the chunk size by the same search over mappings, here in the parent, with the workers
// already busy on the steps known so far), hands out each distinct step once, in the order of the points
// (the points complete about in grid order; the last are the many small chunks of the longest prompt at
// the largest context, which keep the workers evenly busy to the end), and assembles
// each point from its steps' latencies and operator cycles in the order run_prefill adds them: the same
// points, the same skipped reasons, the same figures in the files.
Figures run_jobs(int jobs, const DecodePoint& dp, bool cache_on, std::vector<Point>& points, std::vector<Point>& done,
                 std::vector<std::string>& skipped, const hw::WaferSpec& spec,
                 std::chrono::steady_clock::time_point t0, const std::map<std::size_t, Resumed>& resumed, Journal& journal) {
  struct Plan {
    std::string error;  // the plan's refusal (the chunk search), else the first refused step's
    std::vector<StepKey> steps;
    std::size_t waiting = 0;  // steps not answered yet
  };
  std::vector<Plan> plans(points.size());
  std::map<StepKey, StepOutcome> outcomes;
  std::map<StepKey, std::vector<std::size_t>> waiting;  // step -> points waiting for it
  std::size_t finished = 0;
  // (set below, where the workers and the fabric are) Point i's chunk of step k was refused for size: as
  // run_prefill does, the largest count below k's tokens that maps at k's context becomes the chunk size, the
  // prompt is chunked again and the new steps handed out; false when none maps (the refusal stands), or when
  // the search met another refusal (then in plans[i].error).
  std::function<bool(std::size_t, const StepKey&)> replan;
  // A point all of whose steps are in: its figures as run_prefill sums its chunks (add_step), then progress.
  std::function<void(std::size_t)> complete = [&](std::size_t i) {
    Point& p = points[i];
    Plan& plan = plans[i];
    std::vector<std::pair<std::string, Cycle>> ops;
    if (plan.error.empty()) {
      p.chunks = std::int64_t(plan.steps.size());
      p.latency = 0;  // (a plan chunked again is summed again)
      for (const StepKey& k : plan.steps) {
        const StepOutcome& o = outcomes.at(k);
        if (!o.error.empty()) {
          if (refused_for_size(o.error) && replan(i, k)) return;
          if (plan.error.empty()) plan.error = o.error;
          break;
        }
        p.latency += o.latency;
        for (const auto& [name, c] : o.ops) {
          auto it = std::find_if(ops.begin(), ops.end(), [&](const auto& x) { return x.first == name; });
          if (it == ops.end()) ops.push_back({name, c});
          else it->second += c;
        }
      }
    }
    ++finished;
    if (plan.error.empty()) p.ops = table_ops(std::move(ops));
    record(journal, p, plan.error);
    const double all = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!plan.error.empty()) {
      fmt::print(stderr, "table: [{}/{}] {} tokens {} context {} batch {}: not mapped: {}\n", finished, points.size(),
                 p.phase, p.tokens, p.context, p.batch, plan.error);
      return;
    }
    fmt::print(stderr, "table: [{}/{}] {} tokens {} context {} batch {}: {:.1f} us{} ({:.0f} s in all)\n", finished,
               points.size(), p.phase, p.tokens, p.context, p.batch, spec.cycles_to_us(double(p.latency)),
               p.chunks > 1 ? fmt::format(" in {} chunks of {}", p.chunks, p.chunk) : std::string(), all);
  };
  auto on_done = [&](const StepKey& k, StepOutcome o) {
    outcomes[k] = std::move(o);
    for (std::size_t i : waiting[k])
      if (--plans[i].waiting == 0) complete(i);
    waiting.erase(k);
  };

  // Forked before anything SystemC exists here; no more workers than points left.
  StepWorkers workers(int(std::clamp<std::size_t>(points.size() - resumed.size(), 1, std::size_t(jobs))), dp, cache_on);
  const noc::Fabric fabric = noc::Fabric::perfect(spec.logical());
  // Does a step of t tokens at context C, batch B map? (Each asked once; the workers kept busy meanwhile.)
  std::map<StepKey, std::string> refusals;
  std::set<StepKey> maps_ok;
  DecodePoint q = dp, m = dp;  // the point planned, the step mapped
  // (poll: serve the workers meanwhile; not from inside a completion, which polling could re-enter)
  auto map_or_throw = [&](std::int64_t t, std::int64_t C, std::int64_t B, bool poll = true) {
    const StepKey k{t, C, B};
    if (maps_ok.count(k)) return;
    if (auto it = refusals.find(k); it != refusals.end()) throw hw::InputError(it->second);
    if (poll) workers.poll(0, on_done);
    m.options.tokens = t, m.options.context = C, m.options.batch = B;
    try {
      map_point(m, fabric);
      maps_ok.insert(k);
    } catch (const hw::InputError& e) {
      refusals[k] = e.what();
      throw;
    }
  };
  PrefillCache chunk_sizes;  // only its chunk sizes: (context, batch) -> largest chunk, as run_prefill keeps them
  std::set<StepKey> submitted;
  // Hands point i's steps out: those not answered yet are waited for (and submitted once).
  auto hand_out = [&](std::size_t i) {
    Plan& plan = plans[i];
    for (const StepKey& k : plan.steps) {
      if (outcomes.count(k)) continue;
      ++plan.waiting;
      waiting[k].push_back(i);
      if (submitted.insert(k).second) workers.submit(k);
    }
  };
  replan = [&](std::size_t i, const StepKey& k) {
    const auto [n, end, B] = k;
    if (n == 1) return false;
    std::int64_t lo = 0;
    try {
      lo = largest_that_maps(0, n, [&](std::int64_t t) { return maps_within_size([&] { map_or_throw(t, end, B, false); }); });
    } catch (const hw::InputError& e) {
      plans[i].error = e.what();
      return false;
    }
    if (lo == 0) return false;
    Point& p = points[i];
    p.chunk = lo;
    plans[i].steps.clear();
    for (const PrefillChunk& ch : prefill_chunks(p.phase == "decode" ? 1 : p.tokens, p.context, lo))
      plans[i].steps.push_back(StepKey{ch.tokens, ch.context, B});
    hand_out(i);
    if (plans[i].waiting == 0) complete(i);
    return true;
  };
  for (std::size_t i = 0; i < points.size(); ++i) {
    Point& p = points[i];
    Plan& plan = plans[i];
    if (auto it = resumed.find(i); it != resumed.end()) {  // (done by an earlier run: its steps are not asked for)
      p = it->second.p, plan.error = it->second.why;
      ++finished;
      continue;
    }
    const std::int64_t T = p.phase == "decode" ? 1 : p.tokens, C = p.context, B = p.batch;
    q.options.tokens = T, q.options.context = C, q.options.batch = B;
    try {
      // One token: the chunk is the step itself, and its refusal is the step's (a worker maps it).
      p.chunk = T == 1 ? 1 : prefill_chunk_size(q, 0, &chunk_sizes, [&](std::int64_t t) { map_or_throw(t, C, B); });
    } catch (const WorkerFailure&) {
      throw;  // (a worker that died while the chunk search kept the others busy: not this point's refusal)
    } catch (const hw::InputError& e) {
      plan.error = e.what();
      complete(i);
      continue;
    }
    for (const PrefillChunk& ch : prefill_chunks(T, C, p.chunk)) plan.steps.push_back(StepKey{ch.tokens, ch.context, B});
    hand_out(i);
    if (plan.waiting == 0) complete(i);
  }
  while (workers.busy()) workers.poll(-1, on_done);
  const StepWorkers::Stats st = workers.finish();

  // The points in grid order, and the chunks one process would have reused (run_prefill's PrefillCache: a
  // step emulated for an earlier point, up to a point's first refused chunk).
  Figures fig;
  std::set<StepKey> emulated;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const Point& p = points[i];
    for (const StepKey& k : plans[i].steps) {
      if (emulated.count(k)) {
        ++fig.chunks_reused;
      } else if (outcomes.at(k).error.empty()) {
        emulated.insert(k);
      } else {
        break;
      }
    }
    if (plans[i].error.empty()) done.push_back(p);
    else skipped.push_back(not_mapped(p, plans[i].error));
  }
  fig.steps_emulated = st.steps_emulated;
  fig.mappings_reused = st.mappings_reused, fig.mappings_built = st.mappings_built + std::int64_t(maps_ok.size() + refusals.size());
  fig.meshes_reused = st.meshes_reused;
  return fig;
}

// What the table's figures depend on, for its journal (Journal): the wafer's every parameter, the model file's
// bytes (hashed), the grid, the placement, the weight bits and the fidelity.
std::string table_settings(const hw::WaferSpec& spec, const mapper::ModelConfig& model, const std::vector<std::int64_t>& contexts,
                           const std::vector<std::int64_t>& batches, const std::vector<std::int64_t>& prompts,
                           const mapper::MapOptions& base, noc::Fidelity fidelity) {
  nlohmann::ordered_json j;
  j["journal"] = 1;
  j["wafer"] = wafer_settings(spec);
  j["model"] = {{"name", model.name}, {"file", hash_file(model.source)}};
  j["contexts"] = contexts, j["batches"] = batches, j["prefill_tokens"] = prompts;
  j["placement"] = base.placement;
  j["weight_bits"] = base.weight_bits;
  // (a journal of a build before these existed holds neither: the defaults leave its settings as they were)
  if (base.weights != mapper::WeightMode::Resident) j["weights"] = std::string(mapper::to_string(base.weights));
  if (base.wafers != 1) j["wafers"] = base.wafers;
  if (base.kv_capacity != 0) j["kv_capacity"] = base.kv_capacity;
  j["fidelity"] = std::string(noc::to_string(fidelity));
  return j.dump();
}

int run_table(const std::vector<std::string>& args) {
  po::options_description opts("table options");
  opts.add_options()
      ("wafer", po::value<std::string>()->default_value("wse3")->value_name("PRESET|FILE"), "the wafer")
      ("model", po::value<std::string>()->default_value("llama-3.1-8b")->value_name("NAME|FILE"), "the model")
      ("contexts", po::value<std::string>()->default_value("128,512,2048,8192")->value_name("LIST"),
       "decode contexts (KV-cache lengths), increasing")
      ("batches", po::value<std::string>()->default_value("1,2,4,8,16")->value_name("LIST"), "decode batch sizes, increasing")
      ("prefill-tokens", po::value<std::string>()->default_value("16,128,512,2048")->value_name("LIST"),
       "prompt lengths (one sequence; also as chunks ending at each larger context), increasing")
      ("placement", po::value<std::string>()->default_value("layer-bands")->value_name("NAME"), "placement strategy")
      ("weight-bits", po::value<int>()->default_value(16)->value_name("16|8"), "weight precision")
      ("weights", po::value<std::string>()->default_value("resident")->value_name("resident|stream"),
       "weights held on the wafer, or the stages that do not fit streamed through MemoryX (as decode)")
      ("wafers", po::value<int>()->default_value(1)->value_name("N"), "wafers in a pipeline (as decode)")
      ("fidelity", po::value<std::string>()->default_value("approx")->value_name("approx|cycle"), "mesh timing model")
      ("kv-capacity", po::value<std::string>()->value_name("N|max"),
       "map every point for one deployment: a KV cache reserved for N positions over all sequences (max: the grid's "
       "largest, batch x context), so every point runs on the same placement (default: each point mapped for its own)")
      ("out", po::value<std::string>()->value_name("DIR"), "output folder (created; must not exist or be empty)")
      ("jobs", po::value<std::int64_t>()->default_value(1)->value_name("N"),
       "worker processes sharing the grid's steps (decode steps, prefill chunks); the files are the same")
      ("no-cache", "build every point from scratch (no mapping, mesh or memory kept from earlier points); the files are the same");
  po::variables_map vm;
  if (!parse(args, opts, "table", "--wafer W --model M --contexts L --batches L --prefill-tokens L --out DIR", vm,
             false))
    return 0;
  const auto t0 = std::chrono::steady_clock::now();
  if (!vm.count("out")) throw hw::InputError("--out DIR is required");
  const std::int64_t jobs = vm["jobs"].as<std::int64_t>();
  if (jobs < 1 || jobs > 1024) throw hw::InputError(fmt::format("--jobs {} is outside [1, 1024]", jobs));
  const mapper::WeightMode weights = mapper::parse_weight_mode(vm["weights"].as<std::string>());
  const int wafers = vm["wafers"].as<int>();
  if (wafers < 1 || wafers > 64) throw hw::InputError(fmt::format("--wafers {}: use 1 to 64", wafers));
  const std::vector<std::int64_t> contexts = parse_list("contexts", vm["contexts"].as<std::string>());
  const std::vector<std::int64_t> batches = parse_list("batches", vm["batches"].as<std::string>());
  const std::vector<std::int64_t> prompts = parse_list("prefill-tokens", vm["prefill-tokens"].as<std::string>());
  const hw::WaferSpec spec = hw::resolve_wafer(vm["wafer"].as<std::string>());
  const mapper::ModelConfig model = mapper::load_model(vm["model"].as<std::string>());
  const noc::Fidelity fidelity = noc::parse_fidelity(vm["fidelity"].as<std::string>());
  if (fidelity == noc::Fidelity::Cycle && (spec.logical_width > noc::kCycleMaxSide || spec.logical_height > noc::kCycleMaxSide))
    throw hw::InputError(fmt::format("--fidelity cycle handles meshes up to {0}x{0}; wafer '{1}' is {2}x{3}",
                                     noc::kCycleMaxSide, spec.name, spec.logical_width, spec.logical_height));
  if (model.max_position > 0) {
    if (contexts.back() > model.max_position)
      throw hw::InputError(fmt::format("--contexts: {} is beyond {}'s max_position_embeddings {}", contexts.back(),
                                       model.name, model.max_position));
    if (prompts.back() > model.max_position)
      throw hw::InputError(fmt::format("--prefill-tokens: {} is beyond {}'s max_position_embeddings {}", prompts.back(),
                                       model.name, model.max_position));
  }
  if (batches.back() > 65536) throw hw::InputError(fmt::format("--batches: {} is more than 65536 sequences", batches.back()));
  mapper::MapOptions base;
  base.placement = vm["placement"].as<std::string>();
  base.weight_bits = vm["weight-bits"].as<int>();
  if (base.weight_bits != 16 && base.weight_bits != 8)
    throw hw::InputError(fmt::format("--weight-bits {} must be 16 or 8", base.weight_bits));
  base.weights = weights;
  base.wafers = wafers;
  if (vm.count("kv-capacity")) {
    // The most any point holds: a decode point batch x context, a prompt (one sequence) its context.
    // (saturated: a context beyond the mapper's limit is its refusal, point by point)
    const std::int64_t decode_most =
        contexts.back() > (std::int64_t(1) << 46) ? std::int64_t(1) << 62 : batches.back() * contexts.back();
    const std::int64_t most = std::max(decode_most, std::max(contexts.back(), prompts.back()));
    const std::string given = vm["kv-capacity"].as<std::string>();
    if (given == "max") {
      base.kv_capacity = most;
      if (most > mapper::kMaxKvCapacity)
        throw hw::InputError(fmt::format("--kv-capacity max: the grid's largest step holds {} positions, beyond the 2^40 "
                                         "a KV cache may reserve",
                                         most));
    } else {
      if (given.find(',') != std::string::npos) throw hw::InputError(fmt::format("--kv-capacity {}: give one number, or max", given));
      base.kv_capacity = parse_list("kv-capacity", given).at(0);
      if (base.kv_capacity > mapper::kMaxKvCapacity)
        throw hw::InputError(fmt::format("--kv-capacity {}: must be between 1 and 2^40 positions", given));
      if (base.kv_capacity < most)
        throw hw::InputError(fmt::format(
            "--kv-capacity {} is fewer positions than the grid's largest step holds ({}): give at least that, or max",
            base.kv_capacity, most == decode_most
                                  ? fmt::format("{} = batch {} x context {}", most, batches.back(), contexts.back())
                                  : fmt::format("{}, a prompt's context", most)));
    }
  }
  if (base.placement == "auto") throw hw::InputError("--placement auto is not taken by table: name a placement");
  mapper::placement(base.placement);  // (an unknown name: one line now, not one per point)

  // The output folder: a temporary sibling, renamed at the end (no partial folder is ever left at --out).
  fs::path out = fs::path(vm["out"].as<std::string>());
  // ("tables/" names the folder "tables", "t/." and "t/.." the folders they lead to: the folder's parent holds the
  // temporary folder and the journal, which must not lie inside it)
  if (!out.has_filename() && out.has_parent_path()) out = out.parent_path();
  if (out.filename() == "." || out.filename() == "..") out = fs::weakly_canonical(fs::absolute(out));
  std::error_code ec;
  // A link to a folder: the folder it names (the rename at the end replaced the link with a folder of its own).
  if (fs::is_symlink(fs::symlink_status(out, ec))) {
    if (!fs::exists(out, ec)) throw hw::InputError(fmt::format("--out {}: a link to nothing", out.string()));
    out = fs::canonical(out, ec);
  }
  // (the journal beside --out is an output too: --json over it was written and broke the next run's resume)
  std::vector<NamedPath> outputs{{"--out (its journal)", Journal::beside(out).string()}};
  for (NamedPath& j : given_paths(vm, {"json"})) outputs.push_back(std::move(j));
  check_apart(outputs, given_paths(vm, {"model", "wafer"}), {{"--out", out.string()}});
  if (vm.count("json")) traces::check_writable(vm["json"].as<std::string>(), "--json");
  if (fs::exists(out, ec) && !(fs::is_directory(out, ec) && fs::is_empty(out, ec)))
    throw hw::InputError(fmt::format("--out {}: exists and is not an empty folder", out.string()));
  const fs::path parent = out.has_parent_path() ? out.parent_path() : fs::path(".");
  const fs::path tmp = parent / fmt::format(".{}.tmp-{}", out.filename().string(), ::getpid());
  fs::remove_all(tmp, ec);
  if (!fs::create_directories(tmp, ec) || ec)
    throw hw::InputError(fmt::format("--out {}: cannot create a folder in {} ({})", out.string(), parent.string(),
                                     ec ? ec.message() : "not created"));
  struct Cleanup {
    fs::path p;
    bool keep = false;
    ~Cleanup() {
      std::error_code e;
      if (!keep) fs::remove_all(p, e);
    }
  } cleanup{tmp};

  // The points: decode (context x batch), prefill (each prompt T at context T, and as a chunk ending at every
  // larger context), one sequence.
  std::vector<Point> points;
  auto add = [&](const char* phase, std::int64_t tokens, std::int64_t context, std::int64_t batch) {
    Point p;
    p.phase = phase, p.tokens = tokens, p.context = context, p.batch = batch;
    points.push_back(std::move(p));
  };
  for (std::int64_t c : contexts)
    for (std::int64_t b : batches) add("decode", b, c, b);
  for (std::int64_t t : prompts) {
    add("prefill", t, t, 1);
    for (std::int64_t c : contexts)
      if (c > t) add("prefill", t, c, 1);
  }

  // The points an earlier run of the same command did (Journal): taken from its journal, not emulated again.
  Journal journal(Journal::beside(out), table_settings(spec, model, contexts, batches, prompts, base, fidelity), "--out",
                  "table");
  {
    // (holding the journal, no other run writes this table: a temporary folder of another process is a stopped
    // run's, left because a killed process cleans up nothing)
    const std::string stale = fmt::format(".{}.tmp-", out.filename().string());
    std::error_code dir_ec;
    for (const auto& e : fs::directory_iterator(parent, dir_ec))
      if (e.path() != tmp && e.path().filename().string().rfind(stale, 0) == 0) fs::remove_all(e.path(), dir_ec);
  }
  std::map<std::size_t, Resumed> resumed;  // by grid index
  {
    std::map<std::tuple<std::string, std::int64_t, std::int64_t, std::int64_t>, std::size_t> index;
    for (std::size_t i = 0; i < points.size(); ++i)
      index[{points[i].phase, points[i].tokens, points[i].context, points[i].batch}] = i;
    // A record as record() writes it, else the reason, in words of this table's (not the JSON reader's): its point
    // of the grid, and either why it was not mapped or its chunks, latency and critical-path cycles per operator,
    // counts that sum to the latency (an edited one made table.csv print a negative time as 2^64 - 5).
    auto count = [](const nlohmann::json& j, const char* key, std::int64_t least) {
      if (!j.contains(key)) throw std::runtime_error(fmt::format("a record without '{}'", key));
      const nlohmann::json& v = j[key];
      if (!v.is_number_integer() || v.get<std::int64_t>() < least)
        throw std::runtime_error(fmt::format("a record whose '{}' is {}, not a whole number of at least {}", key, v.dump(), least));
      return v.get<std::int64_t>();
    };
    try {
      std::size_t line = 0;
      for (const nlohmann::json& j : journal.kept()) {
        ++line;
        try {
          if (!j.is_object() || !j.contains("phase") || !j["phase"].is_string())
            throw std::runtime_error("a record without a 'phase' name");
          const auto it = index.find({j["phase"].get<std::string>(), count(j, "tokens", 1), count(j, "context", 1),
                                      count(j, "batch", 1)});
          if (it == index.end()) throw std::runtime_error("a point not of this grid");
          Resumed r{points[it->second], {}};
          if (j.contains("not_mapped")) {
            if (!j["not_mapped"].is_string() || j["not_mapped"].get<std::string>().empty())
              throw std::runtime_error("a 'not_mapped' that is no reason");
            r.why = j["not_mapped"].get<std::string>();
          } else {
            r.p.chunk = count(j, "chunk", 1), r.p.chunks = count(j, "chunks", 1);
            r.p.latency = Cycle(count(j, "latency", 1));
            if (!j.contains("ops") || !j["ops"].is_array()) throw std::runtime_error("a record without its 'ops'");
            Cycle sum = 0;
            for (const auto& o : j["ops"]) {
              if (!o.is_array() || o.size() != 2 || !o[0].is_string() || !o[1].is_number_integer() || o[1].get<std::int64_t>() < 0)
                throw std::runtime_error(fmt::format("an operator's entry {} that is no [name, cycles]", o.dump()));
              r.p.ops.push_back({o[0].get<std::string>(), o[1].get<Cycle>()});
              sum += o[1].get<Cycle>();
            }
            if (sum != r.p.latency)
              throw std::runtime_error(fmt::format("operators' cycles that sum to {}, not its latency {}", sum, r.p.latency));
          }
          if (const auto was = resumed.find(it->second); was != resumed.end() &&
              (was->second.why != r.why || was->second.p.latency != r.p.latency || was->second.p.ops != r.p.ops))
            throw std::runtime_error("a second record of a point, with other figures");
          resumed[it->second] = std::move(r);
        } catch (const std::exception& e) {
          throw std::runtime_error(fmt::format("line {}: {}", line + 1, e.what()));  // (line 1: its settings)
        }
      }
    } catch (const std::exception& e) {
      throw hw::InputError(fmt::format("--out: the journal {} does not read as this table's ({}); remove it to start "
                                       "the table afresh", journal.path().string(), e.what()));
    }
    if (!resumed.empty())
      fmt::print(stderr, "table: resuming from {}: {} of {} points done before\n", journal.path().string(), resumed.size(),
                 points.size());
  }

  DecodePoint dp{spec, model, base, fidelity, false, {}, false, 0, 0};
  std::vector<std::string> skipped;
  std::vector<Point> done;
  Figures fig;
  try {
    if (jobs == 1) {
      sim::Simulator simulator;
      PointCache points_cache(simulator, vm.count("no-cache") == 0);  // mappings, the mesh and memory kept between points
      const std::shared_ptr<const noc::Fabric> fabric = points_cache.perfect(spec);
      PrefillCache cache;  // chunks shared between prompts ending at the same context
      for (std::size_t i = 0; i < points.size(); ++i) {
        Point& p = points[i];
        if (auto it = resumed.find(i); it != resumed.end()) {
          if (it->second.why.empty()) done.push_back(it->second.p);
          else skipped.push_back(not_mapped(p, it->second.why));
          continue;
        }
        dp.options.context = p.context, dp.options.batch = p.batch, dp.options.tokens = p.phase == "decode" ? 1 : p.tokens;
        const auto t = std::chrono::steady_clock::now();
        try {
          PrefillRun r = run_prefill(points_cache, dp, PointCache::Fabrics{fabric}, 0, &cache);
          p.chunk = r.chunk, p.chunks = std::int64_t(r.chunks.size()), p.latency = r.step.latency;
          p.ops = table_ops(op_cycles(r.step));
          done.push_back(p);
          record(journal, p, "");
          fmt::print(stderr, "table: [{}/{}] {} tokens {} context {} batch {}: {:.1f} us{} ({:.1f} s, {:.0f} s in all)\n", i + 1,
                     points.size(), p.phase, p.tokens, p.context, p.batch, spec.cycles_to_us(double(p.latency)),
                     p.chunks > 1 ? fmt::format(" in {} chunks of {}", p.chunks, p.chunk) : std::string(),
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count(),
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        } catch (const hw::InputError& e) {
          skipped.push_back(not_mapped(p, e.what()));
          record(journal, p, e.what());
          fmt::print(stderr, "table: [{}/{}] {} tokens {} context {} batch {}: not mapped: {}\n", i + 1, points.size(),
                     p.phase, p.tokens, p.context, p.batch, e.what());
        }
      }
      fig.steps_emulated = cache.emulated, fig.chunks_reused = cache.hits;
      fig.mappings_reused = points_cache.stats().mappings_reused, fig.mappings_built = points_cache.stats().mappings_built;
      fig.meshes_reused = points_cache.stats().meshes_reused;
    } else {
      fig = run_jobs(int(jobs), dp, vm.count("no-cache") == 0, points, done, skipped, spec, t0, resumed, journal);
    }
  } catch (const hw::InputError& e) {
    // (a run stopped by a failure keeps the points it did, for the same command to resume from; a journal of none
    // goes with it)
    if (journal.records() == 0 || dynamic_cast<const WorkerFailure*>(&e) == nullptr) throw;
    throw hw::InputError(fmt::format("{} ({} of {} points are kept in {}: the same command resumes there)", e.what(),
                                     journal.records(), points.size(), journal.path().string()));
  }
  if (done.empty()) {
    journal.remove();
    throw hw::InputError(fmt::format("no point of the grid maps: {}", skipped.front()));
  }
  // (the serving simulators' tables need decode rows: prefill rows alone made an empty per_sequence.csv and
  // max_num_seqs 0, without a word)
  if (std::none_of(done.begin(), done.end(), [](const Point& p) { return p.phase == "decode"; })) {
    journal.remove();
    // (every decode point of the grid, of which there is at least one, was skipped)
    throw hw::InputError(fmt::format("no decode point of the grid maps (only prefill points do): {}",
                                     *std::find_if(skipped.begin(), skipped.end(),
                                                   [](const std::string& s) { return s.starts_with("decode "); })));
  }
  auto us = [&](Cycle c) { return spec.cycles_to_us(double(c)); };
  const double L = double(model.layers);
  // One decoder layer's time of an operator (one norm for `layernorm`: a layer has two).
  auto per_layer_us = [&](const Point& p, const std::string& op) {
    const double v = us(p.op(op));
    return op == "layernorm" ? v / (2 * L) : layer_op(op) ? v / L : v;
  };

  // ---- table.csv (tidy) -----------------------------------------------------------------------------------
  {
    Writer w(tmp / "table.csv");
    *w << "phase,operator,tokens,context,batch,chunk_tokens,chunks,time_cycles,time_us,layers,per_layer_time_us\n";
    for (const Point& p : done) {
      auto row = [&](const std::string& op, Cycle c, std::int64_t layers, double per) {
        *w << fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", p.phase, op, p.tokens, p.context, p.batch, p.chunk, p.chunks,
                          c, num(us(c)), layers, num(per));
      };
      for (const auto& [op, c] : p.ops)
        row(op, c, layer_op(op) ? model.layers * (op == "layernorm" ? 2 : 1) : 1, per_layer_us(p, op));
      row("step", p.latency, 1, us(p.latency));
    }
    w.close();
  }
  {
    Writer w(tmp / "skipped.txt");
    for (const auto& s : skipped) *w << s << "\n";
    w.close();
  }

  // Rows the exporters key on tokens: decode at the smallest context (tokens = batch), then prefill from
  // scratch (context = tokens) for token counts no decode batch gave.
  std::map<std::int64_t, const Point*> by_tokens;
  std::map<std::int64_t, const Point*> by_sequences;
  for (const Point& p : done)
    if (p.phase == "decode" && p.context == contexts.front()) by_tokens.emplace(p.tokens, &p), by_sequences.emplace(p.batch, &p);
  for (const Point& p : done)
    if (p.phase == "prefill" && p.context == p.tokens) by_tokens.emplace(p.tokens, &p);

  // What the exporters' attention rows hold. A serving simulator rebuilds a step as the rows of its tokens (dense.csv,
  // moe.csv: taken at the smallest context), of its sequences (per_sequence.csv: a prompt is one) and one attention
  // row per layer, keyed on the context; so the attention row is the one place the rest of the step's dependence
  // on the context can go (the mapper gives the stages other tiles at another context, and a streamed step's
  // weight waits move from one operator to another). It is the step, less the transfers between wafers (which the
  // simulators time themselves) and less the rows of its tokens and sequences, per layer: the rebuilt step is the
  // emulated one at every point. At a point whose own rows those are (decode at the smallest context, a prompt from
  // scratch), it is attention's own critical-path time. A point whose rows the grid lacks (the simulator
  // interpolates them) keeps attention's own time; one whose rows exceed it alone writes 0 and is counted.
  // (dense.csv's operators, the names LLMServingSim looks up for a Llama-family model; an MoE model's layer MLP is
  // moe.csv's)
  std::vector<std::string> dense{"embedding", "layernorm", "qkv_proj", "rotary_emb", "o_proj"};
  if (!model.moe()) dense.insert(dense.end(), {"gate_up_proj", "act_fn", "down_proj"});
  dense.push_back("final_layernorm");
  std::vector<std::string> token_ops = dense;
  if (model.moe()) token_ops.insert(token_ops.end(), {"moe_router", "gate_up_proj", "act_fn", "down_proj"});
  std::int64_t attention_at_zero = 0;
  std::vector<double> attention_of(done.size());  // (by place in `done`)
  for (std::size_t i = 0; i < done.size(); ++i) {
    const Point& p = done[i];
    const auto d = by_tokens.find(p.tokens);
    const auto q = by_sequences.find(p.phase == "decode" ? p.batch : 1);
    if (d == by_tokens.end() || q == by_sequences.end()) {
      attention_of[i] = per_layer_us(p, "attention");
      continue;
    }
    Cycle rest = 0;
    for (const auto& op : token_ops) rest += d->second->op(op);
    for (const char* op : {"lm_head", "sampler"}) rest += q->second->op(op);
    const Cycle step = p.latency - p.op("inter_wafer") - p.op("egress");
    if (step < rest) ++attention_at_zero;
    attention_of[i] = step < rest ? 0.0 : us(step - rest) / L;
  }
  if (attention_at_zero > 0)
    fmt::print(stderr,
               "table: {} point(s) take less time than the rows of their tokens and sequences alone (taken at the "
               "smallest context): their attention rows hold 0, and a simulator's rebuilt step is longer there\n",
               attention_at_zero);

  // ---- LLMServingSim perf bundle -----------------------------------------------------------------------
  // The model as HuggingFace names it, <org>/<name>, which the simulator looks the folder up by (case-sensitive): from
  // the config's path, ORG/NAME.json (the shipped ones: meta-llama/Llama-3.1-8B.json) or ORG/NAME/config.json (a
  // downloaded model's folder). (It was the shipped short name, meta-llama/llama-3.1-8b, and NAME/NAME for a
  // config.json.)
  std::string org, hf_name;
  {
    // (the path as the file lies, not as typed: config.json given from inside ORG/NAME, or ../config.json)
    // (through links to the file itself: /dev/stdin or /dev/fd/N redirected from ORG/NAME.json name ORG/NAME, not
    // dev/stdin)
    std::error_code link_ec;
    fs::path cfg = model.source.empty() ? fs::path() : fs::absolute(fs::path(model.source)).lexically_normal();
    if (!cfg.empty() && fs::is_regular_file(cfg, link_ec))
      if (fs::path real = fs::canonical(cfg, link_ec); !link_ec) cfg = real;
    if (cfg.stem() == "config") cfg = cfg.parent_path();
    else cfg.replace_extension();
    hf_name = cfg.filename().string();
    org = cfg.parent_path().filename().string();
    if (hf_name.empty()) hf_name = model.name;
    if (org.empty() || org == "." || org == "..") org = "local";
  }
  // (a pipeline of N wafers is other hardware than one wafer: "-xN"; streamed weights another variant of the model's
  // tables on it)
  const std::string hardware = fmt::format("wafer-emu-{}{}", spec.name, base.wafers > 1 ? fmt::format("-x{}", base.wafers) : "");
  const std::string variant = base.weights == mapper::WeightMode::Stream ? "stream" : "default";
  const fs::path bundle = tmp / "llmservingsim" / hardware / org / hf_name / variant;
  fs::create_directories(bundle / "tp1");
  {
    Writer w(bundle / "tp1" / "dense.csv");
    *w << "layer,tokens,time_us\n";
    for (const auto& name : dense)
      for (const auto& [t, p] : by_tokens) *w << fmt::format("{},{},{}\n", name, t, num(per_layer_us(*p, name)));
    w.close();
  }
  {
    Writer w(bundle / "tp1" / "per_sequence.csv");
    *w << "layer,sequences,time_us\n";
    for (const char* name : {"lm_head", "sampler"})
      for (const auto& [b, p] : by_sequences) *w << fmt::format("{},{},{}\n", name, b, num(per_layer_us(*p, name)));
    w.close();
  }
  {
    Writer w(bundle / "tp1" / "attention.csv");
    *w << "prefill_chunk,kv_prefill,n_decode,kv_decode,time_us\n";
    for (std::size_t i = 0; i < done.size(); ++i) {
      const Point& p = done[i];
      const double t = attention_of[i];
      if (p.phase == "decode") *w << fmt::format("0,0,{},{},{}\n", p.batch, p.context, num(t));
      else *w << fmt::format("{},{},0,0,{}\n", p.tokens, p.context - p.tokens, num(t));
    }
    w.close();
  }
  if (model.moe()) {
    Writer w(bundle / "tp1" / "moe.csv");
    *w << "tokens,activated_experts,time_us\n";
    for (const auto& [t, p] : by_tokens)
      *w << fmt::format("{},{},{}\n", t, model.experts_per_tok,
                        num(per_layer_us(*p, "moe_router") + per_layer_us(*p, "gate_up_proj") + per_layer_us(*p, "act_fn") +
                            per_layer_us(*p, "down_proj")));
    w.close();
  }
  {
    std::int64_t max_tokens = 0, max_seqs = 0;
    for (const auto& [t, p] : by_tokens) max_tokens = std::max(max_tokens, t);
    for (const auto& [b, p] : by_sequences) max_seqs = std::max(max_seqs, b);
    const std::time_t now = std::time(nullptr);
    char when[32];
    std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    Writer w(bundle / "meta.yaml");
    *w << "profiler_version: wafer-emu-table-1\n"
       << "vllm_version: none\n"
       << fmt::format("gpu: {}\n", yaml_string(hardware)) << fmt::format("hardware: {}\n", yaml_string(hardware))
       << fmt::format("variant: {}\n", variant) << fmt::format("model: {}\n", yaml_string(org + "/" + hf_name))
       << "tp_degrees: [1]\n"
       << fmt::format("profiled_at: {}\n", when) << "engine_effective:\n"
       << fmt::format("  max_num_batched_tokens: {}\n", max_tokens) << fmt::format("  max_num_seqs: {}\n", max_seqs);
    // (a comment, which a reader of the keys above skips: the deployment the rows were emulated on)
    if (base.kv_capacity > 0)
      *w << fmt::format("# wafer-emu: every point mapped with a KV cache reserved for {} positions (--kv-capacity): one "
                        "placement\n",
                        base.kv_capacity);
    w.close();
  }

  // ---- Vidur profiling CSVs (milliseconds) ---------------------------------------------------------------
  // (not for an MoE model: Vidur's mlp.csv has a dense MLP's columns and none for a router or experts, so a layer
  // would be timed without its router, 9 % of tiny-moe's; LLMServingSim's moe.csv carries them)
  if (!model.moe()) {
    fs::create_directories(tmp / "vidur");
    auto stats = [](double ms) { return fmt::format("{0},{0},{0},{0},0", num(ms)); };  // min,max,mean,median,std
    auto stat_cols = [](const std::string& op) {
      return fmt::format("time_stats.{0}.min,time_stats.{0}.max,time_stats.{0}.mean,time_stats.{0}.median,time_stats.{0}.std", op);
    };
    {
      const std::vector<std::pair<std::string, std::string>> ops{
          {"emb", "embedding"},           {"input_layernorm", "layernorm"}, {"attn_pre_proj", "qkv_proj"},
          {"attn_rope", "rotary_emb"},    {"attn_post_proj", "o_proj"},     {"post_attention_layernorm", "layernorm"},
          {"mlp_up_proj", "gate_up_proj"}, {"mlp_act", "act_fn"},           {"mlp_down_proj", "down_proj"},
          {"add", ""}};
      Writer w(tmp / "vidur" / "mlp.csv");
      for (const auto& [v, ours] : ops) *w << stat_cols(v) << ",";
      *w << "n_head,n_kv_head,n_embd,n_expanded_embd,vocab_size,use_gated_mlp,num_tokens,num_tensor_parallel_workers\n";
      for (const auto& [t, p] : by_tokens) {
        for (const auto& [v, ours] : ops) *w << stats(ours.empty() ? 0.0 : per_layer_us(*p, ours) / 1e3) << ",";
        *w << fmt::format("{},{},{},{},{},True,{},1\n", model.heads, model.kv_heads, model.hidden, model.intermediate,
                          model.vocab, t);
      }
      w.close();
    }
    {
      Writer w(tmp / "vidur" / "attention.csv");
      *w << stat_cols("attn_prefill") << "," << stat_cols("attn_decode")
         << ",n_embd,n_q_head,n_kv_head,block_size,num_tensor_parallel_workers,max_model_len,batch_size,"
            "prefill_chunk_size,kv_cache_size,is_prefill,attention_backend\n";
      for (std::size_t i = 0; i < done.size(); ++i) {
        const Point& p = done[i];
        const double ms = attention_of[i] / 1e3;
        const bool pre = p.phase == "prefill";
        *w << stats(pre ? ms : 0.0) << "," << stats(pre ? 0.0 : ms)
           << fmt::format(",{},{},{},16,1,{},{},{},{},{},wafer-emu\n", model.hidden, model.heads, model.kv_heads,
                          model.max_position, p.batch, pre ? p.tokens : 0, pre ? p.context - p.tokens : p.context,
                          pre ? "True" : "False");
      }
      w.close();
    }
  }

  // ---- into place ------------------------------------------------------------------------------------
  if (fs::exists(out, ec)) fs::remove(out, ec);  // an empty folder
  fs::rename(tmp, out, ec);
  if (ec) throw hw::InputError(fmt::format("--out {}: cannot move the tables into place ({})", out.string(), ec.message()));
  cleanup.keep = true;
  journal.remove();

  traces::Report rep("latency tables");
  rep.add_text("wafer", spec.name);
  rep.add_text("model", model.name);
  rep.add_int("wafers", base.wafers, "wafers");
  rep.add_text("weights", std::string(mapper::to_string(base.weights)));
  rep.add_int("kv_capacity", base.kv_capacity, "tokens",
              base.kv_capacity ? "KV-cache positions every point's mapping reserves (--kv-capacity): one placement"
                               : "0: each point mapped for the KV cache it holds");
  rep.add_int("points", std::int64_t(points.size()), "points", "decode context x batch, prefill prompts x contexts");
  rep.add_int("points_emulated", std::int64_t(done.size()), "points",
              "points in the tables (mapped and emulated), those taken from a journal included");
  rep.add_int("points_resumed", std::int64_t(resumed.size()), "points",
              "points done, or found not to map, by an earlier run of the same command: taken from its journal");
  rep.add_int("points_not_mapped", std::int64_t(skipped.size()), "points", "listed in skipped.txt with the mapper's reason");
  rep.add_int("jobs", std::min(jobs, std::int64_t(points.size())), "processes",
              jobs > 1 ? "worker processes: steps_emulated, mappings_reused and meshes_reused are summed over them" : "one process");
  rep.add_int("steps_emulated", fig.steps_emulated, "steps", "decode steps and prefill chunks emulated");
  rep.add_int("chunks_reused", fig.chunks_reused, "steps", "prefill chunks equal to one emulated for another point");
  rep.add_int("mappings_reused", fig.mappings_reused, "mappings",
              fmt::format("of {}: the same inputs mapped before (--no-cache: none)", fig.mappings_reused + fig.mappings_built));
  rep.add_int("meshes_reused", fig.meshes_reused, "steps",
              "steps that reset the mesh model of the step before instead of building one (--no-cache: none)");
  rep.add_text("out", out.string());
  rep.add_int("attention_rows_at_zero", attention_at_zero, "points",
              "points that take less than the rows of their tokens and sequences alone: their attention rows hold 0");
  if (model.moe())
    rep.add_text("vidur", "not written", "an MoE model: Vidur's profiling CSVs have no router or expert columns");
  rep.add("wall_time", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), "s");
  finish(rep, vm);
  return 0;
}

const Registrar reg{{"table", "latency tables per operator for serving simulators (LLMServingSim, Vidur)", run_table, 7}};

}  // namespace
}  // namespace wafer::apps
