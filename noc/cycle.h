#pragma once
// The `cycle` reference fidelity: wavelet by wavelet, cycle by cycle. Every router has one input queue per
// (input port, color) of `queue_depth` wavelets; an output sends to a neighbour only with a credit for
// that queue (credits return the cycle after the downstream queue frees a slot), so a full queue pushes
// back along the path. Output ports are allocated per burst (wormhole): a burst's head takes every output
// port it needs at this router at once (a multicast fans out to several), round-robin among the input
// queues whose heads are waiting, and releases them when its tail has passed. A multicast wavelet leaves
// its queue once every one of its outputs has taken it. Ramps carry one wavelet per cycle; a core's sends
// leave in order (its source queue is unbounded: source queueing is counted in latency). Each ramp has
// ramp_latency cycles between its router's end, where it is served, and the core: a wavelet the core lets
// go at t enters the router's ramp queue at t + ramp_latency at the earliest, one the router hands to the
// delivery ramp at t reaches the core at t + ramp_latency (a burst to the tile itself: no latency).
// Timing rules are those of noc/mesh.h, so on an idle mesh both fidelities give the same cycles.
// Network clients hear of an arrival when its tail is handed to the delivery ramp (head and tail cycles at
// the core both given), or, with report_heads(true), of a unicast as soon as its head is (see there).
#include <cstdint>
#include <queue>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "noc/mesh.h"
#include "noc/plan_check.h"
#include "noc/route_step.h"

namespace wafer::noc {

// The cycle model found wavelets that can never move (std::runtime_error: as the watchdog's, an internal error in a
// run whose traffic the mapper made; `noc`'s synthetic traffic may deadlock of itself, and says so as bad input).
struct Deadlock : std::runtime_error {
  Deadlock(const std::string& what, std::string found) : std::runtime_error(what), found(std::move(found)) {}
  std::string found;  // what was found, without the "cycle model: " before it
};

class CycleMesh final : public Mesh {
 public:
  // Throws hw::InputError when the mesh is wider or taller than kCycleMaxSide (before allocating).
  CycleMesh(const Fabric& fabric, const MeshParams& params);

  void set_client(NetworkClient* client) override { client_ = client; }
  void send(const BurstSpec& burst, Cycle at) override;
  void timer(Cycle at, std::uint64_t tag) override;
  Cycle run() override;
  Cycle now() const override { return now_; }
  const NetworkStats& stats() const override { return stats_; }

  Fidelity fidelity() const override { return Fidelity::Cycle; }
  std::vector<FlowTiming> execute(const Plan& plan) override;
  void run_until(Cycle limit) override;
  bool idle() const override;
  void reset() override;
  std::uint64_t link_busy(LinkId l) const override { return link_busy_[l]; }
  const std::uint64_t* link_busy_data() const override { return link_busy_.data(); }
  std::size_t state_bytes() const override;

  // Report unicast Network arrivals when the head is handed to the sink's delivery ramp instead of when
  // the tail is (the call still carries both cycles at the core). By then the burst holds every output
  // port of its one path until its tail passes (wormhole allocation), so nothing else can delay it:
  // wavelet j reaches the core at max(wavelet j-1 + 1, its release at the source + the path's latency,
  // both ramps included), and the tail's cycle is max(head + wavelets - 1, the tail's release at the
  // source + path latency). The tail is checked against that when it arrives (std::logic_error if the
  // model ever broke the rule). This lets a client stream on behind the
  // head (reduce-and-forward chains in the tile cores), as on the machine; multicasts, whose branches can
  // still stall each other after one sink has its head, are reported at the tail either way. Off by
  // default; survives reset().
  void report_heads(bool on) { report_heads_ = on; }

 private:
  static constexpr std::uint32_t kNone = 0xFFFFFFFFu;
  static constexpr std::uint32_t kPorts = 5;  // N, E, S, W, Ramp (as hw::Dir)
  struct Wavelet {
    std::uint32_t burst;
    std::uint32_t edge;   // Plan: the route edge it arrived on (kNone at the source); Network: unused
    std::uint32_t index;  // 0 = head, wavelets - 1 = tail
    std::uint32_t path;   // zero-load latency accumulated (meaningful for the head)
  };
  struct Queue {  // one (router, input port, color) queue
    std::uint32_t first = 0;  // ring storage offset in ring_
    std::uint32_t router = 0;
    std::uint8_t port = 0;
    Color color = 0;
    std::uint16_t head = 0, count = 0;
    std::uint8_t need = 0;    // outputs the current burst takes at this router (bit per port)
    std::uint8_t done = 0;    // outputs that already took the front wavelet
    bool routed = false;      // `need` and `out_*` hold the current burst's fan-out
    bool locked = false;      // holds every output in `need`
    std::uint32_t out_edge[kPorts]{};
  };
  struct Burst {
    std::uint64_t tag = 0;
    Target target;
    TileIndex src = 0;
    std::uint32_t wavelets = 1, lag = 0, flow = kNone, sinks_left = 0, next = 0;
    Color color = 0;
    Cycle ready = 0, inject = 0, head = 0, tail = 0, wait = 0;
    Cycle promised = 0;  // report_heads: the tail cycle reported with the head (unicast)
    bool self = false;   // sent to its own tile (no route): no ramp latency
  };
  struct InFlight {
    std::uint32_t router, port;
    Wavelet w;
  };
  struct Pending {
    Cycle t;
    std::uint64_t seq;
    std::uint32_t burst;  // kNone: a timer
    std::uint64_t tag;
    bool operator>(const Pending& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };

  void step();  // one cycle
  Cycle ramp(const Burst& b) const { return b.self ? 0 : ramp_; }  // each ramp's latency for this burst
  std::uint32_t queue_of(std::uint32_t router, std::uint32_t port, Color c);
  bool push_wavelet(std::uint32_t router, std::uint32_t port, Color c, const Wavelet& w);
  void route_front(std::uint32_t router, std::uint32_t port, Queue& q);
  void delivered(std::uint32_t router, const Wavelet& w);
  Cycle wavelet_ready(const Burst& b, std::uint32_t j) const;
  void enqueue_ready(std::uint32_t b, Cycle t);
  void finish_burst(std::uint32_t b);
  void plan_trigger(std::uint32_t flow, TileIndex sink, Cycle at, Trigger::Kind kind);
  void wavelet_arrival(std::uint32_t flow, TileIndex sink, Cycle t);

  NetworkClient* client_ = nullptr;
  Cycle ramp_ = 0;  // MeshParams::ramp_latency
  NetworkStats stats_;
  Cycle now_ = 0, last_event_ = 0, last_progress_ = 0;
  std::uint32_t colors_ = 1, depth_ = 8, max_latency_ = 1;
  std::uint64_t seq_ = 0;
  std::size_t tiles_ = 0;

  std::vector<std::uint32_t> queue_slot_;   // per (router, port, color): index into queues_, kNone = never used
  std::vector<Queue> queues_;
  std::vector<Wavelet> ring_;
  std::vector<std::uint16_t> credits_;      // per (router, mesh output port, color)
  std::vector<std::uint32_t> out_owner_;    // per (router, port): owning queue slot, kNone = free
  std::vector<std::uint16_t> rr_;           // per router: round-robin start among its queues
  std::vector<std::uint32_t> router_load_;  // per router: wavelets in its queues
  std::vector<std::uint32_t> active_;       // routers with wavelets
  std::vector<std::uint8_t> in_active_;
  std::vector<std::vector<std::uint32_t>> router_queues_;  // per router: its allocated queue slots
  std::vector<std::vector<InFlight>> links_;  // ring by arrival cycle
  std::vector<std::uint32_t> credit_returns_;
  std::vector<std::uint64_t> link_busy_;
  std::vector<Cycle> ramp_head_;            // per router: head cycle of the burst being delivered
  std::vector<std::queue<std::uint32_t>> source_;  // per tile: bursts ready to inject, in order
  std::vector<std::uint32_t> sources_active_;
  std::vector<std::uint8_t> in_sources_;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> pending_;
  std::vector<Burst> bursts_;
  std::vector<std::uint32_t> free_bursts_;
  std::size_t live_ = 0;      // bursts not finished
  std::size_t in_flight_ = 0; // wavelets on links
  std::uint64_t moves_ = 0;   // wavelets moved (deadlock watchdog)
  // Whether this cycle changed anything or waits on time (a link crossing, a pending event, a source wavelet not
  // yet due, an output allocated or taken, a wavelet moved). A cycle with wavelets waiting, none on a link, and no
  // change is a deadlock: they wait for ports and credits only moves release, so no later cycle differs.
  bool changed_ = false;
  bool report_heads_ = false;

  struct PlanState {
    const Plan* plan = nullptr;
    PlanIndex index;
    std::vector<std::uint32_t> pending;
    std::vector<Cycle> start_min;
    std::vector<std::uint8_t> streamed;  // per flow: some flow streams out of it (keep wavelet arrivals)
    std::unordered_map<std::uint64_t, std::vector<Cycle>> arrivals;  // (flow, sink) -> wavelet arrival cycles
    std::vector<FlowTiming> out;
    std::vector<std::uint8_t> done;
  } ps_;
};

}  // namespace wafer::noc
