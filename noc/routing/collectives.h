#pragma once
// Collectives on a rectangle of the logical mesh, as Plans (noc/routing/plan.h): each function appends
// its flows, routed by noc/routing/route.h and multicast.h and colored by colors.h, and reports what it
// costs: its zero-load latency (evaluated on this fabric, so detours and repaired links count) and the
// closed-form formula for a healthy mesh of one-hop links, which the timing models are tested against.
//
// Zero-load timing conventions (shared with the timing models, docs/timing.md): a flow injected at
// `start` reaches a sink d physical hops away at start + 2 R + d x hop (head at the core: the injection
// ramp, the hops, the delivery ramp, R = WaferSpec::ramp_latency each; a flow without a route, a tile
// sending to itself, pays no ramp); its tail leaves `lag` cycles after its head, lag = max(wavelets - 1,
// what its Stream inputs impose) and arrives lag cycles after the head. Trigger::Stream starts `delay`
// after the input's head arrives and the tail leaves no earlier than `delay` after the input's tail;
// Trigger::Complete starts `delay` after the input's tail. Stage delays are
// WaferSpec::stream_stage_latency. Notation below: h = hop latency, R = ramp latency, s = stage latency,
// w = wavelets per tile, a W x H rectangle, root = its north-EAST tile (x1, y0). Reductions run east and
// north, toward that root, because west-first routing can detour around a fault on an eastward or
// northward hop but not on a westward one. Every flow on a critical path pays 2R: a chain of N tiles
// pays it N - 1 times, which is what makes log-depth and two-level schemes worth their longer hops.
#include <cstdint>
#include <string>
#include <vector>

#include "hw/wafer_spec.h"
#include "noc/routing/colors.h"
#include "noc/routing/fabric.h"
#include "noc/routing/plan.h"

namespace wafer::noc {

struct CollectiveParams {
  std::uint32_t hop_latency = 1;
  std::uint32_t stage_latency = 2;
  std::uint32_t colors = 24;  // budget per router
  std::uint32_t ramp_latency = 2;  // each ramp, core -> router and router -> core
  static CollectiveParams of(const hw::WaferSpec& spec);
};

struct Collective {
  std::string name;
  std::uint32_t first_flow = 0;   // its flows are plan.flows[first_flow, first_flow + flows)
  std::uint32_t flows = 0;
  std::vector<std::uint32_t> final_flows;  // the flows whose tails arriving end it
  std::uint64_t release = 0;
  std::uint64_t latency = 0;      // zero-load on this fabric: cycles from release to the last tail arrival
  std::uint64_t formula = 0;      // the closed form for a healthy mesh with one-hop links (= latency there)
  std::uint64_t link_occupations = 0;  // links used, summed over flows (a multicast counts each once)
  ColorReport colors;             // against CollectiveParams::colors (all flows of the plan so far)
};

// Broadcast: one multicast flow from `root` to every tile of `region` (root excluded).
// Formula: D x h + 2R + w - 1, D = hops to the farthest tile (multicast_hops()).
Collective broadcast(Plan& plan, const Fabric& f, const CollectiveParams& p, Coord root, const hw::Rect& region,
                     std::uint32_t w, std::uint64_t release = 0);
// One broadcast per row of `r` from column root_x (resp. per column from row root_y); they share no
// router, so one color serves all. Nothing to do (no flows, latency 0) for one-tile rows (columns).
// Formula: max(root_x - x0, x1 - root_x) x h + 2R + w - 1.
Collective broadcast_rows(Plan& plan, const Fabric& f, const CollectiveParams& p, const hw::Rect& r,
                          std::int32_t root_x, std::uint32_t w, std::uint64_t release = 0);
Collective broadcast_columns(Plan& plan, const Fabric& f, const CollectiveParams& p, const hw::Rect& r,
                             std::int32_t root_y, std::uint32_t w, std::uint64_t release = 0);

// Reduce-and-forward chains (Trigger::Stream, delay s): in every row of `r`, tile x0 sends to x0 + 1,
// which adds its part and streams on, ... to column x1. Formula per row: (W-1)(h + 2R) + (W-2)s + w - 1.
Collective reduce_rows(Plan& plan, const Fabric& f, const CollectiveParams& p, const hw::Rect& r, std::uint32_t w,
                       std::uint64_t release = 0);
// Rows as above, then column x1 from y1 up to y0 (each column stage also streams its row's result).
// Root (x1, y0). Formula: (W+H-2)(h + 2R) + (W+H-3)s + w - 1.
Collective reduce_chain(Plan& plan, const Fabric& f, const CollectiveParams& p, const hw::Rect& r, std::uint32_t w,
                        std::uint64_t release = 0);
// Tree reduction (Trigger::Complete, delay s), log depth: recursive halving along each row toward x1
// (at step k the tile i columns west of x1, i mod 2^(k+1) = 2^k, sends 2^k columns east once all its
// inputs are complete), then the same along column x1 toward y0. Formula (W, H powers of two, L = log2 W + log2 H):
// (W+H-2)h + 2LR + L(w-1) + (L-1)s; otherwise `latency` is the evaluated truth.
Collective reduce_tree(Plan& plan, const Fabric& f, const CollectiveParams& p, const hw::Rect& r, std::uint32_t w,
                       std::uint64_t release = 0);

enum class ReduceKind : std::uint8_t { Chain, Tree };
// Reduce to the root, then broadcast the result over `r` (Stream after a chain: the root streams the sum
// out as it forms; Complete after a tree), delay s. Formula (chain): 2(W+H-2)h + (W+H-2)s + 2(W+H-1)R + w - 1;
// (tree): reduce_tree + s + (W+H-2)h + 2R + w - 1.
Collective allreduce(Plan& plan, const Fabric& f, const CollectiveParams& p, const hw::Rect& r, std::uint32_t w,
                     ReduceKind kind, std::uint64_t release = 0);
// All-gather of w wavelets per tile: gather chains along the rows (each stage appends its block: the
// k-th burst carries k w wavelets), then up column x1 (row blocks of W w), then the root
// broadcasts all W H w wavelets over `r`. Formula: 2(W+H-2)h + (W+H-2)s + 2(W+H-1)R + W H w - 1.
Collective allgather(Plan& plan, const Fabric& f, const CollectiveParams& p, const hw::Rect& r, std::uint32_t w,
                     std::uint64_t release = 0);

// ---- zero-load evaluation (any Plan) ----------------------------------------------------------------
struct ZeroLoad {
  std::vector<std::uint64_t> start;  // per flow: cycle its head enters the injection ramp
  std::vector<std::uint64_t> lag;    // per flow: tail leaves lag cycles after the head
  std::vector<std::vector<std::pair<TileIndex, std::uint64_t>>> head;  // per flow: (sink, head arrival)
  std::uint64_t end = 0;             // the last tail arrival of all
  // Head / tail arrival of `flow` at sink `t`; InputError when `t` is not one of its sinks.
  std::uint64_t head_at(std::uint32_t flow, TileIndex t) const;
  std::uint64_t tail_at(std::uint32_t flow, TileIndex t) const { return head_at(flow, t) + lag[flow]; }
};
// Evaluates every flow without contention, in dependency order, with ramps of `ramp_latency` at both ends
// of every flow that has a route. InputError when a trigger names a flow that does not exist, a tile that
// is not its sink, or the triggers form a cycle.
ZeroLoad zero_load(const Plan& plan, const Fabric& f, std::uint32_t hop_latency, std::uint32_t ramp_latency);

// Physical hops from `root` to the farthest tile of the healthy multicast tree over `region`.
std::uint32_t multicast_hops(Coord root, const hw::Rect& region);

}  // namespace wafer::noc
