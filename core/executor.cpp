#include "core/executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include "hw/error.h"
#include "noc/approx.h"
#include "noc/mesh.h"
#include "noc/route_step.h"
#include "noc/routing/route.h"

namespace wafer::core {

using firmware::Dest;
using firmware::OpKind;
using firmware::Task;
using hw::Coord;
using hw::TileIndex;

const char* to_string(Cause c) {
  switch (c) {
    case Cause::Compute: return "compute";
    case Cause::VectorSetup: return "vector_setup";
    case Cause::TaskOverhead: return "task_overhead";
    case Cause::ColorSwitch: return "color_switch";
    case Cause::CollectiveSync: return "collective_sync";
    case Cause::NetworkTransfer: return "network_transfer";
    case Cause::Ramp: return "ramp";
    case Cause::NetworkWait: return "network_wait";
    case Cause::WeightStreaming: return "weight_streaming";
    case Cause::InterWafer: return "inter_wafer";
  }
  return "?";
}

namespace {
// Timer tags: kind in the top byte.
constexpr std::uint64_t kTimerReady = 1ull << 56;    // | tile << 16 | task
constexpr std::uint64_t kTimerDeliver = 2ull << 56;  // | burst
constexpr std::uint64_t kTimerWeights = 3ull << 56;  // the next streamed weights' tail (Executor::warrivals_)
constexpr std::uint64_t kKindMask = 0xFFull << 56;
constexpr std::uint32_t kStepStart = 0xFFFFFFFEu;  // prev_: bound by the core being armed from the step start
// routes_: 0, no flow has used the color there yet (the table starts zero, its pages untouched until a route
// is set: noc::ZeroedArray); else the route's output ports with kRouted set.
constexpr std::uint8_t kUnrouted = 0, kRouted = 0x80;
constexpr std::size_t kInPorts = 5;                // N, E, S, W, Ramp (as hw::Dir)

noc::Destination destination(const Dest& d, Coord here) {
  noc::Destination out;
  out.first = {here.x + d.dx, here.y + d.dy};
  switch (d.kind) {
    case Dest::Kind::Tile: out.kind = noc::Destination::Kind::Tile; break;
    case Dest::Kind::Row: out.kind = noc::Destination::Kind::RowSegment, out.span = d.span; break;
    case Dest::Kind::Column: out.kind = noc::Destination::Kind::ColumnSegment, out.span = d.span; break;
  }
  return out;
}
}  // namespace

Executor::Executor(const hw::WaferSpec& spec, const firmware::Image& image, const noc::Fabric& fabric,
                   noc::Network& network, memory::StreamPort* weights, ExecOptions options)
    : spec_(spec),
      image_(image),
      fabric_(fabric),
      net_(network),
      approx_(dynamic_cast<noc::ApproxMesh*>(&network)),
      weights_(weights),
      opt_(options),
      costs_(spec, options.weight_bytes),
      grid_(image.grid) {
  validate();
  bool streams = false;
  prog0_.resize(image_.programs.size() + 1);
  for (std::size_t p = 0; p < image_.programs.size(); ++p) {
    prog0_[p] = std::uint32_t(tinfo_.size());
    for (const Task& t : image_.programs[p].tasks) {
      TaskInfo ti;
      ti.trigger = t.trigger;
      ti.arrivals = t.arrivals;
      ti.stream = t.start == Task::Start::Stream;
      ti.op = t.op;
      ti.layer = t.layer;
      if (sends_.size() + t.sends.size() > std::numeric_limits<std::uint32_t>::max())
        throw hw::InputError("firmware: more than 4 billion sends in the programs");
      ti.send0 = std::uint32_t(sends_.size());
      ti.nsends = std::uint16_t(t.sends.size());
      sends_.insert(sends_.end(), t.sends.begin(), t.sends.end());
      for (const auto& op : t.ops) {
        ti.setup += costs_.setup(op);
        ti.body += costs_.body(op);
        if (op.kind == OpKind::StreamIn) ++ti.weight_arrivals, ti.stream_bytes += op.elements;
      }
      ti.need = std::uint32_t(t.arrivals) + ti.weight_arrivals;
      streams |= ti.weight_arrivals > 0;
      tinfo_.push_back(ti);
    }
  }
  prog0_[image_.programs.size()] = std::uint32_t(tinfo_.size());
  // Who reads each task's output (firmware::Task::after; start_task): per program task, deps_ from dep0_[f] to
  // dep0_[f + 1], as indices in the program.
  dep0_.assign(tinfo_.size() + 1, 0);
  for (std::size_t p = 0; p < image_.programs.size(); ++p)
    for (std::size_t k = 0; k < image_.programs[p].tasks.size(); ++k)
      if (const std::uint16_t a = image_.programs[p].tasks[k].after; a > 0) {
        tinfo_[prog0_[p] + k].after = a;
        tinfo_[prog0_[p] + k - a].read = true;
        ++dep0_[prog0_[p] + k - a + 1];
      }
  for (std::size_t f = 0; f < tinfo_.size(); ++f) dep0_[f + 1] += dep0_[f];
  deps_.resize(dep0_.back());
  {
    std::vector<std::uint32_t> fill(dep0_.begin(), dep0_.end() - 1);
    for (std::size_t p = 0; p < image_.programs.size(); ++p)
      for (std::size_t k = 0; k < image_.programs[p].tasks.size(); ++k)
        if (const std::uint16_t a = tinfo_[prog0_[p] + k].after; a > 0) deps_[fill[prog0_[p] + k - a]++] = std::uint16_t(k);
  }
  // The claim groups (see group_of_).
  for (const auto& prog : image_.programs)
    for (const Task& t : prog.tasks) trigger_colors_ = std::max<std::uint32_t>(trigger_colors_, t.trigger + 1u);
  group_of_.assign(image_.programs.size() * trigger_colors_, kNoGroup);
  pgroup0_.resize(image_.programs.size() + 1);
  for (std::size_t p = 0; p < image_.programs.size(); ++p) {
    const auto& tasks = image_.programs[p].tasks;
    if (tasks.size() > 0xFFFF) throw hw::InputError(fmt::format("firmware: program {} has more than 65535 tasks", p));
    pgroup0_[p] = std::uint32_t(groups_.size());
    std::uint16_t* gof = group_of_.data() + p * trigger_colors_;
    std::uint32_t longs = 0;
    for (const Task& t : tasks) {
      if (gof[t.trigger] != kNoGroup) continue;
      gof[t.trigger] = std::uint16_t(groups_.size() - pgroup0_[p]);
      const std::uint32_t begin = std::uint32_t(group_tasks_.size());
      for (std::size_t k = 0; k < tasks.size(); ++k)
        if (tasks[k].trigger == t.trigger) group_tasks_.push_back(std::uint16_t(k));
      const std::uint32_t size = std::uint32_t(group_tasks_.size()) - begin;
      groups_.push_back({begin, size, size > kScanMax ? longs++ : kNone});
    }
    long_max_ = std::max(long_max_, longs);
  }
  pgroup0_.back() = std::uint32_t(groups_.size());
  streams_ = streams;
  if (streams && !weights_)
    throw hw::InputError("the firmware streams weights (StreamIn ops) but no MemoryX port is attached");
  const std::size_t n = grid_.size();
  slot0_.assign(n + 1, 0);
  std::uint64_t slots = 0;
  for (std::size_t t = 0; t < n; ++t) {
    slot0_[t] = std::uint32_t(slots);
    std::uint32_t p = image_.tile_program[t];
    if (p != firmware::kIdle) slots += image_.programs[p].tasks.size();
    if (slots >= kNone) throw hw::InputError("firmware: more than 4 billion task slots");
  }
  slot0_[n] = std::uint32_t(slots);
  // Per program its sends and the colors they use (a tile's program is shared by many tiles).
  std::vector<std::uint64_t> prog_sends(image_.programs.size(), 0);
  std::uint32_t send_colors = 0;
  for (std::size_t p = 0; p < image_.programs.size(); ++p)
    for (const Task& task : image_.programs[p].tasks) {
      prog_sends[p] += task.sends.size();
      for (const auto& snd : task.sends) send_colors = std::max<std::uint32_t>(send_colors, snd.color + 1u);
    }
  std::uint64_t sends = image_.start.size();
  for (std::size_t t = 0; t < n; ++t) {
    std::uint32_t p = image_.tile_program[t];
    if (p != firmware::kIdle) sends += prog_sends[p];
  }
  if (streams) ++sends;  // the shared weights record
  if (sends >= kNone) throw hw::InputError("firmware: more than 4 billion bursts per step");
  ru_.cap = opt_.reuse_bytes ? opt_.reuse_bytes : reuse_cap(slots, sends);
  bursts_.reserve(sends);
  cores_.assign(n, Core{opt_.start, kNone});  // (every core free from the step's start)
  claim_cursor_.assign(n * long_max_, 0);
  slots_.assign_uncleared(slots);  // (cleared below, at the end: every task before anything reached it, Slot)
  wide_ = streams;  // (see Slot)
  if (wide_) burst_hi_.reserve(sends);
  if (wide_) hi_.assign_uncleared(slots);
  done_tile_ = grid_.index(image_.done_tile);
  if (costs_.color_switch > 0) {
    // (the colors of the programs some tile runs)
    std::vector<std::uint8_t> used(image_.programs.size(), 0);
    for (std::size_t t = 0; t < n; ++t)
      if (image_.tile_program[t] != firmware::kIdle) used[image_.tile_program[t]] = 1;
    for (std::size_t p = 0; p < image_.programs.size() && route_colors_ < send_colors; ++p)
      if (used[p])
        for (const Task& task : image_.programs[p].tasks)
          for (const auto& snd : task.sends) route_colors_ = std::max<std::uint32_t>(route_colors_, snd.color + 1u);
    routes_.assign_zero(n * route_colors_ * kInPorts);  // (kUnrouted everywhere)
    route_written_.reset(n * route_colors_ * kInPorts);
  }
  if (opt_.reuse && !streams && net_.supports_reuse()) reuse_setup();
  // The slots' pages are faulted in up front, in one pass: faulted in by the event loop instead, in the order
  // it reaches them, they cost the 50-defect decode 4 % of its wall time, and Mixtral's wafers, two threads
  // faulting side by side, 14 %. All of them, unless reuse in space may copy bands: a jump's copies are not
  // written (SlotCopies), so the bands a run would copy are left out, those from its fourth group to its last
  // but one (its state repeats from the third cut, and the renaming stops short of its end: "Reuse" in
  // docs/timing.md). (A guess: a page it gets wrong is faulted in when written, as any.)
  // (A kept block, the process's last step's, is cleared alike: written where its pages are in memory, faulted in
  // where not, given back elsewhere.)
  hi_.clear(0, hi_.size(), true);  // (wide_ only: no reuse, every slot written)
  // (With a core to spare, the pages are faulted in by another thread while the step runs, in slot order, which is
  // about the order the step reaches them: ExecOptions::populate_behind; docs/timing.md "The slots' pages faulted
  // in behind the step". A kept block's pages in memory are written here first: the other thread's call writes
  // nothing, so it faults in only those that read as zero already.)
  const bool behind = opt_.populate_behind;
  std::vector<std::pair<std::size_t, std::size_t>> fill;  // (behind: the ranges to fault in)
  auto clear = [&](std::size_t a, std::size_t b, bool f) {
    if (!behind || !f) slots_.clear(a, b, f);
    else if (a < b) slots_.clear_resident(a, b), fill.push_back({a, b});
  };
  std::size_t from = 0;  // the first slot not cleared yet
  if (ru_.on && ru_.space) {
    const auto skip = [&](const std::vector<std::int32_t>& band_y, std::int32_t dr) {
      if (band_y.size() < kMinSpaceGroups) return;  // (not watched)
      const TileIndex W = TileIndex(grid_.width);
      const TileIndex t0 = TileIndex(band_y[3]) * W, t1 = TileIndex(band_y[band_y.size() - 2] + dr) * W;
      if (t0 >= t1 || t1 > grid_.size() || slot0_[t0] < from) return;  // (not rows one after another)
      clear(from, slot0_[t0], true);
      clear(slot0_[t0], slot0_[t1], false);
      from = slot0_[t1];
    };
    skip(ru_.band_y, ru_.dr);
    for (std::size_t r = ru_.run + 1; r < ru_.runs.size(); ++r) skip(ru_.runs[r].band_y, ru_.runs[r].dr);
  }
  clear(from, slots_.size(), true);
  if (!fill.empty()) {
    // Beside each piece of slots, the records the step writes for the same tiles, which it faulted in itself
    // before (docs/timing.md "The burst records and route tables behind the step too"): their route table
    // entries (color by input port by tile) and, unless reuse is in time, the burst records of their sends
    // (reserved for every send, appended as the tasks run, so about in their tiles' order: tile t's from the sends
    // of the tiles before it on). In space a jump grows the ids over its copies' records unwritten, so the ids after
    // it are those of the full run, and the pieces leave out the bands the copies cover; in time every tile runs in
    // every layer, so its sends' ids are not in tile order, and the pieces would fault in the copies' records a jump
    // leaves unwritten. (The pointers as they are now: the reserve covers every send, so the block does not move;
    // were it to, the calls would fault in pages nothing uses, writing nothing.)
    const std::uint64_t first_send = image_.start.size() + (streams ? 1 : 0);  // (run: the weights, the injections)
    populating_ = std::thread([this, fill = std::move(fill), prog_sends = std::move(prog_sends), first_send,
                               bursts = static_cast<const BurstRec*>(bursts_.data()), nbursts = ru_.on && !ru_.space ? 0 : bursts_.capacity(),
                               routes = static_cast<const std::uint8_t*>(routes_.data()), planes = route_colors_ * kInPorts,
                               busy = approx_ ? approx_->link_busy_data() : nullptr,
                               records = approx_ ? static_cast<const unsigned char*>(approx_->tile_records()) : nullptr] {
      // (in pieces of 16 MiB of slots: the step's own faults meanwhile wait for no long call; a piece the kernel
      // refuses ends the work, the step faulting the rest in as it writes)
      constexpr std::size_t piece = (std::size_t(16) << 20) / sizeof(Slot);
      const std::size_t tiles = grid_.size();
      // (the mesh's tile records first, all of them: a reuse cut's description reads every tile's, the first one
      // some layers into the step)
      constexpr std::size_t rec = noc::ApproxMesh::kTileRecordBytes;
      if (records && !noc::populate_bytes_in_kernel(records, tiles * rec)) return;
      for (const FillPiece& f : fill_pieces(slot0_, image_.tile_program, prog_sends, first_send, fill, piece)) {
        if (stop_populating_.load(std::memory_order_relaxed)) return;  // (the executor is going)
        if (!slots_.populate_in_kernel(f.slot_begin, f.slot_end)) return;
        const std::uint64_t b1 = std::min<std::uint64_t>(f.burst_end, nbursts);
        if (f.burst_begin < b1 && !noc::populate_bytes_in_kernel(bursts + f.burst_begin, (b1 - f.burst_begin) * sizeof(BurstRec)))
          return;
        for (std::size_t q = 0; q < planes; ++q)
          if (!noc::populate_bytes_in_kernel(routes + q * tiles + f.tile_begin, f.tile_end - f.tile_begin)) return;
        // (the mesh's busy counters of the tiles' links, noc::link_id: not written when the mesh was built)
        if (busy && !noc::populate_bytes_in_kernel(busy + std::size_t(f.tile_begin) * 4,
                                                   std::size_t(f.tile_end - f.tile_begin) * 4 * sizeof(std::uint64_t)))
          return;
      }
      // (then every link's: a jump adds its copies' cycles to the links of the bands it copies, which no piece
      // holds)
      if (busy && !stop_populating_.load(std::memory_order_relaxed))
        noc::populate_bytes_in_kernel(busy, tiles * 4 * sizeof(std::uint64_t));
    });
  }
}

std::vector<FillPiece> fill_pieces(const std::vector<std::uint32_t>& slot0, const std::vector<std::uint32_t>& tile_program,
                                   const std::vector<std::uint64_t>& prog_sends, std::uint64_t first_send,
                                   const std::vector<std::pair<std::size_t, std::size_t>>& fill, std::size_t piece) {
  std::vector<FillPiece> out;
  const TileIndex tiles = TileIndex(tile_program.size());
  TileIndex t = 0;                    // the tile the sends are counted up to
  std::uint64_t before = first_send;  // the first burst of tile t's sends
  auto advance = [&](TileIndex to) {
    for (; t < to; ++t)
      if (tile_program[t] != firmware::kIdle) before += prog_sends[tile_program[t]];
  };
  // (the first tile whose slots start at or after `slot`, from t on)
  auto tile_from = [&](std::size_t slot) {
    TileIndex u = t;
    while (u < tiles && slot0[u] < slot) ++u;
    return u;
  };
  const std::size_t step = std::max<std::size_t>(piece, 1);
  for (const auto& [a, b] : fill)
    for (std::size_t i = a; i < b; i += step) {
      const std::size_t j = std::min(b, i + step);
      advance(tile_from(i));
      FillPiece f{i, j, t, 0, before, 0};
      // (the tiles whose slots begin before j: the last of them may hold slots past j, its records go with
      // this piece)
      advance(tile_from(j));
      f.tile_end = t, f.burst_end = before;
      out.push_back(f);
    }
  return out;
}

Executor::~Executor() {
  stop_populating_.store(true, std::memory_order_relaxed);
  if (populating_.joinable()) populating_.join();
}

void Executor::validate() const {
  const auto& im = image_;
  if (grid_.width <= 0 || grid_.height <= 0 || im.tile_program.size() != grid_.size())
    throw hw::InputError(fmt::format("firmware: {} tile entries for a {}x{} array", im.tile_program.size(),
                                     grid_.width, grid_.height));
  if (grid_.width != fabric_.grid().width || grid_.height != fabric_.grid().height)
    throw hw::InputError(fmt::format("firmware is placed on a {}x{} array but the fabric is {}x{}", grid_.width,
                                     grid_.height, fabric_.grid().width, fabric_.grid().height));
  if (!grid_.inside(im.done_tile))
    throw hw::InputError(fmt::format("firmware: done tile ({},{}) is outside the array", im.done_tile.x, im.done_tile.y));
  for (const auto& inj : im.start)
    if (!grid_.inside(inj.tile))
      throw hw::InputError(fmt::format("firmware: start injection at ({},{}) is outside the array", inj.tile.x, inj.tile.y));
  // Per program, the extent of its sends; then per tile, whether they stay inside.
  struct Extent {
    std::int32_t xmin = 0, xmax = 0, ymin = 0, ymax = 0;
  };
  std::vector<Extent> ext(im.programs.size());
  for (std::size_t p = 0; p < im.programs.size(); ++p) {
    Extent e;
    for (const auto& t : im.programs[p].tasks) {
      if (t.layer >= im.layer_names.size() || t.op >= im.op_names.size())
        throw hw::InputError(fmt::format("firmware: program {} names layer {} / op {}, beyond its {} layer and {} op names",
                                         p, t.layer, t.op, im.layer_names.size(), im.op_names.size()));
      if (t.arrivals == 0) throw hw::InputError(fmt::format("firmware: program {} has a task needing 0 arrivals", p));
      for (const auto& op : t.ops)
        if (op.vectors == 0 || op.elements % op.vectors != 0)
          throw hw::InputError(fmt::format("firmware: program {} has a {} op of {} elements in {} vector ops (a "
                                           "positive divisor of its elements)",
                                           p, firmware::to_string(op.kind), op.elements, op.vectors));
      if (t.sends.size() > 0xFFFF)
        throw hw::InputError(fmt::format("firmware: program {} has a task of {} sends, more than 65535", p, t.sends.size()));
      for (const auto& s : t.sends) {
        std::int32_t span = std::max<std::int32_t>(1, s.dest.span);
        std::int32_t x1 = s.dest.dx + (s.dest.kind == Dest::Kind::Row ? span - 1 : 0);
        std::int32_t y1 = s.dest.dy + (s.dest.kind == Dest::Kind::Column ? span - 1 : 0);
        if (s.dest.kind != Dest::Kind::Tile && s.dest.span < 1)
          throw hw::InputError(fmt::format("firmware: program {} multicasts to a segment of {} tiles", p, s.dest.span));
        if (s.wavelets == 0) throw hw::InputError(fmt::format("firmware: program {} sends an empty burst", p));
        e.xmin = std::min(e.xmin, s.dest.dx), e.xmax = std::max(e.xmax, x1);
        e.ymin = std::min(e.ymin, s.dest.dy), e.ymax = std::max(e.ymax, y1);
      }
    }
    ext[p] = e;
  }
  for (std::size_t t = 0; t < im.tile_program.size(); ++t) {
    std::uint32_t p = im.tile_program[t];
    if (p == firmware::kIdle) continue;
    if (p >= im.programs.size())
      throw hw::InputError(fmt::format("firmware: tile {} uses program {} of {}", t, p, im.programs.size()));
    Coord c = grid_.coord(TileIndex(t));
    const Extent& e = ext[p];
    if (c.x + e.xmin < 0 || c.x + e.xmax >= grid_.width || c.y + e.ymin < 0 || c.y + e.ymax >= grid_.height)
      throw hw::InputError(fmt::format("firmware: tile ({},{}) sends outside the {}x{} array", c.x, c.y, grid_.width,
                                       grid_.height));
  }
}

const Task& Executor::task_at(TileIndex tile, std::uint32_t k) const {
  return image_.programs[image_.tile_program[tile]].tasks[k];
}

std::uint32_t Executor::channel_of(Coord tile) const {
  std::uint32_t best = 0;
  std::int64_t best_d = std::numeric_limits<std::int64_t>::max();
  for (std::uint32_t c = 0; c < std::uint32_t(spec_.io_channels); ++c) {
    Coord e = channel_tile(c);
    std::int64_t d = std::abs(e.x - tile.x) + std::abs(e.y - tile.y);
    if (d < best_d) best_d = d, best = c;
  }
  return best;
}

Coord Executor::channel_tile(std::uint32_t c) const {
  // Channels alternate between the west and east edges, spread evenly along each.
  const std::uint32_t n = std::uint32_t(std::max<std::int64_t>(1, spec_.io_channels));
  const std::uint32_t side = c % 2;
  const std::uint32_t on_side = side == 0 ? (n + 1) / 2 : n / 2;
  const std::uint32_t i = c / 2;
  std::int32_t y = std::int32_t((2 * std::uint64_t(i) + 1) * std::uint64_t(grid_.height) / (2 * std::uint64_t(on_side)));
  return {side == 0 ? 0 : grid_.width - 1, std::min(y, grid_.height - 1)};
}

void Executor::request_weights() {
  struct Req {
    std::uint16_t layer;
    TileIndex tile;
    std::uint32_t k;
  };
  std::vector<Req> reqs;
  for (TileIndex t = 0; t < grid_.size(); ++t) {
    std::uint32_t p = image_.tile_program[t];
    if (p == firmware::kIdle) continue;
    for (std::uint32_t k = 0; k < image_.programs[p].tasks.size(); ++k)
      if (tinfo_[prog0_[p] + k].weight_arrivals) reqs.push_back({image_.programs[p].tasks[k].layer, t, k});
  }
  // Layer order: MemoryX pushes the weights as the step will need them.
  std::stable_sort(reqs.begin(), reqs.end(), [](const Req& a, const Req& b) { return a.layer < b.layer; });
  // One shared record stands for every streamed-weight arrival: the critical path only needs its kind (its
  // time is the receiving task's `ready`).
  weight_burst_ = std::uint32_t(bursts_.size());
  add_burst(opt_.start, 0, 0, noc::Color(0), BurstKind::Weights);
  for (const Req& r : reqs) {
    const Coord c = grid_.coord(r.tile);
    const std::uint32_t ch = channel_of(c);
    const Coord e = channel_tile(ch);
    // The fabric leg, charged analytically (no mesh burst, so no contention with activation traffic on
    // the links it would cross: a stated simplification, docs/streaming.md): the last byte entered the
    // fabric at the channel's entry tile at `ready` and reaches the tile's core hops x hop_latency later,
    // plus the core's delivery ramp; its serialisation (bytes / wavelet_bytes cycles) is in the channel's
    // pipe.
    const Cycle leg = Cycle(std::abs(e.x - c.x) + std::abs(e.y - c.y)) * Cycle(spec_.hop_latency) + Cycle(spec_.ramp_latency);
    for (const auto& op : task_at(r.tile, r.k).ops) {
      if (op.kind != OpKind::StreamIn) continue;
      const Cycle ready = weights_->fetch(opt_.start, op.elements, ch);
      warrivals_.push_back({ready + leg, r.tile, r.k});
      weight_bytes_ += op.elements;
      ++weight_bursts_;
    }
  }
  // The arrivals are kept here in time order with one network timer for the next one: the mesh's event
  // queue then holds one far-future weight event instead of one per StreamIn (millions on a full wafer).
  std::stable_sort(warrivals_.begin(), warrivals_.end(),
                   [](const WeightArrival& a, const WeightArrival& b) { return a.at < b.at; });
  if (!warrivals_.empty()) net_.timer(warrivals_[0].at, kTimerWeights);
}

std::uint64_t Executor::record_bytes(std::uint64_t tasks) { return tasks * (sizeof(Slot) + sizeof(BurstRec)); }

std::uint64_t Executor::record_bytes(const firmware::Image& image) {
  std::vector<std::uint64_t> tiles(image.programs.size(), 0);
  for (std::uint32_t p : image.tile_program)
    if (p != firmware::kIdle && p < tiles.size()) ++tiles[p];
  std::uint64_t slots = 0, sends = image.start.size() + 1, groups = 0, longs = 0;
  bool streams = false;
  for (std::size_t p = 0; p < image.programs.size(); ++p) {
    std::uint32_t colors = 0, lists = 0;  // its claim groups (one per trigger color, see group_of_), the long ones
    std::vector<std::uint32_t> seen;      // per trigger color: its tasks
    for (const Task& t : image.programs[p].tasks) {
      slots += tiles[p], sends += tiles[p] * t.sends.size();
      for (const auto& op : t.ops) streams |= op.kind == OpKind::StreamIn && tiles[p] > 0;
      if (t.trigger >= seen.size()) seen.resize(t.trigger + 1u, 0);
      if (seen[t.trigger]++ == 0) ++colors;
      if (seen[t.trigger] == kScanMax + 1) ++lists;
    }
    if (tiles[p] > 0) groups = std::max<std::uint64_t>(groups, colors), longs = std::max<std::uint64_t>(longs, lists);
  }
  // Per tile beside the records: the mesh's record and busy counters (noc/approx.h, 96 bytes), the core's
  // record, per long claim list its cursor, and, reuse on (no weights streamed), per claim group a cursor and a
  // word of up to seven in each of the two descriptions a cut compares (describe_tile).
  const std::uint64_t per_tile = 96 + sizeof(Core) + longs * 2 + (streams ? 0 : groups * (2 + 2 * 7 * 8));
  // Reuse's jump keeps a layer's slots apart (reuse_cut: the template, its slot and tile lists and the copies'
  // moves, 56 bytes a slot), a layer being about slots / layers.
  const std::uint64_t jump = streams ? 0 : slots / std::max<std::size_t>(1, image.layer_names.size()) * 56;
  return slots * (sizeof(Slot) + (streams ? sizeof(SlotHigh) : 0) + 1) +
         sends * (sizeof(BurstRec) + (streams ? sizeof(std::uint32_t) : 0)) +
         std::uint64_t(image.tile_program.size()) * per_tile + jump;
}

void Executor::too_long(Cycle at) const {
  throw hw::InputError(fmt::format(
      "the step runs past cycle {} ({} cycles from its start at {}): the cores' task records hold a step of up to "
      "{} cycles when no weights stream (docs/timing.md); something in the wafer's parameters or the firmware makes "
      "it far longer than a decode step",
      at, at - opt_.start, opt_.start, kMaxOffset));
}

[[gnu::always_inline]] inline std::uint32_t Executor::add_burst(Cycle inject, std::uint32_t who, std::uint32_t lag, noc::Color color, BurstKind kind,
                                                                 std::uint32_t vshift, std::uint16_t switches,
                                                                 std::uint16_t syncs) {
  const std::uint64_t off = inject - opt_.start;
  if (wide_) [[unlikely]] burst_hi_.push_back(std::uint32_t(off >> 32));
  else if (off > kMaxOffset) [[unlikely]] too_long(inject);
  const std::uint32_t id = std::uint32_t(bursts_.size());
  bursts_.push_back({std::uint32_t(off), who, lag, vshift, switches, syncs, color, kind, false});
  return id;
}

// Adds to work_ what the tasks run since the last fold cost alike on every run (start_task counts them in
// TaskInfo::runs):
// the task overhead, the vector setup and, but for Stream tasks, the op bodies (a Complete task's end less its
// start, setup and fixed costs).
void Executor::fold_runs() {
  for (TaskInfo& ti : tinfo_) {
    const std::uint64_t n = ti.runs;
    if (n == 0) continue;
    auto& w = work_[ti.op];
    w[std::size_t(Cause::TaskOverhead)] += n * costs_.task_overhead;
    w[std::size_t(Cause::VectorSetup)] += n * ti.setup;
    if (!ti.stream) w[std::size_t(Cause::Compute)] += n * ti.body;
    ti.runs = 0;
  }
}

StepResult Executor::run() {
  if (ran_) throw std::logic_error("Executor::run called twice");
  ran_ = true;
  work_.assign(image_.op_names.size(), CauseCycles{});
  net_.set_client(this);
  if (weights_ && streams_) request_weights();  // (a scan of every task: only when something streams)
  for (const auto& inj : image_.start) {
    const std::uint32_t id =
        add_burst(opt_.start, grid_.index(inj.tile), std::max<std::uint32_t>(1, inj.wavelets) - 1, inj.color, BurstKind::Injection);
    net_.timer(opt_.start, kTimerDeliver | id);
  }
  first_data_ = bursts_.size();  // (the weights' record and the injections come first: every later burst is Data)
  auto* mesh = opt_.sample ? dynamic_cast<noc::Mesh*>(&net_) : nullptr;
  sampled_ = mesh;
  if (mesh) {
    // In slices up to each sample; a slice that pauses for a reuse cut goes on to its sample after the cut
    // (and a jump takes the samples of the stretch it copies: reuse_cut).
    next_sample_ = opt_.sample(opt_.start, nullptr);
    while (!mesh->idle()) {
      mesh->run_until(next_sample_);
      if (ru_.pending) {
        reuse_cut();
        if (!mesh->idle() && mesh->now() < next_sample_) continue;
      }
      next_sample_ = opt_.sample(next_sample_, nullptr);
    }
  } else if (ru_.on) {
    while (net_.run_paused())
      if (ru_.pending) reuse_cut();
  } else {
    net_.run();
  }

  tell_progress();
  StepResult r;
  r.start = opt_.start;
  r.finished = done_count_ >= image_.done_arrivals;
  r.end = r.finished ? done_end_ : net_.now();
  r.tasks_run = tasks_run_;
  r.tasks_executed = tasks_run_ - ru_.skipped_tasks;
  r.layers_reused = ru_.skipped_layers;
  r.layers_watched = ru_.watched;
  r.cuts_s = ru_.cuts_s;
  r.reuse_bytes = ru_.peak;
  r.reuse_dropped = ru_.dropped;
  r.tasks_total = slots_.size();
  r.bursts = bursts_.size() - (weight_burst_ == kNone ? 0 : 1) - image_.start.size();
  r.weight_bursts = weight_bursts_;
  r.weight_bytes = weight_bytes_;
  r.unclaimed = unclaimed_;
  r.done_received = done_count_;
  if (r.finished) walk_critical_path(r);
  std::reverse(r.path.begin(), r.path.end());
  fold_runs();
  r.breakdown.work_per_op = work_;
  r.color_switches = switches_run_;
  r.collective_starts = syncs_run_;
  r.tasks_held = held_total_;
  return r;
}

// Inlined in deliver (once per arrival); `data`: an arrival of a burst (else a streamed weights' tail).
// kWatched: reuse watches the step (ru_.on && !ru_.done), the slot is noted. Ends in tail calls only: with
// kWatched false a delivery calls nothing it must come back from, and saves no registers.
template <bool kWatched>
[[gnu::always_inline]] inline void Executor::credit(std::uint32_t slot, TileIndex tile, std::uint32_t k, const TaskInfo& ti,
                                                    Cycle when, Cycle tail, std::uint32_t burst, bool data) {
  Slot& sl = slots_[slot];
  if constexpr (kWatched) touch(slot, tile);
  const bool first = sl.crit == enc(kNone);
  Cycle ready = ready_of(slot);
  if (first || when > ready) sl.crit = enc(burst), set_cycle<&Slot::ready, &SlotHigh::ready>(slot, when), ready = when;
  if (first || tail > tail_of(slot)) set_cycle<&Slot::tail, &SlotHigh::tail>(slot, tail);
  if (data) ++sl.count;
  if (sl.count == ti.arrivals && sl.wcount == ti.weight_arrivals) {
    // Due now (a mesh reporting arrivals at their tail): start at once rather than through a timer, which
    // a cycle-stepped mesh would only fire on the next cycle.
    if (!approx_) [[unlikely]] return start_or_wait(tile, k, ready);
    const Cycle now = approx_->now();
    if (ready <= now) return start_task(tile, k, now);
    return approx_->timer(ready, kTimerReady | (std::uint64_t(tile) << 16) | k);
  }
}

// A full task's start, at once or by a timer, on any network (credit's path on the approx mesh, inlined there).
[[gnu::noinline]] void Executor::start_or_wait(TileIndex tile, std::uint32_t k, Cycle ready) {
  const Cycle now = net_.now();
  if (ready <= now) start_task(tile, k, now);
  else net_.timer(ready, kTimerReady | (std::uint64_t(tile) << 16) | k);
}

void Executor::on_timer(std::uint64_t tag, Cycle now) {
  // (a task's start, the bulk, as a tail call: the other kinds out of line, so this saves no registers)
  if ((tag & kKindMask) == kTimerReady) return start_task(TileIndex((tag >> 16) & 0xFFFFFFFFull), std::uint32_t(tag & 0xFFFF), now);
  other_timer(tag, now);
}

[[gnu::noinline]] void Executor::other_timer(std::uint64_t tag, Cycle now) {
  const std::uint64_t kind = tag & kKindMask;
  if (kind == kTimerWeights) {
    while (wnext_ < warrivals_.size() && warrivals_[wnext_].at <= now) {
      const WeightArrival w = warrivals_[wnext_++];
      const std::uint32_t slot = slot0_[w.tile] + w.k;
      ++slots_[slot].wcount;
      const TaskInfo& ti = info_at(w.tile, w.k);
      if (ru_.on && !ru_.done) [[unlikely]] {  // (as deliver)
        if (ru_.tracking) {
          credit<true>(slot, w.tile, w.k, ti, now, now, weight_burst_, false);
          continue;
        }
        pre_touch(w.tile);
      }
      credit<false>(slot, w.tile, w.k, ti, now, now, weight_burst_, false);
    }
    if (wnext_ < warrivals_.size()) net_.timer(warrivals_[wnext_].at, kTimerWeights);
  } else if (kind == kTimerDeliver) {
    std::uint32_t id = std::uint32_t(tag & 0xFFFFFFFFull);
    const BurstRec& b = bursts_[id];
    deliver(id, src_of(b), now, now + b.lag);
  }
}

void Executor::on_arrival(std::uint64_t tag, TileIndex sink, Cycle head, Cycle tail) {
  const BurstRec& b = bursts_[std::uint32_t(tag)];
  if (b.self && holds_slot(sink, b.who)) return;  // already delivered by the sender itself
  deliver(std::uint32_t(tag), sink, head, tail);
}

// The slots an arrival on `color` at `sink` may be credited to, and its burst record, fetched ahead (the
// slots of a full wafer, hundreds of MB, are read at random: the arrival's first read of them was the
// emulation's largest stall), and the sink's core record, for the task start the arrival may lead to. Reads only
// tables that mostly stay in the caches: the sink's program and first slot, from the 4-byte arrays (16 tiles a
// cache line). (Read from the core record when that held copies of them, 32 bytes, 2 a line, 28 MB on wse3,
// they were this hint's own stall: 70 % of its samples, and the hint 19 % of Mixtral's on 3 wafers; perf,
// cpu-clock.)
void Executor::expect_arrival(std::uint64_t tag, TileIndex sink, noc::Color color) {
  __builtin_prefetch(&bursts_[std::uint32_t(tag)]);
  __builtin_prefetch(&cores_[sink], 1);
  const std::uint32_t p = image_.tile_program[sink];
  if (p == firmware::kIdle || color >= trigger_colors_) return;
  const std::uint16_t g = group_of_[std::size_t(p) * trigger_colors_ + color];
  if (g == kNoGroup) return;
  const Group& gr = groups_[pgroup0_[p] + g];
  const Slot* s0 = slots_.data() + slot0_[sink];
  const std::uint16_t* list = group_tasks_.data() + gr.begin;
  // (one line a slot: Slot is aligned to its size; two loops, the short lists' without a bound to compute)
  if (gr.size > kScanMax) [[unlikely]] {  // (from the cursor: the arrival lands there or, rarely, a task on)
    for (std::uint32_t i = cursor_of(sink, gr), i1 = std::min(gr.size, i + 2); i < i1; ++i) __builtin_prefetch(s0 + list[i], 1);
    return;
  }
  for (std::uint32_t i = 0; i < gr.size; ++i) __builtin_prefetch(s0 + list[i], 1);
}

// A long list's claim (Group::cursor): its first task that still needs arrivals, from the tile's cursor on.
[[gnu::always_inline]] inline std::uint32_t Executor::claim_long(TileIndex sink, const Group& gr, std::uint32_t s0,
                                                                 const TaskInfo* ti) {
  const std::uint16_t* list = group_tasks_.data() + gr.begin;
  std::uint16_t& cursor = cursor_of(sink, gr);
  std::uint32_t i = cursor;
  while (i < gr.size && slots_[s0 + list[i]].count >= ti[list[i]].arrivals) ++i;
  cursor = std::uint16_t(i);
  return i;
}

template <bool kWatched>
[[gnu::always_inline]] inline void Executor::deliver_to(std::uint32_t id, TileIndex sink, Cycle head, Cycle tail) {
  const BurstRec& b = bursts_[id];
  bool claimed = false;
  if (sink == done_tile_ && b.color == image_.done_color) {
    ++done_count_;
    if (done_count_ <= image_.done_arrivals && (done_crit_ == kNone || tail >= done_end_)) done_end_ = tail, done_crit_ = id;
    claimed = true;
  }
  const std::uint32_t p = image_.tile_program[sink];
  if (p != firmware::kIdle && b.color < trigger_colors_) {
    // The first task, in program order, waiting on the color that still needs arrivals (see group_of_).
    const std::uint16_t g = group_of_[std::size_t(p) * trigger_colors_ + b.color];
    if (g != kNoGroup) {
      const TaskInfo* ti = tinfo_.data() + prog0_[p];
      const std::uint32_t s0 = slot0_[sink];
      const Group& gr = groups_[pgroup0_[p] + g];
      const std::uint16_t* list = group_tasks_.data() + gr.begin;
      std::uint32_t i = 0;
      if (gr.size <= kScanMax) [[likely]]
        while (i < gr.size && slots_[s0 + list[i]].count >= ti[list[i]].arrivals) ++i;
      else
        i = claim_long(sink, gr, s0, ti);
      if (i < gr.size) {
        const std::uint32_t k = list[i];
        Cycle when = ti[k].stream ? head - b.vshift + costs_.stream_stage_latency : tail;
        return credit<kWatched>(s0 + k, sink, k, ti[k], when, tail, id, true);
      }
    }
  }
  if (!claimed) ++unclaimed_;
}

// (the watched delivery out of line: its calls to note the slot would make the unwatched one save registers;
// before the run's first cut only the sink is marked: Reuse::tracking)
void Executor::deliver(std::uint32_t id, TileIndex sink, Cycle head, Cycle tail) {
  materialize(sink);
  if (ru_.on && !ru_.done) [[unlikely]] {
    if (ru_.tracking) return deliver_watched(id, sink, head, tail);
    pre_touch(sink);
  }
  deliver_to<false>(id, sink, head, tail);
}
[[gnu::noinline]] void Executor::deliver_watched(std::uint32_t id, TileIndex sink, Cycle head, Cycle tail) {
  deliver_to<true>(id, sink, head, tail);
}

bool Executor::reroute(TileIndex src, const noc::Destination& d, noc::Color c) {
  bool changed = false;
  const std::size_t n = grid_.size();
  std::uint8_t* const routes = routes_.data() + std::size_t(c) * kInPorts * n;  // this color's (input port, tile)
  // Sets one router's route (its cell: the input port's plane, the tile), noting whether a route configured
  // before changed.
  auto set = [&](std::size_t plane, std::size_t tile, std::uint8_t out) __attribute__((always_inline)) {
    std::uint8_t& cfg = routes[plane + tile];
    out |= kRouted;
    if (cfg != out) {
      changed |= cfg != kUnrouted;
      const std::size_t at = std::size_t(&cfg - routes_.data());
      if (log_routes_) [[unlikely]] log_route(at, tile, cfg);
      route_written_.mark(at);
      cfg = out;
    }
  };
  constexpr std::uint8_t kDeliver = 1u << unsigned(hw::Dir::Ramp);
  // The two common shapes walked without the general tree walk below (each router of a route is visited
  // once, so the order of the visits does not matter): a unicast's path, hop by hop ...
  if (d.kind == noc::Destination::Kind::Tile) {
    // (noc::resolve only to name a destination outside the grid or a failed router: it throws then)
    if (!grid_.inside(d.first) || !fabric_.router_ok(grid_.index(d.first))) noc::resolve(fabric_, src, d);
    // (the router's index stepped with its coordinates, rather than computed from them at every hop)
    const std::ptrdiff_t offset[4] = {-std::ptrdiff_t(grid_.width), 1, std::ptrdiff_t(grid_.width), -1};  // N E S W
    Coord here = grid_.coord(src);
    std::size_t at = src;
    hw::Dir in = hw::Dir::Ramp;
    for (;;) {
      const hw::Dir out = noc::next_port(fabric_, here, d.first, in);
      const std::size_t plane = std::size_t(unsigned(in)) * n;
      if (out == hw::Dir::Ramp) {
        set(plane, at, kDeliver);
        return changed;
      }
      set(plane, at, std::uint8_t(1u << unsigned(out)));
      here = hw::step(here, out), in = out;
      at = std::size_t(std::ptrdiff_t(at) + offset[unsigned(out)]);
    }
  }
  const noc::Target target = noc::resolve(fabric_, src, d);
  // ... and a segment holding its source: the source sends both ways along it, every other tile of it
  // receives the burst and passes it on in the direction it travels (noc::route_step).
  if (target.along) {
    const bool row = target.kind == noc::Destination::Kind::RowSegment;
    const std::int32_t v = row ? target.src.x : target.src.y;
    const std::int32_t lo = row ? target.region.x0 : target.region.y0;
    const std::int32_t hi = lo + (row ? target.region.w : target.region.h) - 1;
    const hw::Dir back = row ? hw::Dir::West : hw::Dir::North, fwd = row ? hw::Dir::East : hw::Dir::South;
    const std::uint8_t back_bit = std::uint8_t(1u << unsigned(back)), fwd_bit = std::uint8_t(1u << unsigned(fwd));
    const std::size_t stride = row ? 1 : std::size_t(grid_.width);
    const std::size_t at = grid_.index(target.src);
    set(std::size_t(unsigned(hw::Dir::Ramp)) * n, at, std::uint8_t((v > lo ? back_bit : 0) | (v < hi ? fwd_bit : 0)));
    const std::size_t back_cells = std::size_t(unsigned(back)) * n, fwd_cells = std::size_t(unsigned(fwd)) * n;
    for (std::int32_t u = v - 1; u >= lo; --u)
      set(back_cells, at - std::size_t(v - u) * stride, std::uint8_t((u > lo ? back_bit : 0) | kDeliver));
    for (std::int32_t u = v + 1; u <= hi; ++u)
      set(fwd_cells, at + std::size_t(u - v) * stride, std::uint8_t((u < hi ? fwd_bit : 0) | kDeliver));
    return changed;
  }
  walk_.clear();
  walk_.push_back({grid_.coord(src), hw::Dir::Ramp});
  while (!walk_.empty()) {
    const auto [here, in] = walk_.back();
    walk_.pop_back();
    const noc::Step st = noc::route_step(fabric_, target, here, in);
    const std::uint8_t out = std::uint8_t(st.ports | (st.deliver ? 1u << unsigned(hw::Dir::Ramp) : 0u));
    set(std::size_t(unsigned(in)) * n, grid_.index(here), out);
    for (unsigned m = st.ports; m != 0; m &= m - 1) {
      const hw::Dir dir = hw::Dir(__builtin_ctz(m));
      walk_.push_back({hw::step(here, dir), dir});
    }
  }
  return changed;
}

// A full task held back: its tile's task whose output it reads has not started (start_task). Reuse does not
// describe a held task (a cut takes a tile whose tasks are full and whose core is free for settled), so a hold
// while reuse watches ends it: the rest of the step is emulated.
[[gnu::noinline]] void Executor::hold(std::uint32_t slot) {
  held_.insert(slot);
  ++held_total_;
  if (ru_.on && !ru_.done) reuse_stop(false);
}

// Task f (flat) of `tile` starts: the tasks held for it, each at its trigger or now, whichever is later.
[[gnu::noinline]] void Executor::release(TileIndex tile, std::uint32_t f) {
  for (std::uint32_t d = dep0_[f]; d < dep0_[f + 1]; ++d) {
    const std::uint32_t j = deps_[d], s = slot0_[tile] + j;
    if (held_.erase(s)) net_.timer(std::max(net_.now(), ready_of(s)), kTimerReady | (std::uint64_t(tile) << 16) | j);
  }
}

void Executor::start_task(TileIndex tile, std::uint32_t k, Cycle now) {
#ifndef NDEBUG
  // (a task starts once its arrivals are in: the delivery that brought them materialized its tile, and a jump
  // materializes the tiles of the tasks its state holds, timers' included)
  if (copied(tile)) throw std::logic_error(fmt::format("reuse: a task of tile {} starts before its copies are written", tile));
#endif
  // No task passes the task of its tile whose output it reads (firmware::Task::after: a reduction its tile's GEMV,
  // a merge its tile's argmax; docs/streaming.md "Order on a tile"). Such a task is held, and starts (through a
  // timer) when that one starts. Streamed weights reorder a tile's inputs so; so can a repair detour that delays a
  // tile's input and not its neighbour's partial sum, or a neighbour whose own work ended sooner.
  const std::uint32_t slot = slot0_[tile] + k;
  const std::uint32_t p = image_.tile_program[tile];
  TaskInfo& ti = tinfo_[prog0_[p] + k];  // (not const: counts its runs)
  if (ti.after > 0 && !ran(slot - ti.after)) [[unlikely]] return hold(slot);
  if (ti.read && !held_.empty()) [[unlikely]] release(tile, prog0_[p] + k);
  // (its core record fetched while the sends' routes are walked: it is read only after them)
  __builtin_prefetch(&cores_[tile], 1);
  const firmware::Send* const sends = sends_.data() + ti.send0;
  const bool stream = ti.stream;
  const Coord here = grid_.coord(tile);
  // The fixed costs before each send: a collective's synchronisation, a route switch.
  // A segment of only the sender, or the sender itself (a local task activation): no router route.
  auto local = [&](const firmware::Dest& d) {
    return d.dx == 0 && d.dy == 0 && (d.kind == firmware::Dest::Kind::Tile || d.span == 1);
  };
  std::uint16_t switches = 0, syncs = 0;
  // A stack: delivering a segment multicast's copy to the sender itself can start another task of this
  // tile (a nested call) while this one still reads its entries. Its top only grows its storage.
  const std::size_t nsends = ti.nsends;
  const std::size_t base = send_top_;
  send_top_ += nsends;
  if (send_costs_.size() < send_top_) [[unlikely]] send_costs_.resize(send_top_ + 16);
  for (std::size_t i = 0; i < nsends; ++i) {
    const auto& snd = sends[i];
    const noc::Destination d = destination(snd.dest, here);
    if (snd.collective && syncs < 0xFFFF) ++syncs;
    if (!routes_.empty() && !local(snd.dest)) {
      // (reuse in space: the first row a route may cross on a fabric without faults, the rows between the
      // source and its destinations)
      if (ru_.space && !ru_.done) ru_.route_row_min = std::min({ru_.route_row_min, here.y, d.first.y});
      if (reroute(tile, d, snd.color) && switches < 0xFFFF) ++switches;
    }
    send_costs_[base + i] = std::uint32_t(switches) | std::uint32_t(syncs) << 16;  // (one store: read back as one)
  }
  const Cycle fixed = Cycle(switches) * costs_.color_switch + Cycle(syncs) * costs_.collective_sync;
  Core& core = cores_[tile];
  Cycle s, e;
  if (!stream) {
    Cycle t0 = now;
    if (core.free > now) t0 = core.free, slots_[slot].prev = enc(core.last);
    s = t0 + costs_.task_overhead;
    e = s + ti.setup + ti.body + fixed;
  } else {
    // Armed in advance: activation, vector setup and the sends' fixed costs run while the core waits for
    // the stream's head. `ready` (head + stage) may lie before `now` when the mesh reported the burst at
    // its tail.
    const Cycle ready = ready_of(slot);
    const Cycle armed = core.free + costs_.task_overhead + ti.setup + fixed;
    s = ready;
    if (armed > ready) s = armed, slots_[slot].prev = enc(core.last == kNone ? kStepStart : core.last);
    e = std::max(s + ti.body, tail_of(slot) + costs_.stream_stage_latency);
  }
  if (ru_.on && !ru_.done) {
    // (the runs are watched back to back from the step's start, so the starts seen here are all that
    // next_space_run asks about)
    const std::uint16_t layer = ti.layer;
    ru_.layer_hi = std::max<std::uint32_t>(ru_.layer_hi, layer);
    if (ru_.tracking) touch(slot, tile);
    else pre_touch(tile);
    if (layer >= ru_.next && layer <= ru_.b) {
      if (layer == ru_.next && !ru_.pending) {  // the first task of this layer: a cut at the end of the cycle
        // (every p-th layer: the run repeats in groups of p layers)
        ru_.pending = true;
        ru_.layer = layer;
        ru_.next = layer + ru_.p;
        net_.pause_at(now + 1);
      } else {
        reuse_stop(false);  // layers overlap in an unforeseen way: no reuse
      }
    }
  }
  set_cycle<&Slot::end, &SlotHigh::end>(slot, e);  // (e >= s: it refuses the step first)
  set_cycle<&Slot::start, &SlotHigh::start>(slot, s);
  slots_[slot].switches = switches;
  slots_[slot].syncs = syncs;
  // The work: what every run of this task costs alike is counted (fold_runs multiplies it out), the rest added.
  ++ti.runs;
  if (stream) work_[ti.op][std::size_t(Cause::Compute)] += e - s;  // (not stream: e - s - setup - fixed = body)
  if (switches | syncs) [[unlikely]] {
    auto& w = work_[ti.op];
    w[std::size_t(Cause::ColorSwitch)] += Cycle(switches) * costs_.color_switch;
    w[std::size_t(Cause::CollectiveSync)] += Cycle(syncs) * costs_.collective_sync;
    switches_run_ += switches;
    syncs_run_ += syncs;
  }
  core.free = e;
  core.last = slot;
  ++tasks_run_;
  if ((tasks_run_ & 0x3FFF) == 0) [[unlikely]] tell_progress();
  const bool noting = ru_.on && !ru_.done && ru_.tracking;  // (the window's bursts' senders: Reuse::burst_tile)
  for (std::size_t i = 0; i < nsends; ++i) {
    const auto& snd = sends[i];
    const std::uint32_t packed = send_costs_[base + i];  // (a copy: a nested call may grow the stack)
    const std::uint16_t sc_switches = std::uint16_t(packed), sc_syncs = std::uint16_t(packed >> 16);
    // When the send leaves in the model.
    const Cycle vat = stream ? s
                             : s + ti.setup + ti.body + Cycle(sc_switches) * costs_.color_switch +
                                   Cycle(sc_syncs) * costs_.collective_sync;
    const Cycle at = std::max(vat, now);  // when the mesh can take it
    std::uint32_t lag = snd.wavelets - 1;
    if (stream) lag = std::uint32_t(std::max<Cycle>(lag, vat + std::max<Cycle>(lag, e - s) - at));
    const std::uint32_t id = add_burst(vat, slot, lag, snd.color, BurstKind::Data, std::uint32_t(at - vat), sc_switches, sc_syncs);
    if (noting && reuse_grow(ru_.burst_tile)) ru_.burst_tile.push_back(tile);
    noc::BurstSpec b;
    b.src = tile;
    b.dest = destination(snd.dest, here);
    // The first sink's program and first slot, which the arrival hint reads first (expect_arrival, at the hop
    // before), fetched now, some hops ahead: a unicast's sink lies away from the tiles the loop has just read
    // (docs/timing.md "The sink's entries fetched at the send").
    if (grid_.inside(b.dest.first)) {
      const TileIndex first_sink = grid_.index(b.dest.first);
      __builtin_prefetch(&image_.tile_program[first_sink]);
      __builtin_prefetch(&slot0_[first_sink]);
    }
    if (b.dest.kind != noc::Destination::Kind::Tile) {
      const bool row = b.dest.kind == noc::Destination::Kind::RowSegment;
      const hw::Rect seg = row ? hw::Rect{b.dest.first.x, b.dest.first.y, b.dest.span, 1}
                               : hw::Rect{b.dest.first.x, b.dest.first.y, 1, b.dest.span};
      if (seg.contains(here)) {
        bursts_.back().self = true;
        if (at <= net_.now()) deliver(id, tile, at, at + lag);
        else net_.timer(at, kTimerDeliver | id);
        if (b.dest.span == 1) continue;  // only the sender
      }
    }
    b.wavelets = snd.wavelets;
    b.lag = lag;
    b.color = snd.color;
    b.tag = id;
    net_.send(b, at);
  }
  send_top_ = base;
}

Executor::Ideal Executor::ideal_latency(const BurstRec& b, TileIndex src, TileIndex sink, bool to_tail) const {
  std::uint64_t hops = 0;
  Cycle ramps = 0;
  if (src != sink) {  // (a burst to the sender itself, or its own copy of a segment multicast: no ramps)
    Coord s = grid_.coord(src), d = grid_.coord(sink);
    hops = noc::route(fabric_, s, d).hops;
    ramps = 2 * Cycle(spec_.ramp_latency);
  }
  return {ramps + Cycle(hops) * Cycle(spec_.hop_latency) + (to_tail ? b.lag : 0), ramps};
}

void Executor::walk_critical_path(StepResult& r) {
  Breakdown& bd = r.breakdown;
  bd.per_layer.assign(image_.layer_names.size(), CauseCycles{});
  bd.per_op.assign(image_.op_names.size(), CauseCycles{});
  critical_.assign((slots_.size() + 63) / 64, 0);
  critical_slots_.clear();
  Cycle cursor = done_end_;  // the path is walked backwards: each piece ends where the previous began
  auto add = [&](Cause c, Cycle v, std::uint16_t layer, std::uint16_t op) {
    bd.cause[std::size_t(c)] += v;
    bd.per_layer[layer][std::size_t(c)] += v;
    bd.per_op[op][std::size_t(c)] += v;
    if (!opt_.keep_path || v == 0) return;
    if (!r.path.empty() && r.path.back().cause == c && r.path.back().layer == layer && r.path.back().op == op)
      r.path.back().from -= v;
    else
      r.path.push_back({cursor - v, cursor, c, layer, op});
    cursor -= v;
  };

  // A burst reaching `sink` at `arrive` (its tail, or its head for a Stream trigger), feeding (layer, op).
  std::uint32_t burst = done_crit_;
  TileIndex sink = done_tile_;
  Cycle arrive = done_end_;
  bool to_tail = true;
  std::uint16_t layer = 0, op = 0;
  {
    const BurstRec b = burst_at(burst);
    if (b.kind == BurstKind::Data) {
      const TileIndex t = slot_tile(b.who);
      const TaskInfo& sti = info_at(t, b.who - slot0_[t]);
      layer = sti.layer, op = sti.op;
    }
  }
  for (std::uint64_t guard = 0; guard <= slots_.size() + bursts_.size() + 1; ++guard) {
    const BurstRec b = burst_at(burst);
    ++bd.path_bursts;
    if (b.kind == BurstKind::Weights) {
      add(Cause::WeightStreaming, arrive - opt_.start, layer, op);
      return;
    }
    if (b.kind == BurstKind::Injection) {
      add(Cause::NetworkTransfer, arrive - opt_.start, layer, op);
      return;
    }
    const Cycle inject = inject_of(b, burst);
    const Cycle net = arrive - inject;
    // (the sending task's tile: its source, and the tile of every core predecessor the walk goes back through)
    const TileIndex tile = slot_tile(b.who);
    const Ideal zero = ideal_latency(b, tile, sink, to_tail);
    const Cycle ideal = std::min(net, zero.total);
    const Cycle ramps = std::min(ideal, zero.ramps);
    add(Cause::Ramp, ramps, layer, op);
    add(Cause::NetworkTransfer, ideal - ramps, layer, op);
    add(Cause::NetworkWait, net - ideal, layer, op);
    // The sending task, from the moment it sent (after the fixed costs of its sends up to this one).
    std::uint32_t slot = b.who;
    Cycle ref = inject;
    std::uint16_t ref_switches = b.switches, ref_syncs = b.syncs;
    bool ended = false;
    for (;;) {
      ++bd.path_tasks;
      if (first_mark(critical_, slot)) critical_slots_.push_back(slot);
      const std::uint32_t k = slot - slot0_[tile];
      const TaskInfo& ti = info_at(tile, k);
      const bool stream = ti.stream;
      layer = ti.layer, op = ti.op;
      const Slot sl = read_slot(tile, slot);  // (a jump's copies are not all written: read_slot)
      const Cycle s = cycle_in<&Slot::start, &SlotHigh::start>(sl, slot);
      if (ref > s) {  // the task's own work [s, ref]: setup, op bodies, then the sends' fixed costs
        Cycle span = ref - s;
        if (!stream) {
          const Cycle setup = std::min(span, ti.setup);
          span -= setup;
          const Cycle sw = std::min(span, Cycle(ref_switches) * costs_.color_switch);
          span -= sw;
          const Cycle sy = std::min(span, Cycle(ref_syncs) * costs_.collective_sync);
          span -= sy;
          add(Cause::VectorSetup, setup, layer, op);
          add(Cause::ColorSwitch, sw, layer, op);
          add(Cause::CollectiveSync, sy, layer, op);
        }
        add(Cause::Compute, span, layer, op);
      }
      if (dec(sl.prev) != kNone) {  // waited for its core: activation (+ what ran while armed), then the core's previous task
        add(Cause::TaskOverhead, costs_.task_overhead, layer, op);
        if (stream) {
          add(Cause::VectorSetup, ti.setup, layer, op);
          add(Cause::ColorSwitch, Cycle(sl.switches) * costs_.color_switch, layer, op);
          add(Cause::CollectiveSync, Cycle(sl.syncs) * costs_.collective_sync, layer, op);
        }
        if (dec(sl.prev) == kStepStart) {
          ended = true;
          break;
        }
        slot = dec(sl.prev);
        const Slot before = read_slot(tile, slot);
        ref = cycle_in<&Slot::end, &SlotHigh::end>(before, slot);
        ref_switches = before.switches, ref_syncs = before.syncs;
        continue;
      }
      // Waited for its input.
      burst = dec(sl.crit);
      sink = tile;
      arrive = cycle_in<&Slot::ready, &SlotHigh::ready>(sl, slot);
      to_tail = true;
      if (!stream) {
        add(Cause::TaskOverhead, costs_.task_overhead, layer, op);
        // A mesh that reported the input late (after its tail): the gap is the network's.
        if (s - costs_.task_overhead > arrive) add(Cause::NetworkWait, s - costs_.task_overhead - arrive, layer, op);
      } else if (burst_at(burst).kind != BurstKind::Weights) {
        add(Cause::Compute, costs_.stream_stage_latency, layer, op);
        arrive -= costs_.stream_stage_latency;
        to_tail = false;
      }
      break;
    }
    if (ended) return;
  }
  throw std::logic_error("critical path walk did not terminate");
}

TileIndex Executor::slot_tile(std::uint32_t slot) const {
  return TileIndex(std::upper_bound(slot0_.begin(), slot0_.end(), slot) - slot0_.begin() - 1);
}

// Burst `id` as a full run writes it: from bursts_, or, in a stretch of copies a jump did not write, from its
// template record moved as the copy would have moved it (reuse_cut).
Executor::BurstRec Executor::burst_at(std::uint64_t id) const {
  for (auto v = vcopies_.rbegin(); v != vcopies_.rend(); ++v) {
    if (id >= v->first + v->copies * v->nb) break;  // (after every stretch from this one on)
    if (id < v->first) continue;
    const std::uint64_t m = (id - v->first) / v->nb + 1, i = (id - v->first) % v->nb;
    return burst_copy(bursts_[v->tmpl + i], m, v->D, v->dsender[i]);
  }
  return bursts_[id];
}

// Copy m of the touched template slot tmpl[i] (SlotCopies).
Executor::Slot Executor::SlotCopies::copy(std::uint32_t i, std::uint32_t m) const {
  Slot o = tmpl[i];
  if (o.crit != enc(kNone)) o.ready += m * D, o.tail += m * D, o.crit += m * NB;
  if (o.start != kOpen) o.start += m * D, o.end += m * D;
  o.prev += m * dprev[i];
  return o;
}

// Over out[s - s0] for the slots s of [s0, s1) some copy reaches: copy m of the touched template slot s - m P
// for the largest such m (the copies in ascending order, a later one's replacing an earlier one's, as when
// each was written whole).
void Executor::SlotCopies::apply(std::uint32_t s0, std::uint32_t s1, Slot* out) const {
  if (s1 <= s0 || s1 - 1 < std::uint64_t(lo) + P) return;
  const std::uint64_t m_lo = s0 > hi ? std::max<std::uint64_t>(1, (s0 - hi + P - 1) / P) : 1;  // s - m P <= hi
  const std::uint64_t m_hi = std::min<std::uint64_t>(copies, (s1 - 1 - lo) / P);                // s - m P >= lo
  for (std::uint64_t m = m_lo; m <= m_hi; ++m)
    for (std::uint32_t s = s0; s < s1; ++s) {
      const std::uint64_t x = s - m * P;
      if (x < lo || x > hi) continue;
      if (const std::uint32_t i = index[x - lo]; i != kNone) out[s - s0] = copy(i, std::uint32_t(m));
    }
}

// The latest jump's copies that reach tile t (t in [copied_lo_, copied_lo_ + copied_n_)), if any.
const Executor::SlotCopies* Executor::copies_of(TileIndex t) const {
  for (auto c = scopies_.rbegin(); c != scopies_.rend(); ++c)
    if (t >= c->t_lo && t < c->t_hi) return &*c;
  return nullptr;
}

// Slot s of tile t as a full run writes it (SlotCopies).
Executor::Slot Executor::read_slot(TileIndex t, std::uint32_t s) const {
  if (!copied(t)) [[likely]] return slots_[s];
  Slot v;
  read_slots(t, s, s + 1, &v);
  return v;
}

void Executor::read_tile(TileIndex t, Slot* out) const { read_slots(t, slot0_[t], slot0_[t + 1], out); }

void Executor::read_slots(TileIndex t, std::uint32_t s0, std::uint32_t s1, Slot* out) const {
  const SlotCopies* c = copied(t) ? copies_of(t) : nullptr;
  // (a tile fresh at the jump and not touched since holds zeros: not read, so that its pages, never written,
  // are not faulted in to be read)
  if (c && t >= c->zero_from) std::memset(static_cast<void*>(out), 0, std::size_t(s1 - s0) * sizeof(Slot));
  else std::memcpy(static_cast<void*>(out), slots_.data() + s0, std::size_t(s1 - s0) * sizeof(Slot));
  if (c) c->apply(s0, s1, out);
}

// Writes tile t's copied slots to slots_, before the step reads or changes them there.
[[gnu::noinline]] void Executor::materialize_tile(TileIndex t) {
  if (const SlotCopies* c = copies_of(t)) c->apply(slot0_[t], slot0_[t + 1], slots_.data() + slot0_[t]);
  set_bit(materialized_, t);
}

// ---- Cut log (a diagnostic build: bench/cut_match.sh) ---------------------------------------------------
// Built with WAFER_EMU_CUT_LOG defined, the executor watches a step's bands as runs whether or not their rows
// are alike link for link (a defective wafer's too), takes no jump, and writes per cut to stderr "cut LAYER
// CYCLE WORDS EQ_PREV EQ_TEMPLATE": the description's length, whether it equals the one before and the
// template's. The template is the first description that equals the one before, saved to the file
// WAFER_EMU_CUT_LOG_SAVE names, or read from WAFER_EMU_CUT_LOG_LOAD (another step's: the defect-free wafer's).
void Executor::cut_log(const std::vector<std::uint64_t>& out, bool usable) {
  if (!cut_template_loaded_) {
    cut_template_loaded_ = true;
    if (const char* path = std::getenv("WAFER_EMU_CUT_LOG_LOAD")) {
      std::ifstream f(path, std::ios::binary);
      for (std::uint64_t v; f.read(reinterpret_cast<char*>(&v), sizeof v);) cut_template_.push_back(v);
    }
  }
  const bool same = usable && out == ru_.prev_desc;
  if (same && cut_template_.empty()) {
    cut_template_ = out;
    if (const char* path = std::getenv("WAFER_EMU_CUT_LOG_SAVE")) {
      std::ofstream f(path, std::ios::binary);
      f.write(reinterpret_cast<const char*>(out.data()), std::streamsize(out.size() * sizeof(std::uint64_t)));
    }
  }
  // Per band from two before the cut's to the cut's own: 1 when its rows (and the links north of its first) hold
  // no fault and no repaired link of another length, 0 when they do, - when outside the run.
  char clean[4] = {'-', '-', '-', 0};
  if (ru_.space) {
    const std::int64_t g = (std::int64_t(ru_.layer) - ru_.a) / std::int64_t(ru_.p);
    for (int j = 0; j < 3; ++j) {
      const std::int64_t gj = g - 2 + j;
      if (gj < 0 || gj >= std::int64_t(ru_.band_y.size())) continue;
      const std::int32_t y0 = ru_.band_y[std::size_t(gj)];
      bool ok = true;
      for (std::int32_t y = std::max(0, y0 - 1); y < y0 + ru_.dr && ok; ++y)
        for (std::int32_t x = 0; x < std::int32_t(grid_.width) && ok; ++x) {
          const TileIndex t = grid_.index({x, y});
          ok = fabric_.router_ok(t) && fabric_.link_hops(t, hw::Dir::South) <= 1 &&
               (y + 1 == std::int32_t(grid_.height) || fabric_.link_ok(t, hw::Dir::South)) &&
               (y < y0 || (fabric_.link_hops(t, hw::Dir::East) <= 1 &&
                           (x + 1 == std::int32_t(grid_.width) || fabric_.link_ok(t, hw::Dir::East))));
        }
      clean[j] = ok ? '1' : '0';
    }
  }
  // The description's FNV-1a hash: descriptions are relative to the cut's band and cycle, so two steps' cuts
  // compare through it (another defect map's, say).
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (const std::uint64_t v : out) hash = (hash ^ v) * 0x100000001b3ull;
  std::fprintf(stderr, "cut %u %llu %zu %d %d %s %016llx\n", unsigned(ru_.layer),
               static_cast<unsigned long long>(net_.now()), out.size(), int(same),
               int(usable && !cut_template_.empty() && out == cut_template_), clean,
               static_cast<unsigned long long>(hash));
}

// ---- Reuse of repeated layers ------------------------------------------------------------------------
// Two shapes of repetition (docs/timing.md "Reuse"):
//  - in time: the programs hold layers a..b as identical blocks (the same tasks but for Task::layer), one
//    after the other: in program p, layer l's block is tasks off[p] + (l - a) len[p] .. + len[p]. Renaming
//    a task one layer on (k -> k + len[p]) maps the run onto itself but for its ends.
//  - in space: layers a..b lie, in groups of p (p = 1 for a band per layer, 4 for serpentine-bands), on bands
//    of dr whole rows, each band the one before moved dr rows on (tile t -> t + S, S = dr x width): the same
//    programs but for Task::layer (p layers on), the same fabric (no faults, the same link lengths).
//    Renaming a task p layers on moves it to the same task of the tile S on; cuts are taken every p layers.
//
// A cut is taken at the end of the cycle in which the first task of layer l (a <= l <= b) starts. Its
// description holds everything the rest of the run depends on, relative to the cut's cycle T and with the
// tasks of the run named relative to layer l (in time: k - (l - a) len[p]; in space: tiles relative to
// layer l's band): the mesh's pending events (in the order they will run), bursts in flight and busy
// resources (noc::Network::describe_state); per tile the cycle its core is free (when it can still
// matter) and its last task; per tile and claim group the first task not yet full (the tasks before it are
// full, those after it have had no arrival: arrivals fill a group in program order) and that task's
// arrivals so far; the records of the bursts in flight and the tasks the pending timers will start. In
// space, tiles are described band by band: the leading bands whose tiles are all settled (every task full,
// the core's free cycle past mattering) and the trailing ones whose tiles are all fresh (nothing arrived,
// nothing ran) as two marks, every band between them tile by tile; the route tables of the rows from
// the last settled band to the first fresh one are compared with the previous cut's in place (describe_bands,
// routes_as_before). When the description at the cut of layer
// l equals the one at layer l - p (p = 1 in time), the window between the two (the template) was clean
// (every task it touched lies in the run, no route changed but as the description allows, no burst went
// unclaimed, the step did not end), the run is deterministic and nothing in it reads an absolute cycle or
// tile, so from the cut of layer l the run repeats the template shifted by D = T_l - T_(l-p) (and S tiles
// on, in space) and renamed p layers on, again and again while the renaming stays inside layers a..b. When
// the counters are sampled in time (traces), the samples inside the copies are taken from the template's
// link reservations (sample_copies). The executor then copies the template K times (its slots and
// bursts, shifted and renamed), adds K times its statistics, and moves the mesh and the cores' state K x D
// cycles (and K x S tiles) on (noc::Network::repeat).
namespace {
bool same_mod_layer(const Task& x, const Task& y) {
  return x.trigger == y.trigger && x.arrivals == y.arrivals && x.start == y.start && x.op == y.op && x.ops == y.ops &&
         x.sends == y.sends;
}

// A hash of what same_mod_layer compares, over a program's tasks (FNV-1a).
std::uint64_t hash_mod_layer(const firmware::Program& prog) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](std::uint64_t v) { h = (h ^ v) * 0x100000001b3ull; };
  mix(prog.tasks.size());
  for (const Task& t : prog.tasks) {
    mix(t.trigger), mix(t.arrivals), mix(std::uint64_t(t.start)), mix(t.op), mix(t.ops.size()), mix(t.sends.size());
    for (const firmware::Op& op : t.ops) mix(std::uint64_t(op.kind)), mix(op.elements), mix(op.vectors);
    for (const firmware::Send& sd : t.sends)
      mix(sd.color), mix(sd.wavelets), mix(std::uint64_t(sd.dest.kind)), mix(std::uint32_t(sd.dest.dx)),
          mix(std::uint32_t(sd.dest.dy)), mix(std::uint32_t(sd.dest.span)), mix(sd.collective);
  }
  return h;
}
}  // namespace

void Executor::reuse_setup() {
  const std::size_t nl = image_.layer_names.size(), np = image_.programs.size();
  if (nl < 3 || np == 0) return;
  // Per program and layer: the block's first task and size, or not contiguous.
  std::vector<std::int64_t> first(np * nl, -1);
  std::vector<std::uint32_t> count(np * nl, 0);
  std::vector<std::uint8_t> broken(np * nl, 0);
  for (std::size_t p = 0; p < np; ++p) {
    const auto& tasks = image_.programs[p].tasks;
    for (std::size_t k = 0; k < tasks.size(); ++k) {
      const std::size_t l = tasks[k].layer;
      if (first[p * nl + l] < 0) first[p * nl + l] = std::int64_t(k);
      else if (tasks[k - 1].layer != l) broken[p * nl + l] = 1;
      ++count[p * nl + l];
    }
  }
  // ok[l]: layer l's block follows layer l-1's and equals it in every program.
  std::vector<std::uint8_t> ok(nl, 0);
  for (std::size_t l = 1; l < nl; ++l) {
    bool good = true;
    for (std::size_t p = 0; p < np && good; ++p) {
      const std::size_t i = p * nl + l, j = i - 1;
      if (count[i] == 0 && count[j] == 0) continue;
      if (count[i] != count[j] || broken[i] || broken[j] || first[i] != first[j] + std::int64_t(count[j])) {
        good = false;
        break;
      }
      const auto& tasks = image_.programs[p].tasks;
      for (std::uint32_t k = 0; k < count[i] && good; ++k)
        good = same_mod_layer(tasks[std::size_t(first[j]) + k], tasks[std::size_t(first[i]) + k]);
    }
    ok[l] = good;
  }
  const auto [best_a, best_len] = longest_run(ok);
  if (best_len < 3 || best_a + best_len - 1 > 0xFFFF) return space_setup();  // a jump needs two cuts and a layer to skip
  ru_.a = std::uint16_t(best_a);
  ru_.b = std::uint16_t(best_a + best_len - 1);
  ru_.off.assign(np, 0);
  ru_.len.assign(np, 0);
  for (std::size_t p = 0; p < np; ++p) {
    const std::size_t i = p * nl + ru_.a;
    ru_.len[p] = count[i];
    ru_.off[p] = count[i] ? std::uint32_t(first[i]) : 0;
  }
  reuse_arm();
}

// The longest run of layers a..b with ok[a+1..b] (its first layer and length; length 0 when none).
std::pair<std::size_t, std::size_t> Executor::longest_run(const std::vector<std::uint8_t>& ok) {
  std::size_t best_a = 0, best_len = 0;
  for (std::size_t l = 1; l < ok.size();) {
    if (!ok[l]) {
      ++l;
      continue;
    }
    std::size_t e = l;
    while (e + 1 < ok.size() && ok[e + 1]) ++e;
    if (e - l + 2 > best_len) best_len = e - l + 2, best_a = l - 1;
    l = e + 1;
  }
  return {best_a, best_len};
}

// Reuse in space: the longest run of layers whose bands are each the one before moved the same number of
// whole rows on (programs, idle tiles and fabric alike), on a fabric without faults (routing around a fault
// looks at faults anywhere, which a move does not carry).
void Executor::space_setup() {
  const std::size_t nl = image_.layer_names.size(), np = image_.programs.size();
  if (!fabric_.fault_free() || grid_.width <= 0) return;
  const std::int32_t W = grid_.width, H = grid_.height;
  // Per program: its layer when all its tasks have one, else -1.
  std::vector<std::int32_t> pl(np, -1);
  for (std::size_t p = 0; p < np; ++p) {
    const auto& tasks = image_.programs[p].tasks;
    if (tasks.empty()) continue;
    bool one = true;
    for (const Task& t : tasks) one = one && t.layer == tasks[0].layer;
    if (one) pl[p] = tasks[0].layer;
  }
  // Per layer: the rows its tiles occupy.
  std::vector<std::int32_t> ylo(nl, H), yhi(nl, -1);
  for (TileIndex t = 0; t < grid_.size(); ++t) {
    const std::uint32_t p = image_.tile_program[t];
    if (p == firmware::kIdle || pl[p] < 0) continue;
    const std::int32_t y = std::int32_t(t / std::uint32_t(W)), l = pl[p];
    ylo[std::size_t(l)] = std::min(ylo[std::size_t(l)], y), yhi[std::size_t(l)] = std::max(yhi[std::size_t(l)], y);
  }
  // Per program a class, the same for programs alike but for their tasks' layers (same_mod_layer task by
  // task: found by a hash of what it compares, then compared), and per tile its program's class and layer
  // (-1 when idle): two bands are then compared as two runs of these arrays.
  std::vector<std::int32_t> cls(np, -1);
  {
    auto programs_alike = [&](std::uint32_t p, std::uint32_t q) {
      const auto& x = image_.programs[p].tasks;
      const auto& y = image_.programs[q].tasks;
      bool same = x.size() == y.size();
      for (std::size_t k = 0; k < x.size() && same; ++k) same = same_mod_layer(x[k], y[k]);
      return same;
    };
    std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> firsts;  // per hash: the classes' first programs
    for (std::uint32_t p = 0; p < np; ++p) {
      std::vector<std::uint32_t>& reps = firsts[hash_mod_layer(image_.programs[p])];
      for (std::uint32_t r : reps)
        if (programs_alike(r, p)) {
          cls[p] = cls[r];
          break;
        }
      if (cls[p] < 0) cls[p] = std::int32_t(p), reps.push_back(p);
    }
  }
  std::vector<std::int32_t> tile_cls(grid_.size(), -1), tile_layer(grid_.size(), -1);
  for (TileIndex t = 0; t < grid_.size(); ++t)
    if (const std::uint32_t p = image_.tile_program[t]; p != firmware::kIdle) tile_cls[t] = cls[p], tile_layer[t] = pl[p];
  // Layers in groups of `per` from layer `o` on (a band per layer: per = 1; serpentine-bands, whose layers
  // pair up in band rows flowing east and west in turn: per = 4, two band rows). Group g's rows: those of
  // its layers' tiles. dr[g]: group g is group g-1 moved dr[g] rows on (0: not): the groups' rows do not
  // overlap, and every tile of group g-1's rows and the tile dr rows on hold programs alike but for the
  // layer (per layers on), or are both idle, on fabric rows alike.
  // Of the groupings, the one whose runs cover the most layers. A run: groups each the one before moved the
  // same dr rows on, at least kMinSpaceGroups of them (the runs of a grouping, in order, share no group: a
  // group where the move changes starts the next run one group later). Defects break a layer-bands wafer into
  // such runs (a band holding a repaired link is alike to neither neighbour), and so do bands of two heights
  // (the mapper spreads the rows a wafer's bands leave over): each run is watched in turn (next_space_run).
  std::size_t best_per = 0, best_layers = 0;
  std::vector<Reuse::SpaceRun> best;
  for (std::size_t per = 1; per <= 4; ++per)
    for (std::size_t o = 0; o < per && o < nl; ++o) {
      const std::size_t ng = (nl - o) / per;
      if (ng < kMinSpaceGroups || best_layers >= ng * per) continue;
      std::vector<std::int32_t> glo(ng, H), ghi(ng, -1);
      for (std::size_t g = 0; g < ng; ++g)
        for (std::size_t l = o + g * per; l < o + (g + 1) * per; ++l)
          if (yhi[l] >= 0) glo[g] = std::min(glo[g], ylo[l]), ghi[g] = std::max(ghi[g], yhi[l]);
      std::vector<std::int32_t> dr(ng, 0);
      for (std::size_t g = 1; g < ng; ++g) {
        const std::int32_t d = glo[g] - glo[g - 1];
        if (ghi[g - 1] < 0 || ghi[g] < 0 || d <= 0 || ghi[g - 1] - glo[g - 1] >= d || ghi[g] - glo[g] >= d ||
            glo[g] + d > H || !(kCutLog || fabric_.rows_alike(glo[g - 1], d, d)))
          continue;
        // Tile by tile: both idle, or programs of one class whose layers are in group g-1 and per on.
        const TileIndex from = TileIndex(glo[g - 1]) * TileIndex(W), shift = TileIndex(d) * TileIndex(W);
        const std::int32_t l0 = std::int32_t(o + (g - 1) * per), on = std::int32_t(per);
        const std::int32_t* const c = tile_cls.data() + from;
        const std::int32_t* const l = tile_layer.data() + from;
        if (!std::equal(c, c + shift, c + shift)) continue;
        // (branch-free and in unsigned arithmetic, so that it vectorises: l0 <= l < l1 as l - l0 < per)
        std::uint32_t bad = 0;
        const std::uint32_t uon = std::uint32_t(on), ul0 = std::uint32_t(l0);
        for (TileIndex i = 0; i < shift; ++i) {
          const std::uint32_t a = std::uint32_t(l[i]), b = std::uint32_t(l[i + shift]);
          const std::uint32_t live = std::uint32_t(~c[i]) >> 31;  // (1 unless idle: c = -1)
          bad |= live & (std::uint32_t(b != a + uon) | std::uint32_t(a - ul0 >= uon));
        }
        if (!bad) dr[g] = d;
      }
      // The runs: groups first..g1 with dr[first + 1..g1] one move (first = the group before the move's
      // first, or the group after the previous run's last).
      std::vector<Reuse::SpaceRun> runs;
      std::size_t layers = 0, next_free = 0;
      for (std::size_t g = 1; g < ng;) {
        if (!dr[g]) {
          ++g;
          continue;
        }
        std::size_t e = g;
        while (e + 1 < ng && dr[e + 1] == dr[g]) ++e;
        const std::size_t first = std::max(g - 1, next_free);
        if (e + 1 - first >= kMinSpaceGroups && o + (e + 1) * per - 1 <= 0xFFFF) {
          runs.push_back({std::uint16_t(o + first * per), std::uint16_t(o + (e + 1) * per - 1), dr[g],
                          std::vector<std::int32_t>(glo.begin() + std::ptrdiff_t(first), glo.begin() + std::ptrdiff_t(e + 1))});
          layers += (e + 1 - first) * per;
          next_free = e + 1;
        }
        g = e + 1;
      }
      if (layers > best_layers) best_layers = layers, best_per = per, best = std::move(runs);
    }
  // Armed only for runs whose copies pay for watching them. A run's first cut still sees the layers before
  // it: on every wafer measured (the 8B, 70B and Mixtral with layer-bands and serpentine-bands on wse3, the
  // tiny and small test models) the description at group a + 2 is the first to equal the one before, so a
  // jump copies groups - 3 groups at most. Watching a run costs about what emulating 1.5 to 3.5 of its groups
  // does on a defect-free wafer, and more on a defective one, whatever the run's length (the claim cursors,
  // the touched slots, the route log, a description per cut, the jump's bookkeeping: bench/watch_cost.sh;
  // docs/timing.md "The shortest run watched"), so a run of fewer than six groups, which copies two at
  // most, is not watched.
  if (best.empty()) return;
  ru_.space = true;
  ru_.p = std::uint32_t(best_per);
  ru_.prog_layer = std::move(pl);
  ru_.runs = std::move(best);
  ru_.run = 0;
  reuse_arm();
}

// In space: run ru_.run's bands and layers, watched from its first cut on with nothing kept from a run before.
void Executor::arm_space_run() {
  Reuse::SpaceRun& r = ru_.runs[ru_.run];
  ru_.a = r.a;
  ru_.b = r.b;
  ru_.dr = r.dr;
  ru_.S = TileIndex(ru_.dr) * TileIndex(grid_.width);
  ru_.band_y = std::move(r.band_y);
  ru_.rows = ru_.prev_rows = {0, 0};
  ru_.route_split = ru_.prev_route_split = 0;
  ru_.route_row_min = std::numeric_limits<std::int32_t>::max();
  ru_.fresh_band = 0;
  // Before the first run's first cut every band is fresh (describe_bands); arrivals before a later run was
  // armed went to no touched list, so its bands are all looked at at its first cut.
  if (ru_.run == 0) ru_.band_code.clear();
  else ru_.band_code.assign(ru_.band_y.size(), 4);
  start_watching();
}

// In space, once a run is over (jumped, or no jump can come): the next run whose first layer no task has
// reached yet. False when none is left.
bool Executor::next_space_run() {
  while (ru_.space && ru_.run + 1 < ru_.runs.size()) {
    ++ru_.run;
    if (ru_.runs[ru_.run].a <= ru_.layer_hi) continue;
    ru_.cursor.zero();  // (a cursor only runs forward from 0)
    arm_space_run();
    return true;
  }
  return false;
}

// Layers a..b watched from layer a's first cut on (until then only the tiles reached are marked:
// Reuse::tracking).
void Executor::start_watching() {
  ru_.done = false;
  ru_.have = false;
  ru_.tracking = false;
  ru_.next = ru_.a;
  ru_.watched += std::uint32_t(ru_.b - ru_.a + 1);
  ru_.burst_tile.clear();
  log_routes_ = false;
  clear_route_log();
}

void Executor::reuse_arm() {
  const std::size_t np = image_.programs.size();
  for (std::size_t p = 0; p < np; ++p)
    ru_.max_groups = std::max<std::uint32_t>(ru_.max_groups,
                                             pgroup0_[p + 1] - pgroup0_[p]);
  // A core free before now - margin cannot delay a task started from now on (Complete: it starts at now at
  // the earliest; Stream: armed = free + overhead + setup + fixed costs stays below its input's head, > now).
  Cycle most = 0;
  for (std::size_t p = 0; p < np; ++p)
    for (std::size_t k = 0; k < image_.programs[p].tasks.size(); ++k) {
      const Task& t = image_.programs[p].tasks[k];
      most = std::max(most, tinfo_[prog0_[p] + k].setup +
                                Cycle(t.sends.size()) * (costs_.color_switch + costs_.collective_sync));
    }
  ru_.margin = costs_.task_overhead + most + 1;
  ru_.cursor.assign_zero(grid_.size() * std::size_t(ru_.max_groups));  // (pages of tiles no cut classifies untouched)
  ru_.touched_bits.assign((slots_.size() + 63) / 64, 0);
  ru_.pre_tiles.assign((std::size_t(grid_.size()) + 63) / 64, 0);
  ru_.on = true;
  if (ru_.space) arm_space_run();
  else start_watching();
}

bool Executor::in_range(std::uint32_t p, std::uint32_t k) const {
  if (ru_.space) return p != firmware::kIdle && ru_.prog_layer[p] >= ru_.a && ru_.prog_layer[p] <= ru_.b;
  return k >= ru_.off[p] && k < ru_.off[p] + std::uint32_t(ru_.b - ru_.a + 1) * ru_.len[p];
}

// The layer of the run task k of program p belongs to (in_range(p, k)).
std::uint32_t Executor::run_layer(std::uint32_t p, std::uint32_t k) const {
  return ru_.space ? std::uint32_t(ru_.prog_layer[p]) : ru_.a + (k - ru_.off[p]) / ru_.len[p];
}

// Task k of `tile` as the description names it: in the run, relative to the cut's layer.
void Executor::describe_task(std::vector<std::uint64_t>& out, TileIndex tile, std::uint32_t k) {
  const std::uint32_t p = image_.tile_program[tile];
  if (!in_range(p, k)) {
    if (ru_.space) ru_.bad = true;  // a tile outside the bands does not move with them
    out.push_back(2), out.push_back(k);
    return;
  }
  const std::uint32_t shift = ru_.space ? 0 : std::uint32_t(ru_.layer - ru_.a) * ru_.len[p];
  out.push_back(1), out.push_back(std::uint64_t(std::int64_t(k) - std::int64_t(shift)));
  ru_.state_max = std::max<std::uint32_t>(ru_.state_max, run_layer(p, k));
}

// A burst record the state still reads (in flight, or a pending self-delivery): relative to the cut.
void Executor::describe_burst(std::vector<std::uint64_t>& out, std::uint32_t id) {
  const Cycle now = net_.now();
  const BurstRec b = burst_at(id);
  ru_.min_flight = std::min<std::uint64_t>(ru_.min_flight, id);
  out.push_back(std::uint64_t(id) - std::uint64_t(bursts_.size()));
  out.push_back(inject_of(b, id) - now);
  if (b.kind != BurstKind::Data) {
    ru_.bad = true;
    return;
  }
  const TileIndex t = slot_tile(b.who);
  out.push_back(tile_ref(t));
  describe_task(out, t, b.who - slot0_[t]);
  out.insert(out.end(), {std::uint64_t(b.lag), std::uint64_t(b.color), std::uint64_t(b.self),
                         std::uint64_t(b.vshift), std::uint64_t(b.switches), std::uint64_t(b.syncs)});
}

// Slot s's arrivals so far, relative to the cut (now) and to the bursts sent by then (nb).
void Executor::describe_arrivals(std::vector<std::uint64_t>& out, std::uint32_t s, Cycle now, std::uint64_t nb) const {
  const Slot& sl = slots_[s];
  out.insert(out.end(), {std::uint64_t(sl.count), std::uint64_t(sl.wcount), ready_of(s) - now, tail_of(s) - now,
                         std::uint64_t(dec(sl.crit)) - nb});
}

// Advances tile t's claim-group cursors; its class: 0 fresh (nothing arrived, nothing ran), 1 settled
// (every task full, the core free before now - margin), 2 at work.
int Executor::tile_class(TileIndex t, Cycle now) {
  materialize(t);
  const std::uint32_t p = image_.tile_program[t];
  const std::uint32_t g0 = pgroup0_[p], g1 = pgroup0_[p + 1];
  const TaskInfo* ti = tinfo_.data() + prog0_[p];
  const std::uint32_t s0 = slot0_[t];
  bool fresh = cores_[t].last == kNone, full = cores_[t].free + ru_.margin < now;
  for (std::uint32_t g = g0; g < g1; ++g) {
    const Group& gr = groups_[g];
    const std::uint16_t* list = group_tasks_.data() + gr.begin;
    std::uint16_t& i = ru_.cursor[std::size_t(t) * ru_.max_groups + (g - g0)];
    while (i < gr.size && slots_[s0 + list[i]].count >= ti[list[i]].arrivals) ++i;
    fresh = fresh && i == 0 && slots_[s0 + list[0]].count == 0;
    full = full && i == gr.size;
  }
  return fresh ? 0 : full ? 1 : 2;
}

// Tile t's core (its free cycle while it can matter, its last task) and per claim group the first task not
// yet full with its arrivals so far (tile_class has advanced the cursors).
void Executor::describe_tile(std::vector<std::uint64_t>& out, TileIndex t, Cycle now, std::uint64_t nb) {
  // (room for the most a tile writes: its core in three words, per claim group two for the task and five for its
  // arrivals; the open slots one per group)
  if (!reuse_grow(out, 3 + 7 * std::size_t(ru_.max_groups)) || !reuse_grow(ru_.open, ru_.max_groups)) {
    ru_.bad = true;
    return;
  }
  materialize(t);
  const std::uint32_t p = image_.tile_program[t];
  const Cycle cf = cores_[t].free;
  out.push_back(cf + ru_.margin >= now ? cf - now : 0xFFFF'FFFF'FFFF'FFF0ull);
  if (cores_[t].last == kNone) out.push_back(3);
  else describe_task(out, t, cores_[t].last - slot0_[t]);
  const std::uint32_t g0 = pgroup0_[p], g1 = pgroup0_[p + 1];
  const std::uint32_t s0 = slot0_[t];
  for (std::uint32_t g = g0; g < g1; ++g) {
    const Group& gr = groups_[g];
    const std::uint16_t* list = group_tasks_.data() + gr.begin;
    const std::uint16_t i = ru_.cursor[std::size_t(t) * ru_.max_groups + (g - g0)];
    if (i == gr.size) {
      out.push_back(4);
      continue;
    }
    describe_task(out, t, list[i]);
    if (slots_[s0 + list[i]].count > 0) {
      ru_.open.push_back(s0 + list[i]);
      describe_arrivals(out, s0 + list[i], now, nb);
    } else {
      out.push_back(5);
    }
  }
}

// In space: the leading settled bands and the trailing fresh ones as two marks (relative to the cut's band),
// every band between them tile by tile (whatever its tiles' state); the rows from the last leading settled band
// to the first trailing fresh one, whose route tables routes_as_before compares, in ru_.rows (and for the jump).
void Executor::describe_bands(std::vector<std::uint64_t>& out, Cycle now, std::uint64_t nb) {
  const std::int32_t W = grid_.width;
  const std::size_t nbands = ru_.band_y.size();
  // Per band, bit 0: a fresh tile, bit 1: a settled one, bit 2: one at work. A band only of fresh or only
  // of settled tiles stays so until a tile of it is touched (fresh: nothing arrived, nothing ran; settled:
  // the core's free cycle only falls further behind), so only the others and the touched ones are looked at
  // again. Before the first cut every band is fresh.
  auto& code = ru_.band_code;
  if (code.empty()) {
    code.assign(nbands, 0);
    for (std::size_t j = 0; j < nbands; ++j) {
      const TileIndex t0 = TileIndex(ru_.band_y[j]) * TileIndex(W);
      for (TileIndex t = t0; t < t0 + ru_.S && !code[j]; ++t)
        if (image_.tile_program[t] != firmware::kIdle) code[j] = 1;
    }
  }
  std::vector<std::uint8_t> again(nbands, 0);
  for (std::size_t j = 0; j < nbands; ++j) again[j] = code[j] > 2;  // (0, 1, 2: idle only, fresh only, settled only)
  {
    // (bands are runs of S tiles from the first band's first tile; touched tiles mostly follow their band's
    // last one, so the last band found is tried before a division)
    const TileIndex first = TileIndex(ru_.band_y[0]) * TileIndex(W), last = first + TileIndex(nbands) * ru_.S;
    TileIndex lo = 1, hi = 0;  // the last band found: tiles [lo, hi)
    for (const TileIndex t : ru_.touched_tile) {
      if (t >= lo && t < hi) continue;
      if (t < first || t >= last) continue;
      const std::size_t j = (t - first) / ru_.S;
      again[j] = 1;
      lo = first + TileIndex(j) * ru_.S, hi = lo + ru_.S;
    }
  }
  // The tiles reached before the run's first cut, marked rather than noted (Reuse::tracking): looked at
  // the first time the bands are (which may be a later cut, when the first was not described).
  for (std::size_t j = 0; j < nbands; ++j) {
    const TileIndex t0 = TileIndex(ru_.band_y[j]) * TileIndex(W), t1 = t0 + ru_.S;
    for (TileIndex t = t0; t < t1 && !again[j];) {
      const std::uint64_t word = ru_.pre_tiles[t >> 6] >> (t & 63);
      const TileIndex n = std::min<TileIndex>(64 - (t & 63), t1 - t);
      if (n < 64 ? (word & ((std::uint64_t(1) << n) - 1)) : word) again[j] = 1;
      t += n;
    }
  }
  std::fill(ru_.pre_tiles.begin(), ru_.pre_tiles.end(), std::uint64_t(0));
  for (std::size_t j = 0; j < nbands; ++j) {
    if (!again[j]) continue;
    code[j] = 0;
    const TileIndex t0 = TileIndex(ru_.band_y[j]) * TileIndex(W), t1 = t0 + ru_.S;
    for (TileIndex t = t0; t < t1; ++t)
      if (image_.tile_program[t] != firmware::kIdle) code[j] |= std::uint8_t(1u << tile_class(t, now));
  }
#ifndef NDEBUG
  // (builds with assertions, the sanitizer leg of ./check: the bands not looked at again have the class a
  // look at every tile gives, so what was touched or marked since the last look was noted)
  for (std::size_t j = 0; j < nbands; ++j) {
    std::uint8_t all = 0;
    const TileIndex t0 = TileIndex(ru_.band_y[j]) * TileIndex(W), t1 = t0 + ru_.S;
    for (TileIndex t = t0; t < t1; ++t)
      if (image_.tile_program[t] != firmware::kIdle) all |= std::uint8_t(1u << tile_class(t, now));
    if (all != code[j])
      throw std::logic_error(fmt::format("reuse: band {} of the run classed {} at cycle {}, its tiles say {}", j,
                                         int(code[j]), now, int(all)));
  }
#endif
  // Settled bands first, fresh ones last (a band of idle tiles only counts as either).
  std::size_t s = 0, f = nbands;
  while (s < nbands && (code[s] & ~2u) == 0) ++s;
  while (f > s && (code[f - 1] & ~1u) == 0) --f;
  const std::int64_t l = (std::int64_t(ru_.layer) - ru_.a) / ru_.p;
  out.push_back(std::uint64_t(std::int64_t(s) - l)), out.push_back(std::uint64_t(std::int64_t(f) - l));
  ru_.work_tiles.clear();
  for (std::size_t j = s; j < f && !ru_.done; ++j) {
    const TileIndex t0 = TileIndex(ru_.band_y[j]) * TileIndex(W), t1 = t0 + ru_.S;
    for (TileIndex t = t0; t < t1 && !ru_.done; ++t) {
      if (image_.tile_program[t] == firmware::kIdle) continue;
      describe_tile(out, t, now, nb);
      if (reuse_grow(ru_.work_tiles)) ru_.work_tiles.push_back(t);
    }
  }
  if (ru_.done) return;  // (given up at the cap: reuse_room)
  // The route tables from the last settled band to the first fresh one (within the bands): not copied into the
  // description (on a band of 80 k tiles they were more than half of it, some 20 MB a cut), but compared in
  // place with the previous cut's at a cut whose description equals it (routes_as_before). Noted here: their
  // rows, and where the last settled band's end (at the run's first cuts it lies before the run, and only a
  // window that did not route through it can be compared with a cut that has it: reuse_cut).
  const std::size_t j0 = s > 0 ? s - 1 : 0, j1 = std::min(f + 1, nbands);
  ru_.rows = {ru_.band_y[j0], ru_.band_y[j1 - 1] + ru_.dr};
  {
    const std::size_t t0 = std::size_t(ru_.rows.first) * W, t1 = std::size_t(ru_.rows.second) * W;
    ru_.route_split = s > 0 ? std::min(t1, t0 + std::size_t(ru_.dr) * W) : t0;
    // (the diagnostic cut log compares descriptions with another step's: there they hold the tables)
    if constexpr (kCutLog)
      if (!routes_.empty() && t1 > ru_.route_split) {
        const std::size_t n = grid_.size(), words = (t1 - ru_.route_split + 7) / 8;
        for (std::size_t cell = 0; cell < route_colors_ * kInPorts; ++cell) {
          const std::size_t at = out.size();
          out.resize(at + words, 0);
          std::memcpy(out.data() + at, routes_.data() + cell * n + ru_.route_split, t1 - ru_.route_split);
        }
      }
  }
  // The bands after the first fresh one have the routes of the first (checked at a jump: ru_.fresh_band).
  ru_.fresh_band = f;
}

// In space, at a cut whose description equals the previous cut's (so that its rows are those of the previous
// cut moved one band on): whether the route tables of the rows described hold what those of the previous cut's
// held then, moved one band on. The last settled band's: the same, or (the previous cut had none within the
// run) not routed through in the window: no send since the previous cut routed in a row before the first row it
// described at work. The rows from there to the first fresh band's end: the same.
bool Executor::routes_as_before() {
  const std::size_t W = std::size_t(grid_.width);
  const std::size_t t0 = std::size_t(ru_.rows.first) * W, ts = ru_.route_split, t1 = std::size_t(ru_.rows.second) * W;
  const std::size_t p0 = std::size_t(ru_.prev_rows.first) * W, ps = ru_.prev_route_split,
                    p1 = std::size_t(ru_.prev_rows.second) * W;
  sort_route_log(route_log_);
  const std::size_t n = grid_.size(), cells = route_colors_ * kInPorts;
  if (ps > p0) {
    if (ts - t0 != ps - p0 || !entries_were(routes_.data(), n, cells, route_log_, t0, p0, ts - t0, &route_written_)) return false;
  } else if (ru_.route_row_min < ru_.prev_rows.first) {
    return false;
  }
  return t1 - ts == p1 - ps && entries_were(routes_.data(), n, cells, route_log_, ts, ps, t1 - ts, &route_written_);
}

// A jump in time (tile t's tasks K blocks on): its long lists' claim cursors moved to the first task not yet
// full, which is the one the cut found (tile_class, in ru_.cursor) renamed K blocks on, since the copies fill
// every task of the list between the two. Left where they were, the first claim of each list after the jump
// walked the copied tasks' slots one by one, a cache miss each (on the 8B's whole square some 28 layers of
// them per tile and list). A lower bound all the same: a task the search does not find leaves it at the cut's.
void Executor::advance_cursors(TileIndex t, std::uint64_t K) {
  if (long_max_ == 0) return;
  const std::uint32_t p = image_.tile_program[t];
  const std::uint32_t g0 = pgroup0_[p], g1 = pgroup0_[p + 1];
  for (std::uint32_t g = g0; g < g1; ++g) {
    const Group& gr = groups_[g];
    if (gr.size <= kScanMax) continue;
    const std::uint16_t* list = group_tasks_.data() + gr.begin;
    std::uint32_t i = ru_.cursor[std::size_t(t) * ru_.max_groups + (g - g0)];
    if (i < gr.size && in_range(p, list[i])) {
      const std::uint64_t k = list[i] + K * ru_.len[p];
      const std::uint16_t* at = std::lower_bound(list + i, list + gr.size, k);
      if (at != list + gr.size && *at == k) i = std::uint32_t(at - list);
    }
    std::uint16_t& cursor = cursor_of(t, gr);
    cursor = std::max(cursor, std::uint16_t(i));
  }
}

void Executor::reuse_cut() {
  ru_.pending = false;
  if (ru_.done) return;
  const bool first_cut = !ru_.tracking;
  // (what watching costs, in wall time: StepResult::cuts_s)
  struct Clock {
    double& total;
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    ~Clock() { total += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
  } clock{ru_.cuts_s};
  fold_runs();  // (work_ is compared with, and copied from, the previous cut's)
  const Cycle now = net_.now();
  auto& out = ru_.desc;
  out.clear();
  ru_.state_max = ru_.layer;
  ru_.min_flight = std::numeric_limits<std::uint64_t>::max();
  ru_.bad = false;
  ru_.open.clear();
  // (In space, a fresh tile's core, free since the step start, must be past mattering.)
  if (ru_.space && now < opt_.start + ru_.margin) ru_.bad = true;
  const std::int32_t origin_row = ru_.space ? ru_.band_y[(ru_.layer - ru_.a) / ru_.p] : 0;
  ru_.origin = TileIndex(origin_row) * TileIndex(grid_.width);
  const std::uint64_t nb = bursts_.size();
  // The mesh: pending events, bursts in flight (their records), busy resources.
  const bool described = net_.describe_state(
      [&](std::uint64_t tag, bool timer, std::vector<std::uint64_t>& o) {
        if (!timer) return describe_burst(o, std::uint32_t(tag));
        const std::uint64_t kind = tag & kKindMask;
        o.push_back(kind >> 56);
        if (kind == kTimerReady) {
          const TileIndex tile = TileIndex((tag >> 16) & 0xFFFFFFFFull);
          const std::uint32_t k = std::uint32_t(tag & 0xFFFF);
          materialize(tile);
          ru_.open.push_back(slot0_[tile] + k);
          o.push_back(tile_ref(tile));
          describe_task(o, tile, k);
          describe_arrivals(o, slot0_[tile] + k, now, nb);
        } else if (kind == kTimerDeliver) {
          describe_burst(o, std::uint32_t(tag & 0xFFFFFFFFull));
        } else {
          ru_.bad = true;  // streamed weights: not described
        }
      },
      out, origin_row);
  // (the mesh's part is checked against the cap once written)
  if (!reuse_room(0)) return;
  // The cores: in time, every tile; in space, band by band.
  if (described && !ru_.bad) {
    if (ru_.space) {
      describe_bands(out, now, nb);
    } else {
      for (TileIndex t = 0; t < grid_.size() && !ru_.bad; ++t) {
        if (image_.tile_program[t] == firmware::kIdle) continue;
        tile_class(t, now);
        describe_tile(out, t, now, nb);
      }
    }
  }
  if (ru_.done) return;  // (given up at the cap while describing: reuse_room)
  const bool usable = described && !ru_.bad;
  if (first_cut) {  // (the run's first window starts here: its slots and routes are noted from now on)
    ru_.tracking = true;
    log_routes_ = !routes_.empty();
  }
  // The route tables. In time: the same as at the previous cut when every entry the window changed holds
  // its value from before the window's first change of it again. In space: the window may change only entries
  // of the rows described at the previous cut, and the rows described now hold what those held then
  // (routes_as_before, asked last: only at a cut whose description equals the one before).
  bool routes_same = true;
  if (!route_log_.empty()) {
    if (ru_.space) {
      const std::int64_t W = grid_.width;
      routes_same = std::int64_t(route_tiles_.first) >= ru_.prev_rows.first * W &&
                    std::int64_t(route_tiles_.second) < ru_.prev_rows.second * W;
    } else {
      sort_route_log(route_log_);
      routes_same = entries_restored(routes_.data(), route_log_);
    }
  }
  // The template: the window since the previous cut, if that was the layer before.
  bool jump = usable && ru_.have && ru_.prev_layer + ru_.p == ru_.layer && out == ru_.prev_desc && routes_same &&
              unclaimed_ == ru_.prev_unclaimed && done_count_ == ru_.prev_done && warrivals_.empty();
  if (jump && ru_.space && !routes_.empty()) jump = routes_as_before();
  clear_route_log();
  ru_.route_row_min = std::numeric_limits<std::int32_t>::max();
  if constexpr (kCutLog) {
    cut_log(out, usable);
    jump = false;
  }
  std::uint32_t touched_max = 0;
  if (jump) {
    for (std::size_t i = 0; i < ru_.touched.size(); ++i) {
      const std::uint32_t s = ru_.touched[i];
      const TileIndex t = ru_.touched_tile[i];
      const std::uint32_t p = image_.tile_program[t], k = s - slot0_[t];
      if (!in_range(p, k)) {
        jump = false;
        break;
      }
      touched_max = std::max<std::uint32_t>(touched_max, run_layer(p, k));
    }
    // (and no touched slot's critical input may be an injection or streamed weights: checked below, with the
    // slots read in slot order; every burst from first_data_ on is a Data one)
    if (ru_.prev_bursts < first_data_) jump = false;
    // (the template's bursts are written: a jump's unwritten copies lie before any later template)
    if (!vcopies_.empty() && ru_.prev_bursts < vcopies_.back().first + vcopies_.back().copies * vcopies_.back().nb)
      jump = false;
    // (The slots the state holds lie in the run: one outside it would have changed in the template, so it
    // was touched, and the loop above refused that already. Checked all the same: it is renamed below.)
    for (std::uint32_t s : ru_.open) {
      const TileIndex t = slot_tile(s);
      if (!in_range(image_.tile_program[t], s - slot0_[t])) jump = false;
    }
  }
  const std::uint32_t reach = std::max(touched_max, ru_.state_max);
  std::uint64_t K = jump && reach < ru_.b ? (ru_.b - reach) / ru_.p : 0;  // copies of p layers each
  if (K > 0 && ru_.space && !fresh_bands_alike()) K = 0;
  if (K > 0 && sampled_ && (!net_.reservations() || !sampled_->link_busy_data())) K = 0;  // samples to take
  // No jump here: this cut becomes the previous one.
  auto no_jump = [&] {
    ru_.have = usable;
    ru_.prev_layer = ru_.layer;
    ru_.prev_at = now;
    ru_.prev_bursts = nb;
    ru_.prev_tasks = tasks_run_;
    ru_.prev_work = work_;
    ru_.prev_switches = switches_run_;
    ru_.prev_syncs = syncs_run_;
    ru_.prev_unclaimed = unclaimed_;
    ru_.prev_done = done_count_;
    ru_.prev_rows = ru_.rows;
    ru_.prev_route_split = ru_.route_split;
    std::swap(ru_.prev_desc, ru_.desc);
    untouch_all();
    ru_.burst_tile.clear();
    if (usable) net_.mark(sampled_ != nullptr);
    else net_.unmark();  // (no jump can follow: the next cut has no usable one before it)
    if (ru_.next > ru_.b) {
      reuse_stop(true);  // (no jump follows this mark)
      if (!next_space_run()) reuse_release();
    }
  };
  if (K == 0) return no_jump();
  // Jump: the template [prev cut, this cut) repeats K times.
  const Cycle D = now - ru_.prev_at;
  const std::uint64_t NB = nb - ru_.prev_bursts, NT = tasks_run_ - ru_.prev_tasks;
  const TileIndex S = ru_.space ? ru_.S : 0;
  // Slot `slot` of tile t, m layers on.
  auto rename_in = [&](std::uint32_t slot, TileIndex t, std::uint64_t m) -> std::uint32_t {
    if (slot == kNone || slot == kStepStart) return slot;
    const std::uint32_t p = image_.tile_program[t];
    if (!in_range(p, slot - slot0_[t])) return slot;
    if (ru_.space) return slot0_[t + TileIndex(m) * S] + (slot - slot0_[t]);
    return slot + std::uint32_t(m) * ru_.len[p];
  };
  auto rename = [&](std::uint32_t slot, std::uint64_t m) -> std::uint32_t {
    if (slot == kNone || slot == kStepStart) return slot;
    return rename_in(slot, slot_tile(slot), m);
  };
  // (Reuse is off when weights stream, so the slots hold 32-bit offsets here: Slot.)
  // (a slot's cycle as kept, its offset + 1)
  auto shift_check = [&](std::uint32_t v, Cycle by) {
    const std::uint64_t x = std::uint64_t(v) + by;
    if (x > kMaxOffset + 1) [[unlikely]] too_long(opt_.start + x - 1);
    return std::uint32_t(x);
  };
  auto shift = [&](std::uint32_t& v, Cycle by) { v = shift_check(v, by); };
  auto moved = [&](Slot sl, TileIndex t, std::uint64_t m) {  // a slot of tile t, m layers on
    if (sl.crit != enc(kNone)) shift(sl.ready, m * D), shift(sl.tail, m * D), sl.crit += std::uint32_t(m * NB);
    if (sl.start != kOpen) shift(sl.start, m * D), shift(sl.end, m * D);
    sl.prev = enc(rename_in(dec(sl.prev), t, m));
    return sl;
  };
  // The template's slots in slot order (so that each copy writes memory in one ascending sweep), from the
  // touched bitmap, with their tiles.
  std::vector<std::uint32_t> order;
  std::vector<TileIndex> where;
  if (!ru_.touched.empty()) {
    order.reserve(ru_.touched.size()), where.reserve(ru_.touched.size());
    const auto [lo, hi] = std::minmax_element(ru_.touched.begin(), ru_.touched.end());
    TileIndex t = slot_tile(*lo);
    for (std::size_t w = *lo >> 6; w <= (*hi >> 6); ++w)
      for (std::uint64_t bits = ru_.touched_bits[w]; bits != 0; bits &= bits - 1) {
        const std::uint32_t slot = std::uint32_t(w * 64 + unsigned(__builtin_ctzll(bits)));
        while (slot >= slot0_[t + 1]) ++t;
        order.push_back(slot), where.push_back(t);
      }
  }
  // The template's slots as they are at this cut, and the ones the state holds (the copies overwrite them).
  std::vector<Slot> tmpl(order.size());
  for (std::size_t i = 0; i < tmpl.size(); ++i) {
    tmpl[i] = slots_[order[i]];
    if (tmpl[i].crit != enc(kNone) && dec(tmpl[i].crit) < first_data_) return no_jump();  // (an injection's or the weights' arrival)
  }
  std::vector<std::pair<std::uint32_t, Slot>> held;
  for (std::uint32_t s : ru_.open) held.push_back({s, slots_[s]});
  // In space, the cores as they are at this cut: of the tiles whose tasks ran in the template (each copy
  // moves them on) and of the tiles the state describes (they end K layers on).
  struct Core {
    TileIndex t;
    Cycle free;
    std::uint32_t last;
  };
  std::vector<Core> ran, state;
  if (ru_.space) {
    std::vector<std::uint64_t> seen((grid_.size() + 63) / 64, 0);
    for (std::size_t i = 0; i < tmpl.size(); ++i) {
      const TileIndex t = where[i];
      if (tmpl[i].start == kOpen || !first_mark(seen, t)) continue;
      ran.push_back({t, cores_[t].free, cores_[t].last});
    }
    for (TileIndex t : ru_.work_tiles) state.push_back({t, cores_[t].free, cores_[t].last});
  }
  // Each copy moves a slot, its predecessor and a burst's sender by the same number of slots again (in
  // space: the slots of one band's rows, the same for every tile of the run since its bands hold programs
  // alike tile by tile; in time: the block's length), so the copies add multiples of what one copy adds.
  std::vector<std::uint32_t> dto(tmpl.size()), dprev(tmpl.size()), dsender(NB);
  for (std::size_t i = 0; i < tmpl.size(); ++i) {
    dto[i] = ru_.space ? slot0_[where[i] + S] - slot0_[where[i]] : ru_.len[image_.tile_program[where[i]]];
    dprev[i] = rename_in(dec(tmpl[i].prev), where[i], 1) - dec(tmpl[i].prev);
  }
  {
    // (a data burst's source is its sender's tile, noted as the burst was sent: Reuse::burst_tile)
    if (ru_.burst_tile.size() != NB) throw std::logic_error("reuse: the window's bursts and their senders' tiles disagree");
    for (std::uint64_t i = 0; i < NB; ++i) {
      const BurstRec& b = bursts_[ru_.prev_bursts + i];
      const TileIndex t = ru_.burst_tile[i];
#ifndef NDEBUG
      if (t != slot_tile(b.who)) throw std::logic_error("reuse: a burst's sender noted on another tile");
#endif
      dsender[i] = rename_in(b.who, t, 1) - b.who;
      shift_check(b.inject + 1, K * D);  // (the last copy's offset, + 1 as a slot's: every copy's fits, written or not)
    }
  }
  // The copies' bursts: the mesh's events name only bursts in flight at this cut (renamed K copies on: the
  // last copies), so the copies before those are not written but read through burst_at, and their ids grown
  // over (no page touched). The lowest id the state names is ru_.min_flight: the last `written` copies hold
  // every burst it may name.
  const std::uint64_t written =
      ru_.min_flight < nb && NB > 0 ? (nb - ru_.min_flight + NB - 1) / NB : 0;
  const std::uint64_t unwritten = NB > 0 && K > written ? K - written : 0;
  if (unwritten > 0) {
    vcopies_.push_back({nb, unwritten, NB, ru_.prev_bursts, D, dsender});
    bursts_.resize(bursts_.size() + unwritten * NB);  // (capacity for every send is reserved: in place)
  }
  bursts_.reserve(bursts_.size() + (K - unwritten) * NB);
  // The copies' slots. Their cycles checked once, for the last copy (every earlier one's are smaller); then in
  // blocks of the template in descending slot order, each block's copies in ascending order: a slot that two
  // copies reach (copy m of one template slot and copy m' < m of the slot m - m' groups on, which lies higher)
  // keeps copy m's, as when each copy is written whole before the next, and a block stays in the caches while
  // its K copies are written.
  for (const Slot& sl : tmpl) {
    if (sl.crit != enc(kNone)) shift_check(std::max(sl.ready, sl.tail), K * D);
    if (sl.start != kOpen) shift_check(std::max(sl.start, sl.end), K * D);
  }
  // In space, the copies are not written (SlotCopies): the tiles they reach read them through read_slot until
  // the step touches them again. Every copy moves a slot by one band's slots, the same P for every slot (checked).
  const bool virtual_slots = ru_.space && !tmpl.empty() &&
                             std::all_of(dto.begin(), dto.end(), [&](std::uint32_t d) { return d == dto[0]; });
  if (virtual_slots) {
    SlotCopies c;
    c.lo = order.front(), c.hi = order.back(), c.copies = K, c.P = dto[0];
    c.D = std::uint32_t(D), c.NB = std::uint32_t(NB);
    c.t_lo = slot_tile(c.lo + c.P);
    c.t_hi = slot_tile(std::uint32_t(std::min<std::uint64_t>(c.hi + K * c.P, slots_.size() - 1))) + 1;
    // (the bands from the first fresh one on: nothing arrived at their tiles, nothing ran, describe_bands)
    c.zero_from = ru_.fresh_band < ru_.band_y.size()
                      ? TileIndex(ru_.band_y[ru_.fresh_band]) * TileIndex(grid_.width)
                      : TileIndex(grid_.size());
    c.index.assign(std::size_t(c.hi - c.lo) + 1, kNone);
    for (std::size_t i = 0; i < order.size(); ++i) c.index[order[i] - c.lo] = std::uint32_t(i);
    c.tmpl = std::move(tmpl), c.dprev = std::move(dprev);
    // (tiles an earlier jump's copies reach and this one's too: written first, then this jump's to come)
    if (materialized_.empty()) materialized_.assign((grid_.size() + 63) / 64, 0);
    for (TileIndex t = c.t_lo; t < c.t_hi; ++t) materialize(t), clear_bit(materialized_, t);
    const TileIndex lo = copied_n_ ? std::min(copied_lo_, c.t_lo) : c.t_lo;
    const TileIndex hi = copied_n_ ? std::max(copied_lo_ + copied_n_, c.t_hi) : c.t_hi;
    copied_lo_ = lo, copied_n_ = hi - lo;
    scopies_.push_back(std::move(c));
  } else {
    // A copy adds to a slot's 32-bit words what one copy adds (its cycles D, its critical burst NB ids, its
    // predecessor dprev slots; nothing to the counts in the last two words): each block keeps its slots as the
    // last copy wrote them and adds that again, word by word (a loop the compiler vectorises).
    struct Words {
      std::uint32_t w[8];
    };
    static_assert(sizeof(Words) == sizeof(Slot) && offsetof(Slot, count) == 6 * sizeof(std::uint32_t));
    constexpr std::size_t kBlock = 2048;
    std::vector<Words> cur(std::min(kBlock, tmpl.size())), add(cur.size());
    std::vector<std::uint32_t> dst(cur.size());
    const std::uint32_t D32 = std::uint32_t(D), NB32 = std::uint32_t(NB);
    for (std::size_t end = tmpl.size(); end > 0;) {
      const std::size_t begin = end > kBlock ? end - kBlock : 0, n = end - begin;
      for (std::size_t j = 0; j < n; ++j) {
        const Slot& sl = tmpl[begin + j];
        std::memcpy(&cur[j], &sl, sizeof(Slot));
        const std::uint32_t in = sl.crit != enc(kNone) ? D32 : 0, run = sl.start != kOpen ? D32 : 0;
        add[j] = {{in, in, run, run, sl.crit != enc(kNone) ? NB32 : 0, dprev[begin + j], 0, 0}};
        dst[j] = order[begin + j];
      }
      for (std::uint64_t m = 1; m <= K; ++m)
        for (std::size_t j = 0; j < n; ++j) {
          for (int w = 0; w < 8; ++w) cur[j].w[w] += add[j].w[w];
          dst[j] += dto[begin + j];
          std::memcpy(&slots_[dst[j]], &cur[j], sizeof(Slot));
        }
      end = begin;
    }
  }
  for (std::uint64_t m = 1; m <= K; ++m) {
    for (std::uint64_t i = 0; i < NB && m > unwritten; ++i)
      bursts_.push_back(burst_copy(bursts_[ru_.prev_bursts + i], m, D, dsender[i]));
    for (const Core& c : ran) {
      cores_[c.t + TileIndex(m) * S].free = c.free + m * D;
      cores_[c.t + TileIndex(m) * S].last = rename_in(c.last, c.t, m);
    }
  }
  // The state K layers on: the slots it holds (written by the copies already when the template touched
  // them; kept explicit), the cores.
  for (const auto& [s, sl] : held) {
    const std::uint32_t to = rename(s, K);
    materialize(slot_tile(to));  // (its copies first, as when they were written before)
    slots_[to] = moved(sl, slot_tile(s), K);
  }
  if (ru_.space) {
    for (const Core& c : state) {
      cores_[c.t + TileIndex(K) * S].free = c.free + K * D;
      cores_[c.t + TileIndex(K) * S].last = rename_in(c.last, c.t, K);
    }
    // The route tables of the described rows, K bands on (within the bands: those after the run keep theirs).
    if (!routes_.empty()) {
      const std::size_t n = grid_.size(), W = std::size_t(grid_.width);
      const std::size_t t0 = std::size_t(ru_.rows.first) * W, t1 = std::size_t(ru_.rows.second) * W;
      const std::size_t end = std::size_t(ru_.band_y.back() + ru_.dr) * W, by = std::size_t(K) * S;
      // (the rows that land inside the bands: [t0, t0 + len) to [t0 + by, ...), which may overlap)
      const std::size_t len = t0 + by < end ? std::min(t1, end - by) - t0 : 0;
      // (a source range never written is zero: then only the destination's chunks written are cleared, and no
      // page is read)
      if (len > 0)
        for (std::size_t cell = 0; cell < route_colors_ * kInPorts; ++cell) {
          const std::size_t from = cell * n + t0, to = from + by;
          if (route_written_.zero(routes_.data(), from, len)) {
            route_written_.clear(routes_.data(), to, len);
          } else {
            std::memmove(routes_.data() + to, routes_.data() + from, len);
            route_written_.mark_range(to, len);
          }
        }
    }
  } else {
    for (TileIndex t = 0; t < grid_.size(); ++t) {
      const std::uint32_t p = image_.tile_program[t];
      if (p == firmware::kIdle) continue;
      if (cores_[t].free + ru_.margin >= now) cores_[t].free += K * D;
      cores_[t].last = rename_in(cores_[t].last, t, K);
      advance_cursors(t, K);
    }
  }
  if (sampled_) sample_copies(D, K, now);
  tasks_run_ += K * NT;
  ru_.skipped_tasks += K * NT;
  tell_progress();
  for (std::size_t op = 0; op < work_.size(); ++op)
    for (std::size_t c = 0; c < kCauses; ++c) work_[op][c] += K * (work_[op][c] - ru_.prev_work[op][c]);
  switches_run_ += K * (switches_run_ - ru_.prev_switches);
  syncs_run_ += K * (syncs_run_ - ru_.prev_syncs);
  ru_.skipped_layers += std::uint32_t(K * ru_.p);
  net_.repeat(
      D, K,
      [&](std::uint64_t tag, bool timer) -> std::uint64_t {
        if (!timer) return tag + K * NB;
        const std::uint64_t kind = tag & kKindMask;
        if (kind == kTimerDeliver) return kind | ((tag & 0xFFFFFFFFull) + K * NB);
        if (kind == kTimerReady) {
          const TileIndex tile = TileIndex((tag >> 16) & 0xFFFFFFFFull);
          const std::uint32_t k = std::uint32_t(tag & 0xFFFF);
          const std::uint32_t r = rename(slot0_[tile] + k, K);
          const TileIndex to = slot_tile(r);
          return kind | (std::uint64_t(to) << 16) | (r - slot0_[to]);
        }
        return tag;
      },
      ru_.space ? ru_.dr : 0);
  ru_.done = true;
  log_routes_ = false;
  clear_route_log(true);
  untouch_all();
  ru_.layer_hi = std::max(ru_.layer_hi, reach + std::uint32_t(K) * ru_.p);  // (the copies' layers have started)
  if (!next_space_run()) reuse_release();
}

std::uint64_t Executor::reuse_cap(std::uint64_t slots, std::uint64_t sends) {
  return (slots * sizeof(Slot) + sends * sizeof(BurstRec)) / 2;
}

std::uint64_t Executor::reuse_held() const {
  auto bytes = [](const auto& v) {
    return std::uint64_t(v.capacity()) * sizeof(typename std::decay_t<decltype(v)>::value_type);
  };
  return bytes(ru_.desc) + bytes(ru_.prev_desc) + bytes(ru_.touched) + bytes(ru_.touched_tile) +
         bytes(ru_.burst_tile) + bytes(ru_.open) + bytes(ru_.work_tiles) + bytes(route_log_);
}

[[gnu::noinline]] bool Executor::reuse_room(std::uint64_t more) {
  if (ru_.done) return false;
  const std::uint64_t held = reuse_held() + more;
  if (held <= ru_.cap) {
    ru_.peak = std::max(ru_.peak, held);
    return true;
  }
  reuse_drop();
  return false;
}

// Reuse given up at its cap, for the rest of the step (no later run is armed): its lists are freed but for the
// bit sets, which stay as they are until the step ends (a delivery under way may still mark one; nothing reads
// them). The step runs on in full, to the same answer.
void Executor::reuse_drop() {
  ru_.dropped = true, ru_.bad = true;
  reuse_stop(true);
  reuse_free_lists();
}

// No cut's state is looked at any more: the route changes are not logged and the mesh's mark is dropped.
void Executor::reuse_stop(bool release_log) {
  ru_.done = true;
  log_routes_ = false;
  clear_route_log(release_log);
  net_.unmark();
}

void Executor::reuse_free_lists() {
  ru_.touched = {}, ru_.touched_tile = {}, ru_.burst_tile = {};
  ru_.desc = {}, ru_.prev_desc = {}, ru_.open = {}, ru_.work_tiles = {};
}

// After the jump (or once none can come): the cuts' records are not needed any more.
void Executor::reuse_release() {
  reuse_free_lists();
  ru_.touched_bits = {}, ru_.pre_tiles = {}, ru_.cursor = {};
}

// The samples (ExecOptions::sample) of the stretch a jump copies, [now, now + K x D): each reads the link
// counters as the full run would have them, the counters at the cut plus, copy by copy, the template's
// reservations (noc::Network::reservations) moved m x D cycles (and m groups of rows) on, those made
// before the sample's cycle. Per link, or per group when the mesh tallies them (noc::Mesh::tally).
void Executor::sample_copies(Cycle D, std::uint64_t K, Cycle now) {
  const auto& log = *net_.reservations();
  const std::vector<std::uint64_t>* tallied = sampled_->tallied();
  const std::uint8_t* group = sampled_->tally_groups();
  std::vector<std::uint64_t> busy;
  if (tallied) busy = *tallied;
  else busy.assign(sampled_->link_busy_data(), sampled_->link_busy_data() + std::size_t(grid_.size()) * 4);
  const std::size_t step = ru_.space ? std::size_t(ru_.S) * 4 : 0;  // links one copy on
  const Cycle end = now + K * D;
  // (locals: the stores to the sums cannot make the loop read them again)
  std::uint64_t* const sums = busy.data();
  const noc::Network::Reservation* const first = log.data();
  const noc::Network::Reservation* const last = first + log.size();
  Cycle next = next_sample_;
  for (std::uint64_t m = 1; m <= K; ++m) {
    const Cycle later = m * D;
    const std::size_t moved = m * step;
    for (const noc::Network::Reservation* r = first; r != last; ++r) {
      const Cycle at = r->at + later;
      while (next <= at && next < end) [[unlikely]] next = opt_.sample(next, sums);
      const std::size_t link = r->link + moved;
      sums[group ? group[link / 4] : link] += r->cycles;
    }
  }
  while (next < end) next = opt_.sample(next, sums);
  next_sample_ = next;
}

// In space, before a jump: every band from the first fresh one to the run's last has that band's route
// tables (moved), so the copies find, band after band, what the template found.
bool Executor::fresh_bands_alike() const {
  if (routes_.empty()) return true;
  const std::size_t f = ru_.fresh_band, nbands = ru_.band_y.size();
  if (f + 1 >= nbands) return true;
  const std::size_t n = grid_.size(), W = std::size_t(grid_.width);
  const std::size_t t0 = std::size_t(ru_.band_y[f]) * W;
  for (std::size_t cell = 0; cell < route_colors_ * kInPorts; ++cell)
    for (std::size_t j = f + 1; j < nbands; ++j)
      if (!route_written_.equal(routes_.data(), cell * n + t0, cell * n + std::size_t(ru_.band_y[j]) * W, ru_.S))
        return false;
  return true;
}

std::vector<TaskRun> Executor::task_runs() const {
  std::vector<TaskRun> out;
  for_each_run([&](const TaskRun& r) { out.push_back(r); });
  return out;
}

// Slot s of tile t, whose record (read_slot) is sl, as a task run.
TaskRun Executor::run_of(TileIndex t, std::uint32_t s, const Slot& sl, bool crit) const {
  const TaskInfo& ti = info_at(t, s - slot0_[t]);
  return {t, std::uint16_t(s - slot0_[t]), ti.layer, ti.op, cycle_in<&Slot::ready, &SlotHigh::ready>(sl, s),
          cycle_in<&Slot::start, &SlotHigh::start>(sl, s), cycle_in<&Slot::end, &SlotHigh::end>(sl, s), crit};
}

void Executor::for_each_kept_run(const std::function<bool(TileIndex, std::uint32_t)>& keep_tile,
                                 const std::function<void(const TaskRun&)>& f) const {
  // When every task ran (a finished step), a tile's runs are its slots, and a tile not kept needs only its
  // critical slots (critical_slots_, put in slot order): the slots (hundreds of MB on a full wafer) are then
  // read only for the runs passed on.
  const bool every = tasks_run_ == slots_.size();
  std::vector<std::uint32_t> critical_slots = critical_slots_;
  std::sort(critical_slots.begin(), critical_slots.end());
  std::size_t next_crit = 0;  // the first critical slot not passed yet
  auto pass = [&](TileIndex t, std::uint32_t s, bool crit) {
    if (const Slot sl = read_slot(t, s); ran_in(sl, s)) f(run_of(t, s, sl, crit));
  };
  for (TileIndex t = 0; t < grid_.size(); ++t) {
    std::uint32_t runs = 0;
    if (every) runs = slot0_[t + 1] - slot0_[t];
    else
      for (std::uint32_t s = slot0_[t]; s < slot0_[t + 1]; ++s) runs += ran_in(read_slot(t, s), s);
    if (!runs) continue;
    const bool all = keep_tile(t, runs);
    while (next_crit < critical_slots.size() && critical_slots[next_crit] < slot0_[t]) ++next_crit;
    if (all) {
      for (std::uint32_t s = slot0_[t]; s < slot0_[t + 1]; ++s) pass(t, s, is_critical(s));
    } else {
      for (; next_crit < critical_slots.size() && critical_slots[next_crit] < slot0_[t + 1]; ++next_crit)
        pass(t, critical_slots[next_crit], true);
    }
  }
}

void Executor::for_each_run(const std::function<void(const TaskRun&)>& f) const {
  std::vector<Slot> buf;
  for (TileIndex t = 0; t < grid_.size(); ++t) {
    const Slot* const slots = tile_slots(t, buf);
    for (std::uint32_t s = slot0_[t]; s < slot0_[t + 1]; ++s)
      if (const Slot& sl = slots[s - slot0_[t]]; ran_in(sl, s)) f(run_of(t, s, sl, is_critical(s)));
  }
}

}  // namespace wafer::core
