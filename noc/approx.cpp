#include "noc/approx.h"

#include <fmt/format.h>

#include <algorithm>

#include "hw/error.h"
#include "noc/plan_check.h"

namespace wafer::noc {

ApproxMesh::ApproxMesh(const Fabric& fabric, const MeshParams& params) : Mesh(fabric, params) {
  if (fabric.grid().width > 0xFFFF || fabric.grid().height > 0xFFFF)
    throw hw::InputError(fmt::format("the approx mesh supports up to 65535 tiles per side; this mesh is {} x {}",
                                     fabric.grid().width, fabric.grid().height));
  tiles_.resize(fabric.grid().size());
  width_ = std::uint32_t(fabric.grid().width);
  reset();
}

void ApproxMesh::reset() {
  queue_.reset();
  stats_ = {};
  last_event_ = 0;
  for (TileIndex t = 0; t < tiles_.size(); ++t) {
    TileRes& r = tiles_[t];
    r = TileRes{};
    if (fabric_->router_ok(t)) r.ok |= kRouterOk;
    for (Dir d : hw::kMeshDirs) {
      if (!fabric_->link_ok(t, d)) continue;
      r.ok |= std::uint8_t(1u << unsigned(d));
      r.latency[unsigned(d)] = std::uint16_t(std::min<std::uint64_t>(0xFFFF, std::uint64_t(params_.hop_latency) * fabric_->link_hops(t, d)));
    }
  }
  free_bursts_.clear();
  for (std::uint32_t i = std::uint32_t(bursts_.size()); i-- > 0;) free_bursts_.push_back(i);
}

std::size_t ApproxMesh::state_bytes() const {
  return tiles_.capacity() * sizeof(TileRes) + bursts_.capacity() * sizeof(Burst) +
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

void ApproxMesh::send(const BurstSpec& spec, Cycle at) {
  const Grid& g = fabric_->grid();
  // Router health is kept in the tile's own record (bit 4), the line Inject touches next anyway.
  if (spec.src >= g.size() || !(tiles_[spec.src].ok & kRouterOk))
    throw hw::InputError(fmt::format("burst source tile {} is outside the mesh or has a failed router", spec.src));
  if (spec.wavelets == 0) throw hw::InputError("a burst needs at least one wavelet");
  std::uint32_t b = alloc_burst();
  Burst& br = bursts_[b];
  br = Burst{};
  if (spec.dest.kind == Destination::Kind::Tile && g.inside(spec.dest.first) &&
      fabric_->router_ok(g.index(spec.dest.first))) {  // the common case, without building a region
    br.target.dst = g.index(spec.dest.first);
    br.target.dst_c = spec.dest.first;
  } else {
    br.target = resolve(*fabric_, spec.src, spec.dest);  // throws on a bad destination
  }
  br.tag = spec.tag;
  br.src = spec.src;
  br.src_c = g.coord(spec.src);
  br.wavelets = spec.wavelets;
  br.lag = std::max(spec.lag, spec.wavelets - 1);
  br.refs = 1;
  br.flow = kNone;
  queue_.push(std::max(at, queue_.now()), Event{b, 0, 0, Kind::Inject, Dir::Ramp});
}

void ApproxMesh::timer(Cycle at, std::uint64_t tag) {
  queue_.push(std::max(at, queue_.now()),
              Event{std::uint32_t(tag), std::uint32_t(tag >> 32), 0, Kind::Timer, Dir::Ramp});
}

void ApproxMesh::run_until(Cycle limit) {
  queue_.run(limit, [this](Cycle t, const Event& e) { handle(t, e); },
             [this](const Event& e, bool near) { prefetch(e, near); });
}

Cycle ApproxMesh::run() {
  while (!queue_.empty()) run_until(~Cycle(0));
  return last_event_;
}

void ApproxMesh::handle(Cycle now, const Event& e) {
  last_event_ = now;
  switch (e.kind) {
    case Kind::Timer:
      if (client_) client_->on_timer(std::uint64_t(e.a) | (std::uint64_t(e.b) << 32), now);
      return;
    case Kind::Inject: {
      Burst& br = bursts_[e.a];
      Cycle& ramp = tiles_[br.src].ramp_in;
      Cycle start = std::max(now, ramp);
      ramp = start + br.lag + 1;
      br.inject = start;
      if (br.flow != kNone) ps_.out[br.flow].inject = start;
      if (start == now) {
        if (br.flow == kNone) node(now, e.a, br.src_c, Dir::Ramp, 0);
        else plan_node(now, e.a, ps_.base[br.flow], 0);
      } else {
        ++br.refs;
        queue_.push(start, Event{e.a, br.flow == kNone ? pack(br.src_c) : ps_.base[br.flow], 0,
                                 br.flow == kNone ? Kind::Node : Kind::PlanNode, Dir::Ramp});
      }
      release(e.a);
      return;
    }
    case Kind::Node:
      node(now, e.a, unpack(e.b), e.in, e.path);
      release(e.a);
      return;
    case Kind::PlanNode:
      plan_node(now, e.a, e.b, e.path);
      release(e.a);
      return;
  }
}

Cycle ApproxMesh::cross(Cycle now, Burst& br, TileIndex tile, Dir d) {
  TileRes& r = tiles_[tile];
  const unsigned k = unsigned(d);
  if (!(r.ok >> k & 1u)) {
    Coord c = fabric_->grid().coord(tile);
    throw hw::InputError(fmt::format("route uses the failed link ({}, {}) {}", c.x, c.y, hw::to_string(d)));
  }
  Cycle start = std::max(now, r.link_free[k]);
  r.link_free[k] = start + br.lag + 1;
  r.busy[k] += br.lag + 1;
  ++stats_.link_traversals;
  stats_.wavelet_link_cycles += br.wavelets;
  return start + r.latency[k];
}

void ApproxMesh::node(Cycle now, std::uint32_t b, Coord here, Dir in, std::uint32_t path) {
  const Step st = route_step(*fabric_, bursts_[b].target, here, in);
  const TileIndex t = fabric_->grid().index(here);
  for (unsigned m = st.ports; m != 0; m &= m - 1) {  // the set port bits, lowest (North) first
    const unsigned k = unsigned(__builtin_ctz(m));
    const Dir d = Dir(k);
    Burst& br = bursts_[b];
    Cycle arrive = cross(now, br, t, d);
    std::uint32_t p = path + tiles_[t].latency[k];
    ++br.refs;
    queue_.push(arrive, Event{b, pack(hw::step(here, d)), p, Kind::Node, d});
  }
  if (st.deliver) deliver(now, b, t, path);
}

void ApproxMesh::plan_node(Cycle now, std::uint32_t b, std::uint32_t slot, std::uint32_t path) {
  const PNode* nodes = ps_.nodes.data();
  const TileIndex here = nodes[slot].tile;
  for (std::uint32_t c = nodes[slot].first; c != 0; c = nodes[c].next) {
    const Dir d = nodes[c].in;
    Burst& br = bursts_[b];
    Cycle arrive = cross(now, br, here, d);
    std::uint32_t p = path + tiles_[here].latency[unsigned(d)];
    ++br.refs;
    queue_.push(arrive, Event{b, c, p, Kind::PlanNode, Dir::Ramp});
  }
  if (nodes[slot].sink) deliver(now, b, here, path);
}

// Records the tile and burst records the event will touch, ahead of it (Calendar::run's hook). `near`:
// the second stage, when the burst record fetched by the first is in cache and names the tile.
// Always inlined: as an out-of-line call GCC finds it free of side effects and drops it.
[[gnu::always_inline]] inline void ApproxMesh::prefetch(const Event& e, bool near) const {
  auto line2 = [](const void* p, std::size_t n) {
    __builtin_prefetch(p, 1);
    __builtin_prefetch(static_cast<const char*>(p) + n - 1, 1);
  };
  switch (e.kind) {
    case Kind::Node:
      if (!near) {
        line2(&tiles_[std::size_t(e.b >> 16) * std::size_t(width_) + (e.b & 0xFFFFu)], sizeof(TileRes));
        __builtin_prefetch(&bursts_[e.a], 1);
      }
      return;
    case Kind::Inject:
      if (!near) __builtin_prefetch(&bursts_[e.a], 1);
      else line2(&tiles_[bursts_[e.a].src], sizeof(TileRes));
      return;
    case Kind::PlanNode:
      if (!near) {
        __builtin_prefetch(&ps_.nodes[e.b]);
        __builtin_prefetch(&bursts_[e.a], 1);
      } else {
        line2(&tiles_[ps_.nodes[e.b].tile], sizeof(TileRes));
      }
      return;
    case Kind::Timer: return;
  }
}

void ApproxMesh::deliver(Cycle now, std::uint32_t b, TileIndex tile, std::uint32_t path) {
  Burst& br = bursts_[b];
  Cycle& ramp = tiles_[tile].ramp_out;
  Cycle start = std::max(now, ramp);
  ramp = start + br.lag + 1;
  Cycle head = start, tail = start + br.lag;
  Cycle wait = head - br.inject - path;
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

void ApproxMesh::release(std::uint32_t b) {
  Burst& br = bursts_[b];
  if (--br.refs != 0) return;
  ++stats_.bursts;
  stats_.wait_cycles += br.wait;
  stats_.transfer_cycles += br.tail - br.inject - br.wait;
  if (br.flow != kNone) {
    FlowTiming& ft = ps_.out[br.flow];
    ft.head = br.head, ft.tail = br.tail, ft.wait = br.wait;
    ps_.done[br.flow] = 1;
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
  br.wavelets = fl.wavelets;
  br.lag = lag;
  br.refs = 1;
  br.flow = flow;
  queue_.push(start, Event{b, 0, 0, Kind::Inject, Dir::Ramp});
}

void ApproxMesh::plan_arrival(std::uint32_t flow, TileIndex sink, Cycle head, Cycle tail) {
  const Plan& plan = *ps_.plan;
  for (std::uint32_t k = ps_.dep_start[flow]; k < ps_.dep_start[flow + 1]; ++k) {
    auto [g, ti] = ps_.deps[k];
    const Trigger& t = plan.flows[g].after[ti];
    if (t.tile != sink) continue;
    const Cycle delay = std::max<std::uint32_t>(t.delay, 1);  // a core reacts the cycle after at the earliest
    if (t.kind == Trigger::Kind::Stream) {
      ps_.start_min[g] = std::max(ps_.start_min[g], head + delay);
      ps_.tail_min[g] = std::max(ps_.tail_min[g], tail + delay);
    } else {
      ps_.start_min[g] = std::max(ps_.start_min[g], tail + delay);
    }
    if (--ps_.pending[g] == 0) plan_ready(g, queue_.now());
  }
}

void ApproxMesh::build_plan_nodes(const Plan& plan) {
  const std::uint32_t n = std::uint32_t(plan.flows.size());
  const TileIndex w = TileIndex(fabric_->grid().width);
  PlanState& s = ps_;
  s.base.resize(n + 1);
  s.base[0] = 0;
  for (std::uint32_t f = 0; f < n; ++f) s.base[f + 1] = s.base[f] + 1 + std::uint32_t(plan.flows[f].route.size());
  s.nodes.resize(s.base[n]);
  PNode* nodes = s.nodes.data();
  for (std::uint32_t f = 0; f < n; ++f) {
    const Flow& fl = plan.flows[f];
    const std::uint32_t b0 = s.base[f];
    const TileIndex* sk = fl.sinks.data();
    const std::size_t ns = fl.sinks.size();
    auto is_sink = [&](TileIndex t) -> std::uint8_t {
      if (ns == 1) return sk[0] == t;
      return std::find(sk, sk + ns, t) != sk + ns;
    };
    const std::uint32_t ne = std::uint32_t(fl.route.size());
    nodes[b0] = PNode{fl.src, 0, 0, Dir::Ramp, is_sink(fl.src)};
    s.last.resize(ne + 1);
    std::uint32_t* last = s.last.data();  // by local node: 0 = the source, 1 + e = the end of edge e
    for (std::uint32_t e = 0; e < ne; ++e) {
      const RouteEdge& re = fl.route[e];
      const std::uint32_t pl = re.parent == kFromSource ? 0 : 1 + std::uint32_t(re.parent);  // check_plan: < 1 + e
      const std::uint32_t slot = b0 + 1 + e;
      PNode& parent = nodes[b0 + pl];
      if (parent.first == 0) parent.first = slot;
      else nodes[last[pl]].next = slot;
      last[pl] = slot;
      const Dir d = link_dir(re.link);
      const TileIndex from = link_tile(re.link);
      // The router the link leads to (check_plan made sure it is inside the grid).
      const TileIndex to = d == Dir::North ? from - w : d == Dir::South ? from + w : d == Dir::East ? from + 1 : from - 1;
      nodes[slot] = PNode{to, 0, 0, d, is_sink(to)};
    }
  }
  plan_dependents(plan, s.dep_start, s.deps);
}

std::vector<FlowTiming> ApproxMesh::execute(const Plan& plan) {
  check_plan(*fabric_, plan);
  reset();
  const std::uint32_t n = std::uint32_t(plan.flows.size());
  ps_ = PlanState{};
  ps_.plan = &plan;
  build_plan_nodes(plan);
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
