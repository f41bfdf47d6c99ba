#pragma once
// The mesh timing models behind one interface. Two fidelities (docs/design.md section 1):
//   approx - burst events on a calendar queue; links, injection ramps and delivery ramps are resources
//            with a next-free cycle (noc/approx.h). Handles the full wafer.
//   cycle  - the reference: wavelet by wavelet, cycle by cycle routers with per-color input queues,
//            credits and round-robin wormhole arbitration (noc/cycle.h). Meshes up to 128 x 128.
// Both run the same Plans (noc/routing/plan.h) and serve the same noc::Network (noc/network.h), so tests
// run both on identical workloads. Timing rules shared by both (docs/timing.md):
//   - a head crossing a link of h physical hops takes h x hop_latency cycles; the tail follows `lag`
//     cycles behind (lag = wavelets - 1 unless the source streams slower);
//   - each ramp adds ramp_latency: the injection ramp between the head leaving the core and entering its
//     router, the delivery ramp between the sink's router handing the head to its core and the core
//     having it. Each ramp carries one wavelet per cycle (a resource, so hotspots contend); both serialise
//     at the router's end, in order. A burst a tile sends to itself (no route: a local task activation)
//     still takes its turn on both ramps but pays no ramp latency;
//   - a burst injected at t into an idle mesh reaches a sink k hops away with its head at
//     t + 2 x ramp_latency + k x hop and its tail at that + lag (a burst to itself: head t, tail t + lag).
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "hw/wafer_spec.h"
#include "noc/network.h"
#include "noc/routing/fabric.h"
#include "noc/routing/plan.h"

namespace wafer::noc {

enum class Fidelity : std::uint8_t { Approx, Cycle };
const char* to_string(Fidelity f);
Fidelity parse_fidelity(std::string_view s);  // throws hw::InputError naming the value

// Largest mesh the cycle reference accepts (either side), checked before it allocates anything.
inline constexpr std::int32_t kCycleMaxSide = 128;

struct MeshParams {
  std::uint32_t hop_latency = 1;          // cycles per physical hop (WaferSpec::hop_latency)
  std::uint32_t ramp_latency = 2;         // cycles per ramp, core -> router and router -> core (WaferSpec::ramp_latency)
  std::uint32_t stream_stage_latency = 2; // WaferSpec::stream_stage_latency (used by Plan builders)
  std::uint32_t colors = 24;              // colors a router routes (cycle: input queues per port)
  std::uint32_t queue_depth = 8;          // cycle: wavelets per input queue (raised to cover a link's latency)
  static MeshParams from(const hw::WaferSpec& spec);
  friend bool operator==(const MeshParams&, const MeshParams&) = default;
};

// What a Plan execution reports per flow. For a multicast, head/tail are the latest over its sinks.
struct FlowTiming {
  Cycle ready = 0;   // release and every trigger satisfied: the burst may enter its source's ramp
  Cycle inject = 0;  // its head entered the source's injection ramp (ready + source queueing); it reaches the
                     // router ramp_latency later (at once for a burst to the tile itself)
  Cycle head = 0;    // its head reached the (last) sink's core (after the delivery ramp)
  Cycle tail = 0;    // its tail reached the (last) sink's core
  Cycle wait = 0;    // cycles its head spent waiting for busy links / delivery ramps (max over sinks)
};

class Mesh : public Network {
 public:
  virtual Fidelity fidelity() const = 0;
  const Fabric& fabric() const { return *fabric_; }
  const MeshParams& params() const { return params_; }

  // Runs a Plan to completion on an idle mesh (time restarts at 0) and reports every flow. Throws
  // hw::InputError when a flow's route leaves the grid, uses a failed link or router, or a trigger names
  // a flow that does not exist or does not reach that tile.
  virtual std::vector<FlowTiming> execute(const Plan& plan) = 0;

  // Processes every event before cycle `limit` (for temporally decoupled callers such as MeshModule).
  virtual void run_until(Cycle limit) = 0;
  // True when no event (burst, wavelet or timer) is pending.
  virtual bool idle() const = 0;
  // Back to an idle mesh at cycle 0 with zero statistics (keeps allocations).
  virtual void reset() = 0;

  // Cycles link `l` carried wavelets (occupancy), since the last reset.
  virtual std::uint64_t link_busy(LinkId l) const = 0;
  // The same for every LinkId at once (indexed by LinkId), or null where a model keeps no such array.
  virtual const std::uint64_t* link_busy_data() const { return nullptr; }
  // Link busy cycles summed per group of tiles as they are booked (a trace's counters per region, read
  // many times in a step): after tally(group_of_tile, groups) (one group below `groups` per TileIndex),
  // tallied()[g] is the sum of link_busy over the links leaving group g's tiles, until reset(). A model that
  // does not tally (or not that many groups) returns false and null: sum link_busy instead.
  virtual bool tally(const std::vector<std::uint32_t>& /*group_of_tile*/, std::size_t /*groups*/) { return false; }
  virtual const std::vector<std::uint64_t>* tallied() const { return nullptr; }
  // While tallying: each tile's group (as given to tally(), in a byte: a hop looks it up), else null.
  virtual const std::uint8_t* tally_groups() const { return nullptr; }
  // Bytes of mesh state (per-tile arrays, queues, burst records) currently held.
  virtual std::size_t state_bytes() const = 0;

  // Optional progress report during execute(): called with the current cycle every `every` simulated
  // cycles (not per event).
  void set_progress(void (*fn)(void* ctx, Cycle now), void* ctx, Cycle every = 4096) {
    progress_ = fn, progress_ctx_ = ctx, progress_every_ = every ? every : 1;
  }

 protected:
  Mesh(const Fabric& fabric, const MeshParams& params) : fabric_(&fabric), params_(params) {}
  // Runs until idle in slices, reporting progress between slices.
  void run_with_progress() {
    if (!progress_) {
      run();
      return;
    }
    while (!idle()) {
      run_until(now() + progress_every_);
      progress_(progress_ctx_, now());
    }
  }
  // After a Plan ran: every flow must have run (else its triggers wait on each other).
  static void require_all_ran(const std::vector<std::uint8_t>& done);
  const Fabric* fabric_;
  MeshParams params_;
  void (*progress_)(void*, Cycle) = nullptr;
  void* progress_ctx_ = nullptr;
  Cycle progress_every_ = 4096;
};

// Builds a mesh model over `fabric` (which must outlive it, unchanged: models copy link health and
// latencies when built). Cycle fidelity refuses meshes wider or
// taller than kCycleMaxSide with an InputError before allocating.
std::unique_ptr<Mesh> make_mesh(Fidelity fidelity, const Fabric& fabric, const MeshParams& params);

}  // namespace wafer::noc
