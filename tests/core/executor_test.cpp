// The tile cores on a trivial fixed-latency network: exact cycles from the timing rules (core/executor.h,
// core/costs.h), both sides of each rule, and a critical-path breakdown that sums to the latency.
#include <gtest/gtest.h>

#include <array>
#include <numeric>

#include "core/costs.h"
#include "core/executor.h"
#include "hw/error.h"
#include "noc/big_array.h"
#include "tests/core/fixed_network.h"

namespace wafer::core {
namespace {

using firmware::Dest;
using firmware::Image;
using firmware::Op;
using firmware::OpKind;
using firmware::Program;
using firmware::Send;
using firmware::Task;

// tiny: SIMD-8, 2 x 64-bit reads + 1 x 64-bit write per cycle, task_overhead 10, vector_setup 6, stage 2.
// The cores' rules are pinned here without ramp latency (ramp_latency 0; the meshes' ramps are pinned in
// tests/noc and, with the cores, tests/sim); Executor.RampsAreACauseOfTheirOwn sets it.
// The hand computations below use these fixed costs, whatever the preset's defaults are.
hw::WaferSpec tiny() {
  hw::WaferSpec w = hw::preset("tiny");
  w.ramp_latency = 0;
  w.task_overhead = 10, w.vector_setup = 6, w.stream_stage_latency = 2;
  return w;
}

Image empty_image(hw::Grid g) {
  Image im;
  im.grid = g;
  im.tile_program.assign(g.size(), firmware::kIdle);
  im.layer_names = {"layer 0", "layer 1"};
  im.op_names = {"gemv", "norm", "reduce"};
  return im;
}
void place(Image& im, hw::Coord c, Program p) {
  im.programs.push_back(std::move(p));
  im.tile_program[im.grid.index(c)] = std::uint32_t(im.programs.size() - 1);
}
Task task(firmware::Color trig, std::vector<Op> ops, std::vector<Send> sends, std::uint16_t arrivals = 1,
          Task::Start st = Task::Start::Complete, std::uint16_t op = 0) {
  Task t;
  t.trigger = trig, t.arrivals = arrivals, t.start = st, t.ops = std::move(ops), t.sends = std::move(sends), t.op = op;
  return t;
}
Send to(std::int32_t dx, std::int32_t dy, firmware::Color c, std::uint32_t w = 1) {
  Send s;
  s.color = c, s.wavelets = w, s.dest.kind = Dest::Kind::Tile, s.dest.dx = dx, s.dest.dy = dy;
  return s;
}

// Stream relays on row 0 from x1 to x2: each adds its 64-wide partial (op 2) as the input on color 3 flows
// through and forwards `w` wavelets east on color 3.
void place_relays(Image& im, std::int32_t x1, std::int32_t x2, std::uint32_t w) {
  Program relay;
  relay.tasks.push_back(task(3, {{OpKind::Add, 64}}, {to(1, 0, 3, w)}, 1, Task::Start::Stream, 2));
  for (std::int32_t x = x1; x <= x2; ++x) place(im, {x, 0}, relay);
}

Cycle sum(const CauseCycles& c) { return std::accumulate(c.begin(), c.end(), Cycle(0)); }

struct Outcome {
  StepResult r;
  std::vector<TaskRun> tasks;
};
Outcome run(const hw::WaferSpec& spec, const Image& im, Cycle hop = 1, ExecOptions opt = {}) {
  noc::Fabric fabric = noc::Fabric::perfect(im.grid);
  testing::FixedNetwork net(im.grid, hop, Cycle(spec.ramp_latency));
  Executor ex(spec, im, fabric, net, nullptr, opt);
  Outcome out{ex.run(), {}};
  out.tasks = ex.task_runs();
  return out;
}

// Why the executor refuses `im` (its one-line error), or "" when it accepts it.
std::string refusal(const Image& im) {
  noc::Fabric fabric = noc::Fabric::perfect(im.grid);
  testing::FixedNetwork net(im.grid, 1);
  try {
    Executor ex(tiny(), im, fabric, net);
  } catch (const hw::InputError& e) {
    return e.what();
  }
  return {};
}

TEST(CostModel, TableAndPortLimits) {
  CostModel c(tiny());
  // Fmac at 16 bits: 4 bytes per MAC against 16 read bytes per cycle -> 4 MACs/cycle, not SIMD-8.
  EXPECT_EQ(c.body({OpKind::Fmac, 64}), 16u);
  EXPECT_TRUE(c.port_bound({OpKind::Fmac, 64}));
  EXPECT_EQ(c.cycles({OpKind::Fmac, 64}), 22u);
  // 8-bit weights: 3 bytes per MAC -> ceil(64 x 3 / 16) = 12 cycles, still above the 8 of the lanes.
  CostModel c8(tiny(), 1);
  EXPECT_EQ(c8.body({OpKind::Fmac, 64}), 12u);
  // Lanes bind for Silu (factor 6): ceil(64 x 6 / 8) = 48 > writes ceil(128 / 8) = 16.
  EXPECT_EQ(c.body({OpKind::Silu, 64}), 48u);
  EXPECT_FALSE(c.port_bound({OpKind::Silu, 64}));
  // Copy is write-bound: 2 bytes per element, 8 bytes per cycle: limit-1 and limit of one cycle.
  EXPECT_EQ(c.body({OpKind::Copy, 4}), 1u);
  EXPECT_EQ(c.body({OpKind::Copy, 5}), 2u);
  EXPECT_EQ(c.body({OpKind::Add, 0}), 0u);
  // A wider SIMD does not help a port-bound op; more read ports do.
  hw::WaferSpec wide = tiny();
  wide.simd_width = 64;
  EXPECT_EQ(CostModel(wide).body({OpKind::Fmac, 64}), 16u);
  wide.sram_read_ports = 8;
  EXPECT_EQ(CostModel(wide).body({OpKind::Fmac, 64}), 4u);
}

// A GEMV block of K inputs x N outputs is K vector ops of N MACs (firmware::Op::vectors): each pays its
// setup and rounds its own body up.
TEST(CostModel, AGemvBlockPaysOneSetupPerInput) {
  CostModel c(tiny());
  // 8 inputs x 8 outputs: 8 x (6 + ceil(8 x 4 / 16) = 2) = 64, against 6 + 16 = 22 as one vector op.
  EXPECT_EQ(c.setup({OpKind::Fmac, 64, 8}), 48u);
  EXPECT_EQ(c.body({OpKind::Fmac, 64, 8}), 16u);
  EXPECT_EQ(c.cycles({OpKind::Fmac, 64, 8}), 64u);
  EXPECT_EQ(c.cycles({OpKind::Fmac, 64, 1}), 22u);
  // Rounding per vector op: 4 outputs (16 bytes, one cycle of the read ports) are the limit of one cycle,
  // 5 take two: 16 x 4 = 64 MACs in 16 ops cost 16 x 1, 16 x 5 = 80 in 16 ops cost 16 x 2.
  EXPECT_EQ(c.body({OpKind::Fmac, 64, 16}), 16u);
  EXPECT_EQ(c.body({OpKind::Fmac, 80, 16}), 32u);
  EXPECT_EQ(c.body({OpKind::Fmac, 80, 1}), 20u);
}

// ExecOptions::populate_behind: with a core to spare, the slot pages are faulted in by another thread while the
// step runs. Every one of 256 x 256 tiles holds two tasks (4 MiB of slots: a mapping of their own, above the
// huge-page size), of which only (0, 0)'s first runs; the step is the same as without, task by task, on a new
// mapping and on the block the step before kept (holding its slots: cleared where in memory, the rest faulted in
// behind).
TEST(Executor, SlotsFaultedInBehindTheStepChangeNothing) {
  Image im = empty_image({256, 256});
  Program waits;  // (triggers nothing sends on)
  waits.tasks = {task(5, {{OpKind::Add, 8}}, {}), task(6, {{OpKind::Add, 8}}, {})};
  im.programs.push_back(waits);
  std::fill(im.tile_program.begin(), im.tile_program.end(), 0u);
  Program p;
  p.tasks = {task(1, {{OpKind::Fmac, 64}}, {to(3, 0, 2)}), task(6, {{OpKind::Add, 8}}, {})};
  place(im, {0, 0}, p);
  im.start.push_back({{0, 0}, 1, 4});
  im.done_tile = {3, 0}, im.done_color = 2;
  noc::Fabric fabric = noc::Fabric::perfect(im.grid);
  const hw::WaferSpec spec = tiny();  // (the executor keeps a reference)
  std::vector<Outcome> got;
  for (int run = 0; run < 3; ++run) {  // not behind; behind; behind on the block the run before kept
    const bool behind = run > 0;
    if (run == 1) noc::keep_huge_blocks(true);
    if (run == 2) {
      EXPECT_GT(noc::huge_blocks_kept(), 0u);
    }
    ExecOptions opt;
    opt.populate_behind = behind;
    testing::FixedNetwork net(im.grid, 1, 0);
    Executor ex(spec, im, fabric, net, nullptr, opt);
    if (run == 2) {
      EXPECT_EQ(noc::huge_blocks_kept(), 0u) << "the kept block was not taken";
    }
    EXPECT_EQ(ex.populates_behind(), behind);
    got.push_back({ex.run(), ex.task_runs()});
  }
  noc::keep_huge_blocks(false);
  for (int run = 1; run < 3; ++run) {
    const Outcome &a = got[0], &b = got[std::size_t(run)];
    ASSERT_TRUE(a.r.finished);
    EXPECT_EQ(a.r.end, 38u);  // as OneGemvTileExactCycles: start 13, end 35, then 3 hops east
    EXPECT_EQ(b.r.start, a.r.start) << run;
    EXPECT_EQ(b.r.end, a.r.end) << run;
    EXPECT_EQ(b.r.tasks_run, a.r.tasks_run) << run;
    EXPECT_EQ(b.r.tasks_total, a.r.tasks_total) << run;
    EXPECT_EQ(b.r.breakdown.cause, a.r.breakdown.cause) << run;
    ASSERT_EQ(b.tasks.size(), a.tasks.size()) << run;
    for (std::size_t i = 0; i < a.tasks.size(); ++i) {
      EXPECT_EQ(b.tasks[i].start, a.tasks[i].start) << run << " " << i;
      EXPECT_EQ(b.tasks[i].end, a.tasks[i].end) << run << " " << i;
    }
  }
}

// The pieces faulted in behind a step: six tiles (programs of 3 tasks and 2 sends, 2 tasks and 1 send; tile 1
// idle), slots 0-2 | - | 3-4 | 5-7 | 8-9 | 10-12, the bursts from 4 on: tile 0's 4-5, tile 2's 6, tile 3's 7-8,
// tile 4's 9, tile 5's 10-11.
TEST(FillPieces, EachPieceCarriesTheRouteEntriesAndBurstsOfItsTiles) {
  const std::uint32_t idle = firmware::kIdle;
  const std::vector<std::uint32_t> tile_program = {0, idle, 1, 0, 1, 0};
  const std::vector<std::uint32_t> slot0 = {0, 3, 3, 5, 8, 10, 13};
  const std::vector<std::uint64_t> prog_sends = {2, 1};
  auto pieces = [&](std::vector<std::pair<std::size_t, std::size_t>> fill, std::size_t piece) {
    std::vector<std::array<std::uint64_t, 6>> out;
    for (const FillPiece& f : fill_pieces(slot0, tile_program, prog_sends, 4, fill, piece))
      out.push_back({f.slot_begin, f.slot_end, f.tile_begin, f.tile_end, f.burst_begin, f.burst_end});
    return out;
  };
  using P = std::vector<std::array<std::uint64_t, 6>>;
  // Pieces ending on a tile's first slot.
  EXPECT_EQ(pieces({{0, 13}}, 5), (P{{0, 5, 0, 3, 4, 7}, {5, 10, 3, 5, 7, 10}, {10, 13, 5, 6, 10, 12}}));
  // A piece ending inside a tile (tile 2's slots 3-4, tile 4's 8-9, tile 5's 10-12) takes its records; the next
  // starts after it (the last piece holds no tile's start: none).
  EXPECT_EQ(pieces({{0, 13}}, 4), (P{{0, 4, 0, 3, 4, 7}, {4, 8, 3, 4, 7, 9}, {8, 12, 4, 6, 9, 12}, {12, 13, 6, 6, 12, 12}}));
  // One piece for the whole.
  EXPECT_EQ(pieces({{0, 13}}, 100), (P{{0, 13, 0, 6, 4, 12}}));
  // Ranges left out (a jump's copies, written by nobody): their tiles' records too, the bursts still numbered
  // after theirs.
  EXPECT_EQ(pieces({{0, 3}, {8, 13}}, 100), (P{{0, 3, 0, 1, 4, 6}, {8, 13, 4, 6, 9, 12}}));
  EXPECT_EQ(pieces({{5, 8}}, 100), (P{{5, 8, 3, 4, 7, 9}}));
  EXPECT_TRUE(pieces({}, 100).empty());
}

// One tile: the token (4 wavelets) arrives on color 1, the task runs `op`, its result goes 3 hops east to
// the done tile (color 2), over links of `hop` cycles.
Outcome one_tile_gemv(firmware::Op op, Cycle hop = 1) {
  Image im = empty_image({8, 8});
  Program p;
  p.tasks.push_back(task(1, {op}, {to(3, 0, 2)}));
  place(im, {0, 0}, p);
  im.start.push_back({{0, 0}, 1, 4});
  im.done_tile = {3, 0}, im.done_color = 2;
  return run(tiny(), im, hop);
}

// OneGemvTileExactCycles' tile with its 64 MACs as an 8 x 8 GEMV block: 8 vector ops of 8 MACs,
// 8 x (6 + 2) = 64 cycles: start 13 (tail 3 + 10), end 77, the result 3 hops east at 80.
TEST(Executor, AGemvBlockRunsOneVectorOpPerInput) {
  Outcome r = one_tile_gemv({OpKind::Fmac, 64, 8});
  ASSERT_TRUE(r.r.finished);
  EXPECT_EQ(r.r.latency(), 80u);
  ASSERT_EQ(r.tasks.size(), 1u);
  EXPECT_EQ(r.tasks[0].start, 13u);
  EXPECT_EQ(r.tasks[0].end, 77u);
  const auto& c = r.r.breakdown.cause;
  EXPECT_EQ(c[size_t(Cause::Compute)], 16u);
  EXPECT_EQ(c[size_t(Cause::VectorSetup)], 48u);
  EXPECT_EQ(sum(c), r.r.latency());
}

// A task's cycles are kept as 32-bit offsets from the step's start (core/executor.h, Slot) when no weights
// stream: OneGemvTileExactCycles' task ends at 3 + task_overhead + 22; with task_overhead 2^32 - 27 it ends
// at offset 2^32 - 2, the last one a slot holds, and the step is exact; one cycle more and the step is
// refused, naming the cycle. A step that starts late (ExecOptions::start) keeps the same offsets.
TEST(Executor, AStepOfUpTo2To32Minus2CyclesFromItsStartIsKeptLongerOnesAreRefused) {
  Image im = empty_image({8, 8});
  Program p;
  p.tasks.push_back(task(1, {{OpKind::Fmac, 64}}, {to(3, 0, 2)}));
  place(im, {0, 0}, p);
  im.start.push_back({{0, 0}, 1, 4});
  im.done_tile = {3, 0}, im.done_color = 2;
  const Cycle last = 0xFFFFFFFEull;  // the latest offset a slot holds
  hw::WaferSpec spec = tiny();
  spec.task_overhead = std::int64_t(last - 25);
  for (Cycle start : {Cycle(0), Cycle(1) << 40}) {
    ExecOptions opt;
    opt.start = start;
    Outcome r = run(spec, im, 1, opt);
    ASSERT_TRUE(r.r.finished);
    ASSERT_EQ(r.tasks.size(), 1u);
    EXPECT_EQ(r.tasks[0].start, start + last - 22);
    EXPECT_EQ(r.tasks[0].end, start + last);
    EXPECT_EQ(r.r.latency(), last + 3);
    EXPECT_EQ(sum(r.r.breakdown.cause), r.r.latency());
  }
  spec.task_overhead += 1;
  try {
    run(spec, im);
    ADD_FAILURE() << "a step past 2^32 - 2 cycles was not refused";
  } catch (const hw::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the step runs past cycle 4294967295"), std::string::npos) << e.what();
  }
}

TEST(Executor, RefusesAnOpWhoseVectorOpsDoNotDivideItsElements) {
  Image im = empty_image({8, 8});
  Program p;
  p.tasks.push_back(task(1, {{OpKind::Fmac, 64, 7}}, {}));
  place(im, {0, 0}, p);
  im.done_tile = {0, 0};
  EXPECT_NE(refusal(im).find("fmac op of 64 elements in 7 vector ops"), std::string::npos) << refusal(im);
  im.programs[0].tasks[0].ops[0].vectors = 8;  // a divisor: accepted
  EXPECT_EQ(refusal(im), "");
}

// A task's sends are counted in 16 bits (Executor::TaskInfo): 65535 are accepted, 65536 refused, naming the program.
TEST(Executor, RefusesATaskOfMoreThan65535Sends) {
  Image im = empty_image({8, 8});
  Program p;
  p.tasks.push_back(task(1, {{OpKind::Fmac, 64}}, std::vector<Send>(0xFFFF, to(1, 0, 0))));
  place(im, {0, 0}, p);
  im.done_tile = {0, 0};
  EXPECT_EQ(refusal(im), "");
  im.programs[0].tasks[0].sends.push_back(im.programs[0].tasks[0].sends.back());
  EXPECT_EQ(refusal(im), "firmware: program 0 has a task of 65536 sends, more than 65535");
}

// One tile: the token (4 wavelets) arrives, a 64-MAC GEMV block runs, the result goes 3 hops east.
//   injection: head 0, tail 3; start = 3 + 10 = 13; Fmac 64: 6 + 16 = 22 -> end 35;
//   send 1 wavelet 3 hops: head = tail = 38.
TEST(Executor, OneGemvTileExactCycles) {
  Outcome r = one_tile_gemv({OpKind::Fmac, 64});
  ASSERT_TRUE(r.r.finished);
  EXPECT_EQ(r.r.latency(), 38u);
  ASSERT_EQ(r.tasks.size(), 1u);
  EXPECT_EQ(r.tasks[0].trigger, 3u);
  EXPECT_EQ(r.tasks[0].start, 13u);
  EXPECT_EQ(r.tasks[0].end, 35u);
  const auto& c = r.r.breakdown.cause;
  EXPECT_EQ(c[size_t(Cause::Compute)], 16u);
  EXPECT_EQ(c[size_t(Cause::VectorSetup)], 6u);
  EXPECT_EQ(c[size_t(Cause::TaskOverhead)], 10u);
  EXPECT_EQ(c[size_t(Cause::NetworkTransfer)], 3u + 3u);
  EXPECT_EQ(c[size_t(Cause::NetworkWait)], 0u);
  EXPECT_EQ(sum(c), r.r.latency());
  EXPECT_EQ(sum(r.r.breakdown.per_op[0]), r.r.latency());
  EXPECT_EQ(r.r.unclaimed, 0u);
  // Halving... doubling the hop latency costs exactly the extra hops (3 more cycles).
  EXPECT_EQ(one_tile_gemv({OpKind::Fmac, 64}, 2).r.latency(), 41u);
}

// Two tasks on one core: B's input arrives at A's end - 1, A's end, A's end + 1.
// A: trigger color 1 at 0 (1 wavelet): start 10, Fmac 8 -> 6 + 2 = 8 -> end 18.
// B: trigger color 3 (1 wavelet), one Add of 8 (6 + 2: 8 x 2 bytes through one 64-bit write port):
// start = max(arrival, 18) + 10.
TEST(Executor, CoreRunsOneTaskAtATime) {
  for (Cycle arrive : {17u, 18u, 19u}) {
    Image im = empty_image({8, 8});
    Program p;
    p.tasks.push_back(task(1, {{OpKind::Fmac, 8}}, {}));
    p.tasks.push_back(task(3, {{OpKind::Add, 8}}, {to(1, 0, 2)}, 1, Task::Start::Complete, 1));
    place(im, {0, 0}, p);
    // Color 3 comes from a neighbour whose task ends at arrive - 1 (1 hop).
    Program q;
    q.tasks.push_back(task(4, {}, {to(-1, 0, 3)}, 1, Task::Start::Complete, 2));
    place(im, {1, 0}, q);
    im.start.push_back({{0, 0}, 1, 1});
    // q's trigger tail at arrive - 1 - 10: inject with that many wavelets so its tail lands there.
    im.start.push_back({{1, 0}, 4, std::uint32_t(arrive - 1 - 10 + 1)});
    im.done_tile = {1, 0}, im.done_color = 2;
    Outcome r = run(tiny(), im);
    ASSERT_TRUE(r.r.finished) << arrive;
    const TaskRun* b = nullptr;
    for (const auto& t : r.tasks)
      if (t.tile == 0 && t.task == 1) b = &t;
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->trigger, arrive);
    EXPECT_EQ(b->start, std::max<Cycle>(arrive, 18) + 10) << arrive;
    EXPECT_EQ(r.r.latency(), std::max<Cycle>(arrive, 18) + 10 + 8 + 1);
    EXPECT_EQ(sum(r.r.breakdown.cause), r.r.latency());
    // Bound by the core (arrive <= 18): the path goes through task A (op 0) and the first injection.
    Cycle a_part = sum(r.r.breakdown.per_op[0]);
    if (arrive < 18) {
      EXPECT_EQ(a_part, 18u) << arrive;
    } else if (arrive > 18) {
      EXPECT_EQ(a_part, 0u) << arrive;
    }
  }
}

// A task that reads its tile's earlier task's output (Task::after) is held until that one starts, in a step
// without streamed weights too: B adds A's result to its neighbour's partial sum. A's input is an injection of 41
// wavelets (trigger at its tail, 40): start 50, Fmac 8 (6 + 2) -> end 58. B's input arrives at `arrive`:
//   39 (before A's trigger): held; released as A starts (cycle 40), it starts when the core is free: 58 + 10 = 68,
//      ends 76, its result 1 hop east at 77. Without `after` it passes A: start 49.
//   41 (after A started): not held, and the core makes it wait all the same: start 68.
TEST(Executor, ATaskIsHeldUntilTheTaskWhoseOutputItReadsStarts) {
  auto image = [](Cycle arrive, std::uint16_t after) {
    Image im = empty_image({8, 8});
    Program p;
    p.tasks.push_back(task(1, {{OpKind::Fmac, 8}}, {}));
    p.tasks.push_back(task(3, {{OpKind::Add, 8}}, {to(1, 0, 2)}, 1, Task::Start::Complete, 1));
    p.tasks[1].after = after;
    place(im, {0, 0}, p);
    Program q;
    q.tasks.push_back(task(4, {}, {to(-1, 0, 3)}, 1, Task::Start::Complete, 2));
    place(im, {1, 0}, q);
    im.start.push_back({{0, 0}, 1, 41});
    im.start.push_back({{1, 0}, 4, std::uint32_t(arrive - 1 - 10 + 1)});
    im.done_tile = {1, 0}, im.done_color = 2;
    return im;
  };
  auto b_of = [](const Outcome& r) {
    for (const auto& t : r.tasks)
      if (t.tile == 0 && t.task == 1) return t;
    throw std::logic_error("B did not run");
  };
  const Outcome held = run(tiny(), image(39, 1));
  ASSERT_TRUE(held.r.finished);
  EXPECT_EQ(b_of(held).trigger, 39u);
  EXPECT_EQ(b_of(held).start, 68u);
  EXPECT_EQ(held.r.latency(), 77u);
  EXPECT_EQ(held.r.tasks_held, 1u);
  EXPECT_EQ(sum(held.r.breakdown.cause), held.r.latency());
  const Outcome passes = run(tiny(), image(39, 0));
  EXPECT_EQ(b_of(passes).start, 49u);
  EXPECT_EQ(passes.r.tasks_held, 0u);
  for (std::uint16_t after : {0, 1}) {
    const Outcome later = run(tiny(), image(41, after));
    EXPECT_EQ(b_of(later).trigger, 41u) << after;
    EXPECT_EQ(b_of(later).start, 68u) << after;
    EXPECT_EQ(later.r.latency(), 77u) << after;
    EXPECT_EQ(later.r.tasks_held, 0u) << after;
  }
}

// Arrivals: a task needing 3 bursts runs at the tail of the third, not before; the first task in program
// order with the trigger takes the burst; a second task with the same trigger gets the next one.
TEST(Executor, ArrivalsAreCreditedInProgramOrder) {
  Image im = empty_image({8, 8});
  Program p;
  p.tasks.push_back(task(1, {}, {to(0, 1, 2)}, 3));
  p.tasks.push_back(task(1, {}, {to(0, 1, 5)}, 1));
  place(im, {0, 0}, p);
  for (std::uint32_t w : {1u, 5u, 3u, 9u}) im.start.push_back({{0, 0}, 1, w});
  im.done_tile = {0, 1}, im.done_color = 2;
  Outcome r = run(tiny(), im);
  ASSERT_TRUE(r.r.finished);
  ASSERT_EQ(r.tasks.size(), 2u);
  // Injections are delivered in order: bursts 1, 5, 3 to task 0 (tails 0, 4, 2) -> trigger 4.
  EXPECT_EQ(r.tasks[0].trigger, 4u);
  EXPECT_EQ(r.tasks[0].start, 14u);
  EXPECT_EQ(r.tasks[1].trigger, 8u);  // the 9-wavelet burst
  EXPECT_EQ(r.tasks[1].start, 24u);   // core busy until 14 -> max(8, 14) + 10
  EXPECT_EQ(r.r.latency(), 15u);
  EXPECT_EQ(r.r.unclaimed, 1u);  // the color-5 burst: (0,1) has no task for it
}

// A claim list of more than 8 tasks (Executor::kScanMax: a program holding many layers) is claimed from a
// cursor per tile; arrivals still fill its tasks in program order. Tile (0,0): 12 tasks on color 1 needing
// 1, 2, 3, 1, 2, 3, ... arrivals, a task on color 3 among them (position 5); 24 injections on color 1 of 1, 2,
// ..., 24 wavelets, delivered at cycle 0 in order (tails 0, 1, ..., 23), and one on color 3. Task k of the
// list takes the next a_k injections, so it triggers at the tail of its last: (arrivals up to it) - 1.
TEST(Executor, ALongClaimListFillsItsTasksInProgramOrder) {
  Image im = empty_image({8, 8});
  Program p;
  std::vector<std::uint16_t> need;
  for (int k = 0; k < 12; ++k) {
    if (k == 5) p.tasks.push_back(task(3, {}, {}, 1));
    need.push_back(std::uint16_t(1 + k % 3));
    p.tasks.push_back(task(1, {}, k == 11 ? std::vector<Send>{to(0, 1, 2)} : std::vector<Send>{}, need.back()));
  }
  place(im, {0, 0}, p);
  for (std::uint32_t w = 1; w <= 24; ++w) im.start.push_back({{0, 0}, 1, w});
  im.start.push_back({{0, 0}, 3, 1});
  im.done_tile = {0, 1}, im.done_color = 2;
  Outcome r = run(tiny(), im);
  ASSERT_TRUE(r.r.finished);
  ASSERT_EQ(r.tasks.size(), 13u);
  EXPECT_EQ(r.r.unclaimed, 0u);
  Cycle filled = 0;
  std::size_t k = 0;
  for (const TaskRun& t : r.tasks) {
    if (t.task == 5) {
      EXPECT_EQ(t.trigger, 0u);  // (its own color: the one-wavelet injection)
      continue;
    }
    filled += need[k++];
    EXPECT_EQ(t.trigger, filled - 1) << "task " << t.task;
  }
  EXPECT_EQ(filled, 24u);
}

// A reduce-and-forward chain of Stream tasks costs about N x (hop + stage) + w, not N x w: a streaming
// task is armed in advance (activation + vector setup while its core waits), then forwards the stream
// stream_stage_latency after its head.
//   source (0,0): 64-wavelet partial sum sent at 0 + 10 = 10 -> head at (1,0) 11, tail 74.
//   relay i: start = max(head + 2, armed = 0 + 10 + 6 = 16); its output head leaves at start, lag 63.
//   relay 1: max(13, 16) = 16 (armed binds); relay 2: head 17 -> 19; ... relay 6: 16 + 5 x 3 = 31.
//   done tile: head 32, tail 32 + 63 = 95.
// (a source on (0,0) streaming 64 wavelets through n relays east to the done tile)
Image stream_chain(int n) {
  Image im = empty_image({8, 8});
  Program src;
  src.tasks.push_back(task(1, {}, {to(1, 0, 3, 64)}));
  place(im, {0, 0}, src);
  place_relays(im, 1, n, 64);
  im.start.push_back({{0, 0}, 1, 1});
  im.done_tile = {n + 1, 0}, im.done_color = 3;
  return im;
}

TEST(Executor, StreamChainPipelines) {
  const int n = 6;
  const Image im = stream_chain(n);
  Outcome r = run(tiny(), im);
  ASSERT_TRUE(r.r.finished);
  EXPECT_EQ(r.r.latency(), 95u);
  EXPECT_EQ(r.tasks[1].start, 16u);  // armed binds (head + stage = 13)
  EXPECT_EQ(r.tasks[2].start, 19u);  // the stream binds (armed 16)
  EXPECT_LT(r.r.latency(), Cycle(n) * 64);
  EXPECT_EQ(sum(r.r.breakdown.cause), r.r.latency());
  // Path: done burst <- relay 6 <- ... <- relay 2 (stream-bound) <- relay 1 (armed from the step start).
  EXPECT_EQ(r.r.breakdown.cause[size_t(Cause::TaskOverhead)], 10u);
  EXPECT_EQ(r.r.breakdown.cause[size_t(Cause::VectorSetup)], 6u);
  // Both sides of the arming rule at relay 1 (head + stage = 13, armed = 10 + vector_setup):
  // setup 2 and 3 -> the stream binds (start 13, latency 92); setup 4 -> armed binds (start 14, 93).
  for (std::int64_t setup : {2, 3, 4}) {
    hw::WaferSpec s = tiny();
    s.vector_setup = setup;
    Outcome q = run(s, im);
    EXPECT_EQ(q.tasks[1].start, setup <= 3 ? 13u : 14u) << setup;
    EXPECT_EQ(q.r.latency(), setup <= 3 ? 92u : 93u) << setup;
    EXPECT_EQ(sum(q.r.breakdown.cause), q.r.latency());
  }
}

// A core reacts to an arrival the cycle after at the earliest (docs/timing.md, "Rules both models implement"), as
// the meshes' Plans do: a delay of 0 (stream_stage_latency, task_overhead) is taken as 1 (CostModel::react).
//   StreamChainPipelines' chain with vector_setup 0 (armed at 10, never binding): the source starts at
//   0 + max(o, 1) (o = task_overhead) and its head reaches relay 1 a hop later; relay i starts max(s, 1) after
//   its head (s = stream_stage_latency), its head reaches relay i + 1 a hop later: relays 1 + max(s, 1) apart.
TEST(Executor, ACoreReactsTheCycleAfterAnArrivalAtTheEarliest) {
  const int n = 6;
  const Image im = stream_chain(n);
  for (std::int64_t stage : {0, 1, 2}) {
    hw::WaferSpec spec = tiny();
    spec.vector_setup = 0, spec.stream_stage_latency = stage;
    Outcome r = run(spec, im);
    ASSERT_TRUE(r.r.finished);
    const Cycle react = Cycle(std::max<std::int64_t>(stage, 1));
    EXPECT_EQ(r.tasks[0].start, 10u);
    EXPECT_EQ(r.tasks[1].start, 11u + react) << stage;
    for (int i = 2; i <= n; ++i) EXPECT_EQ(r.tasks[i].start - r.tasks[i - 1].start, 1u + react) << stage << " " << i;
    EXPECT_EQ(sum(r.r.breakdown.cause), r.r.latency());
  }
  // The source's start after the injection at 0: 0 and 1 give 1, 2 gives 2.
  for (std::int64_t overhead : {0, 1, 2}) {
    hw::WaferSpec spec = tiny();
    spec.vector_setup = 0, spec.task_overhead = overhead;
    Outcome r = run(spec, im);
    ASSERT_TRUE(r.r.finished);
    EXPECT_EQ(r.tasks[0].start, Cycle(std::max<std::int64_t>(overhead, 1))) << overhead;
    EXPECT_EQ(sum(r.r.breakdown.cause), r.r.latency());
    EXPECT_EQ(r.r.breakdown.cause[size_t(Cause::TaskOverhead)] > 0, true);
  }
}

// Ramps (ramp_latency R) are a cause of their own: 2R per burst on the critical path that leaves its tile,
// none for a burst a tile sends to itself; the rest of the zero-load network time stays network_transfer.
//   (0,0) task 0 (injection at 0): start 10, no ops, activates task 1 on its own tile at 10 (no ramps:
//   trigger 10), which starts 20 and sends 1 wavelet 3 hops east: head 20 + 2R + 3.
//   StreamChainPipelines' chain with R = 2: the source's head reaches relay 1 at 10 + 2R + 1 = 15, so
//   relay 1 is bound by its input (15 + 2 = 17 > armed 16) and every relay by the one before (+ 7): relay 6
//   starts 52, the done tile has the head at 57, the tail at 120; 7 bursts on the path: 28 cycles of ramps.
TEST(Executor, RampsAreACauseOfTheirOwn) {
  Image im = empty_image({8, 8});
  Program p;
  p.tasks.push_back(task(1, {}, {to(0, 0, 4)}));
  p.tasks.push_back(task(4, {}, {to(3, 0, 2)}, 1, Task::Start::Complete, 1));
  place(im, {0, 0}, p);
  im.start.push_back({{0, 0}, 1, 1});
  im.done_tile = {3, 0}, im.done_color = 2;
  for (std::int64_t R : {0, 2, 3}) {
    hw::WaferSpec spec = tiny();
    spec.ramp_latency = R;
    Outcome r = run(spec, im);
    ASSERT_TRUE(r.r.finished);
    EXPECT_EQ(r.tasks[1].trigger, 10u) << "the activation on its own tile pays no ramp";
    EXPECT_EQ(r.r.latency(), 23u + 2 * Cycle(R));
    EXPECT_EQ(r.r.breakdown.cause[size_t(Cause::Ramp)], 2 * Cycle(R));
    EXPECT_EQ(r.r.breakdown.cause[size_t(Cause::NetworkTransfer)], 3u);
    EXPECT_EQ(r.r.breakdown.cause[size_t(Cause::NetworkWait)], 0u);
    EXPECT_EQ(sum(r.r.breakdown.cause), r.r.latency());
  }
  Image chain = empty_image({8, 8});
  Program src;
  src.tasks.push_back(task(1, {}, {to(1, 0, 3, 64)}));
  place(chain, {0, 0}, src);
  place_relays(chain, 1, 6, 64);
  chain.start.push_back({{0, 0}, 1, 1});
  chain.done_tile = {7, 0}, chain.done_color = 3;
  hw::WaferSpec spec = tiny();
  spec.ramp_latency = 2;
  Outcome r = run(spec, chain);
  ASSERT_TRUE(r.r.finished);
  EXPECT_EQ(r.r.latency(), 120u);
  EXPECT_EQ(r.tasks[1].start, 17u);
  EXPECT_EQ(r.tasks[6].start, 52u);
  const auto& c = r.r.breakdown.cause;
  EXPECT_EQ(c[size_t(Cause::Ramp)], 28u);
  EXPECT_EQ(c[size_t(Cause::NetworkTransfer)], 7u + 63u);
  EXPECT_EQ(c[size_t(Cause::Compute)], 6u * 2);  // the relays' stages
  EXPECT_EQ(c[size_t(Cause::TaskOverhead)], 10u);
  EXPECT_EQ(sum(c), r.r.latency());
}

// collective_sync: a send that starts a collective waits that many cycles after the task's ops; other
// sends do not. OneGemvTileExactCycles' tile (end 35, 3 hops: 38) with its send marked as a broadcast's root
// costs 38 + sync; unmarked, 38 whatever the sync.
TEST(Executor, CollectiveSyncPrecedesACollectivesFirstSend) {
  for (bool collective : {false, true}) {
    Image im = empty_image({8, 8});
    Program p;
    Send s = to(3, 0, 2);
    s.collective = collective;
    p.tasks.push_back(task(1, {{OpKind::Fmac, 64}}, {s}));
    place(im, {0, 0}, p);
    im.start.push_back({{0, 0}, 1, 4});
    im.done_tile = {3, 0}, im.done_color = 2;
    for (std::int64_t sync : {0, 7, 8}) {
      hw::WaferSpec spec = tiny();
      spec.collective_sync = sync;
      Outcome r = run(spec, im);
      ASSERT_TRUE(r.r.finished);
      const Cycle paid = collective ? Cycle(sync) : 0;
      EXPECT_EQ(r.r.latency(), 38u + paid) << collective << " " << sync;
      EXPECT_EQ(r.tasks[0].end, 35u + paid);  // the core is busy synchronising
      EXPECT_EQ(r.r.breakdown.cause[size_t(Cause::CollectiveSync)], paid);
      EXPECT_EQ(r.r.breakdown.cause[size_t(Cause::Compute)], 16u);  // not folded into the op
      EXPECT_EQ(sum(r.r.breakdown.cause), r.r.latency());
      EXPECT_EQ(r.r.collective_starts, collective ? 1u : 0u);
    }
  }
  // A reduce chain pays once, at its first tile: StreamChainPipelines with the source's send marked. The
  // relays' head + stage = 13 + sync against armed 16 (their own sends are not marked, so arming does not
  // grow): sync 3 still leaves relay 1 armed-bound (95); from there each cycle of sync costs one (96, 97,
  // 102 at 10). Were the relays charged too, every relay would start sync later.
  Image im = empty_image({8, 8});
  Program src;
  Send first = to(1, 0, 3, 64);
  first.collective = true;
  src.tasks.push_back(task(1, {}, {first}));
  place(im, {0, 0}, src);
  place_relays(im, 1, 6, 64);
  im.start.push_back({{0, 0}, 1, 1});
  im.done_tile = {7, 0}, im.done_color = 3;
  for (auto [sync, latency] : {std::pair<std::int64_t, Cycle>{0, 95}, {3, 95}, {4, 96}, {5, 97}, {10, 102}}) {
    hw::WaferSpec spec = tiny();
    spec.collective_sync = sync;
    Outcome r = run(spec, im);
    EXPECT_EQ(r.r.latency(), latency) << sync;
    EXPECT_EQ(r.r.collective_starts, 1u);
    EXPECT_EQ(sum(r.r.breakdown.cause), r.r.latency());
  }
}

// color_switch: a router keeps one route per (color, input port); a send that needs other outputs where
// an earlier flow of its color configured that route reconfigures it first (the sender pays).
//   (0,0) task 0 (injection at 0): start 10, sends on color 2 to (2,0) at 10 -> head 12 (routes: (0,0) from
//         its core -> East; (1,0) from the west -> East; (2,0) from the west -> its core). Configured at
//         load: free.
//   (2,0): start 22, sends color 3 back to (0,0): 24.
//   (0,0) task 1: start 34, sends on color 2 to (1,0): (1,0) from the west must now go to its core, not
//         East: a switch. The send leaves at 34 + color_switch; (1,0) gets it 1 hop later: 35 + switch.
// Not charged: the second send on color 2 going to (2,0) again (the same route: 36), or on another color.
TEST(Executor, ColorSwitchWhenARouteMustChange) {
  enum class Second { Reroute, SameRoute, OtherColor };
  for (Second second : {Second::Reroute, Second::SameRoute, Second::OtherColor}) {
    Image im = empty_image({8, 8});
    Program a;
    a.tasks.push_back(task(1, {}, {to(2, 0, 2)}));
    const firmware::Color c = second == Second::OtherColor ? 5 : 2;
    a.tasks.push_back(task(3, {}, {to(second == Second::SameRoute ? 2 : 1, 0, c)}, 1, Task::Start::Complete, 1));
    place(im, {0, 0}, a);
    Program b;
    b.tasks.push_back(task(2, {}, {to(-2, 0, 3)}, 1, Task::Start::Complete, 2));
    place(im, {2, 0}, b);
    im.start.push_back({{0, 0}, 1, 1});
    if (second == Second::SameRoute) {
      im.done_tile = {2, 0}, im.done_color = 2, im.done_arrivals = 2;
    } else {
      im.done_tile = {1, 0}, im.done_color = c;
    }
    for (std::int64_t sw : {0, 4, 5}) {
      hw::WaferSpec spec = tiny();
      spec.color_switch = sw;
      Outcome r = run(spec, im);
      ASSERT_TRUE(r.r.finished);
      const bool pays = second == Second::Reroute && sw > 0;
      const Cycle expect = second == Second::SameRoute ? 36u : 35u + (pays ? Cycle(sw) : 0);
      EXPECT_EQ(r.r.latency(), expect) << int(second) << " switch " << sw;
      EXPECT_EQ(r.r.breakdown.cause[size_t(Cause::ColorSwitch)], pays ? Cycle(sw) : 0u) << int(second);
      EXPECT_EQ(r.r.color_switches, pays ? 1u : 0u) << int(second);
      EXPECT_EQ(sum(r.r.breakdown.cause), r.r.latency());
    }
  }
}

// The work per operator (Breakdown::work_per_op) adds up every task run by cause, whatever the critical path:
// a task's overhead and vector setup on every run, a Complete task's op bodies, a Stream task's whole span
// (start to end, its output trailing its input), and the fixed costs its sends paid. A chain: (0,0) a Complete
// task of op 0 starting a collective, three Stream relays of op 2, and (4,0) a Complete task of op 1.
TEST(Executor, WorkPerOperatorAddsEveryRunByCause) {
  Image im = empty_image({8, 8});
  Program first;
  Send s = to(1, 0, 3, 8);
  s.collective = true;
  first.tasks.push_back(task(1, {{OpKind::Add, 64}}, {s}, 1, Task::Start::Complete, 0));
  place(im, {0, 0}, first);
  place_relays(im, 1, 3, 8);
  Program last;
  last.tasks.push_back(task(3, {{OpKind::Silu, 64}, {OpKind::Add, 64}}, {}, 1, Task::Start::Complete, 1));
  place(im, {4, 0}, last);
  im.start.push_back({{0, 0}, 1, 1});
  im.done_tile = {4, 0}, im.done_color = 3;
  hw::WaferSpec spec = tiny();
  spec.collective_sync = 3;
  Outcome r = run(spec, im);
  ASSERT_TRUE(r.r.finished);
  ASSERT_EQ(r.tasks.size(), 5u);
  const CostModel c(spec);
  const Cycle add = c.body({OpKind::Add, 64}), silu = c.body({OpKind::Silu, 64});
  auto cause = [&](std::size_t op, Cause k) { return r.r.breakdown.work_per_op.at(op)[std::size_t(k)]; };
  // op 0: one run, its body and the collective's synchronisation.
  EXPECT_EQ(cause(0, Cause::TaskOverhead), 10u);
  EXPECT_EQ(cause(0, Cause::VectorSetup), 6u);
  EXPECT_EQ(cause(0, Cause::Compute), add);
  EXPECT_EQ(cause(0, Cause::CollectiveSync), 3u);
  // op 1: one run of two vector ops.
  EXPECT_EQ(cause(1, Cause::TaskOverhead), 10u);
  EXPECT_EQ(cause(1, Cause::VectorSetup), 12u);
  EXPECT_EQ(cause(1, Cause::Compute), silu + add);
  EXPECT_EQ(cause(1, Cause::CollectiveSync), 0u);
  // op 2: three Stream runs, each its span from start to end as Compute.
  Cycle spans = 0;
  for (const TaskRun& t : r.tasks)
    if (t.op == 2) spans += t.end - t.start;
  EXPECT_EQ(cause(2, Cause::TaskOverhead), 30u);
  EXPECT_EQ(cause(2, Cause::VectorSetup), 18u);
  EXPECT_EQ(cause(2, Cause::Compute), spans);
  EXPECT_GE(spans, 3 * add);
  for (std::size_t op = 0; op < 3; ++op) EXPECT_EQ(cause(op, Cause::ColorSwitch), 0u) << op;
}

// Multicast along a row: every tile of the segment receives the burst.
TEST(Executor, RowMulticastReachesEveryTile) {
  Image im = empty_image({8, 8});
  Program root;
  Send s;
  s.color = 2, s.wavelets = 2, s.dest.kind = Dest::Kind::Row, s.dest.dx = 1, s.dest.dy = 1, s.dest.span = 5;
  root.tasks.push_back(task(1, {}, {s}));
  place(im, {0, 0}, root);
  Program leaf;
  leaf.tasks.push_back(task(2, {}, {to(0, 0, 7)}));  // local activation
  Program last;
  last.tasks.push_back(task(2, {}, {to(0, 1, 6)}));
  for (int x = 1; x <= 4; ++x) place(im, {x, 1}, leaf);
  place(im, {5, 1}, last);
  im.start.push_back({{0, 0}, 1, 1});
  im.done_tile = {5, 2}, im.done_color = 6;
  Outcome r = run(tiny(), im);
  ASSERT_TRUE(r.r.finished);
  EXPECT_EQ(r.tasks.size(), 6u);
  // root starts 10, sends at 10; (5,1) is 6 hops: head 16, tail 17; start 27; 1 hop: 28.
  EXPECT_EQ(r.r.latency(), 28u);
  // The local activations are bursts nobody claims (color 7 has no task): counted, not lost.
  EXPECT_EQ(r.r.unclaimed, 4u);
}

TEST(Executor, UnfinishedStepIsReported) {
  Image im = empty_image({8, 8});
  Program p;
  p.tasks.push_back(task(1, {}, {to(1, 0, 2)}, 2));  // needs 2, gets 1
  place(im, {0, 0}, p);
  im.start.push_back({{0, 0}, 1, 1});
  im.done_tile = {1, 0}, im.done_color = 2;
  Outcome r = run(tiny(), im);
  EXPECT_FALSE(r.r.finished);
  EXPECT_EQ(r.r.tasks_run, 0u);
  EXPECT_EQ(r.r.done_received, 0u);
}

TEST(Executor, RefusesSendsOutsideTheArray) {
  Image im = empty_image({8, 8});
  Program p;
  p.tasks.push_back(task(1, {}, {to(2, 0, 2)}));
  place(im, {6, 3}, p);
  im.done_tile = {0, 0};
  EXPECT_NE(refusal(im).find("tile (6,3) sends outside"), std::string::npos) << refusal(im);
  im.tile_program[im.grid.index({6, 3})] = firmware::kIdle;
  im.tile_program[im.grid.index({5, 3})] = 0;  // 5 + 2 = 7: inside, the limit
  EXPECT_EQ(refusal(im), "");
}

}  // namespace
}  // namespace wafer::core

namespace wafer::core {
namespace {

// A task's sends are costed before they leave; delivering its own copy of a segment multicast triggers
// another task of the same tile. That task's costs must not replace the first one's: here the first task's
// second send is a collective start (1 sync), and the other task has two collective sends of its own
// (cumulative syncs 1, 2). The second send leaves after one collective_sync: the done tile 3 hops east has its
// tail at 1 + sync + 3 (not 1 + 2 sync + 3). task_overhead 0 is taken as 1 (a core reacts the cycle after an
// arrival at the earliest: CostModel::react), so the first task starts at 1 and the copy's task a cycle after
// the copy, from a timer; with 0 taken as 0 it started inside the first one's send loop, which this test was
// written for.
TEST(Executor, ATaskStartedInsideAnothersSendsKeepsItsOwnCosts) {
  Image im = empty_image({8, 8});
  Send segment;  // (0..1, 0), holding the sender; not a collective start here
  segment.color = 5, segment.wavelets = 1, segment.dest = {Dest::Kind::Row, 0, 0, 2};
  Send second = to(3, 0, 2);
  second.collective = true;
  Send n1 = to(0, 3, 3), n2 = to(0, 4, 3);
  n1.collective = n2.collective = true;
  Program p;
  p.tasks.push_back(task(1, {}, {segment, second}));
  p.tasks.push_back(task(5, {}, {n1, n2}));
  place(im, {0, 0}, p);
  Program sink;
  sink.tasks.push_back(task(5, {}, {}));
  place(im, {1, 0}, sink);
  Program sink3;
  sink3.tasks.push_back(task(3, {}, {}));
  place(im, {0, 3}, sink3);
  place(im, {0, 4}, sink3);
  im.start.push_back({{0, 0}, 1, 1});
  im.done_tile = {3, 0}, im.done_color = 2;
  hw::WaferSpec spec = tiny();
  spec.task_overhead = 0;  // (taken as 1)
  for (std::int64_t sync : {4, 5}) {
    spec.collective_sync = sync;
    Outcome r = run(spec, im);
    ASSERT_TRUE(r.r.finished);
    EXPECT_EQ(r.r.latency(), 1u + Cycle(sync) + 3u) << sync;
    EXPECT_EQ(r.r.unclaimed, 0u);
  }
}

}  // namespace
}  // namespace wafer::core
