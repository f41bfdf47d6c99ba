#pragma once
// One decode point as a library call: map a model onto a wafer (mapper::map_model) and emulate one decode
// step (sim::Simulator). `wafer-emu decode` and `wafer-emu validate` both run through it.
//
// SystemC elaborates once per process, so there is one sim::Simulator per process: the caller creates it
// and passes the same one to every emulate_point / run_point call.
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "hw/defect_map.h"
#include "hw/repair.h"
#include "hw/wafer_spec.h"
#include "mapper/mapper.h"
#include "mapper/model_config.h"
#include "noc/mesh.h"
#include "noc/routing/fabric.h"
#include "sim/simulator.h"

namespace wafer::apps {

struct DecodePoint {
  hw::WaferSpec spec;
  mapper::ModelConfig model;
  mapper::MapOptions options;
  noc::Fidelity fidelity = noc::Fidelity::Approx;
  bool keep_task_runs = false;  // keep every task run (for a Chrome trace)
  // What the trace and the report add (sim::StepOptions): which runs to keep, the timed critical path,
  // per-region totals and series.
  std::function<bool(std::size_t wafer, hw::TileIndex tile, std::uint32_t runs)> keep_tile;
  bool keep_path = false;
  std::int32_t region_cells = 0, series_cells = 0;
  bool reuse = true;            // sim::StepOptions::reuse (false: `decode --no-reuse`)
  // sim::StepOptions::threads: wafers of a pipeline emulated at once, at most as many as fit in memory
  // together (emulate_point); the results are the same for any number.
  std::uint32_t threads = 1;
  std::atomic<std::uint64_t>* progress = nullptr;  // sim::StepOptions::progress (a progress line's count)
};

// The defect maps of a step's wafers, repaired (docs/mapping.md section 5): none (a perfect fabric every wafer
// shares), one every wafer shares (a file given once), or one per wafer (a pipeline's wafers are distinct
// wafers: their maps are generated from seeds of their own, wafer_seed, or read from a file each).
struct WaferRepairs {
  std::vector<hw::DefectMap> maps;        // empty: no defects given
  std::vector<hw::RepairResult> repairs;  // one per map
  std::vector<noc::Fabric> fabrics;       // one per map, or the perfect one
  std::vector<hw::RepairLinks> links;     // one per map: its logical links as repair left them (hw::repair_links)
  // Repairs `maps` with `scheme` (hw::repair_scheme) and builds their fabrics.
  void repair(const hw::WaferSpec& spec, const std::string& scheme);
  noc::WaferFabrics view() const;
};
// The seed of wafer k's generated defect map: `seed` for wafer 0 (a pipeline's first wafer has the map a single
// wafer of that seed has), hw::derive_seed(seed, k) for the others.
std::uint64_t wafer_seed(std::uint64_t seed, std::size_t wafer);

// Maps the point onto `fabrics` (each wafer's repaired logical mesh, or one they share). Throws hw::InputError with the
// mapper's reason when it refuses.
mapper::Mapping map_point(const DecodePoint& p, const noc::WaferFabrics& fabrics);

// While it lives (`on`), the simulator's mesh model for steps of `spec`'s parameters on `fabric` at `fidelity`
// is built on another thread (sim::Simulator::prepare_mesh), for the caller to map meanwhile: it must not use the
// simulator until join() (or the end of this object's life) and must leave `fabric` as it is. The mesh depends
// on the fabric alone, so a job that maps before it emulates has it ready without waiting for it
// (docs/timing.md "The mesh built while the step is mapped").
class MeshPrepare {
 public:
  MeshPrepare(sim::Simulator& simulator, const hw::WaferSpec& spec, const noc::Fabric& fabric, noc::Fidelity fidelity,
              bool on);
  ~MeshPrepare() { join(); }
  MeshPrepare(const MeshPrepare&) = delete;
  MeshPrepare& operator=(const MeshPrepare&) = delete;
  void join();

 private:
  std::optional<std::thread> thread_;
};

// The memory a run may use, in bytes: WAFER_EMU_MEMORY_MB (MiB) when set (hw::InputError when it is not
// a whole number), else /proc/meminfo's MemAvailable plus what the process's allocator holds free (glibc);
// none when neither can be read.
std::optional<std::uint64_t> memory_available();
// Whether WAFER_EMU_MEMORY_MB sets memory_available() (a fixed figure, which what the process allocates does
// not lower).
bool memory_overridden();
// Bytes this process freed and keeps for its next allocations (its allocator's free memory, glibc, and the
// huge blocks kept: noc::huge_blocks_kept), which memory_available() counts as available to it.
std::uint64_t memory_kept();
// A memory size for a message: "12.4 GB" from 1 GB on, "7 MB" from 1 MB on, else "52 KB".
std::string size_text(std::uint64_t bytes);
// What a run of `tasks` tile tasks lacks in memory: empty when its task records (core::Executor::record_bytes,
// estimated from the task count) fit `avail` (or it is unknown), else "about X GB of task records, more than the
// Y GB available" (size_text).
std::string memory_shortfall(std::int64_t tasks, std::optional<std::uint64_t> avail = memory_available());
// Each wafer's task records in bytes, counted from its image (core::Executor::record_bytes).
std::vector<std::uint64_t> wafer_records(const mapper::Mapping& mapping);
// The task records of `mapping`'s wafers held at once when up to `threads` of them run side by side: the
// largest `threads` wafers' (emulate_points runs fewer at once when those do not fit).
std::uint64_t step_records(const mapper::Mapping& mapping, std::uint32_t threads);
// Refuses (hw::InputError, with the figures) a mapping whose full run would keep more task records than
// memory_available() on some wafer (counted from its image: core::Executor::record_bytes), before anything is
// allocated.
void check_memory(const mapper::Mapping& mapping);

// Task records of a wafer (wafer_records) from which a job is a large one, whose blocks are offered for transparent
// huge pages when WAFER_EMU_HUGE_PAGES is unset (noc::set_large_job). Measured cold on the 2-core VM (bench/cold.sh,
// docs/timing.md "Huge pages and cold memory"): every job that lost by huge pages counts at most 1.5 GB a wafer
// (the default decode 1.4 GB, Mixtral on 3 wafers 1.5 GB); Llama-3.2-1B's square on a 500 x 500 wse3 (5.1 GB), the
// 8B's whole-wafer placement (17.4 GB) and whole square (22.6 GB) on wse3 gain. 4 GB lies between, below the
// smallest that gains.
inline constexpr std::uint64_t kLargeJobRecords = 4'000'000'000ull;
// Whether the job's big blocks (and, from the start, the C library's heap: noc::offer_heap_huge_pages) were offered
// huge pages, and why (WAFER_EMU_HUGE_PAGES, a large job, or the probe's figures: noc::huge_page_probe), for the
// reports' wall-time section.
std::string huge_pages_note();

// The CPUs this process may run on (its affinity mask; at least 1): decode's default --threads.
std::uint32_t cpus_available();

// Emulates one decode step of `mapping` (made by map_point for the same point and fabric), after
// check_memory; its wafers side by side on up to p.threads threads, as many as their largest ones' task records
// fit in memory together (emulate_points).
sim::StepResult emulate_point(sim::Simulator& simulator, const DecodePoint& p, const noc::WaferFabrics& fabrics,
                              const mapper::Mapping& mapping);

// emulate_point for several points (made by map_point on the same wafer spec and fabrics), their wafers side by
// side on up to `threads` threads at once (sim::Simulator::run_batch: the same results as one at a time), as
// many as the largest wafers' task records (over every point) fit in memory together (memory_shortfall).
// `cpus`: the CPUs the caller may use, when more than `threads` (0: `threads`); a wafer emulated alone with a CPU
// left over has it to spare (sim::StepOptions::core_to_spare).
std::vector<sim::StepResult> emulate_points(sim::Simulator& simulator, const std::vector<DecodePoint>& points,
                                            const noc::WaferFabrics& fabrics, const std::vector<const mapper::Mapping*>& mappings,
                                            std::uint32_t threads, std::uint32_t cpus = 0);

// Critical-path cycles attributed to the decoder layers (the stages named "layer 0" .. "layer N-1"), all
// causes summed; the embedding, the head and inter-wafer links are not included.
hw::Cycle decoder_layer_cycles(const sim::StepResult& r);

struct DecodeRun {
  mapper::Mapping mapping;
  sim::StepResult step;
  hw::Cycle layer_cycles_total = 0;  // decoder_layer_cycles(step)
  // Mean critical-path cycles of one decoder layer: the layers' share of the path over the layers emulated.
  double layer_cycles() const {
    return mapping.model.layers > 0 ? double(layer_cycles_total) / double(mapping.model.layers) : 0.0;
  }
};

// map_point + emulate_point on a perfect (defect-free) fabric of the wafer's logical size.
DecodeRun run_point(sim::Simulator& simulator, const DecodePoint& p);

// A step of T = p.options.tokens new tokens per sequence whose last sits at position C = p.options.context:
// a prefill chunk (C = T: a prompt from scratch, the time to first token) or a speculative verify step of T
// draft tokens. Where SRAM does not hold T token vectors (the mapper refuses), it runs in chunks of at most
// c tokens: c = the largest count whose step at context C (the largest KV cache) maps, or `max_chunk` when
// given. The prompt's tokens go c at a time from its first, as a serving engine's chunked prefill takes
// them: ceil(T / c) chunks, the last one the remainder, one after another; chunk j covers positions
// (e_{j-1}, e_j] and runs at context e_j.
struct PrefillChunk {
  std::int64_t first = 0, tokens = 0, context = 0;  // first: index of its first token among the T
  hw::Cycle latency = 0;
};
struct PrefillRun {
  std::int64_t chunk = 0;             // at most this many tokens per chunk
  std::vector<PrefillChunk> chunks;
  sim::StepResult step;               // latency, breakdown, per layer / operator summed over the chunks;
                                      // the other figures are the last chunk's
  mapper::Mapping mapping;            // the last chunk's (empty when it came from the cache)
  std::uint64_t sram_max = 0;         // bytes on the fullest tile of any chunk's mapping (those taken from a cache
                                      // not counted): the first chunks, of the most tokens, often hold more
};
// Emulated chunks kept between calls for the same wafer, model and options but tokens, context and batch
// (apps `table`: prompts ending at the same context whose lengths differ by a multiple of the chunk share
// their last chunks).
struct PrefillCache {
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, sim::StepResult> steps;  // (tokens, context, batch)
  std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> chunk;  // (context, batch) -> largest chunk
  std::int64_t hits = 0, emulated = 0;
};
// (progress: on a terminal, a prefill that runs a while draws one line, chunk by chunk: apps::TaskProgress)
PrefillRun run_prefill(sim::Simulator& simulator, const DecodePoint& p, const noc::WaferFabrics& fabrics,
                       std::int64_t max_chunk = 0, PrefillCache* cache = nullptr, bool progress = false);
// run_prefill's two plans, for a caller that emulates the chunks elsewhere (`table --jobs`): the chunk size
// (T when the step of T = p.options.tokens tokens at context C = p.options.context maps, else the largest
// count that maps, searched once per (context, batch) and kept in cache->chunk; max_chunk as run_prefill),
// with `map(t)` mapping t tokens at context C (throwing hw::InputError when the mapper refuses; *mapped: the
// last call that succeeded was the chunk size's), and the chunks of T tokens ending at C in at most c each.
std::int64_t prefill_chunk_size(const DecodePoint& p, std::int64_t max_chunk, PrefillCache* cache,
                                const std::function<void(std::int64_t)>& map, bool* mapped = nullptr);
std::vector<PrefillChunk> prefill_chunks(std::int64_t T, std::int64_t C, std::int64_t c);
// Whether the mapper's refusal `why` is for size (SRAM, or more elements than one operation takes): a chunk of
// fewer tokens may map. run_prefill then takes the largest count that maps at the refused chunk's context as
// the chunk size and chunks the prompt again (table --jobs alike).
bool refused_for_size(std::string_view why);
// Whether `map` maps: true when it returns, false when the mapper refuses for size (refused_for_size); its
// other refusals are thrown.
bool maps_within_size(const std::function<void()>& map);
// The largest count in [lo, hi) that maps, by bisection over `maps` (taken to hold up to some count): lo maps
// (or is 0, none known to), hi does not; lo when no count above it maps. The last call of `maps` that held is
// the result's (when it is above lo).
std::int64_t largest_that_maps(std::int64_t lo, std::int64_t hi, const std::function<bool(std::int64_t)>& maps);
// A mixed step (p.options.step, docs/mapping.md section 3d) mapped onto `fabrics`. Where it does not fit
// (SRAM), InputError naming --step with how many tokens of its largest prefill part fit beside the other
// sequences (a binary search over mappings), so that prefill can run in chunks; a step is not chunked here.
mapper::Mapping map_mixed(const DecodePoint& p, const noc::WaferFabrics& fabrics);

// The same with the mapping (map_point's part) and the emulation (emulate_point's) given by the caller
// (apps::PointCache: kept mappings, a kept mesh).
PrefillRun run_prefill_with(const DecodePoint& p, std::int64_t max_chunk, PrefillCache* cache,
                            const std::function<mapper::Mapping(const DecodePoint&)>& map,
                            const std::function<sim::StepResult(const DecodePoint&, const mapper::Mapping&)>& emulate);
// Adds b's latency and critical-path figures (causes, per layer, per operator by name, work) into a.
void add_step(sim::StepResult& a, const sim::StepResult& b);

}  // namespace wafer::apps
