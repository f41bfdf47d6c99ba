#pragma once
// The `approx` fidelity: event driven at burst granularity on a calendar queue (docs/design.md section 1).
// Resources with a next-free cycle: every directed link, every core's injection ramp and delivery ramp
// (both kept at the router's end: a ramp's latency lies between it and the core). A burst occupies each
// resource it crosses for lag + 1 cycles; a head that finds a resource busy waits
// (counted apart from transfer time); heads are served first come first served because hops are
// processed as time-ordered events. A multicast occupies each link of its tree once.
// Per tile one 64-byte record, one cache line (its 4 output links' next-free cycles, its 2 ramps' next-free
// cycles, the links' latencies and health copied from the Fabric), and 32 bytes of busy counters kept
// apart; bursts in flight live in a recycled pool, events in the calendar's reused buckets.
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "noc/big_array.h"
#include "noc/calendar.h"
#include "noc/mesh.h"
#include "noc/plan_check.h"
#include "noc/route_step.h"

namespace wafer::noc {

class ApproxMesh final : public Mesh {
 public:
  ApproxMesh(const Fabric& fabric, const MeshParams& params);

  // Network
  void set_client(NetworkClient* client) override {
    client_ = client;
    hint_ = client && client->wants_expect_arrival();
  }
  void send(const BurstSpec& burst, Cycle at) override;
  void timer(Cycle at, std::uint64_t tag) override;
  Cycle run() override;
  Cycle now() const override { return queue_.now(); }
  const NetworkStats& stats() const override { return stats_; }
  bool supports_reuse() const override { return true; }
  bool run_paused() override;
  void pause_at(Cycle at) override { stop_ = std::min(stop_, at); }
  bool describe_state(const TagDescriber& tag, std::vector<std::uint64_t>& out, std::int32_t origin_row = 0) const override;
  void mark(bool log = false) override;
  void unmark() override;
  const std::vector<Reservation>* reservations() const override { return log_on_ ? &log_ : nullptr; }
  void repeat(Cycle period, std::uint64_t times, const Retag& retag, std::int32_t rows = 0) override;

  // Mesh
  Fidelity fidelity() const override { return Fidelity::Approx; }
  std::vector<FlowTiming> execute(const Plan& plan) override;
  void run_until(Cycle limit) override;
  bool idle() const override { return queue_.empty(); }
  void reset() override;
  std::uint64_t link_busy(LinkId l) const override { return busy_[l]; }
  const std::uint64_t* link_busy_data() const override { return busy_.data(); }
  bool tally(const std::vector<std::uint32_t>& group_of_tile, std::size_t groups) override;
  const std::vector<std::uint64_t>* tallied() const override { return tally_on_ ? &tally_ : nullptr; }
  const std::uint8_t* tally_groups() const override { return tally_on_ ? group_.data() : nullptr; }
  std::size_t state_bytes() const override;
  // The per-tile records a hop reads and writes, tile t's at tile_records() + t x kTileRecordBytes (not written
  // when built: the executor's thread behind a step faults them in, core::ExecOptions::populate_behind).
  const void* tile_records() const { return tiles_.data(); }
  static constexpr std::size_t kTileRecordBytes = 64;

 private:
  static constexpr std::uint32_t kNone = 0xFFFFFFFFu;
  enum class Kind : std::uint8_t { Inject, Node, PlanNode, PlanChain, Timer };
  struct Event {
    std::uint32_t a;     // burst (Timer: tag low bits)
    std::uint32_t b;     // x | y << 16 (Node) / route node slot (PlanNode) / route node index (PlanChain) /
                         // tag high bits (Timer)
    std::uint32_t c;     // Node, PlanNode: zero-load head latency accumulated so far; PlanChain: the link the
                         // node's route edge crosses; Inject: the source tile (records fetched ahead from the
                         // event alone)
    Kind kind;
    Dir in;              // direction travelled to arrive (Ramp at the source)
  };
  // Hot fields first (routing and occupancy read them every hop): one cache line; the rest at delivery.
  struct PlanRoute {
    const RouteEdge* route;  // the flow's route
    std::uint32_t edges;     // its length
    TileIndex sink;          // a chain's one sink (a tree's nodes say which are sinks)
    std::uint32_t path;      // a chain: zero-load head latency to the node being processed
  };
  struct alignas(64) Burst {
    union {
      Target target;  // Network bursts (flow == kNone)
      PlanRoute plan; // Plan bursts
    };
    std::uint32_t lag;
    std::uint32_t wavelets;
    std::uint32_t refs;     // pending events
    std::uint32_t flow;     // Plan flow, kNone for Network sends
    TileIndex src;
    Cycle inject;
    Cycle head, tail, wait;
    std::uint64_t tag;
    Coord src_c;
    std::uint32_t hops;     // Network bursts: link occupations so far (added to the statistics at the end)
    Color color;            // Network bursts: for NetworkClient::expect_arrival
  };
  static_assert(sizeof(Burst) == 128);

  void handle(Cycle now, const Event& e);
  template <bool kHint>
  void run_loop();  // up to stop_ (which a handler may lower: pause_at)
  void run_loop_any() {
    if (hint_) run_loop<true>();
    else run_loop<false>();
  }
  template <bool kHint>
  void inject(Cycle now, std::uint32_t b);
  void prefetch(const Event& e) const;
  template <bool kHint>
  void node(Cycle now, std::uint32_t b, Coord here, Dir in, std::uint32_t path);
  void plan_node(Cycle now, std::uint32_t b, std::uint32_t slot, std::uint32_t path);
  void plan_chain(Cycle now, std::uint32_t b, std::uint32_t j, LinkId link);
  // Occupies link (tile, d) from `now`; returns when the head reaches the next router.
  Cycle cross(Cycle now, Burst& br, TileIndex tile, Dir d);
  void unicast_target(std::uint32_t b, Coord d);
  void launch(std::uint32_t b, const BurstSpec& spec, Cycle at);
  void send_slow(const BurstSpec& spec, Cycle at);
  void deliver(Cycle now, std::uint32_t b, TileIndex tile, std::uint32_t path);
  // NetworkClient::expect_arrival for a head about to reach `next` (a unicast's sink, any multicast tile).
  [[gnu::noinline]] void hint_arrival(std::uint32_t b, TileIndex next);
  // A burst a tile sends to itself (no route: a local task activation) pays no ramp latency.
  static bool self_send(const Burst& br) {
    return br.flow == kNone ? br.target.kind == Destination::Kind::Tile && br.target.dst == br.src : br.plan.edges == 0;
  }
  // Drops a reference; the last one finishes the burst (a Network burst here; a Plan flow in finish()).
  void release(std::uint32_t b) {
    Burst& br = bursts_[b];
    if (--br.refs != 0) return;
    if (br.flow != kNone) return finish(b);
    ++stats_.bursts;
    stats_.wait_cycles += br.wait;
    stats_.transfer_cycles += br.tail - br.inject - br.wait;
    stats_.link_traversals += br.hops;
    stats_.wavelet_link_cycles += std::uint64_t(br.hops) * br.wavelets;
    free_bursts_.push_back(b);
  }
  [[gnu::noinline]] void finish(std::uint32_t b);  // a Plan flow's burst is done: statistics, timing, recycle
  std::uint32_t alloc_burst();
  void plan_arrival(std::uint32_t flow, TileIndex sink, Cycle head, Cycle tail);
  void plan_ready(std::uint32_t flow, Cycle now);

  NetworkClient* client_ = nullptr;
  bool hint_ = false;  // the client wants NetworkClient::expect_arrival
  Cycle ramp_ = 0;  // MeshParams::ramp_latency
  Calendar<Event> queue_;
  NetworkStats stats_;
  Cycle last_event_ = 0;
  Cycle stop_ = ~Cycle(0);  // the running loop's limit
  // mark() .. repeat() or unmark(). The mark's link counters are saved a row at a time, the first time the
  // window books a link of that row (book(), before the booking), so a mark costs what its window touches
  // rather than a copy of every counter; the tiles whose resources the window reserves are kept as a range,
  // and with the tiles busy beyond the mark's cycle (found by the describe_state of that cycle) bound the
  // passes over busy resources (describe_state, repeat).
  NetworkStats mark_stats_;
  bool marked_ = false;
  // The saved rows' counters as at the mark; the others are never read, so never written (left
  // uninitialised: on wse3 28 MB that would otherwise be zeroed and paged in).
  std::unique_ptr<std::uint64_t[]> mark_busy_;  // (allocated at the first mark, busy_.size())
  std::vector<std::uint8_t> row_saved_;      // per row: saved since the mark
  std::vector<std::uint32_t> saved_rows_;    // ... those rows
  TileIndex touched_lo_ = 0, touched_hi_ = 0;  // tiles [lo, hi) whose resources the window reserved
  // Tiles [lo, hi) holding every resource busy beyond cycle `at` (describe_state; kept by mark when it is
  // the same cycle).
  mutable TileIndex busy_lo_ = 0, busy_hi_ = 0;
  mutable Cycle busy_at_ = ~Cycle(0);
  TileIndex mark_lo_ = 0, mark_hi_ = 0;  // the same at the mark
  // Tiles [lo, hi) that may hold a resource busy beyond now: every tile unless marked.
  std::pair<TileIndex, TileIndex> busy_bound() const {
    if (!marked_) return {0, TileIndex(tiles_.size())};
    return {std::min(mark_lo_, touched_lo_), std::max(mark_hi_, touched_hi_)};
  }
  // f(tile) for every tile of [range) with a resource busy beyond `now`, keeping their range as the tiles busy
  // at `now` (busy_lo_, busy_hi_, busy_at_).
  template <class F>
  void each_busy_tile(Cycle now, std::pair<TileIndex, TileIndex> range, F&& f) const {
    busy_lo_ = TileIndex(tiles_.size()), busy_hi_ = 0;
    for (TileIndex tile = range.first; tile < range.second; ++tile) {
      if (latest_free(tiles_[tile]) <= now) continue;  // (most tiles: one test)
      busy_lo_ = std::min(busy_lo_, tile), busy_hi_ = tile + 1;
      f(tile);
    }
    busy_at_ = now;
  }
  void touch_tile(TileIndex t) {
    touched_lo_ = std::min(touched_lo_, t), touched_hi_ = std::max(touched_hi_, t + 1);
  }
  void save_row(TileIndex tile);
  bool log_on_ = false;             // mark(true): cross() logs its reservations
  std::vector<Reservation> log_;
  bool tally_on_ = false;               // tally(): the busy cycles are also summed per group
  std::vector<std::uint8_t> group_;     // tally(): per tile, its group (at most 256: a small table)
  std::vector<std::uint64_t> tally_;    // tally(): per group, its links' busy cycles
  bool side_ = false;                   // marked_, log_on_ or tally_on_: a hop's booking has more to do (book())
  void sides() { side_ = marked_ || log_on_ || tally_on_; }
  void book(Cycle now, TileIndex tile, unsigned k, Cycle occ);
  void tally_add(std::size_t link, std::uint64_t cycles) {
    if (tally_on_) tally_[group_[link / 4]] += cycles;
  }
  // What a hop reads and writes, in one cache line (the busy counters, written only, live apart). All zero for a
  // working tile whose links are one hop each and idle, so the array is not written when built but for the
  // others (a new mapping reads as zero: its pages are faulted in by the step, or by the executor's thread behind
  // it, rather than while a step waits for the mesh).
  struct alignas(64) TileRes {
    Cycle link_free[4];         // per output link (Dir N, E, S, W): first cycle it is free
    Cycle ramp_in, ramp_out;    // injection / delivery ramp: first cycle free
    std::uint16_t extra[4];     // latency beyond hop_latency: hop_latency x (physical hops - 1) (latency())
    std::uint8_t bad;           // bit d: link d unusable; kRouterBad: the router failed
  };
  static constexpr std::uint8_t kRouterBad = 16;
  static_assert(sizeof(TileRes) == kTileRecordBytes);
  Cycle latency(const TileRes& r, unsigned k) const { return hop_ + r.extra[k]; }  // link k's, in cycles
  Cycle hop_ = 0;  // MeshParams::hop_latency
  // A tile's resources with a next-free cycle (the 4 links, the injection and delivery ramps), for the
  // passes over all of them (reuse: describe_state, repeat).
  static constexpr std::size_t kResources = 6;
  static std::array<Cycle*, kResources> resources(TileRes& r) {
    return {&r.link_free[0], &r.link_free[1], &r.link_free[2], &r.link_free[3], &r.ramp_in, &r.ramp_out};
  }
  static Cycle latest_free(const TileRes& r) {  // the latest of them
    return std::max({r.link_free[0], r.link_free[1], r.link_free[2], r.link_free[3], r.ramp_in, r.ramp_out});
  }
  static std::uint32_t pack(Coord c) { return std::uint32_t(c.x) | std::uint32_t(c.y) << 16; }
  static Coord unpack(std::uint32_t v) { return {std::int32_t(v & 0xFFFFu), std::int32_t(v >> 16)}; }
  Coord coord(TileIndex t) const {
    const std::uint32_t y = div_m_ ? std::uint32_t((std::uint64_t(t) * div_m_) >> 40) : t / width_;
    return {std::int32_t(t - y * width_), std::int32_t(y)};
  }
  std::uint64_t div_m_ = 0;  // see coord(); 0: divide
  ZeroedArray<TileRes> tiles_;
  bool tiles_used_ = false;  // reset(): a step may have booked the tiles' resources
  // Per LinkId: cycles the link carried wavelets (written, rarely read). Not written when built (a new mapping
  // reads as zero; busy_written_: reset() clears it once a step may have written it).
  ZeroedArray<std::uint64_t> busy_;
  bool busy_written_ = false;
  std::uint32_t width_ = 0, height_ = 0;
  bool fault_free_ = false;          // the fabric has no faults (Fabric::fault_free): every router works
  TileIndex step_[4] = {};           // index offset to the neighbour N, E, S, W (modulo 2^32)
  std::vector<Burst> bursts_;
  std::vector<std::uint32_t> free_bursts_;

  // Plan flows come in two shapes. A chain (one sink, every route edge continuing the one before: every
  // unicast) is walked straight from its Plan route, node j being the router route edge j leaves (the last
  // node: where the last edge ends) -- nothing is built for it. Any other flow (a multicast tree, or a
  // chain delivering to several sinks) is flattened into route-node records appended to one array:
  // node slot base[f] is flow f's source, base[f] + 1 + e the end of its edge e. The edges leaving a node
  // are its children, linked first-child / next-sibling in route order (slot 0 is a placeholder, so 0 ends
  // a list).
  struct PNode {
    TileIndex tile;      // the node's router
    std::uint32_t first; // first child slot, 0 = none
    std::uint32_t next;  // next sibling slot, 0 = none
    Dir in;              // the direction the edge leading here leaves its parent (Ramp at the source)
    std::uint8_t sink;   // the tile's core receives the burst
  };
  // Plan execution state (empty outside execute()).
  struct PlanState {
    const Plan* plan = nullptr;
    std::vector<std::uint32_t> base;     // per flow: its source's node slot; kNone for a chain
    std::vector<PNode> nodes;
    std::vector<std::uint32_t> last;     // build scratch: per node of a flow, its last child so far
    std::vector<std::uint32_t> dep_start;  // plan_dependents
    std::vector<PlanDep> deps;
    std::vector<std::uint32_t> pending;  // per flow: triggers not yet satisfied
    std::vector<Cycle> start_min, tail_min;
    std::vector<FlowTiming> out;
    std::vector<std::uint8_t> done;
  } ps_;
  bool build_plan(const Plan& plan);
  std::vector<std::uint32_t> sink_mark_;  // per tile, build_plan's scratch (sized on first use)
  std::uint32_t mark_stamp_ = 0;
};

}  // namespace wafer::noc
