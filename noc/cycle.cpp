#include "noc/cycle.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "hw/error.h"

namespace wafer::noc {

namespace {
constexpr Cycle kNever = std::numeric_limits<Cycle>::max();
constexpr Cycle kWatchdog = 1'000'000;  // cycles without a wavelet moving while wavelets wait = deadlock
}  // namespace

CycleMesh::CycleMesh(const Fabric& fabric, const MeshParams& params) : Mesh(fabric, params), ramp_(params.ramp_latency) {
  const Grid& g = fabric.grid();
  if (g.width > kCycleMaxSide || g.height > kCycleMaxSide)
    throw hw::InputError(fmt::format("the cycle fidelity supports meshes up to {} x {} tiles; this mesh is {} x {}",
                                     kCycleMaxSide, kCycleMaxSide, g.width, g.height));
  tiles_ = g.size();
  colors_ = std::max<std::uint32_t>(1, params.colors);
  std::uint32_t max_hops = 1;
  for (TileIndex t = 0; t < tiles_; ++t)
    for (Dir d : hw::kMeshDirs)
      if (fabric.link_ok(t, d)) max_hops = std::max(max_hops, fabric.link_hops(t, d));
  max_latency_ = std::max<std::uint32_t>(1, params.hop_latency) * max_hops;
  // Enough credits to keep a link busy every cycle across its latency.
  depth_ = std::max<std::uint32_t>(params.queue_depth, max_latency_ + 2);
  queue_slot_.assign(tiles_ * kPorts * colors_, kNone);
  credits_.assign(tiles_ * 4 * colors_, std::uint16_t(depth_));
  out_owner_.assign(tiles_ * kPorts, kNone);
  rr_.assign(tiles_, 0);
  router_load_.assign(tiles_, 0);
  in_active_.assign(tiles_, 0);
  router_queues_.resize(tiles_);
  links_.resize(max_latency_ + 1);
  link_busy_.assign(fabric.links(), 0);
  ramp_head_.assign(tiles_, 0);
  source_.resize(tiles_);
  in_sources_.assign(tiles_, 0);
}

void CycleMesh::reset() {
  stats_ = {};
  now_ = last_event_ = last_progress_ = 0;
  seq_ = 0;
  // Back to the state of a fresh mesh: queues are allocated again in first-use order, since round-robin
  // arbitration walks them in that order (keeping the old order made a second run time differently).
  std::fill(queue_slot_.begin(), queue_slot_.end(), kNone);
  queues_.clear();
  ring_.clear();
  for (auto& rq : router_queues_) rq.clear();
  std::fill(ramp_head_.begin(), ramp_head_.end(), 0);
  std::fill(credits_.begin(), credits_.end(), std::uint16_t(depth_));
  std::fill(out_owner_.begin(), out_owner_.end(), kNone);
  std::fill(rr_.begin(), rr_.end(), 0);
  std::fill(router_load_.begin(), router_load_.end(), 0);
  std::fill(in_active_.begin(), in_active_.end(), 0);
  active_.clear();
  for (auto& l : links_) l.clear();
  credit_returns_.clear();
  std::fill(link_busy_.begin(), link_busy_.end(), 0);
  for (auto& s : source_) s = {};
  sources_active_.clear();
  std::fill(in_sources_.begin(), in_sources_.end(), 0);
  pending_ = {};
  bursts_.clear();
  free_bursts_.clear();
  live_ = in_flight_ = 0;
  moves_ = 0;
}

std::size_t CycleMesh::state_bytes() const {
  std::size_t n = queue_slot_.capacity() * 4 + queues_.capacity() * sizeof(Queue) + ring_.capacity() * sizeof(Wavelet) +
                  credits_.capacity() * 2 + out_owner_.capacity() * 4 + rr_.capacity() * 2 + router_load_.capacity() * 4 +
                  in_active_.capacity() + link_busy_.capacity() * 8 + ramp_head_.capacity() * 8 +
                  source_.capacity() * sizeof(std::queue<std::uint32_t>) + bursts_.capacity() * sizeof(Burst);
  for (const auto& v : router_queues_) n += sizeof(v) + v.capacity() * 4;
  return n;
}

bool CycleMesh::idle() const {
  return pending_.empty() && in_flight_ == 0 && active_.empty() && sources_active_.empty();
}

std::uint32_t CycleMesh::queue_of(std::uint32_t router, std::uint32_t port, Color c) {
  std::uint32_t& s = queue_slot_[(std::size_t(router) * kPorts + port) * colors_ + c];
  if (s == kNone) {
    s = std::uint32_t(queues_.size());
    Queue q;
    q.first = std::uint32_t(ring_.size());
    q.router = router;
    q.port = std::uint8_t(port);
    q.color = c;
    queues_.push_back(q);
    ring_.resize(ring_.size() + depth_);
    router_queues_[router].push_back(s);
  }
  return s;
}

bool CycleMesh::push_wavelet(std::uint32_t router, std::uint32_t port, Color c, const Wavelet& w) {
  std::uint32_t s = queue_of(router, port, c);
  Queue& q = queues_[s];
  if (q.count >= depth_) return false;
  ring_[q.first + (q.head + q.count) % depth_] = w;
  ++q.count;
  if (router_load_[router]++ == 0 && !in_active_[router]) {
    in_active_[router] = 1;
    active_.push_back(router);
  }
  return true;
}

void CycleMesh::route_front(std::uint32_t router, std::uint32_t port, Queue& q) {
  const Wavelet& w = ring_[q.first + q.head];
  const Burst& b = bursts_[w.burst];
  q.need = 0;
  if (b.flow == kNone) {
    Step st = route_step(*fabric_, b.target, router, port == unsigned(Dir::Ramp) ? Dir::Ramp : hw::opposite(Dir(port)));
    for (Dir d : hw::kMeshDirs)
      if ((st.ports >> unsigned(d) & 1u) && !fabric_->link_ok(router, d)) {
        Coord c = fabric_->grid().coord(router);
        throw hw::InputError(fmt::format("route uses the failed link ({}, {}) {}", c.x, c.y, hw::to_string(d)));
      }
    q.need = st.ports;
    if (st.deliver) q.need |= 1u << unsigned(Dir::Ramp);
  } else {
    const PlanIndex& ix = ps_.index;
    const Flow& fl = ps_.plan->flows[b.flow];
    std::uint32_t slot = ix.slot(b.flow, w.edge);
    for (std::uint32_t k = ix.child_start[slot]; k < ix.child_start[slot + 1]; ++k) {
      std::uint32_t c = ix.children[k];
      unsigned o = unsigned(link_dir(fl.route[c].link));
      q.need |= std::uint8_t(1u << o);
      q.out_edge[o] = c;
    }
    if (ix.sink[slot]) q.need |= 1u << unsigned(Dir::Ramp);
  }
  q.routed = true;
  q.done = 0;
}

Cycle CycleMesh::wavelet_ready(const Burst& b, std::uint32_t j) const {
  if (b.flow == kNone) {
    if (b.wavelets <= 1) return b.ready;
    return b.ready + Cycle(j) * b.lag / (b.wavelets - 1);
  }
  Cycle t = b.ready;
  for (const Trigger& tr : ps_.plan->flows[b.flow].after) {
    if (tr.kind != Trigger::Kind::Stream) continue;
    auto it = ps_.arrivals.find(std::uint64_t(tr.flow) * tiles_ + tr.tile);
    std::uint32_t k = std::min(j, ps_.plan->flows[tr.flow].wavelets - 1);
    if (it == ps_.arrivals.end() || it->second.size() <= k) return kNever;
    t = std::max(t, it->second[k] + tr.reaction());
  }
  return t;
}

void CycleMesh::enqueue_ready(std::uint32_t b, Cycle t) {
  bursts_[b].ready = t;
  pending_.push({t, seq_++, b, 0});
}

void CycleMesh::send(const BurstSpec& spec, Cycle at) {
  const Grid& g = fabric_->grid();
  if (spec.src >= g.size() || !fabric_->router_ok(spec.src))
    throw hw::InputError(fmt::format("burst source tile {} is outside the mesh or has a failed router", spec.src));
  if (spec.wavelets == 0) throw hw::InputError("a burst needs at least one wavelet");
  if (spec.color >= colors_) throw hw::InputError(fmt::format("color {} is beyond the {} colors", spec.color, colors_));
  Burst br;
  br.tag = spec.tag;
  br.target = resolve(*fabric_, spec.src, spec.dest);
  br.src = spec.src;
  br.wavelets = spec.wavelets;
  br.lag = std::max(spec.lag, spec.wavelets - 1);
  br.color = spec.color;
  br.sinks_left = br.target.sinks;
  br.self = br.target.kind == Destination::Kind::Tile && br.target.dst == spec.src;
  std::uint32_t b;
  if (!free_bursts_.empty()) {
    b = free_bursts_.back();
    free_bursts_.pop_back();
    bursts_[b] = br;
  } else {
    b = std::uint32_t(bursts_.size());
    bursts_.push_back(br);
  }
  ++live_;
  enqueue_ready(b, std::max(at, now_));
}

void CycleMesh::timer(Cycle at, std::uint64_t tag) { pending_.push({std::max(at, now_), seq_++, kNone, tag}); }

// The router hands wavelet `w` to its core's delivery ramp now; the core has it ramp_latency later (at once
// for a burst to the tile itself). Its cycle at the core is fixed from here, so it is reported now.
void CycleMesh::delivered(std::uint32_t router, const Wavelet& w) {
  Burst& b = bursts_[w.burst];
  const std::uint32_t flow = b.flow;
  const Cycle r = ramp(b);
  const Cycle at = now_ + r;  // at the core
  if (w.index == 0) {
    ramp_head_[router] = at;
    b.wait = std::max(b.wait, now_ - b.inject - w.path - r);  // (the head entered the router at inject + r)
    b.head = std::max(b.head, at);
  }
  bool tail = w.index + 1 == b.wavelets;
  if (tail) b.tail = std::max(b.tail, at);
  const std::uint32_t id = w.burst;
  if (flow != kNone) {
    if (ps_.streamed[flow]) ps_.arrivals[std::uint64_t(flow) * tiles_ + router].push_back(at);
    if (w.index == 0) plan_trigger(flow, router, at, Trigger::Kind::Stream);
    if (tail) plan_trigger(flow, router, at, Trigger::Kind::Complete);
  } else if (client_ && report_heads_ && b.target.sinks == 1) {
    if (w.index == 0) {  // the whole path is this burst's now: the tail's cycle is determined
      const Cycle promised = std::max(at + b.wavelets - 1, wavelet_ready(b, b.wavelets - 1) + 2 * r + w.path);
      b.promised = promised;
      client_->on_arrival(b.tag, router, at, promised);  // may send (and grow bursts_)
    }
    if (tail && bursts_[id].promised != at)
      throw std::logic_error(fmt::format("cycle model: a unicast's tail reached tile {} at cycle {}, not at {} as "
                                         "reported with its head",
                                         router, at, bursts_[id].promised));
  } else if (tail && client_) {
    client_->on_arrival(b.tag, router, ramp_head_[router], at);
  }
  if (tail && --bursts_[id].sinks_left == 0) finish_burst(id);
}

void CycleMesh::finish_burst(std::uint32_t id) {
  Burst& b = bursts_[id];
  ++stats_.bursts;
  stats_.wait_cycles += b.wait;
  stats_.transfer_cycles += b.tail - b.inject - b.wait;
  if (b.flow != kNone) {
    FlowTiming& ft = ps_.out[b.flow];
    ft.ready = b.ready, ft.inject = b.inject, ft.head = b.head, ft.tail = b.tail, ft.wait = b.wait;
    ps_.done[b.flow] = 1;
  }
  --live_;
  free_bursts_.push_back(id);
}

void CycleMesh::step() {
  const Grid& g = fabric_->grid();
  // 1. Wavelets whose link crossing ends this cycle enter their input queues (credits guarantee room).
  auto& arriving = links_[now_ % links_.size()];
  changed_ = !arriving.empty();
  for (const InFlight& f : arriving) {
    push_wavelet(f.router, f.port, bursts_[f.w.burst].color, f.w);
    --in_flight_;
  }
  arriving.clear();
  // 2. Bursts and timers due now.
  while (!pending_.empty() && pending_.top().t <= now_) {
    Pending p = pending_.top();
    pending_.pop();
    last_event_ = now_;
    changed_ = true;
    if (p.burst == kNone) {
      if (client_) client_->on_timer(p.tag, now_);
      continue;
    }
    TileIndex src = bursts_[p.burst].src;
    source_[src].push(p.burst);
    if (!in_sources_[src]) {
      in_sources_[src] = 1;
      sources_active_.push_back(src);
    }
  }
  // 3. Injection ramps: one wavelet per core per cycle, bursts in order, each wavelet entering the router
  //    ramp_latency after the core let it go (at once for a burst to the tile itself).
  for (std::size_t i = 0; i < sources_active_.size();) {
    TileIndex t = sources_active_[i];
    auto& fifo = source_[t];
    std::uint32_t b = fifo.front();
    Burst& br = bursts_[b];
    const Cycle due = wavelet_ready(br, br.next), r = ramp(br);
    if (due > now_ || now_ - due < r) changed_ = true;  // (waits on time, not on the mesh)
    if (due <= now_ && now_ - due >= r &&
        push_wavelet(t, unsigned(Dir::Ramp), br.color, Wavelet{b, kNone, br.next, 0})) {
      ++moves_;
      changed_ = true;
      if (br.next == 0) {
        br.inject = now_ - r;
        if (br.flow != kNone) ps_.out[br.flow].inject = br.inject;
      }
      if (++br.next == br.wavelets) fifo.pop();
    }
    if (fifo.empty()) {
      in_sources_[t] = 0;
      sources_active_[i] = sources_active_.back();
      sources_active_.pop_back();
    } else {
      ++i;
    }
  }
  // 4. Routers: allocate outputs to waiting burst heads (round-robin), then move one wavelet per output.
  for (std::size_t ai = 0; ai < active_.size(); ++ai) {
    const std::uint32_t r = active_[ai];
    if (router_load_[r] == 0) continue;
    const auto& qs = router_queues_[r];
    const std::size_t n = qs.size();
    const std::size_t start = rr_[r] % n;
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t s = qs[(start + i) % n];
      Queue& q = queues_[s];
      if (q.count == 0 || q.locked) continue;
      if (!q.routed) route_front(r, q.port, q);
      bool free = true;
      for (unsigned o = 0; o < kPorts; ++o)
        if ((q.need >> o & 1u) && out_owner_[r * kPorts + o] != kNone) free = false;
      if (!free) continue;
      for (unsigned o = 0; o < kPorts; ++o)
        if (q.need >> o & 1u) out_owner_[r * kPorts + o] = s;
      q.locked = true;
      changed_ = true;
    }
    rr_[r] = std::uint16_t((start + 1) % n);
    for (unsigned o = 0; o < kPorts; ++o) {
      const std::uint32_t s = out_owner_[r * kPorts + o];
      if (s == kNone) continue;
      Queue& q = queues_[s];
      if (q.count == 0 || (q.done >> o & 1u)) continue;
      const Wavelet w = ring_[q.first + q.head];
      if (o < 4) {
        const std::size_t ci = (std::size_t(r) * 4 + o) * colors_ + q.color;
        if (credits_[ci] == 0) continue;
        --credits_[ci];
        const Dir d = Dir(o);
        const std::uint32_t lat = params_.hop_latency * fabric_->link_hops(r, d);
        Wavelet w2 = w;
        w2.edge = q.out_edge[o];
        w2.path += lat;
        const std::uint32_t nb = g.index(hw::step(g.coord(r), d));
        links_[(now_ + lat) % links_.size()].push_back({nb, unsigned(hw::opposite(d)), w2});
        ++in_flight_;
        ++link_busy_[link_id(r, d)];
        ++stats_.wavelet_link_cycles;
        if (w.index == 0) ++stats_.link_traversals;
      } else {
        delivered(r, w);
      }
      last_event_ = now_;
      changed_ = true;
      q.done |= std::uint8_t(1u << o);
      if (q.done != q.need) continue;
      // Every output took the front wavelet: it leaves the queue.
      ++moves_;
      q.head = std::uint16_t((q.head + 1) % depth_);
      --q.count;
      --router_load_[r];
      q.done = 0;
      if (q.port < 4) {
        const Coord up = hw::step(g.coord(r), Dir(q.port));
        credit_returns_.push_back(
            std::uint32_t((std::size_t(g.index(up)) * 4 + unsigned(hw::opposite(Dir(q.port)))) * colors_ + q.color));
      }
      if (w.index + 1 == bursts_[w.burst].wavelets) {  // the tail passed: free the outputs
        for (unsigned k = 0; k < kPorts; ++k)
          if (q.need >> k & 1u) out_owner_[r * kPorts + k] = kNone;
        q.need = 0;
        q.routed = q.locked = false;
      }
    }
  }
  // 5. Credits freed this cycle count from the next one.
  for (std::uint32_t c : credit_returns_) ++credits_[c];
  credit_returns_.clear();
  std::size_t keep = 0;
  for (std::uint32_t r : active_) {
    if (router_load_[r]) active_[keep++] = r;
    else in_active_[r] = 0;
  }
  active_.resize(keep);
  ++now_;
}

void CycleMesh::run_until(Cycle limit) {
  while (now_ < limit) {
    if (active_.empty() && sources_active_.empty() && in_flight_ == 0) {
      if (pending_.empty()) {
        if (limit != kNever) now_ = limit;
        return;
      }
      Cycle t = pending_.top().t;
      if (t >= limit) {
        now_ = limit;
        return;
      }
      now_ = std::max(now_, t);
    }
    std::uint64_t before = moves_;
    step();
    if (!changed_ && in_flight_ == 0 && (!active_.empty() || !sources_active_.empty())) {
      std::uint64_t waiting = 0;
      for (std::uint32_t r : active_) waiting += router_load_[r];
      const std::string found = fmt::format("at cycle {}, {} wavelets wait at {} routers and none can ever move "
                                            "(multicast branches waiting on each other where they fork: docs/routing.md)",
                                            now_ - 1, waiting, active_.size());
      throw Deadlock("cycle model: deadlock " + found, found);
    }
    if (moves_ != before || (active_.empty() && in_flight_ == 0)) last_progress_ = now_;
    else if (now_ - last_progress_ > kWatchdog)
    {
      const std::string found = fmt::format("no wavelet moved for {} cycles up to cycle {}", kWatchdog, now_);
      throw Deadlock("cycle model: deadlock: " + found, found);
    }
  }
}

Cycle CycleMesh::run() {
  while (!idle()) run_until(kNever);
  return last_event_;
}

// ---- Plan execution ----------------------------------------------------------------------------------

// A head (Stream triggers) or a tail (Complete triggers) of `flow` reached `sink`'s core at `at`.
void CycleMesh::plan_trigger(std::uint32_t flow, TileIndex sink, Cycle at, Trigger::Kind kind) {
  for (std::uint32_t k = ps_.index.dep_start[flow]; k < ps_.index.dep_start[flow + 1]; ++k) {
    const PlanDep& t = ps_.index.deps[k];
    if (t.tile != sink || t.kind != kind) continue;
    const std::uint32_t g = t.flow;
    ps_.start_min[g] = std::max(ps_.start_min[g], at + t.delay);
    if (--ps_.pending[g] == 0) enqueue_ready(g, std::max({ps_.start_min[g], Cycle(ps_.plan->flows[g].release), now_}));
  }
}

std::vector<FlowTiming> CycleMesh::execute(const Plan& plan) {
  check_plan(*fabric_, plan);
  reset();
  const std::uint32_t n = std::uint32_t(plan.flows.size());
  for (std::uint32_t f = 0; f < n; ++f)
    if (plan.flows[f].color >= colors_)
      throw hw::InputError(fmt::format("plan flow {}: color {} is beyond the {} colors", f, plan.flows[f].color, colors_));
  ps_ = PlanState{};
  ps_.plan = &plan;
  ps_.index.build(*fabric_, plan);
  ps_.pending.resize(n);
  ps_.start_min.assign(n, 0);
  ps_.streamed.assign(n, 0);
  ps_.out.assign(n, FlowTiming{});
  ps_.done.assign(n, 0);
  bursts_.resize(n);
  for (std::uint32_t f = 0; f < n; ++f) {
    const Flow& fl = plan.flows[f];
    Burst& b = bursts_[f];
    b = Burst{};
    b.src = fl.src;
    b.wavelets = fl.wavelets;
    b.lag = fl.wavelets - 1;
    b.flow = f;
    b.color = fl.color;
    b.self = fl.route.empty();
    std::vector<TileIndex> s = fl.sinks;
    std::sort(s.begin(), s.end());
    b.sinks_left = std::uint32_t(std::unique(s.begin(), s.end()) - s.begin());
    ps_.pending[f] = std::uint32_t(fl.after.size());
    for (const Trigger& t : fl.after)
      if (t.kind == Trigger::Kind::Stream) ps_.streamed[t.flow] = 1;
  }
  live_ = n;
  for (std::uint32_t f = 0; f < n; ++f)
    if (ps_.pending[f] == 0) enqueue_ready(f, plan.flows[f].release);
  run_with_progress();
  require_all_ran(ps_.done);
  std::vector<FlowTiming> out = std::move(ps_.out);
  ps_ = PlanState{};
  return out;
}

}  // namespace wafer::noc
