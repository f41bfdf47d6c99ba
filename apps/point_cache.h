#pragma once
// What the points of one process share (docs/studies.md "Processes", docs/timing.md "Reuse across points"):
// `sweep` and `table` run many decode points in one process, and most of a point's start-up does not change
// from one point to the next. A PointCache keeps it, and gives every point exactly the result it would have
// alone (the tests run a study and a table with and without it and compare every output byte):
//
//   - the SystemC elaboration: one sim::Simulator per process (the caller's), as before;
//   - freed memory: the allocator keeps the pages of a point's large arrays (the cores' task slots and burst
//     records, the mesh model's per-tile arrays) for the next point instead of returning them to the kernel,
//     which would hand them back zeroed, one page fault at a time (keep_freed_memory);
//   - the mesh model: reset, not rebuilt, while the repaired fabric, fidelity and mesh parameters stay the
//     same (sim::Simulator::keep_mesh);
//   - the defect map, its repair and the fabric, while the wafer, the defect parameters, the seed and the
//     repair scheme stay the same;
//   - the mapping, while its inputs (wafer, model, options and fabric) stay the same; the fabric compared whole,
//     or, for a placement that reads no link lengths (mapper::mapping_reads_links), its grid and faults alone
//     (noc::Fabric::same_faults), so that the defect maps of a study that repair completely share one mapping.
//
// Off (`--no-cache`), every point is built from scratch as `decode` builds it.
#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "apps/decode_point.h"
#include "hw/defect_map.h"
#include "hw/repair.h"
#include "hw/wafer_spec.h"
#include "mapper/mapper.h"
#include "noc/routing/fabric.h"
#include "sim/simulator.h"

namespace wafer::apps {

// Asks the C library's allocator to keep freed memory in the process (no trimming, no separate mappings for
// large blocks), so that a later allocation of the same size reuses pages already faulted in. Process-wide
// and permanent; peak memory is unchanged (a point frees what it allocated before the next one allocates).
void keep_freed_memory();

class PointCache {
 public:
  // Keeps what it can between the points run through it when `enabled` (then it also calls keep_freed_memory
  // and turns on simulator.keep_mesh); when not, it is a pass-through: map_point, emulate_point, a fresh repair.
  PointCache(sim::Simulator& simulator, bool enabled);
  PointCache(const PointCache&) = delete;
  PointCache& operator=(const PointCache&) = delete;

  bool enabled() const { return enabled_; }
  sim::Simulator& simulator() { return sim_; }

  // The generated defect maps of `wafers` wafers repaired, as decode makes them: wafer k's
  // hw::generate_defects(spec, gen, wafer_seed(seed, k)), then the scheme's repair and the fabric of its logical
  // mesh. `reused` (when given) says whether they were kept from an earlier call.
  std::shared_ptr<const WaferRepairs> repaired(const hw::WaferSpec& spec, const hw::DefectGenParams& gen,
                                               std::uint64_t seed, const std::string& scheme, std::size_t wafers,
                                               bool* reused = nullptr);
  // The perfect fabric of the wafer's logical size.
  std::shared_ptr<const noc::Fabric> perfect(const hw::WaferSpec& spec, bool* reused = nullptr);

  // map_point(p, the fabrics), or the mapping an earlier call made from equal inputs (p.spec, p.model, p.options
  // and the fabrics, each compared whole, the fabrics only in what the mapping reads of them: see the list above;
  // the same fabric object is recognised at once). `fabrics`: each wafer's, or one they share. Nothing is copied:
  // the cache holds the mapping and the fabrics by reference. Refusals are not kept (they throw again).
  using Fabrics = std::vector<std::shared_ptr<const noc::Fabric>>;
  std::shared_ptr<const mapper::Mapping> map(const DecodePoint& p, Fabrics fabrics, bool* reused = nullptr);
  std::shared_ptr<const mapper::Mapping> map(const DecodePoint& p, std::shared_ptr<const noc::Fabric> fabric,
                                             bool* reused = nullptr) {
    return map(p, Fabrics{std::move(fabric)}, reused);
  }
  // emulate_point on the simulator (its StepResult::mesh_kept says whether the mesh model was reused).
  sim::StepResult emulate(const DecodePoint& p, const noc::WaferFabrics& fabrics, const mapper::Mapping& mapping);

  // Gives back what the cache keeps (repairs, fabrics, mappings, the mesh model; the points running now keep
  // theirs) and what the process keeps freed (keep_freed_memory) to the kernel, for another process to use
  // (apps::MemoryGate); the next points build them again. The results stay the same.
  void release();

  // How often each kept thing was reused, and built.
  struct Stats {
    std::int64_t repairs_reused = 0, repairs_built = 0;
    std::int64_t mappings_reused = 0, mappings_built = 0;
    std::int64_t meshes_reused = 0, steps = 0;
  };
  const Stats& stats() const { return stats_; }

 private:
  static constexpr std::size_t kKeep = 2;  // entries of each kind (points that repeat come close together)
  struct RepairKey {
    hw::WaferSpec spec;
    hw::DefectGenParams gen;
    std::uint64_t seed;
    std::string scheme;
    std::size_t wafers;
    friend bool operator==(const RepairKey&, const RepairKey&) = default;
  };
  struct MapEntry {
    hw::WaferSpec spec;
    mapper::ModelConfig model;
    mapper::MapOptions options;
    Fabrics fabrics;
    std::shared_ptr<const mapper::Mapping> mapping;
  };
  sim::Simulator& sim_;
  bool enabled_;
  std::deque<std::pair<RepairKey, std::shared_ptr<const WaferRepairs>>> repairs_;  // newest first
  std::deque<std::shared_ptr<const noc::Fabric>> perfect_;
  std::deque<MapEntry> maps_;
  Stats stats_;
};

// run_prefill (decode_point.h) with its mappings and emulations through `cache`.
PrefillRun run_prefill(PointCache& cache, const DecodePoint& p, PointCache::Fabrics fabrics, std::int64_t max_chunk = 0,
                       PrefillCache* chunks = nullptr);
// The fabrics as the mapper and simulator take them.
noc::WaferFabrics view(const PointCache::Fabrics& fabrics);

}  // namespace wafer::apps
