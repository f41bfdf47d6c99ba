#include "mapper/mapper.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <system_error>

#include "firmware/validate.h"
#include "hw/error.h"
#include "mapper/emit.h"
#include "mapper/graph.h"
#include "mapper/meshgemv.h"
#include "mapper/placement.h"

namespace wafer::mapper {

using detail::OutKind;
using detail::StageKind;
using detail::StageSpec;
using firmware::Dest;
using hw::InputError;

const char* to_string(WeightMode m) { return m == WeightMode::Stream ? "stream" : "resident"; }

WeightMode parse_weight_mode(std::string_view s) {
  if (s == "resident") return WeightMode::Resident;
  if (s == "stream") return WeightMode::Stream;
  throw InputError(fmt::format("--weights '{}': expected resident or stream", s));
}

const char* to_string(Kernel k) { return k == Kernel::MeshGemv ? "meshgemv" : "bands"; }

Kernel parse_kernel(std::string_view s) {
  if (s == "bands") return Kernel::Bands;
  if (s == "meshgemv") return Kernel::MeshGemv;
  throw InputError(fmt::format("--kernel '{}': expected bands or meshgemv", s));
}

const char* to_string(AllreduceAlgo a) {
  switch (a) {
    case AllreduceAlgo::Chain: return "chain";
    case AllreduceAlgo::Centre: return "centre";
    case AllreduceAlgo::Tree: return "tree";
  }
  return "?";
}

AllreduceAlgo parse_allreduce(std::string_view s) {
  if (s == "chain") return AllreduceAlgo::Chain;
  if (s == "centre") return AllreduceAlgo::Centre;
  if (s == "tree") return AllreduceAlgo::Tree;
  throw InputError(fmt::format("--allreduce '{}': expected chain, centre or tree", s));
}

std::vector<StepSequence> parse_step(std::string_view s) {
  if (s.empty()) throw InputError("--step '': expected a list of TOKENS@CONTEXT, e.g. 1@4096,1@2048,128@512");
  std::vector<StepSequence> out;
  for (std::size_t at = 0;;) {
    const std::size_t comma = std::min(s.find(',', at), s.size());
    const std::string_view e = s.substr(at, comma - at);
    const std::size_t sep = e.find('@');
    StepSequence q;
    auto number = [](std::string_view n, std::int64_t& v) {
      if (n.empty() || n.front() == '+' || n.front() == '-') return false;
      const auto r = std::from_chars(n.data(), n.data() + n.size(), v);
      return r.ec == std::errc() && r.ptr == n.data() + n.size();
    };
    if (sep == std::string_view::npos || !number(e.substr(0, sep), q.tokens) || !number(e.substr(sep + 1), q.context))
      throw InputError(fmt::format("--step entry '{}' (sequence {}): expected TOKENS@CONTEXT, e.g. 128@512", e,
                                   out.size() + 1));
    if (q.tokens < 1 || q.context < 1)
      throw InputError(fmt::format("--step entry '{}' (sequence {}): tokens and context must be at least 1", e,
                                   out.size() + 1));
    if (q.tokens > q.context)
      throw InputError(fmt::format("--step entry '{}' (sequence {}): {} new tokens are more than its context {} holds",
                                   e, out.size() + 1, q.tokens, q.context));
    out.push_back(q);
    if (out.size() > 65536) throw InputError("--step: more than 65536 sequences");
    if (comma == s.size()) break;
    at = comma + 1;
  }
  return out;
}

std::string to_string(const std::vector<StepSequence>& step) {
  std::string s;
  for (const auto& q : step) s += fmt::format("{}{}@{}", s.empty() ? "" : ",", q.tokens, q.context);
  return s;
}

std::int64_t program_bytes(const firmware::Program& p) {
  std::int64_t b = 0;
  for (const auto& t : p.tasks) b += 8 + 4 * std::int64_t(t.ops.size()) + 8 * std::int64_t(t.sends.size());
  return b;
}

std::int64_t Mapping::tiles_used() const {
  std::int64_t n = 0;
  for (const auto& w : wafers) n += w.tiles_used;
  return n;
}
std::int64_t Mapping::task_runs() const {
  std::int64_t n = 0;
  for (const auto& w : wafers) n += w.task_runs;
  return n;
}
std::int64_t Mapping::streamed_bytes_per_step() const {
  std::int64_t n = 0;
  for (const auto& w : wafers) n += w.streamed_bytes_per_step;
  return n;
}
std::int64_t Mapping::interwafer_bytes_per_step() const {
  return wafers.size() > 1 ? wafers.front().egress_bytes_per_token : 0;
}
std::size_t Mapping::program_count() const {
  std::size_t n = 0;
  for (const auto& w : wafers) n += w.programs;
  return n;
}
std::int64_t Mapping::firmware_bytes() const {
  std::int64_t n = 0;
  for (const auto& w : wafers) n += w.firmware_bytes;
  return n;
}

namespace {

std::string kb(double bytes) {
  if (bytes >= double(detail::kSramSaturate)) return "more than 1 GB";  // SRAM figures saturate there
  return fmt::format("{:.1f} KB", bytes / 1024.0);
}
// (in MB or KB below 0.1 GB: a small wafer's SRAM and a test model's weights said "0.0 GB")
std::string gb(double bytes) {
  if (bytes >= 1e8) return fmt::format("{:.1f} GB", bytes / 1e9);
  if (bytes >= 1e5) return fmt::format("{:.1f} MB", bytes / 1e6);
  return fmt::format("{:.1f} KB", bytes / 1e3);
}

// Destinations from one stage's residual column to the next one's, row by row (global frame), and the
// bursts each destination row receives. Equal heights give one burst per row at a constant offset.
void connect(StageSpec& from, StageSpec& to) {
  const hw::Rect& a = from.region.rect;
  const hw::Rect& b = to.region.rect;
  const std::int64_t h1 = a.h, h2 = b.h;
  const std::int32_t dx = detail::residual_x(to.region) - detail::residual_x(from.region);
  from.out = OutKind::Transfer;
  from.out_last_token = to.kind == StageKind::Head;
  from.out_dest.assign(std::size_t(h1), {});
  from.out_color.assign(std::size_t(h1), detail::color::kResIn);
  to.in_arrivals.assign(std::size_t(h2), 0);
  // A vertical hand-off between equally tall stages: row r's burst goes (dimension order: along its row,
  // then down) to the tile r columns before the next stage's residual column, which relays it along its
  // row, so the h bursts cross the boundary on h different columns instead of queueing on one link.
  const bool relay = h1 == h2 && dx == 0 && !(a == b) && b.w > 1;
  to.relay_in.assign(std::size_t(h2), 0);
  for (std::int64_t r = 0; r < h1; ++r) {
    std::int64_t lo = r * h2 / h1, hi = std::max(lo + 1, (r + 1) * h2 / h1);
    if (relay) {
      const std::int32_t k = std::int32_t(r % b.w);
      to.relay_in[std::size_t(r)] = k;
      Dest d;
      d.dx = k == 0 ? 0 : (to.region.mirrored ? k : -k);
      d.dy = std::int32_t(b.y0 - a.y0);
      from.out_dest[std::size_t(r)] = d;
      if (k > 0) from.out_color[std::size_t(r)] = detail::color::kRelay;
      ++to.in_arrivals[std::size_t(r)];
      continue;
    }
    Dest d;
    d.kind = hi - lo == 1 ? Dest::Kind::Tile : Dest::Kind::Column;
    d.dx = dx;
    d.dy = std::int32_t((b.y0 + lo) - (a.y0 + r));
    d.span = std::int32_t(hi - lo);
    from.out_dest[std::size_t(r)] = d;
    for (std::int64_t q = lo; q < hi; ++q) ++to.in_arrivals[std::size_t(q)];
  }
}

struct StagePlan {
  StageKind kind;
  std::string name;
  std::int64_t weight_bytes = 0, kv_bytes = 0;
};

}  // namespace

namespace {
Mapping map_impl(const hw::WaferSpec& spec, const noc::WaferFabrics& fabrics, const ModelConfig& model, const MapOptions& opt,
                 bool suggest);
}  // namespace

bool mapping_reads_links(const MapOptions& options) {
  try {
    return placement(options.placement).reads_links();
  } catch (const InputError&) {
    return true;
  }
}

std::vector<std::size_t> split_pipeline(const std::vector<std::int64_t>& stage_bytes, int wafers) {
  const std::size_t S = stage_bytes.size();
  if (wafers < 1 || std::size_t(wafers) > S)
    throw InputError(fmt::format("{} wafers for {} stages: at least one wafer, at most one per stage", wafers, S));
  const std::size_t N = std::size_t(wafers);
  std::vector<std::int64_t> prefix(S + 1, 0);
  for (std::size_t i = 0; i < S; ++i) prefix[i + 1] = prefix[i] + stage_bytes[i];
  constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();
  // most[w][i]: the least largest group of stages [0, i) split into w groups.
  std::vector<std::vector<std::int64_t>> most(N + 1, std::vector<std::int64_t>(S + 1, kNone));
  most[0][0] = 0;
  for (std::size_t w = 1; w <= N; ++w)
    for (std::size_t i = w; i <= S; ++i)
      for (std::size_t j = w - 1; j < i; ++j)
        if (most[w - 1][j] != kNone) most[w][i] = std::min(most[w][i], std::max(most[w - 1][j], prefix[i] - prefix[j]));
  const std::int64_t cap = most[N][S];
  // Among the splits whose groups all hold at most `cap`: the least sum of squares, cut[w][i] its last cut.
  constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> squares(N + 1, std::vector<double>(S + 1, kInf));
  std::vector<std::vector<std::size_t>> cut(N + 1, std::vector<std::size_t>(S + 1, 0));
  squares[0][0] = 0;
  for (std::size_t w = 1; w <= N; ++w)
    for (std::size_t i = w; i <= S; ++i)
      for (std::size_t j = w - 1; j < i; ++j) {
        const std::int64_t g = prefix[i] - prefix[j];
        if (g > cap || squares[w - 1][j] == kInf) continue;
        const double v = squares[w - 1][j] + double(g) * double(g);
        if (v < squares[w][i]) squares[w][i] = v, cut[w][i] = j;
      }
  std::vector<std::size_t> first(N + 1, S);
  for (std::size_t w = N, i = S; w > 0; --w) first[w] = i, i = cut[w][i];
  first[0] = 0;
  return first;
}

Mapping map_model(const hw::WaferSpec& spec, const noc::WaferFabrics& fabrics, const ModelConfig& model,
                  const MapOptions& opt) {
  return map_impl(spec, fabrics, model, opt, true);
}

namespace {
// `suggest`: a refusal for lack of SRAM names the fewest wafers (up to 64) that do map, found by mapping
// with them (so the suggestion is never refused in turn); false while probing.
Mapping map_impl(const hw::WaferSpec& spec, const noc::WaferFabrics& fabrics, const ModelConfig& model,
                 const MapOptions& options, bool suggest) {
  // ---- options -------------------------------------------------------------------------------------
  const bool mixed = !options.step.empty();
  MapOptions opt = options;
  if (mixed) {  // what the reports show of a mixed step (MapOptions::step)
    opt.batch = std::int64_t(opt.step.size()), opt.tokens = 1, opt.context = 0;
    for (const auto& q : opt.step) opt.context = std::max(opt.context, q.context);
  }
  if (mixed) {
    if (opt.step.size() > 65536) throw InputError(fmt::format("a step of {} sequences: at most 65536", opt.step.size()));
    for (std::size_t j = 0; j < opt.step.size(); ++j) {
      const StepSequence& q = opt.step[j];
      if (q.tokens < 1 || q.context < 1 || q.tokens > q.context)
        throw InputError(fmt::format("step sequence {} ({}@{}): need 1 <= tokens <= context", j + 1, q.tokens, q.context));
      if (model.max_position > 0 && q.context > model.max_position)
        throw InputError(fmt::format("step sequence {} ({}@{}) exceeds {}'s max_position_embeddings {}: refusing",
                                     j + 1, q.tokens, q.context, model.name, model.max_position));
      if (q.context > (std::int64_t(1) << 26)) throw InputError(fmt::format("context {} is absurdly long", q.context));
    }
    if (opt.kernel == Kernel::MeshGemv) throw InputError("a mixed step (--step) is emitted for --kernel bands only");
  }
  if (opt.batch < 1 || opt.batch > 65536)
    throw InputError(fmt::format("batch = {}: must be between 1 and 65536 sequences", opt.batch));
  if (opt.context < 1) throw InputError(fmt::format("context = {}: at least one position is needed", opt.context));
  if (model.max_position > 0 && opt.context > model.max_position)
    throw InputError(fmt::format("context {} exceeds {}'s max_position_embeddings {}: refusing (use --context <= {})",
                                 opt.context, model.name, model.max_position, model.max_position));
  if (opt.context > (std::int64_t(1) << 26)) throw InputError(fmt::format("context {} is absurdly long", opt.context));
  // (within its sliding window a model attends every position, as the graph does; beyond it only the window)
  if (model.sliding_window > 0 && opt.context > model.sliding_window)
    throw InputError(fmt::format("context {} exceeds {}'s sliding_window {}: attention over a window is not modelled "
                                 "(use a context <= {})",
                                 opt.context, model.name, model.sliding_window, model.sliding_window));
  if (opt.tokens < 1 || opt.tokens > opt.context)
    throw InputError(fmt::format("tokens = {}: a step processes 1 to context ({}) new tokens per sequence", opt.tokens,
                                 opt.context));
  // What the step's KV cache holds (every sequence's positions), and what the mapping reserves.
  std::int64_t held_positions = opt.batch * opt.context;
  if (mixed) {
    held_positions = 0;
    for (const auto& q : opt.step) held_positions += q.context;
  }
  if (opt.kv_capacity < 0 || opt.kv_capacity > kMaxKvCapacity)
    throw InputError(fmt::format("--kv-capacity {}: must be between 1 and 2^40 positions", opt.kv_capacity));
  if (opt.kv_capacity > 0 && opt.kv_capacity < held_positions)
    throw InputError(fmt::format("--kv-capacity {} is fewer positions than the step's KV cache holds ({}): give at least that",
                                 opt.kv_capacity,
                                 mixed ? fmt::format("{} over its sequences' contexts", held_positions)
                                       : fmt::format("{} = batch {} x context {}", held_positions, opt.batch, opt.context)));
  const std::int64_t kv_positions = std::max(held_positions, opt.kv_capacity);
  if (opt.tokens > 1 && opt.kernel == Kernel::MeshGemv)
    throw InputError(fmt::format("a step of {} tokens (prefill) is emitted for --kernel bands only", opt.tokens));
  if (opt.weight_bits != 16 && opt.weight_bits != 8)
    throw InputError(fmt::format("weight precision {} bits: use 16 or 8", opt.weight_bits));
  if (opt.wafers < 1 || opt.wafers > 64) throw InputError(fmt::format("wafers = {}: use 1 to 64", opt.wafers));
  const PlacementStrategy& strategy = placement(opt.placement);
  if (opt.group < 0) throw InputError(fmt::format("group = {}: must be 0 (sqrt of the line) or a tile count", opt.group));
  if (opt.kernel == Kernel::MeshGemv) {
    if (model.moe())
      throw InputError(fmt::format("--kernel meshgemv maps dense models; {} has {} experts (use --kernel bands)",
                                   model.name, model.experts));
    if (model.qk_norm)
      throw InputError(fmt::format("--kernel meshgemv maps models without per-head q/k norms; {} has them (use --kernel "
                                   "bands)",
                                   model.name));
    if (opt.wafers > 1)
      throw InputError(fmt::format("--kernel meshgemv runs the model on one wafer; --wafers {} needs --kernel bands",
                                   opt.wafers));
    if (opt.weights == WeightMode::Stream)
      throw InputError("--kernel meshgemv keeps every weight resident; --weights stream needs --kernel bands");
  }
  if (fabrics.size() != 1 && fabrics.size() != std::size_t(opt.wafers))
    throw InputError(fmt::format("{} fabrics (defect maps) for {} wafers: give one, or one per wafer", fabrics.size(),
                                 opt.wafers));
  for (std::size_t w = 0; w < fabrics.size(); ++w)
    if (const hw::Grid g = fabrics.of(w).grid(); g.width != spec.logical_width || g.height != spec.logical_height)
      throw InputError(fmt::format("the fabric is {} x {} but wafer '{}' is {} x {}", g.width, g.height, spec.name,
                                   spec.logical_width, spec.logical_height));

  Mapping out;
  out.placement = std::string(strategy.name());
  out.options = opt;
  out.model = model;
  detail::EmitParams ep;
  ep.spec = &spec, ep.model = &model, ep.batch = opt.batch, ep.context = opt.context, ep.tokens = opt.tokens;
  ep.step = opt.step;
  ep.kv_capacity = opt.kv_capacity;
  ep.weight_bytes = opt.weight_bits / 8;
  ep.kernel = opt.kernel, ep.allreduce = opt.allreduce, ep.group = opt.group;
  const bool mesh = opt.kernel == Kernel::MeshGemv;

  // ---- stages and their bytes -------------------------------------------------------------------------
  // (The KV cache of a mixed step, or of a reserve, is what a batch of one at its positions keeps: the sum of
  // the step's contexts, or kv_capacity.)
  const LayerGraph graph = kv_positions != opt.batch * opt.context ? build_graph(model, 1, kv_positions)
                                                                   : build_graph(model, opt.batch, opt.context);
  // How a refusal names the step.
  const std::string at_step =
      (mixed ? fmt::format("in the mixed step {}", to_string(opt.step))
             : fmt::format("at context {}, batch {}", opt.context, opt.batch)) +
      (opt.kv_capacity > held_positions ? fmt::format(" with a KV cache reserved for {} positions", opt.kv_capacity) : "");
  // Stages and what each stores, from the layer graph.
  std::vector<StagePlan> plans;
  for (const std::string& st : graph.stages) {
    const StageKind kind = st == "embedding" ? StageKind::Embedding : st == "head" ? StageKind::Head : StageKind::Layer;
    plans.push_back({kind, st, graph.stage_held(st) * ep.weight_bytes, graph.stage_kv_values(st) * kActivationBytes});
  }
  std::int64_t total_bytes = 0, total_weights = 0;
  for (const auto& p : plans) total_bytes += p.weight_bytes + p.kv_bytes, total_weights += p.weight_bytes;
  const double wafer_sram = double(spec.sram_bytes) * double(spec.logical_tiles());
  if (std::int64_t(plans.size()) < opt.wafers)
    throw InputError(fmt::format("{} wafers for {} stages: at most one wafer per stage", opt.wafers, plans.size()));

  // ---- split into a pipeline of wafers, balanced by bytes ------------------------------------------------
  std::vector<std::int64_t> stage_bytes;
  for (const auto& p : plans) stage_bytes.push_back(p.weight_bytes + p.kv_bytes);
  const std::vector<std::size_t> first_stage = split_pipeline(stage_bytes, opt.wafers);

  // A wafer count that maps the model (none: not found among the counts tried, up to one stage a wafer or 64), and
  // what the search tried when it found none.
  const std::int64_t most_wafers = std::min<std::int64_t>(64, std::int64_t(plans.size()));
  auto suggest_wafers = [&]() -> std::optional<std::int64_t> {
    const std::int64_t lower = std::max<std::int64_t>(
        opt.wafers + 1, std::int64_t(std::ceil(double(total_bytes) / wafer_sram)));
    if (!suggest) return lower;
    for (std::int64_t n = lower; n <= most_wafers; ++n) {
      MapOptions o = opt;
      o.wafers = int(n);
      try {
        // (with a fabric per wafer, more wafers than fabrics are tried on the first one's: a suggestion)
        map_impl(spec, fabrics.size() == 1 ? fabrics : noc::WaferFabrics(fabrics.of(0)), model, o, false);
        return n;
      } catch (const InputError&) {
      }
    }
    return std::nullopt;
  };
  auto no_count = [&] {
    return most_wafers == std::int64_t(plans.size())
               ? fmt::format("no --wafers count maps it, not even one stage a wafer ({} wafers)", most_wafers)
               : fmt::format("no --wafers count up to {} maps it", most_wafers);
  };

  // What to try when the weights do not fit. The meshgemv kernel runs resident on one wafer only.
  // (a reserve beyond the step's own KV cache is another thing to shrink)
  const std::string smaller_reserve = opt.kv_capacity > held_positions ? ", or a smaller --kv-capacity" : "";
  auto remedy = [&]() -> std::string {
    if (mesh) return "--kernel bands (with --weights stream or more wafers), or a shorter --context" + smaller_reserve;
    const auto n = suggest_wafers();
    return (n ? fmt::format("--weights stream or --wafers {}", *n) : fmt::format("--weights stream ({})", no_count())) +
           smaller_reserve;
  };

  // Per wafer whose image was emitted: its stages (as emitted), its index and what its emitter streams. A later
  // wafer whose stages are those but for their names gets its image (below).
  struct Emitted {
    std::vector<StageSpec> planned, specs;  // before the budget and after (what streams)
    std::vector<detail::StageNeed> needs;
    std::size_t wafer;
    std::int64_t stream_bytes;
  };
  std::vector<Emitted> emitted;
  bool table_shared = false;  // a wafer's embedding reads the head's table (StageSpec::table_in_head)
  for (int w = 0; w < opt.wafers; ++w) {
    const noc::Fabric& fabric = fabrics.of(std::size_t(w));
    const std::size_t s0 = first_stage[std::size_t(w)], s1 = first_stage[std::size_t(w) + 1];
    std::vector<StageShape> shapes;
    for (std::size_t i = s0; i < s1; ++i)
      shapes.push_back({plans[i].name, plans[i].weight_bytes + plans[i].kv_bytes, plans[i].kind == StageKind::Layer});
    std::vector<Region> regions;
    try {
      regions = strategy.place(shapes, fabric);
    } catch (const InputError& e) {  // (wafers on maps of their own: which wafer's map refused it)
      if (fabrics.size() == 1) throw;
      throw InputError(fmt::format("wafer {}: {}", w, e.what()));
    }
    if (regions.size() != shapes.size())
      throw std::logic_error(fmt::format("placement {} returned {} regions for {} stages", strategy.name(),
                                         regions.size(), shapes.size()));
    const hw::Grid g = fabric.grid();
    for (std::size_t i = 0; i < regions.size(); ++i) {
      const hw::Rect& r = regions[i].rect;
      if (r.w < 1 || r.h < 1 || r.x0 < 0 || r.y0 < 0 || r.x0 + r.w > g.width || r.y0 + r.h > g.height)
        throw std::logic_error(fmt::format("placement {} put {} outside the array", strategy.name(), shapes[i].name));
    }
    // Stage specs, connected in order.
    std::vector<StageSpec> specs;
    std::vector<std::string> layer_names;
    for (std::size_t i = s0; i < s1; ++i) {
      StageSpec s;
      s.kind = plans[i].kind;
      s.name = plans[i].name;
      s.layer = std::uint16_t(layer_names.size());
      layer_names.push_back(plans[i].name);
      s.region = regions[i - s0];
      s.in_arrivals.assign(std::size_t(s.region.rect.h), 1);
      specs.push_back(std::move(s));
    }
    if (mesh) {
      // Every stage on one region, one after another: a stage's final row allreduce leaves its output on
      // every tile, where the next stage starts (docs/mapping.md section 3b).
      for (std::size_t i = 1; i < specs.size(); ++i) {
        if (!(specs[i].region.rect == specs[0].region.rect))
          throw InputError(fmt::format("--kernel meshgemv runs every stage on one region, time-multiplexed; placement "
                                       "{} gives {} and {} different regions (use --placement whole-wafer or square)",
                                       strategy.name(), specs[0].name, specs[i].name));
        specs[i].residual_in = specs[i - 1].kind == StageKind::Layer;
      }
    }
    for (std::size_t i = 0; i + 1 < specs.size() && !mesh; ++i) connect(specs[i], specs[i + 1]);
    StageSpec& last = specs.back();
    last.out = last.kind == StageKind::Head ? OutKind::Argmax : OutKind::Gather;
    if (last.kind == StageKind::Embedding && specs.size() == 1) last.out = OutKind::Gather;

    // A pipeline's middle wafers often hold the same stages but for their names (as many decoder layers, placed
    // alike): the budget and the emitter read no name and the rest of their input is the same for every wafer (the
    // emit parameters and the fabric's grid: a wafer's own fabric reaches them only through the regions its
    // placement chose, which are compared here), so such a wafer streams what the earlier one streams and its image is that
    // one's with its own layer names (the 405B on 24 wafers: 20 of its 24 wafers; builds with assertions emit it
    // all the same and compare).
    const auto same_wafer = std::find_if(emitted.begin(), emitted.end(), [&](const Emitted& e) {
      return e.planned.size() == specs.size() &&
             std::equal(specs.begin(), specs.end(), e.planned.begin(), [](const StageSpec& a, const StageSpec& b) {
               return a.layer == b.layer && detail::same_but_layer(a, b);
             });
    });
    const std::vector<StageSpec> planned = specs;
    const std::uint32_t cap = std::uint32_t(spec.sram_bytes);
    std::vector<detail::StageNeed> needs(specs.size());
    std::optional<detail::Emitter> stamped;  // the stages stamped for the budget's check, kept for the image
    // A tied embedding on the head's tiles, split as the head's table (one region: the same blocks of the table on
    // each tile, with either kernel), reads the head's resident table rather than holding it again; while
    // either streams, it holds (or streams) its own. share_table() sets that from the stages' streaming and says
    // whether it changed (the embedding's need with it).
    const auto stage_of = [&](StageKind k) {
      return std::size_t(std::find_if(specs.begin(), specs.end(), [&](const StageSpec& s) { return s.kind == k; }) - specs.begin());
    };
    const std::size_t emb = stage_of(StageKind::Embedding), head = stage_of(StageKind::Head);
    const bool may_share = model.tie_embeddings && emb < specs.size() && head < specs.size() &&
                           specs[emb].region == specs[head].region;
    auto share_table = [&] {
      const bool share = may_share && !specs[emb].streamed && !specs[head].streamed;
      if (!may_share || specs[emb].table_in_head == share) return false;
      specs[emb].table_in_head = share;
      return true;
    };
    share_table();
    if (same_wafer != emitted.end()) {
      for (std::size_t i = 0; i < specs.size(); ++i) specs[i].streamed = same_wafer->specs[i].streamed;
      share_table();
      needs = same_wafer->needs;
    } else {
      // ---- budgets: SRAM per tile, streaming where allowed -----------------------------------------------
      // Regions are identical or disjoint (the placement rule): group identical ones; a tile of a group holds
      // every stage of the group.
      std::vector<std::vector<std::size_t>> groups;
      for (std::size_t i = 0; i < specs.size(); ++i) {
        bool placed = false;
        for (auto& gr : groups)
          if (specs[gr.front()].region.rect == specs[i].region.rect) gr.push_back(i), placed = true;
        if (!placed) groups.push_back({i});
      }
      // A guess of a group's fullest tile, for how many of its stages to stream (below): each stage's fullest
      // fragment, their weights and KV cache added, activation buffers reused, the decoder layers' code held once.
      auto group_need = [&](const std::vector<std::size_t>& gr) {
        firmware::SramUse u;
        std::uint32_t layer_code = 0;
        for (std::size_t i : gr) {
          const auto& n = needs[i].worst;
          detail::sat_add(u.weights, n.weights), detail::sat_add(u.kv_cache, n.kv_cache);
          if (specs[i].kind == StageKind::Layer) layer_code = std::max(layer_code, n.code);
          else detail::sat_add(u.code, n.code);
          u.activations = std::max(u.activations, n.activations);
        }
        detail::sat_add(u.code, layer_code);
        return u;
      };
      // (A stage the same as one before but for its layer needs what that one needs; with the bands kernel, also
      // one the same but for where its region lies: detail::same_but_place.)
      std::vector<std::size_t> computed;  // the stages whose needs were computed, each unlike the others
      std::vector<std::size_t> alike(specs.size());  // the one of `computed` each stage is like
      for (auto& gr : groups)
        for (std::size_t i : gr) {
          const auto same = std::find_if(computed.rbegin(), computed.rend(), [&](std::size_t j) {
            return opt.kernel == Kernel::Bands ? detail::same_but_place(specs[i], specs[j])
                                               : detail::same_but_layer(specs[i], specs[j]);
          });
          if (same != computed.rend()) needs[i] = needs[*same], alike[i] = *same;
          else needs[i] = detail::stage_need(specs[i], ep), computed.push_back(i), alike[i] = i;
        }
      // A bound on a group's fullest tile (detail::StageNeed::most_held, ...): its stages' weights and KV cache
      // added, the largest activation buffers, one code per kind of stage (stages of one group alike but for
      // their place are alike but for their layer: one region).
      auto group_bound = [&](const std::vector<std::size_t>& gr) {
        std::uint64_t held = 0, code = 0, activations = 0;
        std::vector<std::size_t> kinds;
        for (std::size_t i : gr) {
          held += needs[i].most_held;
          activations = std::max<std::uint64_t>(activations, needs[i].most_activations);
          if (std::find(kinds.begin(), kinds.end(), alike[i]) == kinds.end())
            kinds.push_back(alike[i]), code += needs[i].most_code;
        }
        return held + activations + code;
      };
      // The check itself is exact: the stages stamped as the image is (detail::Emitter), each group's fullest tile
      // counted as its program is (Emitter::tile_sram). group_need above sums each stage's fullest fragment,
      // which can lie on another tile than another stage's, and counts the layers' code once where resident and
      // streamed layers hold two codes: it only guesses how many stages to stream. The last stamping is kept for
      // the image.
      auto fullest = [&](detail::Emitter& em, std::size_t gi) {  // group gi's fullest tile as `em` stamped it
        firmware::SramUse most;
        const hw::Rect& r = specs[groups[gi].front()].region.rect;
        for (std::int32_t y = r.y0; y < r.y0 + r.h; ++y)
          for (std::int32_t x = r.x0; x < r.x0 + r.w; ++x)
            if (const firmware::SramUse u = em.tile_sram(fabric.grid().index({x, y})); u.total() > most.total()) most = u;
        return most;
      };
      auto stamp = [&] {  // each group's fullest tile
        stamped.emplace(ep, fabric.grid());
        for (const auto& s : specs) stamped->add(s);
        std::vector<firmware::SramUse> use(groups.size());
        for (std::size_t gi = 0; gi < groups.size(); ++gi) use[gi] = fullest(*stamped, gi);
        return use;
      };
      // (Where every group's bound fits, nothing is stamped: a plan, say, of a whole-wafer mapping far from the
      // budget, which costs a few tenths of a second to stamp on wse3.)
      std::vector<firmware::SramUse> use(groups.size());
      if (std::any_of(groups.begin(), groups.end(), [&](const auto& gr) { return group_bound(gr) > cap; })) use = stamp();
      // What a refusal says of group gi, whose fullest tile holds u.
      auto where = [&](std::size_t gi, const firmware::SramUse& u) {
        const auto& gr = groups[gi];
        const StageSpec& worst = specs[*std::max_element(gr.begin(), gr.end(), [&](std::size_t a, std::size_t b) {
          return needs[a].worst.total() < needs[b].worst.total();
        })];
        return gr.size() == 1
                   ? fmt::format("{} needs {} of SRAM per tile on its {} x {} tiles", worst.name, kb(u.total()),
                                 worst.region.rect.w, worst.region.rect.h)
                   : fmt::format("{} stages ({} .. {}) share each of {} x {} tiles and need {} of SRAM per tile",
                                 gr.size(), specs[gr.front()].name, specs[gr.back()].name, worst.region.rect.w,
                                 worst.region.rect.h, kb(u.total()));
      };
      if (opt.weights == WeightMode::Resident) {
        // Name the fullest region: its own share of the fix is the largest.
        std::size_t over = 0, worst = groups.size();
        for (std::size_t gi = 0; gi < groups.size(); ++gi)
          if (use[gi].total() > cap) {
            over += groups[gi].size();
            if (worst == groups.size() || use[gi].total() > use[worst].total()) worst = gi;
          }
        if (over > 0) {
          const firmware::SramUse& u = use[worst];
          const bool shared = emb < specs.size() && specs[emb].table_in_head;
          throw InputError(fmt::format(
              "{} {} (weights {}, KV cache {}, activations {}, code {}); a tile has {}{}. The model's weights are {} at "
              "{}-bit{} against {} of SRAM on one wafer; try {}",
              where(worst, u), at_step, kb(u.weights), kb(u.kv_cache), kb(u.activations), kb(u.code), kb(cap),
              over > groups[worst].size() ? fmt::format(" ({} of {} stages on this wafer do not fit)", over, specs.size())
                                          : "",
              gb(double(total_weights - (shared ? model.vocab * model.hidden * ep.weight_bytes : 0))), opt.weight_bits,
              !model.tie_embeddings ? ""
              : shared ? " as held (the tied embedding table once: the lookup reads the head's on the same tiles)"
                       : " as held (the tied embedding table twice: by the lookup and by the head)",
              gb(wafer_sram), remedy()));
        }
      } else {
        // A group over the budget streams its heaviest stages: as many as group_need says, then one more at a time
        // while its fullest tile is still over.
        // (each group's stages, the heaviest first; a group whose tiles fit stays so, as no other group's stage
        // lies on them)
        // (the embedding weighed with its table: the order does not hang on the head's streaming, which takes the
        // table from it)
        std::vector<std::uint64_t> heft(specs.size());
        for (std::size_t i = 0; i < specs.size(); ++i) heft[i] = needs[i].worst.weights;
        if (may_share && specs[emb].table_in_head) {
          StageSpec own = specs[emb];
          own.table_in_head = false;
          heft[emb] = detail::stage_need(own, ep).worst.weights;
        }
        std::vector<std::vector<std::size_t>> order = groups;
        for (auto& o : order)
          std::stable_sort(o.begin(), o.end(), [&](std::size_t a, std::size_t b) { return heft[a] > heft[b]; });
        bool restamp = false;
        for (std::size_t gi = 0; gi < groups.size(); ++gi) {
          if (use[gi].total() <= cap) continue;
          for (std::size_t i : order[gi]) {
            if (group_need(groups[gi]).total() <= cap) break;
            specs[i].streamed = true, restamp = true;
            needs[i] = detail::stage_need(specs[i], ep);
            if (share_table()) needs[emb] = detail::stage_need(specs[emb], ep);
          }
        }
        for (; restamp; ) {
          use = stamp(), restamp = false;
          for (std::size_t gi = 0; gi < groups.size(); ++gi) {
            if (use[gi].total() <= cap) continue;
            const auto next = std::find_if(order[gi].begin(), order[gi].end(), [&](std::size_t i) { return !specs[i].streamed; });
            if (next == order[gi].end()) {
              const firmware::SramUse& after = use[gi];
              const auto& gr = groups[gi];
              throw InputError(fmt::format(
                  "even with its weights streamed, {} needs {} of SRAM per tile {} (KV cache {}, "
                  "activations {}, code {}, resident norm weights {}); a tile has {}; try a shorter --context{}",
                  gr.size() == 1 ? specs[gr.front()].name : fmt::format("the shared region of {} stages", gr.size()),
                  kb(after.total()), at_step, kb(after.kv_cache), kb(after.activations), kb(after.code),
                  kb(after.weights), kb(cap), [&] {
                    const auto n = suggest_wafers();
                    return (n ? fmt::format(", a smaller --batch or --wafers {}", *n)
                              : fmt::format(" or a smaller --batch ({})", no_count())) +
                           smaller_reserve;
                  }()));
            }
            specs[*next].streamed = true, restamp = true;
            needs[*next] = detail::stage_need(specs[*next], ep);
            if (share_table()) needs[emb] = detail::stage_need(specs[emb], ep);
          }
        }
        // The sum can stream more stages than a shared region needs: each takes its streamed stages back, the
        // lightest first, while its fullest tile (the region stamped alone) still fits. (A region of one stage
        // streams what it must: the sum is then its fullest fragment, which its fullest tile holds.)
        for (std::size_t gi = 0; gi < groups.size(); ++gi) {
          if (groups[gi].size() < 2) continue;
          for (auto it = order[gi].rbegin(); it != order[gi].rend(); ++it) {
            if (!specs[*it].streamed) continue;
            specs[*it].streamed = false;
            share_table();
            detail::Emitter alone(ep, fabric.grid());
            for (std::size_t i : groups[gi]) alone.add(specs[i]);
            if (fullest(alone, gi).total() > cap) {
              specs[*it].streamed = true;
              share_table();
              break;
            }
            needs[*it] = detail::stage_need(specs[*it], ep);
            if (may_share) needs[emb] = detail::stage_need(specs[emb], ep);
            stamped.reset();
          }
        }
      }
    }
    std::int64_t streamed_stages = 0;
    for (const auto& s : specs) streamed_stages += s.streamed;
    if (streamed_stages > 0 && spec.io_channels < 1)
      throw InputError(fmt::format("{} stage(s) must stream their weights but wafer '{}' has no edge I/O channels "
                                   "(io_channels = 0); {}",
                                   streamed_stages, spec.name, [&] {
                                     const auto n = suggest_wafers();
                                     return n ? fmt::format("use --wafers {}", *n) : no_count();
                                   }()));

    const StageSpec& f = specs.front();
    const StageSpec& l = specs.back();
    // Where the step ends: the last stage's residual tile (bands), or the final root of its allreduces.
    const hw::Coord done_tile = mesh ? detail::meshgemv_done_tile(l.region, ep)
                                     : hw::Coord{detail::residual_x(l.region), l.region.rect.y0 + l.region.rect.h - 1};
    const firmware::Color done_color = mesh ? detail::mesh_color::kDone : detail::color::kDone;

    if (opt.plan_only) {  // MapOptions::plan_only: the task count (and meshgemv's done tile's program)
      firmware::Image img;
      img.grid = fabric.grid();
      img.layer_names = layer_names;
      img.op_names = detail::op_names();
      img.tile_program.assign(img.grid.size(), firmware::kIdle);
      img.done_tile = done_tile;
      img.done_color = done_color;
      img.done_arrivals = 1;
      WaferReport wr;
      for (std::size_t i = 0; i < specs.size(); ++i) wr.task_runs += needs[i].tasks;
      if (mesh) {
        firmware::Program prog;
        // (a stage the same as the one before but for its layer: that one's fragment with its layer, as the
        // Emitter relabels them, rather than the stage's layout and fragment built again)
        const StageSpec* before = nullptr;
        detail::Fragment before_fr;
        for (const auto& s : specs) {
          std::optional<detail::Fragment> copy;
          if (before && detail::same_but_layer(s, *before)) copy = detail::relabelled(before_fr, before->layer, s.layer);
          detail::Fragment fr = copy ? std::move(*copy) : detail::meshgemv_fragment_at(s, ep, img.done_tile);
          prog.tasks.insert(prog.tasks.end(), fr.tasks.begin(), fr.tasks.end());
          before_fr = std::move(fr), before = &s;
        }
        img.programs.push_back(std::move(prog));
        img.tile_program[img.grid.index(img.done_tile)] = 0;
        wr.tiles_used = std::int64_t(f.region.rect.w) * f.region.rect.h;
      }
      out.images.push_back(std::move(img));
      out.wafers.push_back(wr);
      continue;
    }

    // ---- emit ----------------------------------------------------------------------------------------------
    auto emit = [&](std::int64_t& stream_bytes) {
      if (!stamped) {
        stamped.emplace(ep, fabric.grid());
        for (const auto& s : specs) stamped->add(s);
      }
      detail::Emitter& em = *stamped;
      firmware::Image img = em.finish(layer_names);
      stream_bytes = em.stream_bytes();
      // What starts the step: token ids at the embedding's residual column, or the previous wafer's output.
      for (std::int32_t r = 0; r < f.region.rect.h; ++r) {
        firmware::Injection inj;
        inj.tile = {detail::residual_x(f.region), f.region.rect.y0 + r};
        if (f.kind == StageKind::Embedding) {
          inj.color = detail::color::kToken;
          inj.wavelets = std::uint32_t(std::max<std::int64_t>(1, ep.token_vectors() * 4 / spec.wavelet_bytes));
        } else {
          inj.color = detail::color::kResIn;
          const std::int64_t vectors = f.kind == StageKind::Head ? ep.sequences() : ep.token_vectors();
          std::int64_t bytes = detail::split(model.hidden, f.region.rect.h, r) * vectors * kActivationBytes;
          inj.wavelets = std::uint32_t(std::max<std::int64_t>(1, (bytes + spec.wavelet_bytes - 1) / spec.wavelet_bytes));
        }
        img.start.push_back(inj);
      }
      if (mesh)
        for (auto& inj : img.start) inj.tile.x = f.region.rect.x0 + f.region.rect.w - 1, inj.color = detail::mesh_color::kToken;
      img.done_tile = done_tile;
      img.done_color = done_color;
      img.done_arrivals = 1;
      return img;
    };
    firmware::Image img;
    std::int64_t stream_bytes = 0;
    if (same_wafer != emitted.end()) {
      img = out.images[same_wafer->wafer];
      img.layer_names = layer_names;
      stream_bytes = same_wafer->stream_bytes;
#ifndef NDEBUG
      std::int64_t emitted_bytes = 0;
      if (emit(emitted_bytes) != img || emitted_bytes != stream_bytes)
        throw std::logic_error(fmt::format("mapping: wafer {} is not wafer {} renamed", w, same_wafer->wafer));
#endif
    } else {
      img = emit(stream_bytes);
      emitted.push_back({planned, specs, needs, std::size_t(w), stream_bytes});
    }

    // ---- figures --------------------------------------------------------------------------------------------
    WaferReport wr;
    std::vector<std::int64_t> uses(img.programs.size(), 0);
    for (std::uint32_t p : img.tile_program)
      if (p != firmware::kIdle) ++uses[p], ++wr.tiles_used;
    double sum = 0;
    for (std::size_t p = 0; p < img.programs.size(); ++p) {
      const auto& prog = img.programs[p];
      wr.sram_max = std::max<std::int64_t>(wr.sram_max, prog.sram.total());
      sum += double(prog.sram.total()) * double(uses[p]);
      wr.colors_used = std::max(wr.colors_used, firmware::colors_used(prog));
      wr.firmware_bytes += program_bytes(prog);
      wr.task_runs += std::int64_t(prog.tasks.size()) * uses[p];
    }
    wr.sram_mean = wr.tiles_used ? sum / double(wr.tiles_used) : 0;
    wr.programs = img.programs.size();
    wr.streamed_bytes_per_step = stream_bytes;
    wr.io_channels_used = std::min<std::int64_t>(spec.io_channels, streamed_stages);
    wr.egress_bytes_per_token = w + 1 < opt.wafers ? model.hidden * ep.token_vectors() * kActivationBytes : 0;
    if (wr.sram_max > spec.sram_bytes)
      throw InputError(fmt::format("wafer {}: a tile needs {} of SRAM; a tile has {}; try {}", w,
                                   kb(double(wr.sram_max)), kb(cap), remedy()));
    if (wr.colors_used > spec.colors)
      throw InputError(fmt::format("the mapping needs {} colors on one tile but wafer '{}' routes {}; use a wafer "
                                   "with more colors",
                                   wr.colors_used, spec.name, spec.colors));

    for (std::size_t i = 0; i < specs.size(); ++i) {
      StageReport sr;
      sr.name = specs[i].name;
      sr.wafer = w;
      sr.region = specs[i].region.rect;
      sr.mirrored = specs[i].region.mirrored;
      sr.streamed = specs[i].streamed;
      sr.weight_bytes = plans[s0 + i].weight_bytes;
      sr.streamed_bytes_per_step = specs[i].streamed ? needs[i].stream_bytes : 0;
      sr.kv_bytes = plans[s0 + i].kv_bytes;
      sr.sram_max = needs[i].worst.total();
      out.stages.push_back(std::move(sr));
      table_shared = table_shared || specs[i].table_in_head;
    }
    if (streamed_stages)
      out.notes.push_back(fmt::format("wafer {}: {} of {} stages stream their weights through MemoryX ({} per step)",
                                      w, streamed_stages, specs.size(), gb(double(wr.streamed_bytes_per_step))));
    out.images.push_back(std::move(img));
    out.wafers.push_back(wr);
  }
  // (what the wafers hold of a tied table: once where the lookup reads the head's, twice where both hold it resident,
  // and no note where either streams it: the streaming note counts those stages)
  const auto resident = [&](std::string_view name) {
    return std::any_of(out.stages.begin(), out.stages.end(), [&](const StageReport& r) { return r.name == name && !r.streamed; });
  };
  if (model.tie_embeddings && table_shared)
    out.notes.push_back("tied embeddings: the table is held once, by the head; the lookup reads it on the same tiles");
  else if (model.tie_embeddings && resident("embedding") && resident("head"))
    out.notes.push_back("tied embeddings: the table is held twice, in the lookup layout and the LM-head layout");
  return out;
}
}  // namespace

}  // namespace wafer::mapper
