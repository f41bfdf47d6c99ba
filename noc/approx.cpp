#include "noc/approx.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "hw/error.h"
#include "noc/plan_check.h"

namespace wafer::noc {

ApproxMesh::ApproxMesh(const Fabric& fabric, const MeshParams& params) : Mesh(fabric, params), ramp_(params.ramp_latency) {
  if (fabric.grid().width > 0xFFFF || fabric.grid().height > 0xFFFF)
    throw hw::InputError(fmt::format("the approx mesh supports up to 65535 tiles per side; this mesh is {} x {}",
                                     fabric.grid().width, fabric.grid().height));
  tiles_.assign_zero(fabric.grid().size());
  hop_ = params_.hop_latency;
  // (a new mapping reads as zero: its pages are faulted in by the first booking of their links, or beside the
  // step's task slots by the executor's thread behind it, rather than here, where a step may wait for the mesh)
  busy_.assign_zero(tiles_.size() * 4);
  fault_free_ = fabric.fault_free();
  width_ = std::uint32_t(fabric.grid().width);
  height_ = std::uint32_t(fabric.grid().height);
  step_[0] = TileIndex(0) - width_, step_[1] = 1, step_[2] = width_, step_[3] = TileIndex(0) - 1;
  // coord(): t / width as a multiply and shift; exact for t < 2^23 and width < 2^17 (the error
  // t (m - 2^40 / width) / 2^40 < 2^-17 stays below 1 / width), else a division.
  if (tiles_.size() < (std::size_t(1) << 23)) div_m_ = (std::uint64_t(1) << 40) / width_ + 1;
  // What the Fabric says of each tile, copied once (reset() leaves it alone): written only where it is not all
  // zero (a failed router or link, a link of more than one hop: repairs; see TileRes). The links off the array's
  // edge are not marked: no route leaves the array (resolve refuses a destination outside it, a Plan's routes
  // are checked link by link), and marking them would write a record in every row, every page of the array.
  const hw::Grid& g = fabric.grid();
  for (TileIndex t = 0; t < tiles_.size(); ++t) {
    std::uint8_t bad = fabric_->router_ok(t) ? 0 : kRouterBad;
    std::uint16_t extra[4] = {};
    for (Dir d : hw::kMeshDirs) {
      if (!fabric_->link_ok(t, d)) {
        if (g.inside(hw::step(g.coord(t), d))) bad |= std::uint8_t(1u << unsigned(d));
        continue;
      }
      const std::uint64_t hops = fabric_->link_hops(t, d);
      const std::uint64_t lat = std::uint64_t(params_.hop_latency) * hops;
      if (lat > 0xFFFF) {
        const Coord c = fabric_->grid().coord(t);
        throw hw::InputError(fmt::format("link ({}, {}) {} takes {} cycles (hop latency x physical hops); the approx "
                                         "mesh supports up to {} per link",
                                         c.x, c.y, hw::to_string(d), lat, 0xFFFF));
      }
      extra[unsigned(d)] = std::uint16_t(lat - params_.hop_latency);  // (hops >= 1)
    }
    if (bad == 0 && (extra[0] | extra[1] | extra[2] | extra[3]) == 0) continue;
    TileRes& r = tiles_[t];
    r.bad = bad;
    std::copy_n(extra, 4, r.extra);
  }
  reset();
}

void ApproxMesh::reset() {
  queue_.reset();
  stats_ = {};
  last_event_ = 0;
  if (busy_written_) zero_resident(busy_.data(), busy_.size() * sizeof(std::uint64_t));  // (a kept mesh's)
  busy_written_ = true;
  // (a new mesh's are idle: not read here, so not faulted in; a used one's only where busy, which a page not in
  // memory is not)
  if (tiles_used_)
    for (std::size_t t = 0; t < tiles_.size(); ++t) {
      TileRes& r = tiles_[t];
      if (latest_free(r) == 0) continue;
      for (Cycle& c : r.link_free) c = 0;
      r.ramp_in = r.ramp_out = 0;
    }
  tiles_used_ = true;
  free_bursts_.clear();
  for (std::uint32_t i = std::uint32_t(bursts_.size()); i-- > 0;) free_bursts_.push_back(i);
  unmark();
  busy_at_ = ~Cycle(0);
  tally_on_ = false, group_ = {}, tally_ = {};
  sides();
}

bool ApproxMesh::tally(const std::vector<std::uint32_t>& group_of_tile, std::size_t groups) {
  if (group_of_tile.size() != tiles_.size()) throw std::invalid_argument("ApproxMesh::tally: one group per tile");
  if (groups > 256) return false;
  group_.resize(group_of_tile.size());
  for (std::size_t t = 0; t < group_.size(); ++t) {
    if (group_of_tile[t] >= groups) throw std::invalid_argument("ApproxMesh::tally: a group out of range");
    group_[t] = std::uint8_t(group_of_tile[t]);
  }
  tally_.assign(groups, 0);
  for (std::size_t l = 0; l < busy_.size(); ++l) tally_[group_[l / 4]] += busy_[l];  // (what is booked already)
  tally_on_ = true;
  sides();
  return true;
}

// The rest of a hop's booking when a trace wants more of it: the reservation logged (mark(true)), the
// busy cycles summed per group (tally()).
[[gnu::noinline]] void ApproxMesh::book(Cycle now, TileIndex tile, unsigned k, Cycle occ) {
  const std::size_t link = std::size_t(tile) * 4 + k;
  if (marked_) save_row(tile), touch_tile(tile);
  if (log_on_) log_.push_back({now, link, occ});
  tally_add(link, occ);
}

// Before the window's first booking on a row: its counters as at the mark.
void ApproxMesh::save_row(TileIndex tile) {
  const std::uint32_t y = std::uint32_t(coord(tile).y);
  if (row_saved_[y]) return;
  row_saved_[y] = 1;
  saved_rows_.push_back(y);
  const std::size_t from = std::size_t(y) * width_ * 4;
  std::copy_n(busy_.data() + from, std::size_t(width_) * 4, mark_busy_.get() + from);
}

std::size_t ApproxMesh::state_bytes() const {
  return tiles_.size() * sizeof(TileRes) + busy_.size() * sizeof(std::uint64_t) +
         sink_mark_.capacity() * sizeof(std::uint32_t) + bursts_.capacity() * sizeof(Burst) +
         free_bursts_.capacity() * sizeof(std::uint32_t) + queue_.bytes();
}

std::uint32_t ApproxMesh::alloc_burst() {
  if (!free_bursts_.empty()) {
    std::uint32_t b = free_bursts_.back();
    free_bursts_.pop_back();
    return b;
  }
  bursts_.push_back({});
  return std::uint32_t(bursts_.size() - 1);
}

// A unicast's target: a tile inside the grid (what its routing reads).
[[gnu::always_inline]] inline void ApproxMesh::unicast_target(std::uint32_t b, Coord d) {
  Target& t = bursts_[b].target;
  t.kind = Destination::Kind::Tile;
  t.dst = TileIndex(d.y) * width_ + TileIndex(d.x);
  t.dst_c = d;
}

// A burst's record but its target (set before), every field set here (no zeroing of the whole record first),
// and its injection's event.
[[gnu::always_inline]] inline void ApproxMesh::launch(std::uint32_t b, const BurstSpec& spec, Cycle at) {
  Burst& br = bursts_[b];
  br.lag = std::max(spec.lag, spec.wavelets - 1);
  br.wavelets = spec.wavelets;
  br.refs = 1;
  br.flow = kNone;
  br.src = spec.src;
  br.inject = br.head = br.tail = br.wait = 0;
  br.tag = spec.tag;
  br.src_c = coord(spec.src);
  br.hops = 0;
  br.color = spec.color;
  queue_.push(std::max(at, queue_.now()), Event{b, 0, spec.src, Kind::Inject, Dir::Ramp});
}

void ApproxMesh::send(const BurstSpec& spec, Cycle at) {
  // The common case, with no call left in it (so it saves no registers): a unicast inside a fabric without
  // faults (every router works: its health is not looked up, which would be a cache miss here, in the tile's
  // record or the Fabric's), its record recycled (alloc_burst's first case). The rest, and every error, in
  // send_slow.
  const Coord d = spec.dest.first;
  if (fault_free_ && spec.src < tiles_.size() && spec.wavelets != 0 && spec.dest.kind == Destination::Kind::Tile &&
      std::uint32_t(d.x) < width_ && std::uint32_t(d.y) < height_ && !free_bursts_.empty()) [[likely]] {
    const std::uint32_t b = free_bursts_.back();
    free_bursts_.pop_back();
    unicast_target(b, d);
    return launch(b, spec, at);
  }
  send_slow(spec, at);
}

[[gnu::noinline]] void ApproxMesh::send_slow(const BurstSpec& spec, Cycle at) {
  if (spec.src >= tiles_.size() || (!fault_free_ && !fabric_->router_ok(spec.src)))
    throw hw::InputError(fmt::format("burst source tile {} is outside the mesh or has a failed router", spec.src));
  if (spec.wavelets == 0) throw hw::InputError("a burst needs at least one wavelet");
  const Coord d = spec.dest.first;
  std::uint32_t b;
  if (spec.dest.kind == Destination::Kind::Tile && std::uint32_t(d.x) < width_ && std::uint32_t(d.y) < height_ &&
      (fault_free_ || fabric_->router_ok(TileIndex(d.y) * width_ + TileIndex(d.x)))) {
    b = alloc_burst();
    unicast_target(b, d);
  } else {
    const Target t = resolve(*fabric_, spec.src, spec.dest);  // throws on a bad destination
    b = alloc_burst();
    bursts_[b].target = t;
  }
  launch(b, spec, at);
}

void ApproxMesh::timer(Cycle at, std::uint64_t tag) {
  queue_.push(std::max(at, queue_.now()),
              Event{std::uint32_t(tag), std::uint32_t(tag >> 32), 0, Kind::Timer, Dir::Ramp});
}

void ApproxMesh::run_until(Cycle limit) {
  // Two copies of the loop: with the client's arrival hints and without (a hint test in every hop was
  // measured at several percent of bench_noc_wafer, whose client takes none).
  stop_ = limit;
  run_loop_any();
  stop_ = ~Cycle(0);
}

template <bool kHint>
void ApproxMesh::run_loop() {
  // The bulk of the events (a burst's injection, a hop of a Network burst or of a unicast Plan flow) are
  // handled in the loop itself; the rest out of line.
  // (in the order of their counts in a decode step: hops, the cores' timers, injections)
  auto f = [this](Cycle t, const Event& e) __attribute__((always_inline)) {
    if (e.kind == Kind::Node) {
      last_event_ = t;
      node<kHint>(t, e.a, unpack(e.b), e.in, e.c);
      release(e.a);
    } else if (e.kind == Kind::Timer) {
      last_event_ = t;
      if (client_) client_->on_timer(std::uint64_t(e.a) | (std::uint64_t(e.b) << 32), t);
    } else if (e.kind == Kind::Inject) {
      last_event_ = t;
      inject<kHint>(t, e.a);
    } else if (e.kind == Kind::PlanChain) {
      plan_chain(t, e.a, e.b, e.c);
    } else {
      handle(t, e);
    }
  };
  queue_.run(stop_, f, [this](const Event& e) __attribute__((always_inline)) { prefetch(e); });
}

bool ApproxMesh::run_paused() {
  stop_ = ~Cycle(0);
  while (!queue_.empty() && stop_ == ~Cycle(0)) run_loop_any();
  stop_ = ~Cycle(0);
  return !queue_.empty();
}

namespace {
std::uint64_t rel(Cycle v, Cycle now) { return v - now; }  // (two's complement: cycles before now wrap)
constexpr std::uint64_t kUnset = 0xFFFF'FFFF'FFFF'FFF0ull;
}  // namespace

bool ApproxMesh::describe_state(const TagDescriber& tag, std::vector<std::uint64_t>& out, std::int32_t origin_row) const {
  const Cycle now = queue_.now();
  // Tiles and rows relative to the origin row (two's complement: tiles before it wrap).
  const std::uint64_t off = std::uint64_t(std::int64_t(origin_row) * width_);
  auto tile_rel = [&](TileIndex t) { return std::uint64_t(t) - off; };
  auto row_rel = [&](std::int32_t y) { return std::uint64_t(std::int64_t(y) - origin_row); };
  std::vector<std::pair<Cycle, Event>> ev;
  queue_.pending(ev);
  std::vector<std::uint32_t> order;        // the bursts in flight, in the order the events name them
  std::vector<std::uint8_t> pre;           // ... whether still waiting for its injection
  std::vector<std::uint32_t> index(bursts_.size(), kNone);
  out.push_back(ev.size());
  for (const auto& [t, e] : ev) {
    out.push_back(rel(t, now));
    out.push_back(std::uint64_t(e.kind) | std::uint64_t(e.in) << 8);
    if (e.kind == Kind::Timer) {
      tag(std::uint64_t(e.a) | (std::uint64_t(e.b) << 32), true, out);
      continue;
    }
    if (e.kind != Kind::Inject && e.kind != Kind::Node) return false;  // Plans: not described
    if (bursts_[e.a].flow != kNone) return false;
    if (index[e.a] == kNone) index[e.a] = std::uint32_t(order.size()), order.push_back(e.a), pre.push_back(0);
    if (e.kind == Kind::Inject) pre[index[e.a]] = 1;
    out.push_back(index[e.a]);
    if (e.kind == Kind::Node) {  // b: the router's coordinates
      const Coord c = unpack(e.b);
      out.push_back(std::uint64_t(c.x)), out.push_back(row_rel(c.y));
    } else {  // c: the source tile
      out.push_back(e.b), out.push_back(tile_rel(e.c));
    }
    if (e.kind == Kind::Node) out.push_back(e.c);
  }
  for (std::size_t i = 0; i < order.size(); ++i) {
    const Burst& br = bursts_[order[i]];
    out.insert(out.end(), {std::uint64_t(br.lag), std::uint64_t(br.wavelets), std::uint64_t(br.refs), tile_rel(br.src),
                           pre[i] ? kUnset : rel(br.inject, now), br.head ? rel(br.head, now) : kUnset,
                           br.tail ? rel(br.tail, now) : kUnset, br.wait, std::uint64_t(br.hops), std::uint64_t(br.color),
                           std::uint64_t(br.src_c.x), row_rel(br.src_c.y)});
    const Target& t = br.target;
    out.push_back(std::uint64_t(t.kind));
    if (t.kind == Destination::Kind::Tile) {
      out.insert(out.end(), {tile_rel(t.dst), std::uint64_t(t.dst_c.x), row_rel(t.dst_c.y)});
    } else {
      out.insert(out.end(), {std::uint64_t(t.along), std::uint64_t(t.src.x), row_rel(t.src.y),
                             std::uint64_t(t.region.x0), row_rel(t.region.y0), std::uint64_t(t.region.w),
                             std::uint64_t(t.region.h), std::uint64_t(t.sinks)});
    }
    tag(br.tag, false, out);
  }
  // The resources busy beyond now (one free at or before now is as good as idle: every reservation takes
  // the later of the request, >= now, and the next-free cycle).
  // (Only tiles that may be busy are looked at: busy_bound. The tiles found bound those of the next
  // description when a mark is taken at this cycle.)
  each_busy_tile(now, busy_bound(), [&](TileIndex tile) {
    const auto v = resources(const_cast<TileRes&>(tiles_[tile]));
    for (std::uint64_t k = 0; k < kResources; ++k)
      if (*v[k] > now) out.insert(out.end(), {tile_rel(tile) << 3 | k, *v[k] - now});
  });
  return true;
}

void ApproxMesh::mark(bool log) {
  const Cycle now = queue_.now();
  if (busy_at_ != now) each_busy_tile(now, {0, TileIndex(tiles_.size())}, [](TileIndex) {});  // (no description now)
  mark_lo_ = busy_lo_, mark_hi_ = busy_hi_;
  touched_lo_ = TileIndex(tiles_.size()), touched_hi_ = 0;
  mark_stats_ = stats_;
  if (!mark_busy_) mark_busy_ = std::make_unique_for_overwrite<std::uint64_t[]>(busy_.size()), row_saved_.assign(height_, 0);
  for (std::uint32_t y : saved_rows_) row_saved_[y] = 0;
  saved_rows_.clear();
  marked_ = true;
  log_.clear();
  log_on_ = log;
  sides();
}

void ApproxMesh::unmark() {
  marked_ = false;
  for (std::uint32_t y : saved_rows_) row_saved_[y] = 0;
  saved_rows_.clear();
  log_ = {}, log_on_ = false;
  sides();
}

void ApproxMesh::repeat(Cycle period, std::uint64_t times, const Retag& retag, std::int32_t rows) {
  if (!marked_) throw std::logic_error("ApproxMesh::repeat without a mark");
  const Cycle now = queue_.now(), shift = period * times;
  const std::int32_t dy = std::int32_t(std::int64_t(rows) * std::int64_t(times));  // rows moved in all
  const TileIndex dt = TileIndex(std::int64_t(dy) * width_);                          // tiles moved in all
  auto more = [&](std::uint64_t& v, std::uint64_t marked) { v += times * (v - marked); };
  more(stats_.bursts, mark_stats_.bursts);
  more(stats_.link_traversals, mark_stats_.link_traversals);
  more(stats_.wavelet_link_cycles, mark_stats_.wavelet_link_cycles);
  more(stats_.wait_cycles, mark_stats_.wait_cycles);
  more(stats_.transfer_cycles, mark_stats_.transfer_cycles);
  // Each repeat's busy cycles on the links `rows` rows on from the ones the stretch used (the same links
  // when rows is 0).
  // (the stretch's counts first: a copy lands on links the stretch may have used too)
  // (a link no row save covers was not booked since the mark)
  std::vector<std::pair<std::size_t, std::uint64_t>> used;
  std::sort(saved_rows_.begin(), saved_rows_.end());  // (in link order, as a pass over every link finds them)
  for (std::uint32_t y : saved_rows_)
    for (std::size_t l = std::size_t(y) * width_ * 4, e = l + std::size_t(width_) * 4; l < e; ++l)
      if (busy_[l] != mark_busy_[l]) used.push_back({l, busy_[l] - mark_busy_[l]});
  const std::size_t step = std::size_t(rows) * width_ * 4;
  for (const auto& [l, d] : used)
    if (step == 0) busy_[l] += times * d, tally_add(l, times * d);
    else
      for (std::uint64_t m = 1; m <= times; ++m) busy_[l + m * step] += d, tally_add(l + m * step, d);
  std::vector<std::pair<Cycle, Event>> ev;
  queue_.pending(ev);
  std::vector<std::uint8_t> seen(bursts_.size(), 0), pre(bursts_.size(), 0);
  for (const auto& [t, e] : ev)
    if (e.kind == Kind::Inject) pre[e.a] = 1;
  for (auto& [t, e] : ev) {
    t += shift;
    if (e.kind == Kind::Timer) {
      const std::uint64_t tag = retag(std::uint64_t(e.a) | (std::uint64_t(e.b) << 32), true);
      e.a = std::uint32_t(tag), e.b = std::uint32_t(tag >> 32);
      continue;
    }
    if (e.kind == Kind::Node) {
      const Coord c = unpack(e.b);
      e.b = pack({c.x, c.y + dy});
    } else if (e.kind == Kind::Inject) {
      e.c += dt;
    }
    if (seen[e.a]) continue;
    seen[e.a] = 1;
    Burst& br = bursts_[e.a];
    if (!pre[e.a]) br.inject += shift;
    if (br.head) br.head += shift;
    if (br.tail) br.tail += shift;
    br.tag = retag(br.tag, false);
    if (dy != 0) {
      br.src += dt, br.src_c.y += dy;
      Target& tg = br.target;
      if (tg.kind == Destination::Kind::Tile) tg.dst += dt, tg.dst_c.y += dy;
      else tg.src.y += dy, tg.region.y0 += dy;
    }
  }
  // The busy resources move with the stretch; where they were, the mesh is idle (free at `now`).
  std::vector<std::pair<std::size_t, Cycle>> busy;  // (tile x kResources + resource, next free)
  each_busy_tile(now, busy_bound(), [&](TileIndex tile) {
    const auto v = resources(tiles_[tile]);
    for (std::size_t k = 0; k < kResources; ++k)
      if (*v[k] > now) busy.push_back({std::size_t(tile) * kResources + k, *v[k]}), *v[k] = now;
  });
  for (const auto& [i, c] : busy) *resources(tiles_[TileIndex(i / kResources) + dt])[i % kResources] = c + shift;
  queue_.rebuild(now + shift, ev);
  last_event_ += shift;
  unmark();  // (the mark and its log are used up)
  busy_at_ = ~Cycle(0);
}

Cycle ApproxMesh::run() {
  while (!queue_.empty()) run_until(~Cycle(0));
  return last_event_;
}


// A burst asks for its source's injection ramp: its head reaches the source's router ramp_latency later (at
// once for a burst to the tile itself), or when the ramp has passed the core's earlier bursts, whichever is
// later (the ramp serialises at the router's end, one wavelet per cycle, in order). It is handled at once
// when that is now.
template <bool kHint>
[[gnu::always_inline]] inline void ApproxMesh::inject(Cycle now, std::uint32_t b) {
  Burst& br = bursts_[b];
  Cycle& ramp = tiles_[br.src].ramp_in;
  if (marked_) [[unlikely]] touch_tile(br.src);
  const Cycle r = self_send(br) ? 0 : ramp_;
  const Cycle start = std::max(now + r, ramp);  // the head enters the router
  ramp = start + br.lag + 1;
  br.inject = start - r;
  if (br.flow == kNone) {
    if (start != now) {  // the event's reference moves to the deferred one
      queue_.push(start, Event{b, pack(br.src_c), 0, Kind::Node, Dir::Ramp});
    } else {
      node<kHint>(now, b, br.src_c, Dir::Ramp, 0);
      release(b);
    }
    return;
  }
  ps_.out[br.flow].inject = br.inject;
  const std::uint32_t slot = ps_.base[br.flow];
  if (slot == kNone) {  // a chain
    const LinkId first = br.plan.edges ? br.plan.route[0].link : 0;
    if (start != now) queue_.push(start, Event{b, 0, first, Kind::PlanChain, Dir::Ramp});
    else plan_chain(now, b, 0, first);
  } else {
    if (start != now) queue_.push(start, Event{b, slot, 0, Kind::PlanNode, Dir::Ramp});
    else plan_node(now, b, slot, 0);
  }
}

// The event the loop leaves out of line: a tree's node.
[[gnu::noinline]] void ApproxMesh::handle(Cycle now, const Event& e) {
  last_event_ = now;
  if (e.kind == Kind::PlanNode) plan_node(now, e.a, e.b, e.c);
}

[[gnu::always_inline]] inline Cycle ApproxMesh::cross(Cycle now, Burst& br, TileIndex tile, Dir d) {
  TileRes& r = tiles_[tile];
  const unsigned k = unsigned(d);
  if (r.bad >> k & 1u) {
    Coord c = fabric_->grid().coord(tile);
    throw hw::InputError(fmt::format("route uses the failed link ({}, {}) {}", c.x, c.y, hw::to_string(d)));
  }
  Cycle start = std::max(now, r.link_free[k]);
  r.link_free[k] = start + br.lag + 1;
  if (side_) [[unlikely]]  // (before the booking: a mark saves the row's counters as they were)
    book(now, tile, k, Cycle(br.lag) + 1);
  busy_[std::size_t(tile) * 4 + k] += Cycle(br.lag) + 1;  // (in 64 bits: lag + 1 may be 2^32)
  ++br.hops;
  return start + latency(r, k);
}

template <bool kHint>
[[gnu::always_inline]] inline void ApproxMesh::node(Cycle now, std::uint32_t b, Coord here, Dir in, std::uint32_t path) {
  // (a unicast's step inlined: route_step as a whole is not)
  const Target& tg = bursts_[b].target;
  const Step st = tg.kind == Destination::Kind::Tile ? unicast_step(*fabric_, tg, here, in)
                  : tg.along                          ? along_step(tg, here, in)
                                                      : route_step(*fabric_, tg, here, in);
  const TileIndex t = TileIndex(here.y) * width_ + TileIndex(here.x);
  for (unsigned m = st.ports; m != 0; m &= m - 1) {  // the set port bits, lowest (North) first
    const unsigned k = unsigned(__builtin_ctz(m));
    const Dir d = Dir(k);
    Burst& br = bursts_[b];
    Cycle arrive = cross(now, br, t, d);
    std::uint32_t p = path + std::uint32_t(latency(tiles_[t], k));
    ++br.refs;
    static constexpr std::uint32_t kPackedStep[4] = {0u - 0x10000u, 1u, 0x10000u, 0u - 1u};  // N E S W
    queue_.push(arrive, Event{b, pack(here) + kPackedStep[k], p, Kind::Node, d});
    // The client may fetch what the arrival will touch while the events before it run (a unicast: its
    // last hop; a multicast: every tile it reaches may be a sink).
    if constexpr (kHint) hint_arrival(b, t + step_[k]);
  }
  if (st.deliver) deliver(now, b, t, path);
}

// Out of line, so a client without hints keeps the hop's code as small as it was.
void ApproxMesh::hint_arrival(std::uint32_t b, TileIndex next) {
  const Burst& br = bursts_[b];
  if (br.target.kind != Destination::Kind::Tile || next == br.target.dst) client_->expect_arrival(br.tag, next, br.color);
}

// A tree's node: consumes the event's reference to the burst (Network bursts: handle() releases it after
// node()).
[[gnu::always_inline]] inline void ApproxMesh::plan_node(Cycle now, std::uint32_t b, std::uint32_t slot, std::uint32_t path) {
  const PNode* nodes = ps_.nodes.data();
  const PNode& nd = nodes[slot];
  Burst& br = bursts_[b];
  const Cycle occ = Cycle(br.lag) + 1;
  TileRes& r = tiles_[nd.tile];  // build_plan checked every link a route uses
  std::uint32_t refs = br.refs - 1;
  for (std::uint32_t c = nd.first; c != 0; c = nodes[c].next) {
    const unsigned k = unsigned(nodes[c].in);
    const Cycle start = std::max(now, r.link_free[k]);
    r.link_free[k] = start + occ;
    busy_[std::size_t(nd.tile) * 4 + k] += occ;
    tally_add(std::size_t(nd.tile) * 4 + k, occ);
    const std::uint32_t lat = std::uint32_t(latency(r, k));
    queue_.push(start + lat, Event{b, c, path + lat, Kind::PlanNode, Dir::Ramp});
    ++refs;
  }
  br.refs = refs;
  if (nd.sink) deliver(now, b, nd.tile, path);  // may grow bursts_
  if (refs == 0) finish(b);
}

// A chain's node j: the router its route edge j (`link`) leaves (j < edges), or where the last edge ends.
[[gnu::always_inline]] inline void ApproxMesh::plan_chain(Cycle now, std::uint32_t b, std::uint32_t j, LinkId link) {
  Burst& br = bursts_[b];
  PlanRoute& pr = br.plan;
  const std::uint32_t path = pr.path;
  if (j < pr.edges) {
    const TileIndex here = link_tile(link);
    const unsigned k = link % 4u;
    TileRes& r = tiles_[here];  // build_plan checked every link a route uses
    const Cycle occ = Cycle(br.lag) + 1;
    const Cycle start = std::max(now, r.link_free[k]);
    r.link_free[k] = start + occ;  // (busy cycles: added for the whole route when the burst finishes)
    const std::uint32_t lat = std::uint32_t(latency(r, k));
    pr.path = path + lat;
    queue_.push(start + lat, Event{b, j + 1, j + 1 < pr.edges ? pr.route[j + 1].link : 0, Kind::PlanChain, Dir::Ramp});
    // The route's next line, a few hops ahead (a prefetch past the route's end is harmless).
    __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(pr.route + j) + 9 * sizeof(RouteEdge)));
    if (here == pr.sink) deliver(now, b, here, path);  // (a route passing its sink on the way)
    last_event_ = now;
    return;
  }
  const LinkId last = j == 0 ? 0 : pr.route[j - 1].link;
  const TileIndex here = j == 0 ? br.src : link_tile(last) + step_[last % 4u];
  if (here == pr.sink) deliver(now, b, here, path);  // may grow bursts_
  finish(b);
  last_event_ = now;
}

// Fetches the records an event will touch, ahead of it (Calendar::run's hook): each is found from the event
// alone, without waiting for another load. Always inlined: as an out-of-line call GCC finds it free of side
// effects and drops it.
[[gnu::always_inline]] inline void ApproxMesh::prefetch(const Event& e) const {
  switch (e.kind) {
    case Kind::PlanChain: {  // (the last node's link is 0: a harmless prefetch of tile 0)
      __builtin_prefetch(&bursts_[e.a], 1);
      __builtin_prefetch(&tiles_[link_tile(e.c)], 1);
      return;
    }
    case Kind::Node: {
      const std::size_t t = std::size_t(e.b >> 16) * std::size_t(width_) + (e.b & 0xFFFFu);
      __builtin_prefetch(&bursts_[e.a], 1);
      __builtin_prefetch(&tiles_[t], 1);
      __builtin_prefetch(&busy_[4 * t], 1);
      return;
    }
    case Kind::Inject:
      __builtin_prefetch(&bursts_[e.a], 1);
      __builtin_prefetch(&tiles_[e.c], 1);
      return;
    case Kind::PlanNode:
      __builtin_prefetch(&bursts_[e.a], 1);
      __builtin_prefetch(&ps_.nodes[e.b]);
      return;
    case Kind::Timer: return;
  }
}

// The head reached the sink's router at `now`: it takes the delivery ramp when that is free (serialised at
// the router's end) and reaches the core ramp_latency later (at once for a burst to the tile itself). The
// arrival is reported now, its cycles being fixed.
[[gnu::always_inline]] inline void ApproxMesh::deliver(Cycle now, std::uint32_t b, TileIndex tile, std::uint32_t path) {
  Burst& br = bursts_[b];
  Cycle& ramp = tiles_[tile].ramp_out;
  if (marked_) [[unlikely]] touch_tile(tile);
  const Cycle r = self_send(br) ? 0 : ramp_;
  Cycle start = std::max(now, ramp);
  ramp = start + br.lag + 1;
  Cycle head = start + r, tail = head + br.lag;
  Cycle wait = start - br.inject - path - r;  // (the head entered the router at inject + r)
  br.wait = std::max(br.wait, wait);
  br.head = std::max(br.head, head);
  br.tail = std::max(br.tail, tail);
  if (br.flow != kNone) {
    plan_arrival(br.flow, tile, head, tail);
  } else if (client_) {
    std::uint64_t tag = br.tag;
    client_->on_arrival(tag, tile, head, tail);  // may send (and grow bursts_)
  }
}

void ApproxMesh::finish(std::uint32_t b) {
  Burst& br = bursts_[b];
  ++stats_.bursts;
  stats_.wait_cycles += br.wait;
  stats_.transfer_cycles += br.tail - br.inject - br.wait;
  FlowTiming& ft = ps_.out[br.flow];
  ft.head = br.head, ft.tail = br.tail, ft.wait = br.wait;
  ps_.done[br.flow] = 1;
  // Plan bursts cross every edge of their route once (plan_node leaves these counts to here).
  stats_.link_traversals += br.plan.edges;
  stats_.wavelet_link_cycles += std::uint64_t(br.plan.edges) * br.wavelets;
  if (ps_.base[br.flow] == kNone) {  // a chain: its links' busy cycles, off the hop's path
    const Cycle occ = Cycle(br.lag) + 1;
    for (std::uint32_t e = 0; e < br.plan.edges; ++e) busy_[br.plan.route[e].link] += occ, tally_add(br.plan.route[e].link, occ);
  }
  free_bursts_.push_back(b);
}

// ---- Plan execution ----------------------------------------------------------------------------------

void ApproxMesh::plan_ready(std::uint32_t flow, Cycle now) {
  const Flow& fl = ps_.plan->flows[flow];
  Cycle start = std::max({ps_.start_min[flow], Cycle(fl.release), now});
  std::uint32_t lag = fl.wavelets - 1;
  if (ps_.tail_min[flow] > start) lag = std::max<std::uint32_t>(lag, std::uint32_t(ps_.tail_min[flow] - start));
  ps_.out[flow].ready = start;
  std::uint32_t b = alloc_burst();
  Burst& br = bursts_[b];
  br = Burst{};
  br.src = fl.src;
  br.plan = PlanRoute{fl.route.data(), std::uint32_t(fl.route.size()), fl.sinks[0], 0};
  br.wavelets = fl.wavelets;
  br.lag = lag;
  br.refs = 1;
  br.flow = flow;
  queue_.push(start, Event{b, 0, fl.src, Kind::Inject, Dir::Ramp});
}

void ApproxMesh::plan_arrival(std::uint32_t flow, TileIndex sink, Cycle head, Cycle tail) {
  for (std::uint32_t k = ps_.dep_start[flow]; k < ps_.dep_start[flow + 1]; ++k) {
    const PlanDep& t = ps_.deps[k];
    if (t.tile != sink) continue;
    const std::uint32_t g = t.flow;
    const Cycle delay = t.delay;
    if (t.kind == Trigger::Kind::Stream) {
      ps_.start_min[g] = std::max(ps_.start_min[g], head + delay);
      ps_.tail_min[g] = std::max(ps_.tail_min[g], tail + delay);
    } else {
      ps_.start_min[g] = std::max(ps_.start_min[g], tail + delay);
    }
    if (--ps_.pending[g] == 0) plan_ready(g, queue_.now());
  }
}

// One pass over the Plan: sorts the flows into chains and trees, flattens the trees into route nodes, and
// checks, on the way, everything check_plan checks (a route edge leaves the node it continues from over a
// usable link, every leaf of the tree is a sink, every sink is reached, every trigger names a sink of an
// existing flow). The checks here only decide whether the Plan is sound; when it is not, check_plan finds
// the first fault and says which. Returns false when the Plan is not sound.
bool ApproxMesh::build_plan(const Plan& plan) {
  const std::uint32_t n = std::uint32_t(plan.flows.size());
  const TileIndex size = TileIndex(tiles_.size());
  PlanState& s = ps_;
  s.base.assign(n, kNone);
  s.nodes.assign(1, PNode{});  // slot 0: a placeholder, so a child or sibling slot of 0 means none
  for (std::uint32_t f = 0; f < n; ++f) {
    const Flow& fl = plan.flows[f];
    const TileIndex* sk = fl.sinks.data();
    const std::size_t ns = fl.sinks.size();
    if (fl.src >= size || !fabric_->router_ok(fl.src) || fl.wavelets == 0 || ns == 0) return false;
    for (const Trigger& t : fl.after) {
      if (t.flow >= n) return false;
      const auto& tk = plan.flows[t.flow].sinks;
      if (tk.size() == 1 ? tk[0] != t.tile : std::find(tk.begin(), tk.end(), t.tile) == tk.end()) return false;
    }
    const std::uint32_t ne = std::uint32_t(fl.route.size());
    const RouteEdge* route = fl.route.data();
    if (ns == 1) {  // a chain?
      TileIndex here = fl.src;
      std::uint32_t e = 0;
      for (; e < ne && route[e].parent == std::int32_t(e) - 1; ++e) {
        const TileIndex from = link_tile(route[e].link);
        const unsigned d = route[e].link % 4u;
        // The link exists inside the grid, is healthy, and both its routers work (the Fabric's one byte
        // per tile: a smaller array to walk than the tile records).
        if (from != here || !fabric_->link_ok(from, Dir(d))) return false;
        here = from + step_[d];
      }
      if (e == ne) {
        // Its one leaf (the last node; the source when there is no edge) is the sink, so it is reached.
        if (here != sk[0]) return false;
        continue;
      }
    }
    // Sinks: one is compared directly; several are marked in sink_mark_ (2 x stamp: a sink, + 1: reached).
    std::uint32_t distinct = 0, reached = 0, stamp = 0;
    if (ns > 1) {
      if (sink_mark_.size() != size) sink_mark_.assign(size, 0), mark_stamp_ = 0;
      if (mark_stamp_ >= 0x7FFFFFFEu) std::fill(sink_mark_.begin(), sink_mark_.end(), 0), mark_stamp_ = 0;
      stamp = 2 * ++mark_stamp_;
      for (std::size_t i = 0; i < ns; ++i) {
        if (sk[i] >= size) return false;  // can never be reached
        if (sink_mark_[sk[i]] != stamp) sink_mark_[sk[i]] = stamp, ++distinct;
      }
    }
    // Whether tile t is a sink, counting it reached the first time.
    auto reach = [&](TileIndex t) -> std::uint8_t {
      if (ns == 1) {
        if (sk[0] != t) return 0;
        reached = 1;
        return 1;
      }
      std::uint32_t& m = sink_mark_[t];
      if ((m | 1u) != (stamp | 1u)) return 0;
      if (m == stamp) m = stamp + 1, ++reached;
      return 1;
    };
    if (s.nodes.size() + 1 + std::size_t(ne) >= kNone) return false;  // beyond 32-bit node slots
    const std::uint32_t b0 = std::uint32_t(s.nodes.size());
    s.base[f] = b0;
    s.nodes.resize(std::size_t(b0) + 1 + ne);
    PNode* nodes = s.nodes.data();
    nodes[b0] = PNode{fl.src, 0, 0, Dir::Ramp, reach(fl.src)};
    s.last.resize(ne + 1);
    std::uint32_t* last = s.last.data();  // by local node: 0 = the source, 1 + e = the end of edge e
    // Every leaf must be a sink: counted as "every node that is not a sink (the source aside) has a child".
    std::uint32_t plain = 0, plain_with_child = 0;
    for (std::uint32_t e = 0; e < ne; ++e) {
      const RouteEdge& re = route[e];
      if (re.parent < kFromSource || re.parent >= std::int32_t(e)) return false;
      const std::uint32_t pl = std::uint32_t(re.parent + 1);  // local node the edge leaves
      PNode& parent = nodes[b0 + pl];
      const TileIndex from = link_tile(re.link);
      const unsigned d = re.link % 4u;
      if (from != parent.tile || !fabric_->link_ok(from, Dir(d))) return false;
      const std::uint32_t slot = b0 + 1 + e;
      if (parent.first == 0) {
        parent.first = slot;
        plain_with_child += pl != 0 && !parent.sink;
      } else {
        nodes[last[pl]].next = slot;
      }
      last[pl] = slot;
      const TileIndex to = from + step_[d];
      const std::uint8_t sink = reach(to);
      plain += !sink;
      nodes[slot] = PNode{to, 0, 0, Dir(d), sink};
    }
    if (plain != plain_with_child) return false;
    // Every sink reached (the source's own tile counts, reached by the root node).
    if (ns == 1 ? !reached : reached != distinct) return false;
  }
  plan_dependents(plan, s.dep_start, s.deps);
  return true;
}

std::vector<FlowTiming> ApproxMesh::execute(const Plan& plan) {
  reset();
  const std::uint32_t n = std::uint32_t(plan.flows.size());
  ps_ = PlanState{};
  ps_.plan = &plan;
  if (!build_plan(plan)) {
    ps_ = PlanState{};
    check_plan(*fabric_, plan);  // names the fault
    throw hw::InputError("plan rejected by the approx mesh's route check, accepted by check_plan");  // a bug
  }
  ps_.pending.resize(n);
  ps_.start_min.assign(n, 0);
  ps_.tail_min.assign(n, 0);
  ps_.out.assign(n, FlowTiming{});
  ps_.done.assign(n, 0);
  for (std::uint32_t f = 0; f < n; ++f) {
    ps_.pending[f] = std::uint32_t(plan.flows[f].after.size());
    if (ps_.pending[f] == 0) plan_ready(f, 0);
  }
  run_with_progress();
  require_all_ran(ps_.done);
  std::vector<FlowTiming> out = std::move(ps_.out);
  ps_ = PlanState{};
  return out;
}

}  // namespace wafer::noc
