#include "apps/point_cache.h"

#include "noc/big_array.h"

#include <malloc.h>

#include <algorithm>
#include <limits>

namespace wafer::apps {

void keep_freed_memory() {
#if defined(__GLIBC__)
  // Blocks above the mmap threshold (at most 32 MiB in glibc) get mappings of their own, unmapped when freed:
  // every point would fault its hundreds of MB of task slots and burst records in again, page by page, each
  // zeroed by the kernel (most of a wse3 point's "elaboration"). From the heap, and with no trimming of its
  // top, a freed block is there for the next point's allocation of the same size.
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
  // One heap for every thread (the wafers a step emulates side by side, sim::StepOptions::threads): a thread's
  // own arena would map and fault in its arrays afresh rather than take what the other steps freed. The
  // threads allocate little once a step runs, so they hardly contend for it.
  mallopt(M_ARENA_MAX, 1);
#endif
  noc::keep_huge_blocks(true);  // the huge-page arrays map on their own (noc/big_array.h)
}

void PointCache::release() {
  repairs_.clear();
  perfect_.clear();
  maps_.clear();
  if (sim_.keeps_mesh()) sim_.keep_mesh(false), sim_.keep_mesh(true);  // (off drops the kept mesh)
#if defined(__GLIBC__)
  malloc_trim(0);
  // (the trim gave the heap's top back: the stretch it grows by next is advised again, as at the start)
  if (noc::offer_heap_huge_pages().advised) noc::advise_heap_now(noc::kHeapPad);
#endif
  noc::release_huge_blocks();
}

PointCache::PointCache(sim::Simulator& simulator, bool enabled) : sim_(simulator), enabled_(enabled) {
  if (enabled_) keep_freed_memory();
  sim_.keep_mesh(enabled_);
}

std::shared_ptr<const WaferRepairs> PointCache::repaired(const hw::WaferSpec& spec, const hw::DefectGenParams& gen,
                                                         std::uint64_t seed, const std::string& scheme, std::size_t wafers,
                                                         bool* reused) {
  RepairKey key{spec, gen, seed, scheme, wafers};
  if (reused) *reused = false;
  if (enabled_)
    for (const auto& [k, r] : repairs_)
      if (k == key) {
        ++stats_.repairs_reused;
        if (reused) *reused = true;
        return r;
      }
  auto r = std::make_shared<WaferRepairs>();
  for (std::size_t k = 0; k < wafers; ++k) r->maps.push_back(hw::generate_defects(spec, gen, wafer_seed(seed, k)));
  r->repair(spec, scheme);
  ++stats_.repairs_built;
  if (enabled_) {
    repairs_.emplace_front(std::move(key), r);
    if (repairs_.size() > kKeep) repairs_.pop_back();
  }
  return r;
}

std::shared_ptr<const noc::Fabric> PointCache::perfect(const hw::WaferSpec& spec, bool* reused) {
  if (reused) *reused = false;
  if (enabled_)
    for (const auto& f : perfect_)
      if (f->grid() == spec.logical()) {
        if (reused) *reused = true;
        return f;
      }
  auto f = std::make_shared<const noc::Fabric>(noc::Fabric::perfect(spec.logical()));
  if (enabled_) {
    perfect_.push_front(f);
    if (perfect_.size() > kKeep) perfect_.pop_back();
  }
  return f;
}

noc::WaferFabrics view(const PointCache::Fabrics& fabrics) {
  std::vector<const noc::Fabric*> each;
  for (const auto& f : fabrics) each.push_back(f.get());
  return noc::WaferFabrics(std::move(each));
}

std::shared_ptr<const mapper::Mapping> PointCache::map(const DecodePoint& p, Fabrics fabrics, bool* reused) {
  if (reused) *reused = false;
  // (what the mapping reads of a fabric: all of it, or only its grid and working routers)
  const bool links = enabled_ && mapper::mapping_reads_links(p.options);
  auto same = [&](const Fabrics& a) {
    if (a.size() != fabrics.size()) return false;
    for (std::size_t k = 0; k < a.size(); ++k)
      if (a[k] != fabrics[k] && !(links ? *a[k] == *fabrics[k] : a[k]->same_faults(*fabrics[k]))) return false;
    return true;
  };
  if (enabled_)
    for (auto it = maps_.begin(); it != maps_.end(); ++it)
      if (it->options == p.options && it->spec == p.spec && it->model == p.model && same(it->fabrics)) {
        ++stats_.mappings_reused;
        if (reused) *reused = true;
        if (it != maps_.begin()) std::rotate(maps_.begin(), it, std::next(it));  // most recent first
        return maps_.front().mapping;
      }
  auto m = std::make_shared<const mapper::Mapping>(map_point(p, view(fabrics)));
  ++stats_.mappings_built;
  if (enabled_) {
    maps_.push_front(MapEntry{p.spec, p.model, p.options, std::move(fabrics), m});
    if (maps_.size() > kKeep) maps_.pop_back();
  }
  return m;
}

sim::StepResult PointCache::emulate(const DecodePoint& p, const noc::WaferFabrics& fabrics, const mapper::Mapping& mapping) {
  sim::StepResult r = emulate_point(sim_, p, fabrics, mapping);
  ++stats_.steps;
  if (r.mesh_kept) ++stats_.meshes_reused;
  return r;
}

PrefillRun run_prefill(PointCache& cache, const DecodePoint& p, PointCache::Fabrics fabrics, std::int64_t max_chunk,
                       PrefillCache* chunks) {
  // run_prefill moves the mappings it keeps: a copy of the cache's (only a reused one costs a copy more).
  const noc::WaferFabrics each = view(fabrics);
  return run_prefill_with(
      p, max_chunk, chunks, [&](const DecodePoint& q) { return mapper::Mapping(*cache.map(q, fabrics)); },
      [&](const DecodePoint& q, const mapper::Mapping& m) { return cache.emulate(q, each, m); });
}

}  // namespace wafer::apps
