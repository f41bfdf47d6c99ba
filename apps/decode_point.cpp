#include "apps/decode_point.h"

#include "hw/random.h"

#include "noc/big_array.h"

#include <fmt/format.h>
#include <malloc.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include "apps/cli.h"
#include "core/executor.h"
#include "hw/error.h"

namespace wafer::apps {

std::optional<std::uint64_t> memory_available() {
  if (const char* env = std::getenv("WAFER_EMU_MEMORY_MB")) {
    char* end = nullptr;
    errno = 0;
    const unsigned long long mb = std::strtoull(env, &end, 10);
    if (*env == '\0' || *env == '-' || *end != '\0' || errno == ERANGE || mb > (1ull << 40))
      throw hw::InputError(fmt::format("WAFER_EMU_MEMORY_MB '{}' is not a whole number of MiB", env));
    return std::uint64_t(mb) << 20;
  }
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit)
    if (key == "MemAvailable:") {
      // Memory this process freed but keeps (apps::keep_freed_memory) is its own to use again, though the
      // kernel counts it as taken: without it a point would be refused after a large one and run after a
      // small one, or with the cache and not without.
      return (kb << 10) + memory_kept();
    }
  return std::nullopt;
}

bool memory_overridden() { return std::getenv("WAFER_EMU_MEMORY_MB") != nullptr; }

std::uint64_t memory_kept() {
  std::uint64_t bytes = noc::huge_blocks_kept();
#if defined(__GLIBC__)
  bytes += std::uint64_t(mallinfo2().fordblks);
#endif
  return bytes;
}

std::string size_text(std::uint64_t bytes) {
  if (bytes >= 1'000'000'000) return fmt::format("{:.1f} GB", double(bytes) / 1e9);
  return bytes >= 1'000'000 ? fmt::format("{:.0f} MB", double(bytes) / 1e6) : fmt::format("{:.0f} KB", double(bytes) / 1e3);
}

namespace {
std::string records_shortfall(std::uint64_t need, std::optional<std::uint64_t> avail) {
  if (!avail || need <= *avail) return {};
  return fmt::format("about {} of task records, more than the {} available", size_text(need), size_text(*avail));
}
}  // namespace

std::vector<std::uint64_t> wafer_records(const mapper::Mapping& mapping) {
  std::vector<std::uint64_t> bytes;
  for (const auto& im : mapping.images) bytes.push_back(core::Executor::record_bytes(im));
  return bytes;
}

std::string memory_shortfall(std::int64_t tasks, std::optional<std::uint64_t> avail) {
  return records_shortfall(core::Executor::record_bytes(std::uint64_t(std::max<std::int64_t>(0, tasks))), avail);
}

namespace {
// The records of the `n` largest of `sorted` (largest first) held at once.
std::uint64_t largest(const std::vector<std::uint64_t>& sorted, std::size_t n) {
  return std::accumulate(sorted.begin(), sorted.begin() + std::ptrdiff_t(std::min(n, sorted.size())), std::uint64_t(0));
}
}  // namespace

std::uint64_t step_records(const mapper::Mapping& mapping, std::uint32_t threads) {
  std::vector<std::uint64_t> bytes = wafer_records(mapping);
  std::sort(bytes.begin(), bytes.end(), std::greater<>());
  return largest(bytes, std::max<std::uint32_t>(1, threads));
}

void check_memory(const mapper::Mapping& mapping) {
  const auto avail = memory_available();
  const std::vector<std::uint64_t> bytes = wafer_records(mapping);
  for (std::size_t k = 0; k < mapping.wafers.size() && k < bytes.size(); ++k)
    if (const std::string lack = records_shortfall(bytes[k], avail); !lack.empty())
      throw hw::InputError(fmt::format(
          "the step would not fit in memory: wafer {} runs {} tile tasks, and a run keeps {} (with or without reuse; "
          "MemAvailable, WAFER_EMU_MEMORY_MB overrides); map onto fewer tiles (another --placement) or over more "
          "--wafers",
          k, mapping.wafers[k].task_runs, lack));
}

std::uint32_t cpus_available() {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
#endif
  return std::max(1u, std::thread::hardware_concurrency());
}

namespace {
// Of `threads` wafers at once, as many as there are (records: their task records, in bytes) and as the largest
// ones' records fit in `avail` together; at least 1.
std::uint32_t threads_for(std::vector<std::uint64_t> records, std::uint32_t threads, std::optional<std::uint64_t> avail) {
  threads = std::max<std::uint32_t>(1, std::min<std::uint32_t>(threads, std::uint32_t(records.size())));
  if (threads == 1) return 1;
  std::sort(records.begin(), records.end(), std::greater<>());
  for (; threads > 1; --threads)
    if (records_shortfall(largest(records, threads), avail).empty())
      break;
  return threads;
}
// The step options of a point (its wafers' images in `images`).
sim::StepOptions step_options(const DecodePoint& p, const mapper::Mapping& mapping) {
  sim::StepOptions so;
  so.fidelity = p.fidelity;
  so.weight_bytes = p.options.weight_bits == 8 ? 1 : 2;
  so.keep_task_runs = p.keep_task_runs;
  so.keep_tile = p.keep_tile;
  so.keep_path = p.keep_path;
  so.region_cells = p.region_cells;
  so.series_cells = p.series_cells;
  so.reuse = p.reuse;
  so.progress = p.progress;
  so.interwafer_bytes = std::uint64_t(std::max<std::int64_t>(1, mapping.interwafer_bytes_per_step()));
  return so;
}
}  // namespace

MeshPrepare::MeshPrepare(sim::Simulator& simulator, const hw::WaferSpec& spec, const noc::Fabric& fabric,
                         noc::Fidelity fidelity, bool on) {
  if (on) thread_.emplace([&simulator, &spec, &fabric, fidelity] { simulator.prepare_mesh(spec, fabric, fidelity); });
}

void MeshPrepare::join() {
  if (thread_) thread_->join(), thread_.reset();
}

void WaferRepairs::repair(const hw::WaferSpec& spec, const std::string& scheme) {
  const hw::RepairScheme& rs = hw::repair_scheme(scheme);
  repairs.clear(), fabrics.clear(), links.clear();
  for (const hw::DefectMap& m : maps) {
    repairs.push_back(rs.repair(spec, m));
    fabrics.push_back(noc::Fabric::from_repair(repairs.back()));
    links.push_back(hw::repair_links(repairs.back()));
  }
}

noc::WaferFabrics WaferRepairs::view() const {
  std::vector<const noc::Fabric*> each;
  for (const noc::Fabric& f : fabrics) each.push_back(&f);
  return noc::WaferFabrics(std::move(each));
}

std::uint64_t wafer_seed(std::uint64_t seed, std::size_t wafer) {
  return wafer == 0 ? seed : hw::derive_seed(seed, std::uint64_t(wafer));
}

mapper::Mapping map_point(const DecodePoint& p, const noc::WaferFabrics& fabrics) {
  return mapper::map_model(p.spec, fabrics, p.model, p.options);
}

sim::StepResult emulate_point(sim::Simulator& simulator, const DecodePoint& p, const noc::WaferFabrics& fabrics,
                              const mapper::Mapping& mapping) {
  return std::move(emulate_points(simulator, {p}, fabrics, {&mapping}, p.threads).front());
}

std::vector<sim::StepResult> emulate_points(sim::Simulator& simulator, const std::vector<DecodePoint>& points,
                                            const noc::WaferFabrics& fabrics, const std::vector<const mapper::Mapping*>& mappings,
                                            std::uint32_t threads, std::uint32_t cpus) {
  if (points.size() != mappings.size()) throw std::logic_error("emulate_points: a mapping per point");
  std::vector<std::uint64_t> records;  // every wafer's task records
  for (const mapper::Mapping* m : mappings) {
    check_memory(*m);
    const std::vector<std::uint64_t> w = wafer_records(*m);
    records.insert(records.end(), w.begin(), w.end());
  }
  if (points.empty()) return {};
  // A job whose largest wafer keeps kLargeJobRecords of task records or more gets huge pages for its blocks
  // unless WAFER_EMU_HUGE_PAGES says otherwise (noc::set_large_job).
  noc::set_large_job(!records.empty() && *std::max_element(records.begin(), records.end()) >= kLargeJobRecords);
  const std::uint32_t fit = threads_for(std::move(records), threads, memory_available());
  std::vector<sim::Simulator::BatchStep> steps;
  for (std::size_t i = 0; i < points.size(); ++i) {
    sim::Simulator::BatchStep st;
    for (const auto& im : mappings[i]->images) st.images.push_back(&im);
    st.opt = step_options(points[i], *mappings[i]);
    st.opt.threads = fit;  // (a step's own wafers, when the steps run one after the other)
    st.opt.core_to_spare = std::max(threads, cpus) > fit;
    steps.push_back(std::move(st));
  }
  return simulator.run_batch(points.front().spec, fabrics, steps, fit);
}

std::string huge_pages_note() {
  const noc::HeapAdvice heap = noc::offer_heap_huge_pages();  // (what was done at the start: not again)
  const std::string offered = heap.advised ? "offered to the big blocks and the heap" : "offered";
  switch (noc::huge_page_advice()) {
    case noc::HugePageAdvice::Huge: return offered + " (WAFER_EMU_HUGE_PAGES=1)";
    case noc::HugePageAdvice::NoHuge: return "not offered (WAFER_EMU_HUGE_PAGES=0)";
    case noc::HugePageAdvice::System: break;
  }
  const noc::HugePageProbe p = noc::huge_page_probe();
  if (p.huge_cheaper())
    return fmt::format("{}, measured cheaper: 2 MiB faulted in as 4 KiB pages took {:.2f} ms, as one huge page {:.2f} ms",
                       offered, p.small_ms, p.huge_ms);
  if (noc::large_job_flag().load(std::memory_order_relaxed)) return "offered to the big blocks: a large job";
  if (!p.ran) return "the system's policy";
  return fmt::format("not offered, measured dearer: 2 MiB faulted in as 4 KiB pages took {:.2f} ms, as one huge page {:.2f} ms",
                     p.small_ms, p.huge_ms);
}

hw::Cycle decoder_layer_cycles(const sim::StepResult& r) {
  constexpr std::string_view kLayer = "layer ";
  hw::Cycle sum = 0;
  for (const auto& n : r.per_layer) {
    const std::string_view name = n.name;
    if (name.size() <= kLayer.size() || !name.starts_with(kLayer)) continue;
    if (!std::all_of(name.begin() + std::ptrdiff_t(kLayer.size()), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    sum += std::accumulate(n.cycles.begin(), n.cycles.end(), hw::Cycle(0));
  }
  return sum;
}

DecodeRun run_point(sim::Simulator& simulator, const DecodePoint& p) {
  const noc::Fabric fabric = noc::Fabric::perfect(p.spec.logical());
  DecodeRun out;
  out.mapping = map_point(p, fabric);
  out.step = emulate_point(simulator, p, fabric, out.mapping);
  out.layer_cycles_total = decoder_layer_cycles(out.step);
  return out;
}

namespace {
void add_named(std::vector<sim::Named>& a, const std::vector<sim::Named>& b) {
  for (const auto& n : b) {
    auto it = std::find_if(a.begin(), a.end(), [&](const sim::Named& x) { return x.name == n.name; });
    if (it == a.end()) {
      a.push_back(n);
      continue;
    }
    for (std::size_t c = 0; c < n.cycles.size(); ++c) it->cycles[c] += n.cycles[c];
  }
}
// A refusal that fewer token vectors per step can cure (SRAM, an op too large for one tile).
bool too_big(const hw::InputError& e) { return refused_for_size(e.what()); }
}  // namespace

bool refused_for_size(std::string_view why) {
  return why.find("SRAM") != std::string_view::npos || why.find("elements in one operation") != std::string_view::npos;
}

bool maps_within_size(const std::function<void()>& map) {
  try {
    map();
    return true;
  } catch (const hw::InputError& e) {
    if (!too_big(e)) throw;
    return false;
  }
}

std::int64_t largest_that_maps(std::int64_t lo, std::int64_t hi, const std::function<bool(std::int64_t)>& maps) {
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    (maps(mid) ? lo : hi) = mid;
  }
  return lo;
}

mapper::Mapping map_mixed(const DecodePoint& p, const noc::WaferFabrics& fabrics) {
  const std::vector<mapper::StepSequence>& step = p.options.step;
  if (step.empty()) throw std::logic_error("map_mixed: not a mixed step");
  try {
    return map_point(p, fabrics);
  } catch (const hw::InputError& e) {
    if (!too_big(e)) throw;
    // The largest prefill part: how many of its tokens fit beside the others (a binary search over mappings)?
    const std::size_t j = std::size_t(std::max_element(step.begin(), step.end(), [](const auto& a, const auto& b) {
                                        return a.tokens < b.tokens;
                                      }) - step.begin());
    const std::int64_t T = step[j].tokens, C = step[j].context;
    DecodePoint q = p;
    auto maps = [&](std::int64_t t) {
      q.options.step[j] = {t, C};
      return maps_within_size([&] { map_point(q, fabrics); });
    };
    // The mapper's reason without its remedy for a model that does not fit at all (weights, wafers).
    std::string why = e.what();
    if (const std::size_t cut = why.find(". The model's weights"); cut != std::string::npos) why.resize(cut);
    if (T == 1 || !maps(1))
      throw hw::InputError(fmt::format("--step {} does not fit, even with one token per sequence: {}",
                                       mapper::to_string(step), e.what()));
    const std::int64_t lo = largest_that_maps(1, T, maps);
    std::vector<mapper::StepSequence> first = step;
    first[j] = {lo, C - T + lo};
    throw hw::InputError(fmt::format(
        "--step {} does not fit in SRAM: at most {} of the {} tokens of sequence {} ({}@{}) fit beside the others; run "
        "its prefill in chunks, the first being --step {} (the mapper: {})",
        mapper::to_string(step), lo, T, j + 1, T, C, mapper::to_string(first), why));
  }
}

void add_step(sim::StepResult& a, const sim::StepResult& b) {
  a.latency += b.latency;
  a.latency_us += b.latency_us;
  for (std::size_t c = 0; c < a.breakdown.cause.size(); ++c) a.breakdown.cause[c] += b.breakdown.cause[c];
  a.breakdown.path_tasks += b.breakdown.path_tasks;
  a.breakdown.path_bursts += b.breakdown.path_bursts;
  add_named(a.per_layer, b.per_layer);
  add_named(a.per_op, b.per_op);
  add_named(a.work_per_op, b.work_per_op);
  a.memoryx_bytes += b.memoryx_bytes, a.memoryx_requests += b.memoryx_requests, a.memoryx_busy_us += b.memoryx_busy_us;
  a.elaboration_s += b.elaboration_s, a.emulation_s += b.emulation_s;
}

PrefillRun run_prefill(sim::Simulator& simulator, const DecodePoint& p, const noc::WaferFabrics& fabrics, std::int64_t max_chunk,
                       PrefillCache* cache, bool progress) {
  std::optional<TaskProgress> line;  // (progress: one line, its words and count renewed chunk by chunk)
  return run_prefill_with(
      p, max_chunk, cache, [&](const DecodePoint& q) { return map_point(q, fabrics); },
      [&](const DecodePoint& q, const mapper::Mapping& m) {
        DecodePoint r = q;
        // (a trace is the last chunk's: the earlier ones keep no runs, which counted against its tile tracks' cap)
        if (q.options.context != p.options.context)
          r.keep_task_runs = false, r.keep_tile = {}, r.keep_path = false, r.series_cells = 0;
        if (!progress) return emulate_point(simulator, r, fabrics, m);
        std::string what = fmt::format("decode: prefill to position {} of {}", q.options.context, p.options.context);
        if (line) line->restart(std::move(what), std::uint64_t(m.task_runs()));
        else line.emplace(std::move(what), std::uint64_t(m.task_runs()));
        r.progress = line->counter();
        return emulate_point(simulator, r, fabrics, m);
      });
}

std::int64_t prefill_chunk_size(const DecodePoint& p, std::int64_t max_chunk, PrefillCache* cache,
                                const std::function<void(std::int64_t)>& map_fn, bool* mapped) {
  const std::int64_t T = p.options.tokens, C = p.options.context, B = p.options.batch;
  if (T < 1 || T > C)
    throw hw::InputError(fmt::format("a step of {} tokens ending at position {}: need 1 <= tokens <= context", T, C));
  auto maps = [&](std::int64_t c) {  // does a chunk of c tokens at context C map? (one token must: its refusal thrown)
    if (c == 1) return map_fn(1), true;
    return maps_within_size([&] { map_fn(c); });
  };
  // The largest chunk that maps: T, else a binary search between 1 (which must map) and T.
  std::int64_t c = max_chunk > 0 ? std::min(max_chunk, T) : T;
  bool mapped_c = false;  // the last map_fn call that succeeded was c's
  if (cache && !max_chunk && cache->chunk.count({C, B})) {
    c = std::min(T, cache->chunk[{C, B}]);
  } else {
    // (a chunk of one token first, which throws when it does not map: a context that does not fit even so, its KV
    // cache alone, is refused at once rather than after mapping the whole prompt, which at 131,072 tokens took 96 s
    // to fail; --chunk N is a cap like T, and searched below alike)
    if (c > 1) maps(1);
    if (maps(c)) {
      mapped_c = true;
    } else {
      c = largest_that_maps(1, c, maps), mapped_c = true;  // the last mapping that succeeded is c's
      if (cache && !max_chunk) cache->chunk[{C, B}] = c;
    }
  }
  if (mapped) *mapped = mapped_c;
  return c;
}

std::vector<PrefillChunk> prefill_chunks(std::int64_t T, std::int64_t C, std::int64_t c) {
  std::vector<PrefillChunk> out;
  for (std::int64_t first = 0; first < T; first += c) {
    const std::int64_t n = std::min(c, T - first);
    out.push_back(PrefillChunk{first, n, C - T + first + n, 0});
  }
  return out;
}

PrefillRun run_prefill_with(const DecodePoint& p, std::int64_t max_chunk, PrefillCache* cache,
                            const std::function<mapper::Mapping(const DecodePoint&)>& map_fn,
                            const std::function<sim::StepResult(const DecodePoint&, const mapper::Mapping&)>& emulate_fn) {
  const std::int64_t C = p.options.context, B = p.options.batch;
  PrefillRun out;
  DecodePoint q = p;
  bool mapped_c = false;  // out.mapping holds the step of c tokens at context C
  std::int64_t c = prefill_chunk_size(
      p, max_chunk, cache,
      [&](std::int64_t t) {  // it keeps the mapping
        q.options.tokens = t, q.options.context = C;
        out.mapping = map_fn(q);
      },
      &mapped_c);
  sim::StepResult sum;  // the chunks' critical-path figures added up
  bool have_last = false;
  // The chunk size fits at context C, the largest KV cache, but an earlier chunk runs at a smaller context, where
  // the placement may cut the stages' regions otherwise (layer-bands' band heights follow the bytes a stage holds,
  // which change with the context): a chunk that does not map there sets the chunk size to the largest that does,
  // and the prompt is chunked again from its first token (the chunks emulated before are kept in `cache`).
  for (bool again = true; again;) {
    again = false;
    out.chunks.clear(), sum = {}, have_last = false, out.sram_max = 0;
    for (PrefillChunk ch : prefill_chunks(p.options.tokens, C, c)) {
      const std::int64_t end = ch.context, n = ch.tokens;
      const auto key = std::make_tuple(n, end, B);
      const bool last = end == C;
      sim::StepResult r;
      if (cache && cache->steps.count(key)) {
        r = cache->steps[key];
        ++cache->hits;
      } else {
        q.options.tokens = n, q.options.context = end;
        mapper::Mapping m;
        if (last && n == c && mapped_c) {
          m = std::move(out.mapping);
        } else {
          try {
            m = map_fn(q);
          } catch (const hw::InputError& e) {
            if (n == 1 || !too_big(e)) throw;
            const std::int64_t lo = largest_that_maps(0, n, [&](std::int64_t t) {
              q.options.tokens = t;
              return maps_within_size([&] { map_fn(q); });
            });
            if (lo == 0) throw;
            c = lo, mapped_c = false, again = true;
            break;
          }
        }
        for (const firmware::Image& im : m.images) out.sram_max = std::max(out.sram_max, sim::check_sram(p.spec, im).max_bytes);
        r = emulate_fn(q, m);
        if (cache) cache->steps[key] = r, ++cache->emulated;
        if (last) out.mapping = std::move(m), have_last = true;
      }
      ch.latency = r.latency;
      add_step(sum, r);
      out.chunks.push_back(ch);
      if (last) out.step = std::move(r);
    }
  }
  out.chunk = c;
  if (!have_last) out.mapping = {};
  // The last chunk's step, its summable figures replaced by the sums over every chunk.
  sim::StepResult& s = out.step;
  s.latency = 0, s.latency_us = 0, s.breakdown.cause = {}, s.breakdown.path_tasks = 0, s.breakdown.path_bursts = 0;
  s.per_layer.clear(), s.per_op.clear(), s.work_per_op.clear();
  s.memoryx_bytes = s.memoryx_requests = 0, s.memoryx_busy_us = 0, s.elaboration_s = s.emulation_s = 0;
  add_step(s, sum);
  return out;
}

}  // namespace wafer::apps
