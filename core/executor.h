#pragma once
// The tile cores of one wafer running one decode step's firmware (firmware/program.h) on any mesh timing
// model (noc::Network). Tiles are compact data (structure of arrays): per tile the cycle its core is free
// and its first task slot; per task slot an arrival counter, its trigger time and its start/end. No
// per-tile heap objects, nothing allocated per event but the burst record of each send.
//
// Semantics (agreed with the mapper):
//  - A burst on color c reaching a tile is credited to the first task, in program order, whose trigger is
//    c and which still needs arrivals. A task runs once per step, when it has `arrivals` bursts:
//    Complete - at the tail of the last; Stream - stream_stage_latency after the head of the last (with
//    one arrival: after the first head). Streamed weights (OpKind::StreamIn) are extra arrivals: a
//    StreamIn op's bytes are requested from the MemoryX port at the start of the step (in layer order)
//    through the edge channel nearest the tile (Manhattan distance to its entry tile); the port and the
//    channel are bandwidth resources (memory/memoryx.h, memory/edge_channels.h) and fetch() returns when
//    the last byte has entered the fabric at the entry tile. The fabric leg is charged analytically, not
//    as a mesh burst: tail at the tile = that + Manhattan hops x hop_latency + ramp_latency (the tile's
//    delivery ramp; one timer event per op, the arrivals kept sorted in the executor with one pending
//    timer). So streamed weights do not contend with activation traffic on individual links (a stated
//    simplification, docs/streaming.md). The task waits for the tail.
//  - A step that streams weights: no task of a tile starts before an earlier task of that tile (program order)
//    that streams weights has started (a task's inputs from its own tile's earlier tasks come through no burst:
//    docs/streaming.md "Order on a tile").
//  - A core runs one task at a time, first come first served by trigger time. Complete tasks:
//    start = max(trigger, core free) + task_overhead; each op costs CostModel::cycles (core/costs.h);
//    the sends are issued in order at the end (the mesh's injection ramp serialises them).
//    Stream tasks are armed in advance (docs/design.md section 1: a chain of N streaming tiles costs about
//    N x (hop + stage latency) + w): their activation and vector setup run while the core waits for the
//    data, so start = max(head + stream_stage_latency, core free + task_overhead + vector setups); they
//    send at their start, the output trailing the input: end = max(start + op bodies, last input tail +
//    stream_stage_latency), lag = max(wavelets - 1, end - start).
//  - Fixed costs before a task's sends, in send order, each charged to its own cause: collective_sync
//    before a send that starts a collective (firmware::Send::collective: a broadcast's root, a reduce
//    chain's or gather's first tile); color_switch before a send whose color's route must be reconfigured:
//    a router keeps one route per (color, input port) -> output ports, configured for the first flow of
//    the step (at load time, free); a later send on that color that needs other outputs at some router
//    of its path (another phase reusing the color, e.g. a row broadcast over the whole row after one
//    over a segment of it) reconfigures every such router with one control wavelet before its data: it
//    pays color_switch once. Sends are checked in the order their tasks start. Complete tasks: the sends
//    leave one after another after the ops, each after its own fixed costs (end = the last); Stream
//    tasks do them while armed (before the data arrives, like the vector setup). Route switches are
//    only tracked when color_switch > 0 (one byte per tile, color and input port).
//  - Dest::Tile with dx = dy = 0 goes to the mesh as a burst to the tile itself: a local task activation,
//    which takes its turn on the ramps (out, in) but pays no ramp latency (noc/mesh.h).
//  - A Row/Column multicast whose segment holds the sender reaches the sender too (every tile of the
//    segment receives it): the core delivers that copy to itself at the send (the meshes leave the
//    source out of a segment's sinks; an arrival of it at the source from a mesh is ignored).
//  - The step ends when done_tile has done_arrivals bursts on done_color (the latest tail).
// A mesh may report an arrival only when its tail is in (the cycle reference does so for multicasts; sim/
// has it report unicasts at their head, noc/cycle.h report_heads): a Stream task is then back-dated to its
// head + stream_stage_latency; its output leaves at once with its lag shortened so the tail keeps the
// stream's timing, and the receivers subtract the head's delay (BurstRec::vshift). The output still leaves
// late (a burst cannot be shorter than its wavelets), so streaming behind a late-reported input costs
// about a burst per stage: the meshes should report the head whenever they can.
// The critical path is walked back from that tail; each segment goes to one cause and to the layer and
// operator it serves (a task's own time to its task; a burst's network time to the task it feeds), so the
// parts sum exactly to the latency. A burst's network time is split against its zero-load latency on
// the fabric (ideal_latency: 2 x ramp_latency unless it is sent to its own tile, hops x hop_latency, and
// to its tail its lag): the ramps to Ramp, the rest of the zero-load part to NetworkTransfer, anything
// beyond to NetworkWait.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/costs.h"
#include "core/route_log.h"
#include "firmware/program.h"
#include "hw/wafer_spec.h"
#include "memory/stream_port.h"
#include "noc/big_array.h"
#include "noc/network.h"
#include "noc/routing/fabric.h"

namespace wafer::noc {
class Mesh;
class ApproxMesh;
}

namespace wafer::core {

enum class Cause : std::uint8_t {
  Compute,          // vector op bodies (lanes or SRAM ports) and stream stage latency
  VectorSetup,      // fixed cost per vector op
  TaskOverhead,     // fixed cost per task activation
  ColorSwitch,      // reconfiguring a color's route before a send (WaferSpec::color_switch)
  CollectiveSync,   // synchronising before a send that starts a collective (WaferSpec::collective_sync)
  NetworkTransfer,  // zero-load latency of the bursts on the path beyond their ramps (hops x hop_latency +
                    // serialisation)
  Ramp,             // the bursts' ramps on the path: 2 x ramp_latency per burst that leaves its tile (core to
                    // router, router to core), none for a burst to the tile itself
  NetworkWait,      // beyond zero load: contention for links and ramps
  WeightStreaming,  // streamed weights: MemoryX port and edge channel (queue, bandwidth, latency) + the fabric leg
  InterWafer,       // links between wafers of a pipeline (filled by the simulator)
};
inline constexpr std::size_t kCauses = 10;
const char* to_string(Cause c);
using CauseCycles = std::array<Cycle, kCauses>;

struct Breakdown {
  CauseCycles cause{};                 // on the critical path; sums to the step latency
  std::vector<CauseCycles> per_layer;  // indexed like Image::layer_names
  std::vector<CauseCycles> per_op;     // indexed like Image::op_names
  // Work over all tasks of all tiles (not only the critical path), in tile-cycles.
  std::vector<CauseCycles> work_per_op;  // Compute, VectorSetup, TaskOverhead, ColorSwitch, CollectiveSync
  std::uint32_t path_tasks = 0;          // tasks on the critical path
  std::uint32_t path_bursts = 0;         // bursts on the critical path
};

struct ExecOptions {
  std::uint32_t weight_bytes = 2;  // 16-bit weights; 1 for 8-bit
  Cycle start = 0;                 // cycle at which the step's start injections arrive
  // Optional sampling (traces' counters): when set and the network is a noc::Mesh, run() advances the mesh
  // in slices, calling sample(t) each time simulated time has reached t (first with `start`); sample
  // returns the next cycle to stop at. The slices change no result (a mesh runs the same events whether
  // it is run to the end or up to a limit at a time).
  // sample(t, busy): busy, when not null, holds the link busy cycles as they are at t (a stretch reuse
  // copies, whose samples are taken at the jump): per tally group when the mesh tallies them
  // (noc::Mesh::tally), else per link; null: read them from the mesh.
  std::function<Cycle(Cycle, const std::uint64_t* busy)> sample;
  bool keep_path = false;  // keep the critical path as timed segments (StepResult::path)
  // Pay once for repeated layers, exactly (docs/timing.md "Reuse"): when the network supports it
  // (noc::Network::supports_reuse) and the programs hold a run of identical layer blocks (or layers on bands
  // each moved down from the one before), the state at the start of each such layer is compared with the
  // one at the start of the layer before (relative to that cycle, tasks renamed one layer on, tiles one band
  // on); when equal, the layers that follow are not emulated but copied, shifted in time (and space), as
  // long as the renaming stays inside the run. The result is the same either way,
  // samples included (a jump takes those of the stretch it copies from the template's link reservations).
  bool reuse = false;
  // A core to spare (nothing else runs beside this step): the task slots' pages are faulted in by another
  // thread while the step runs, rather than before it, by the kernel without writing them (MADV_POPULATE_WRITE; a
  // kept block's pages in memory are cleared before the step, the others read as zero already), and beside them
  // the same tiles' route table entries and, when reuse is not armed, their burst records (fill_pieces), and the
  // approx mesh's tile records and busy counters (not written when it was built). Results the same.
  bool populate_behind = false;
  // Reuse's lists (the descriptions a cut compares, the slots touched and the bursts sent since the cut before,
  // the route changes, ...) may hold at most this many bytes; past it reuse is given up and the step runs in
  // full (the same answer: only slower). 0: Executor::reuse_cap of the step's records. Tests set it.
  std::uint64_t reuse_bytes = 0;
  // Where to add the tasks the step has run so far (copies included, as StepResult::tasks_run), for a progress
  // line drawn on another thread (`decode` on a terminal): every 16,384 tasks, after a reuse jump and at the
  // step's end, so that it ends holding tasks_run more than before. Null: nothing told. Results the same.
  std::atomic<std::uint64_t>* progress = nullptr;
};

// A piece of the critical path: [from, to) attributed to one cause, layer and operator. The segments tile
// the step from its start to its end (consecutive ones with the same cause, layer and op merged), so per
// layer they sum to Breakdown::per_layer.
struct PathSegment {
  Cycle from, to;
  Cause cause;
  std::uint16_t layer, op;
};

struct StepResult {
  bool finished = false;         // the done tile got its bursts
  Cycle start = 0, end = 0;      // end = tail of the last done burst
  Cycle latency() const { return end - start; }
  std::uint64_t tasks_run = 0, tasks_total = 0;
  std::uint64_t tasks_executed = 0;   // of tasks_run, those emulated (the others copied: ExecOptions::reuse)
  std::uint32_t layers_reused = 0;    // layers copied rather than emulated
  std::uint32_t layers_watched = 0;   // layers of the run reuse watched for a repeat (0: none tried)
  double cuts_s = 0;  // wall seconds in reuse's cuts (describing, comparing, the jump); not deterministic
  std::uint64_t reuse_bytes = 0;  // the most reuse's lists held (ExecOptions::reuse_bytes), in bytes
  bool reuse_dropped = false;     // reuse was given up at its cap (ExecOptions::reuse_bytes)
  std::uint64_t bursts = 0;           // bursts the cores sent (weights and injections excluded)
  std::uint64_t weight_bursts = 0, weight_bytes = 0;  // StreamIn ops served (no mesh bursts) and their bytes
  std::uint64_t unclaimed = 0;        // bursts no task took (a firmware bug when nonzero)
  std::uint32_t done_received = 0;    // bursts on done_color at done_tile
  std::uint64_t color_switches = 0;   // sends that reconfigured their color's route (0 when color_switch = 0)
  std::uint64_t collective_starts = 0;  // sends that started a collective (each paid collective_sync)
  // tasks held until their tile's task whose output they read started (firmware::Task::after): inputs out of
  // program order, by streamed weights, a repair detour or a neighbour done sooner (docs/streaming.md "Order on a tile")
  std::uint64_t tasks_held = 0;
  Breakdown breakdown;
  std::vector<PathSegment> path;  // ExecOptions::keep_path: in time order
};

// One task run, for traces and tests.
struct TaskRun {
  hw::TileIndex tile;
  std::uint16_t task;  // index in the tile's program
  std::uint16_t layer, op;
  Cycle trigger, start, end;  // start is after task_overhead
  bool critical;
};

// What a step writes for a stretch of tiles, faulted in behind it in that order (ExecOptions::populate_behind):
// the tiles' task slots [slot_begin, slot_end), their route table entries (tiles [tile_begin, tile_end)) and the
// burst records of their sends [burst_begin, burst_end).
struct FillPiece {
  std::size_t slot_begin, slot_end;
  hw::TileIndex tile_begin, tile_end;
  std::uint64_t burst_begin, burst_end;
};
// The pieces of the slot ranges `fill` (in increasing order, each starting at a tile's first slot), at most
// `piece` slots each: a piece's tiles are those whose slots it holds any of, and its bursts those of their sends,
// tile t's numbered from `first_send` plus the sends of every tile before it (a burst record is appended as its
// task runs: about in tile order on a step that runs its tiles in their order). `slot0`: per tile its first slot
// (tiles + 1 entries); `prog_sends`: per program its sends. Pure: for tests.
std::vector<FillPiece> fill_pieces(const std::vector<std::uint32_t>& slot0, const std::vector<std::uint32_t>& tile_program,
                                   const std::vector<std::uint64_t>& prog_sends, std::uint64_t first_send,
                                   const std::vector<std::pair<std::size_t, std::size_t>>& fill, std::size_t piece);

class Executor final : public noc::NetworkClient {
 public:
  // `image` and `fabric` must outlive the executor; `weights` may be null when the image has no StreamIn.
  // Checks the image against the grid (every send lands inside it, names in range) and throws
  // hw::InputError naming the tile otherwise.
  Executor(const hw::WaferSpec& spec, const firmware::Image& image, const noc::Fabric& fabric,
           noc::Network& network, memory::StreamPort* weights = nullptr, ExecOptions options = {});
  ~Executor() override;
  // Whether the slots' pages are being (or were) faulted in by another thread (ExecOptions::populate_behind: a
  // core to spare). Tests.
  bool populates_behind() const { return populating_.joinable(); }

  // Runs the step to completion (the network runs until no event is left).
  StepResult run();

  // The records a run keeps for `tasks` task slots (one Slot each, and about one BurstRec per task: most
  // tasks send one burst), in bytes: what a full run of that many tasks needs beyond the mesh and programs.
  // (An estimate from the count alone: a step that streams weights keeps more, see Slot.)
  static std::uint64_t record_bytes(std::uint64_t tasks);
  // The same for the step of `image`, counted from it: a Slot (and a SlotHigh when it streams weights) per task
  // of every tile, a BurstRec per send of every task and per start injection, the walk's flag per slot, and
  // per tile the mesh's and the core's state and the reuse descriptions' bound (what a full-wafer run keeps
  // beside its task records: about 1 GB on wse3, measured, where a count of the records alone let a run of
  // the 8B's whole square start and be killed for memory).
  static std::uint64_t record_bytes(const firmware::Image& image);
  // The most reuse's lists may hold for a step of `slots` task slots and `sends` burst records (ExecOptions::
  // reuse_bytes when 0): half its task records. Across the test suite and the bench jobs the lists held at most a
  // quarter of the records (docs/timing.md "Reuse's memory").
  static std::uint64_t reuse_cap(std::uint64_t slots, std::uint64_t sends);

  // After run(): every task that ran (in tile order), for traces.
  std::vector<TaskRun> task_runs() const;
  // After run(): calls f(run) for every task that ran, in tile order, without keeping them.
  void for_each_run(const std::function<void(const TaskRun&)>& f) const;
  // After run(): f(run) for every critical run and every run of the tiles keep_tile(tile, runs) accepts (runs:
  // how many of the tile's tasks ran; asked once per tile that ran any, in tile order).
  void for_each_kept_run(const std::function<bool(hw::TileIndex, std::uint32_t)>& keep_tile,
                         const std::function<void(const TaskRun&)>& f) const;
  // After run(): f(tile, first, last) for every tile that ran a task, in tile order, [first, last) holding
  // the (start, end) of each task it ran, in task order (start after task_overhead, as in TaskRun); inline
  // and without the task's names, for passes over millions of runs (a tile at a time: the caller's loop
  // keeps its state in registers). Tiles [from, to) only, when given (const: threads may pass over parts at once).
  template <class F>
  void for_each_tile_spans(F&& f, hw::TileIndex from = 0, hw::TileIndex to = ~hw::TileIndex(0)) const {
    using Span = std::pair<Cycle, Cycle>;
    std::vector<Span> buf;
    std::vector<Slot> tile_buf;  // (a tile's slots that a jump's copies hold: tile_slots)
    const std::uint32_t* const slot0 = slot0_.data();  // (a local: the stores to buf cannot move it)
    const std::size_t tiles = std::min<std::size_t>(to, slot0_.empty() ? 0 : slot0_.size() - 1);
    const Cycle base = opt_.start - 1;  // (a slot keeps its cycles' offsets + 1)
    for (hw::TileIndex t = from; t < tiles; ++t) {
      const std::uint32_t s0 = slot0[t], s1 = slot0[t + 1];
      if (buf.size() < s1 - s0) buf.resize(s1 - s0);
      Span* const first = buf.data();
      Span* last = first;
      if (!wide_) {
        const Slot* const slots = tile_slots(t, tile_buf);
        for (std::uint32_t i = 0; i < s1 - s0; ++i)
          if (slots[i].start != kOpen) *last++ = {base + slots[i].start, base + slots[i].end};
      } else {
        for (std::uint32_t s = s0; s < s1; ++s)
          if (ran(s)) *last++ = {start_of(s), end_of(s)};
      }
      if (last != first) f(t, static_cast<const Span*>(first), static_cast<const Span*>(last));
    }
  }
  const CostModel& costs() const { return costs_; }
  // Edge channel (and its tile) serving streamed weights to `tile`.
  std::uint32_t channel_of(hw::Coord tile) const;
  hw::Coord channel_tile(std::uint32_t channel) const;

  // noc::NetworkClient
  void on_arrival(std::uint64_t tag, hw::TileIndex sink, Cycle head, Cycle tail) override;
  void on_timer(std::uint64_t tag, Cycle now) override;
  void expect_arrival(std::uint64_t tag, hw::TileIndex sink, noc::Color color) override;
  bool wants_expect_arrival() const override { return true; }

 private:
  struct TaskInfo {       // per program task, computed once (flat over programs: hot in the event loop)
    Cycle setup = 0;      // vector_setup x ops (StreamIn included)
    Cycle body = 0;       // op bodies
    std::uint32_t stream_bytes = 0;
    std::uint32_t need = 0;             // arrivals + weight_arrivals
    // Runs since the last fold_runs, which adds to work_ the costs every run of this task pays alike (cheaper
    // per task than adding them as it starts; kept here, in the record start_task reads, not in an array apart).
    std::uint32_t runs = 0;
    // Its sends: sends_[send0 ..], nsends of them (start_task reads them from here rather than through the
    // image's program, its task and its vector: three loads, each waiting on the one before).
    std::uint32_t send0 = 0;
    std::uint16_t nsends = 0;
    std::uint16_t weight_arrivals = 0;  // StreamIn ops (one weight arrival each)
    std::uint16_t arrivals = 1;
    std::uint16_t op = 0;               // Task::op
    std::uint16_t layer = 0;            // Task::layer
    std::uint16_t after = 0;            // Task::after
    noc::Color trigger = 0;
    bool stream = false;
    bool read = false;                  // a later task's `after` names it
  };
  static_assert(sizeof(TaskInfo) == 48);
  // One task of one tile: everything the event loop touches, in one place (32 bytes: two to a cache line;
  // 48-byte slots with 64-bit cycles took 460 MB on a full wafer and ran the default decode 0.3 s slower,
  // docs/timing.md "A run with every task emulated"). Its four cycles are offsets from the step's start
  // (ExecOptions::start) in 32 bits, up to 2^32 - 2 cycles (3.9 s at 1.1 GHz: a step that runs longer is
  // refused, naming it). A step that streams weights may run far longer (a 405B streamed through one wafer
  // takes some 6 G cycles): its slots keep the offsets' high halves in hi_ (wide_). Read and written through
  // the accessors below, but in the loops that know which.
  // A slot that is all zero is a task before anything reached it: the cycles are kept one more than their
  // offsets (start = kOpen, 0, while the task has not run) and crit and prev one more than the burst and slot
  // they name (0: kNone), so the slots need no pass to set them up (noc::ZeroedArray: a page no task of it
  // runs on is never touched).
  struct alignas(32) Slot {  // (aligned: a slot never straddles two cache lines, the arrival hint fetches one)
    std::uint32_t ready, tail, start, end;  // trigger; latest input tail; start (after overhead); end
    std::uint32_t crit, prev;       // critical input burst; core predecessor (kNone: input-bound); both + 1
    std::uint16_t count, wcount;    // colour arrivals; weight bursts arrived
    std::uint16_t switches, syncs;  // its sends' route switches and collective starts
  };
  static_assert(sizeof(Slot) == 32 && alignof(Slot) == 32);
  struct SlotHigh {  // wide_: the high halves of a slot's cycles (offset + 1, as Slot's)
    std::uint32_t ready, tail, start, end;
  };
  static constexpr std::uint32_t kOpen = 0;  // Slot::start (and its high half) before the task runs
  static constexpr std::uint64_t kMaxOffset = 0xFFFF'FFFEull;  // the largest offset a 32-bit record holds
  // Slot::crit and Slot::prev as kept (+ 1: kNone is 0) and as read.
  static constexpr std::uint32_t enc(std::uint32_t v) { return v + 1u; }
  static constexpr std::uint32_t dec(std::uint32_t kept) { return kept - 1u; }
  bool wide_ = false;
  noc::ZeroedArray<SlotHigh> hi_;  // (empty unless wide_)
  // A cycle of slot s, whose record (as kept, or as read_slot computes it) is `sl`.
  template <std::uint32_t Slot::*Lo, std::uint32_t SlotHigh::*Hi>
  Cycle cycle_in(const Slot& sl, std::uint32_t s) const {
    std::uint64_t kept = sl.*Lo;
    if (wide_) [[unlikely]] kept |= std::uint64_t(hi_[s].*Hi) << 32;
    return opt_.start + kept - 1;
  }
  template <std::uint32_t Slot::*Lo, std::uint32_t SlotHigh::*Hi>
  Cycle cycle_of(std::uint32_t s) const {
    return cycle_in<Lo, Hi>(slots_[s], s);
  }
  template <std::uint32_t Slot::*Lo, std::uint32_t SlotHigh::*Hi>
  void set_cycle(std::uint32_t s, Cycle v) {
    const std::uint64_t kept = v - opt_.start + 1;
    if (wide_) [[unlikely]] hi_[s].*Hi = std::uint32_t(kept >> 32);
    else if (kept > kMaxOffset + 1) [[unlikely]] too_long(v);
    slots_[s].*Lo = std::uint32_t(kept);
  }
  Cycle ready_of(std::uint32_t s) const { return cycle_of<&Slot::ready, &SlotHigh::ready>(s); }
  Cycle tail_of(std::uint32_t s) const { return cycle_of<&Slot::tail, &SlotHigh::tail>(s); }
  Cycle start_of(std::uint32_t s) const { return cycle_of<&Slot::start, &SlotHigh::start>(s); }
  Cycle end_of(std::uint32_t s) const { return cycle_of<&Slot::end, &SlotHigh::end>(s); }
  bool ran_in(const Slot& sl, std::uint32_t s) const { return sl.start != kOpen || (wide_ && hi_[s].start != kOpen); }
  bool ran(std::uint32_t s) const { return ran_in(slots_[s], s); }
  TaskRun run_of(hw::TileIndex t, std::uint32_t s, const Slot& sl, bool crit) const;
  [[noreturn]] void too_long(Cycle at) const;
  enum class BurstKind : std::uint8_t { Data, Injection, Weights };
  // One per burst sent, 24 bytes (every field written at the send: bursts_ grows without writing). Its
  // source tile is the sender's (Data: src_of).
  struct BurstRec {
    std::uint32_t inject;  // offset from the step's start, like a Slot's cycles (wide_: its high half in burst_hi_)
    std::uint32_t who;     // Data: the sending task's slot; Injection, Weights: the source tile
    std::uint32_t lag;
    std::uint32_t vshift;  // a stream sent after its (back-dated) start: head delay from `inject`
    std::uint16_t switches, syncs;  // Data: the sender's route switches and syncs up to this send
    noc::Color color;
    BurstKind kind;
    bool self;  // a segment multicast holding its source: the core delivered it to itself
  };
  static_assert(sizeof(BurstRec) == 24 && std::is_trivially_default_constructible_v<BurstRec>);
  noc::RecordArray<std::uint32_t> burst_hi_;  // wide_: per burst the high half of its inject offset
  // A burst record's fields as cycles and tiles (`id` its index, for the high half of a wide step's offset).
  Cycle inject_of(const BurstRec& b, std::uint64_t id) const {
    std::uint64_t off = b.inject;
    if (wide_) [[unlikely]] off |= std::uint64_t(burst_hi_[id]) << 32;
    return opt_.start + off;
  }
  hw::TileIndex src_of(const BurstRec& b) const { return b.kind == BurstKind::Data ? slot_tile(b.who) : b.who; }
  // Whether `slot` is one of tile t's.
  bool holds_slot(hw::TileIndex t, std::uint32_t slot) const {
    const std::uint32_t p = image_.tile_program[t];
    return p != firmware::kIdle && slot - slot0_[t] < prog0_[p + 1] - prog0_[p];
  }
  // Template burst record b as copy m of a reuse jump writes it (or burst_at computes it): D cycles and its
  // sender `dsender` slots on per copy (the jump checks the last copy's offsets).
  static BurstRec burst_copy(BurstRec b, std::uint64_t m, Cycle D, std::uint32_t dsender) {
    b.inject += std::uint32_t(m * D);
    b.who += std::uint32_t(m) * dsender;
    return b;
  }
  // Appends a burst record sent at cycle `inject` (the step refused past the slots' limit, as too_long).
  std::uint32_t add_burst(Cycle inject, std::uint32_t who, std::uint32_t lag, noc::Color color, BurstKind kind,
                          std::uint32_t vshift = 0, std::uint16_t switches = 0, std::uint16_t syncs = 0);
  static constexpr std::uint32_t kNone = 0xFFFFFFFFu;

  void validate() const;
  template <bool kWatched>
  void credit(std::uint32_t slot, hw::TileIndex tile, std::uint32_t k, const TaskInfo& ti, Cycle when, Cycle tail,
              std::uint32_t burst, bool data);
  void start_or_wait(hw::TileIndex tile, std::uint32_t k, Cycle ready);
  void start_task(hw::TileIndex tile, std::uint32_t k, Cycle now);
  void other_timer(std::uint64_t tag, Cycle now);  // on_timer's kinds but a task's start
  void deliver(std::uint32_t burst, hw::TileIndex sink, Cycle head, Cycle tail);
  void deliver_watched(std::uint32_t burst, hw::TileIndex sink, Cycle head, Cycle tail);
  template <bool kWatched>
  void deliver_to(std::uint32_t burst, hw::TileIndex sink, Cycle head, Cycle tail);
  void request_weights();
  // Whether sending on color `c` to `d` from `src` reconfigures some router's route (and records the new
  // routes). Only with color_switch > 0.
  bool reroute(hw::TileIndex src, const noc::Destination& d, noc::Color c);
  void walk_critical_path(StepResult& r);
  struct Ideal {
    Cycle total;  // zero-load cycles from the send to the head (or tail) at the sink's core
    Cycle ramps;  // of which the two ramps (0 for a burst to the sender itself)
  };
  Ideal ideal_latency(const BurstRec& b, hw::TileIndex src, hw::TileIndex sink, bool to_tail) const;
  const firmware::Task& task_at(hw::TileIndex tile, std::uint32_t k) const;
  // Tile `tile`'s task k's record (what the loop and the walk read of a task: its costs, layer, operator, sends).
  const TaskInfo& info_at(hw::TileIndex tile, std::uint32_t k) const { return tinfo_[prog0_[image_.tile_program[tile]] + k]; }

  const hw::WaferSpec& spec_;
  const firmware::Image& image_;
  const noc::Fabric& fabric_;
  noc::Network& net_;
  noc::ApproxMesh* approx_ = nullptr;  // net_ when it is the approx mesh (a final class: direct calls), else null
  memory::StreamPort* weights_;
  ExecOptions opt_;
  CostModel costs_;
  hw::Grid grid_;

  std::vector<TaskInfo> tinfo_;        // flat: program p's tasks at prog0_[p] ..
  std::vector<firmware::Send> sends_;  // every program task's sends, in order (TaskInfo::send0)
  std::vector<std::uint32_t> prog0_;
  // Claiming an arrival without scanning the whole program: per program and trigger color a group, the
  // list of the tasks with that trigger in program order (group_of_[p * trigger_colors_ + c]: the group's
  // index among p's, kNoGroup when no task waits on c; p's groups are groups_[pgroup0_[p] .. pgroup0_[p + 1]),
  // the last entry an end). An arrival walks its color's list to the first task that still needs arrivals (in the
  // default wse3 job a program has up to 24 tasks, a color's list up to 4; a cursor per tile and group, an array
  // of its own, was measured slower there: one more cache miss per arrival, docs/timing.md).
  // A long list (more than kScanMax tasks: a program holding many layers, as on a whole-wafer or square
  // region, has a list per color of every layer's tasks) keeps per tile a cursor, the first of its tasks that
  // may still need arrivals (tasks fill in list order, so the ones before it are full: a lower bound that the
  // claim and the hint start from), in claim_cursor_[tile x long_max_ + Group::cursor]. Without it a claim
  // walked the list from its start: quadratic in the layers per tile (the 8B's whole square on wse3 ran its
  // 49 M tasks at some 4 us each).
  struct Group {
    std::uint32_t begin, size;  // in group_tasks_
    std::uint32_t cursor;       // size > kScanMax: its index among its program's long lists
  };
  static constexpr std::uint32_t kScanMax = 8;
  std::uint32_t long_max_ = 0;  // most long lists of one program
  std::vector<std::uint16_t> claim_cursor_;
  std::uint16_t& cursor_of(hw::TileIndex t, const Group& gr) { return claim_cursor_[std::size_t(t) * long_max_ + gr.cursor]; }
  std::uint32_t claim_long(hw::TileIndex sink, const Group& gr, std::uint32_t s0, const TaskInfo* ti);
  static constexpr std::uint16_t kNoGroup = 0xFFFF;
  std::uint32_t trigger_colors_ = 0;
  std::vector<std::uint16_t> group_of_;
  std::vector<std::uint32_t> pgroup0_;
  std::vector<Group> groups_;
  std::vector<std::uint16_t> group_tasks_;
  // Per program task (flat, as tinfo_): the tasks that read its output (firmware::Task::after), deps_ from dep0_[f]
  // to dep0_[f + 1], as indices in the program; the slots of the tasks held now, and how many were held in all
  // (Executor::hold).
  std::vector<std::uint16_t> deps_;
  std::vector<std::uint32_t> dep0_;
  std::unordered_set<std::uint32_t> held_;
  std::uint64_t held_total_ = 0;
  void hold(std::uint32_t slot);
  void release(hw::TileIndex tile, std::uint32_t f);
  // Per tile.
  std::vector<std::uint32_t> slot0_;   // first slot (size tiles + 1)
  // What the event loop reads and writes of a tile's core, in 16 bytes (four to a cache line): the cycle it
  // is free and its last task's slot. Its program and first slot are read from the 4-byte arrays.
  struct alignas(16) Core {
    Cycle free;
    std::uint32_t last;  // kNone: no task yet
  };
  static_assert(sizeof(Core) == 16);
  noc::BigArray<Core> cores_;
  // Per task slot.
  noc::ZeroedArray<Slot> slots_;  // (huge pages: hundreds of MB on a full wafer, read in scattered order)
  std::thread populating_;         // faults slots_'s pages in behind the step (ExecOptions::populate_behind)
  std::atomic<bool> stop_populating_{false};  // (set when the executor goes: what is left is not faulted in)
  // Per burst, by id (its index). Reuse's copies of a template's bursts are not all written out: those no
  // event of the mesh can name after the jump lie in stretches of bursts_ grown over and never written (no
  // page touched: noc::RecordArray) and are read through burst_at, which computes each from its template
  // record as the copy would have written it (reuse_cut). The event loop reads bursts_ directly: it only
  // meets bursts in flight, which are written.
  noc::RecordArray<BurstRec> bursts_;
  std::uint64_t first_data_ = 0;  // the first Data burst's id: run() adds the others (weights, injections) first
  struct VirtualCopies {      // copies 1 .. copies of the template bursts [tmpl, tmpl + nb), not written
    std::uint64_t first;      // the first copy's first id (copy m, template burst i: first + (m - 1) nb + i)
    std::uint64_t copies, nb, tmpl;
    Cycle D;                  // each copy's shift in cycles ...
    std::vector<std::uint32_t> dsender;  // ... and per template burst its sender's slot move (its source moves
                                         // with the sender)
  };
  std::vector<VirtualCopies> vcopies_;  // in id order
  BurstRec burst_at(std::uint64_t id) const;
  // Nor are the copies of its slots, in space (reuse_cut): a jump keeps the template's slots, and a tile some
  // copy reaches holds its slots in slots_ only once the step touches it again (materialize, called where
  // the event loop and the cuts' descriptions first read a tile's slots: the tiles of the last copies, the
  // state moved on). Until then read_slot computes them: slot s holds copy m of template slot s - m x P, for
  // the largest m <= copies whose template slot the window touched (that copy was written last), and
  // otherwise what slots_ holds.
  struct SlotCopies {
    std::uint32_t lo, hi;     // the template's touched slots lie in [lo, hi]
    std::uint64_t copies;     // copies 1 .. copies
    std::uint32_t P;          // each copy's move in slots (a band's: the same for every tile of the run)
    std::uint32_t D, NB;      // ... in cycles and in burst ids
    hw::TileIndex t_lo, t_hi;  // the tiles some copy reaches: [t_lo, t_hi)
    hw::TileIndex zero_from;   // the tiles from here on were fresh at the jump: slots_ holds zero for them
    std::vector<std::uint32_t> index;  // per slot s of [lo, hi]: its place in tmpl if touched, else kNone
    std::vector<Slot> tmpl;            // the touched slots at the cut, in slot order
    std::vector<std::uint32_t> dprev;  // ... and per copy the move of each one's core predecessor
    Slot copy(std::uint32_t i, std::uint32_t m) const;
    void apply(std::uint32_t s0, std::uint32_t s1, Slot* out) const;
  };
  // The executor's marks (per tile, per slot) are bitmaps of 64-bit words: bit i, set, cleared, and set where it
  // was clear (then true: the first mark, which a caller notes in a list beside the bitmap).
  static bool bit(const std::vector<std::uint64_t>& w, std::size_t i) { return w[i >> 6] >> (i & 63) & 1; }
  static void set_bit(std::vector<std::uint64_t>& w, std::size_t i) { w[i >> 6] |= std::uint64_t(1) << (i & 63); }
  static void clear_bit(std::vector<std::uint64_t>& w, std::size_t i) { w[i >> 6] &= ~(std::uint64_t(1) << (i & 63)); }
  static bool first_mark(std::vector<std::uint64_t>& w, std::size_t i) {
    std::uint64_t& word = w[i >> 6];
    const std::uint64_t b = std::uint64_t(1) << (i & 63);
    if (word & b) return false;
    word |= b;
    return true;
  }
  std::vector<SlotCopies> scopies_;         // in slot order
  std::vector<std::uint64_t> materialized_;  // per tile: its slots are in slots_ (bit), for tiles of scopies_
  hw::TileIndex copied_lo_ = 0, copied_n_ = 0;  // every tile of scopies_ lies in [copied_lo_, copied_lo_ + copied_n_)
  // Whether tile t's slots are (some of them) copies read_slot computes; materialize(t) writes them.
  bool copied(hw::TileIndex t) const {
    return t - copied_lo_ < copied_n_ && !bit(materialized_, t);
  }
  void materialize(hw::TileIndex t) {
    if (copied(t)) [[unlikely]] materialize_tile(t);
  }
  void materialize_tile(hw::TileIndex t);
  const SlotCopies* copies_of(hw::TileIndex t) const;
  Slot read_slot(hw::TileIndex t, std::uint32_t s) const;
  // Tile t's slots as read_slot reads them, into out[0 .. its task count).
  void read_tile(hw::TileIndex t, Slot* out) const;
  // Slots [s0, s1) of tile t as read_slot reads them, into out[0 .. s1 - s0).
  void read_slots(hw::TileIndex t, std::uint32_t s0, std::uint32_t s1, Slot* out) const;
  // Tile t's slots as a full run holds them: in slots_, or (some are copies not written) read into buf.
  const Slot* tile_slots(hw::TileIndex t, std::vector<Slot>& buf) const {
    if (!copied(t)) [[likely]] return slots_.data() + slot0_[t];
    buf.resize(slot0_[t + 1] - slot0_[t]);
    read_tile(t, buf.data());
    return buf.data();
  }
  // Done detection.
  hw::TileIndex done_tile_;
  std::uint32_t done_count_ = 0, done_crit_ = kNone;
  Cycle done_end_ = 0;
  std::uint64_t unclaimed_ = 0, tasks_run_ = 0, weight_bytes_ = 0, weight_bursts_ = 0;
  std::uint64_t told_ = 0;  // of tasks_run_, what ExecOptions::progress has been told
  void tell_progress() {
    if (opt_.progress) opt_.progress->fetch_add(tasks_run_ - told_, std::memory_order_relaxed), told_ = tasks_run_;
  }
  // The work of the tasks run so far, per operator (Breakdown::work_per_op), and their color switches and
  // collective starts: added as each task starts, its cycles being fixed then, but for what every run of a task
  // pays alike, counted in TaskInfo::runs and added by fold_runs at each reuse cut and at the end (and K times the
  // template's at a reuse jump, as tasks_run_), so that no pass over every represented slot is needed at the end.
  std::vector<CauseCycles> work_;
  std::uint64_t switches_run_ = 0, syncs_run_ = 0;
  void fold_runs();  // (TaskInfo::runs)
  std::uint32_t weight_burst_ = kNone;  // the one BurstRec standing for every streamed-weight arrival
  struct WeightArrival {  // one StreamIn op's weights reaching its tile (their tail)
    Cycle at;
    hw::TileIndex tile;
    std::uint32_t k;
  };
  std::vector<WeightArrival> warrivals_;  // in time order; one network timer at a time walks them
  std::size_t wnext_ = 0;
  // Per slot a bit, after the walk (a bit rather than a byte: on the 8B on wse3 1.2 MB rather than 9.6 MB, written
  // whole by the step's thread after the run).
  std::vector<std::uint64_t> critical_;
  bool is_critical(std::uint32_t s) const { return !critical_.empty() && bit(critical_, s); }
  std::vector<std::uint32_t> critical_slots_;  // the slots critical_ marks, in the walk's order
  // Route tables (color_switch > 0): per (color, input port as hw::Dir, tile) the output ports (bit per
  // hw::Dir, the Ramp bit when the core receives) with kRouted set, kUnrouted (0) before the first flow: the
  // table starts zero and untouched, so only the pages a route is set in are faulted in (a few percent of them in
  // the default decode: docs/timing.md "Route tables faulted in only where routes are set"). Tiles innermost,
  // so a row multicast's walk reads consecutive bytes.
  noc::ZeroedArray<std::uint8_t> routes_;
  std::uint32_t route_colors_ = 0;
  // Which chunks of routes_ a route was written in: the reuse's comparisons (fresh_bands_alike) and the jump's
  // copy read only those (docs/timing.md "Route tables read only where written").
  WrittenChunks route_written_;
  std::vector<std::pair<hw::Coord, hw::Dir>> walk_;  // reroute's stack
  // start_task's scratch, a stack (start_task can nest): per send the route switches and syncs of the task's
  // sends up to it, switches | syncs << 16; its top (the storage is kept).
  std::vector<std::uint32_t> send_costs_;
  std::size_t send_top_ = 0;
  bool ran_ = false;
  bool streams_ = false;  // some task streams weights (StreamIn)
  // Reuse: the route table entries changed since the last cut, each with its value before the change, and the
  // lowest and highest tile of those entries (reuse in space asks only whether they lie in the rows described).
  RouteLog route_log_;
  std::pair<std::size_t, std::size_t> route_tiles_{std::numeric_limits<std::size_t>::max(), 0};
  bool log_routes_ = false;
  void log_route(std::size_t cell, std::size_t tile, std::uint8_t before) {
    if (!reuse_grow(route_log_)) return;
    route_log_.push_back({cell, before});
    route_tiles_ = {std::min(route_tiles_.first, tile), std::max(route_tiles_.second, tile)};
  }
  void clear_route_log(bool release = false) {
    if (release) route_log_ = {};
    else route_log_.clear();
    route_tiles_ = {std::numeric_limits<std::size_t>::max(), 0};
  }

  // ---- Reuse of repeated layers (ExecOptions::reuse; executor.cpp "Reuse") ----
  struct Reuse {
    bool on = false;                  // the image has a run of identical layers and the network can jump
    bool done = false;                // jumped, or gave up
    // From the run's first cut on, the slots touched and the routes switched are noted (touch, route_log_).
    // Before it nothing is compared with anything: only the tiles reached are marked, one bit each
    // (pre_tiles), for that cut to know which bands to look at (describe_bands).
    bool tracking = false;
    std::vector<std::uint64_t> pre_tiles;
    std::uint32_t watched = 0;        // layers a..b when armed (in space: of every run armed)
    double cuts_s = 0;                // wall seconds in reuse_cut
    std::uint16_t a = 0, b = 0;       // layers a..b: identical blocks in every program
    std::vector<std::uint32_t> off, len;  // per program: layer a's block (first task), tasks per block
    std::uint32_t max_groups = 0;     // most claim groups of one program
    Cycle margin = 0;                 // a core free before now - margin is as good as idle
    std::uint32_t next = 0;           // the layer whose first task start makes the next cut
    bool pending = false;             // a cut is due at the end of this cycle
    std::uint32_t layer = 0;          // the pending cut's layer
    // The previous cut (`have`): its layer, cycle, counters and description.
    bool have = false;
    std::uint32_t prev_layer = 0;
    Cycle prev_at = 0;
    std::uint64_t prev_bursts = 0, prev_tasks = 0, prev_unclaimed = 0;
    std::vector<CauseCycles> prev_work;  // work_ at the previous cut
    std::uint64_t prev_switches = 0, prev_syncs = 0;
    std::uint32_t prev_done = 0;
    std::vector<std::uint64_t> prev_desc, desc;
    std::vector<std::uint32_t> touched;  // slots credited or started since the previous cut (once each)
    std::vector<hw::TileIndex> touched_tile;  // ... and their tiles
    std::vector<std::uint64_t> touched_bits;  // per slot: in `touched`
    std::vector<hw::TileIndex> burst_tile;   // per burst sent since the previous cut (tracking): its sender's tile
    noc::ZeroedArray<std::uint16_t> cursor;  // per tile and claim group: the first slot not yet full
    std::vector<std::uint32_t> open;     // while describing: slots the state holds (partly full, timer due)
    std::uint32_t state_max = 0;         // while describing: the latest layer the state names
    std::uint64_t min_flight = 0;        // while describing: the lowest burst id the state names (in flight)
    bool bad = false;                    // while describing: something that cannot be renamed
    std::uint64_t skipped_tasks = 0;
    std::uint32_t skipped_layers = 0;
    // In space (space_setup): layers a..b in groups of p on bands of dr rows, each the one before moved
    // S = dr x width tiles on; band_y[g]: group g's first row (layers a + g p ..); prog_layer: per program
    // its layer (-1: several).
    bool space = false;
    std::uint32_t p = 1;  // layers per cut (in space: per band group; serpentine-bands repeats every 4)
    std::int32_t dr = 0;
    hw::TileIndex S = 0;
    std::vector<std::int32_t> band_y, prog_layer;
    // The runs, in layer order (space_setup), and the one watched: each its layers a..b, its move dr and its
    // groups' first rows (band_y, moved out when the run is armed).
    struct SpaceRun {
      std::uint16_t a, b;
      std::int32_t dr;
      std::vector<std::int32_t> band_y;
    };
    std::vector<SpaceRun> runs;
    std::size_t run = 0;
    std::uint32_t layer_hi = 0;  // the highest layer a task has started in (or a jump copied) while watched
    hw::TileIndex origin = 0;                 // the cut's band's first tile (descriptions are relative to it)
    std::vector<hw::TileIndex> work_tiles;    // while describing: the tiles of the bands at work
    std::pair<std::int32_t, std::int32_t> rows{0, 0}, prev_rows{0, 0};  // rows whose routes are described
    // Where the rows of the last settled band end (describe_bands; rows.first's first tile when the cut had no
    // settled band within the run), at this cut and the one before; the first row routed through since the last
    // cut (start_task).
    std::size_t route_split = 0, prev_route_split = 0;
    std::int32_t route_row_min = std::numeric_limits<std::int32_t>::max();
    std::size_t fresh_band = 0;               // the first fresh band (index from a)
    std::vector<std::uint8_t> band_code;      // per band, as at the last cut (describe_bands)
    // What the lists above (and route_log_) may hold, in bytes (ExecOptions::reuse_bytes), the most they held,
    // and whether reuse was given up at it (reuse_room).
    std::uint64_t cap = 0, peak = 0;
    bool dropped = false;
  } ru_;
  // Reuse's lists, in bytes (their capacities).
  std::uint64_t reuse_held() const;
  // Whether reuse's lists may grow by `more` bytes within ru_.cap; if not, reuse is given up for the rest of the
  // step (reuse_drop), which runs in full. False too when reuse is done.
  bool reuse_room(std::uint64_t more);
  void reuse_drop();
  // Reuse done for the rest of the step (ru_.done): no route change logged (the log released, or only emptied),
  // the mesh's mark dropped.
  void reuse_stop(bool release_log);
  // Frees reuse's lists (the descriptions, the slots touched, the bursts, the open slots, the tiles at work); the
  // bit sets and cursors stay (reuse_release frees them too).
  void reuse_free_lists();
  // Room in reuse's list v for n more elements: grown (by doubling, at least) when the cap allows; false when
  // it does not (reuse given up: nothing may be added).
  template <class V>
  bool reuse_grow(V& v, std::size_t n = 1) {
    if (v.capacity() - v.size() >= n) [[likely]] return true;
    const std::size_t to = std::max({2 * v.capacity(), v.size() + n, std::size_t(64)});
    if (!reuse_room((to - v.capacity()) * sizeof(typename V::value_type))) return false;
    v.reserve(to);
    return true;
  }
  void reuse_setup();
  void space_setup();
#ifdef WAFER_EMU_CUT_LOG
  static constexpr bool kCutLog = true;
#else
  static constexpr bool kCutLog = false;
#endif
  void describe_arrivals(std::vector<std::uint64_t>& out, std::uint32_t s, Cycle now, std::uint64_t nb) const;
  void cut_log(const std::vector<std::uint64_t>& out, bool usable);  // (kCutLog: bench/cut_match.sh)
  std::vector<std::uint64_t> cut_template_;
  bool cut_template_loaded_ = false;
  void arm_space_run();
  bool next_space_run();
  void start_watching();
  void reuse_arm();
  void reuse_release();
  void advance_cursors(hw::TileIndex t, std::uint64_t K);  // (a jump in time: the long lists' claim cursors)
  static std::pair<std::size_t, std::size_t> longest_run(const std::vector<std::uint8_t>& ok);
  static constexpr std::size_t kMinSpaceGroups = 6;  // reuse in space: the shortest run armed (space_setup)
  std::uint32_t run_layer(std::uint32_t p, std::uint32_t k) const;
  std::uint64_t tile_ref(hw::TileIndex t) const { return std::uint64_t(t) - std::uint64_t(ru_.origin); }
  int tile_class(hw::TileIndex t, Cycle now);
  void describe_tile(std::vector<std::uint64_t>& out, hw::TileIndex t, Cycle now, std::uint64_t nb);
  void describe_bands(std::vector<std::uint64_t>& out, Cycle now, std::uint64_t nb);
  bool fresh_bands_alike() const;
  bool routes_as_before();
  void sample_copies(Cycle D, std::uint64_t K, Cycle now);
  noc::Mesh* sampled_ = nullptr;  // run(): the mesh sampled in slices (ExecOptions::sample)
  Cycle next_sample_ = 0;
  void pre_touch(hw::TileIndex tile) { set_bit(ru_.pre_tiles, tile); }
  void touch(std::uint32_t slot, hw::TileIndex tile) {
    if (first_mark(ru_.touched_bits, slot) && reuse_grow(ru_.touched) && reuse_grow(ru_.touched_tile))
      ru_.touched.push_back(slot), ru_.touched_tile.push_back(tile);
  }
  void untouch_all() {
    for (std::uint32_t s : ru_.touched) ru_.touched_bits[s >> 6] = 0;
    ru_.touched.clear();
    ru_.touched_tile.clear();
  }
  void reuse_cut();
  bool in_range(std::uint32_t p, std::uint32_t k) const;
  hw::TileIndex slot_tile(std::uint32_t slot) const;
  void describe_task(std::vector<std::uint64_t>& out, hw::TileIndex tile, std::uint32_t k);
  void describe_burst(std::vector<std::uint64_t>& out, std::uint32_t id);
};

}  // namespace wafer::core
