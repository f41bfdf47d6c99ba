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
// Trigger::Complete starts `delay` after the input's tail; a delay of 0 acts as 1 (a core reacts the cycle after
// an arrival at the earliest; the formulas below take s as max(s, 1) too). Stage delays are
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
// Formula: max(root_x - x0, x1 - root_x) x h + 2R + w - 1. On a one-row rectangle with root_x at its
// middle tile this is the 1-D broadcast from the row's centre.
Collective broadcast_rows(Plan& plan, const Fabric& f, const CollectiveParams& p, const hw::Rect& r,
                          std::int32_t root_x, std::uint32_t w, std::uint64_t release = 0);
Collective broadcast_columns(Plan& plan, const Fabric& f, const CollectiveParams& p, const hw::Rect& r,
                             std::int32_t root_y, std::uint32_t w, std::uint64_t release = 0);

// Reduce-and-forward chains (Trigger::Stream, delay s): in every row of `r`, tile x0 sends to x0 + 1,
// which adds its part and streams on, ... to column x1. Formula per row: (W-1)(h + 2R) + (W-2)s + w - 1
// (on a one-row rectangle: the 1-D chain reduce to the east end).
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

// ---- 1-D allreduces along one row segment ------------------------------------------------------------
// The building block of row-wise GEMV reductions (WaferLLM's MeshGEMV, Luczynski et al.'s 1-D
// collectives): every tile of `row` (a rectangle of height 1, P = row.w tiles, x0 its west end) holds w
// wavelets; afterwards every tile holds their sum. Reduce chains stream (Trigger::Stream, delay s); the
// result goes back over the row as one multicast flow from the root (the row segment holding it, so it
// spreads both ways). P = 1: nothing to do (no flows, latency 0). Formulas for a healthy row of one-hop
// links (every flow pays its two ramps):
//
//   chain:     a chain from x0 east to x1, then x1 multicasts the sum back over the row:
//              (P-1)(2h + 2R + s) + 2R + w - 1
//   centre:    chains from both ends to the middle tile x0 + m, m = floor(P/2) (the root streams out
//              once both heads are in: Stream on both), then it multicasts both ways:
//              m(2h + 2R + s) + 2R + w - 1
//   two-level: the row is cut into G = ceil(P/g) groups of g tiles (the last may be shorter; g = 0:
//              round(sqrt(P)); g >= P: one group, the centre scheme). Phase 1: in every group, chains from
//              both ends to the group's middle tile (its root, offset floor(length/2)). Phase 2: a chain over
//              the group roots from both ends toward the centre root (the root of group c = floor(G/2)),
//              each root-to-root flow one unicast that the tiles between only forward (no core
//              involvement); a receiving root adds its own phase-1 sum and streams on (Stream on both).
//              Phase 3: the centre root multicasts over the whole row. With m = floor(g/2) and r_c = the
//              centre root's offset from x0, c g + floor(min(g, P - c g)/2):
//              (m + c)(2R + s) + 2 r_c h + 2R + w - 1
//              (P = G g: m(2h + 2R + s) + c(2gh + 2R + s) + 2R + w - 1: per group level, one stage of the
//              group chain or of the root chain.) The west half's chains are always the longest path:
//              the east half has no more groups and no longer ones, and the broadcast's farthest tile is
//              x0. This is WaferLLM's two_tree_allreduce (K = 2: groups of P/group_num tiles, roots at g/2
//              and (G/2) g + g/2), which picks group_num ~ sqrt(P).
// As run on a mesh (tests/noc Allreduce1D.*), a root's delivery ramp takes one wavelet per cycle, so two
// streams that reach it together are taken one after the other, which the zero-load evaluation does not
// model: the centre scheme ends exactly w later for odd P (equal chains), max(0, w - (h + 2R + s)) later
// for even P; the two-level tree pays likewise at a group root or the centre root whose two inputs meet
// (in a group of even size the two chains differ by a stage, so not for w <= h + 2R + s); the chain scheme
// is exact while
// w <= 2h + 4R + 2s (the sum's multicast then finds the ramp of the tile next to the end free).
// Each throws InputError naming the function when the row is not one row inside the mesh or w is 0;
// colors come from the allocator (a root-to-root flow passes routers of the group chains, so it gets a
// color of its own there: at most 7 colors on rows up to 37 tiles).
Collective allreduce_row_chain(Plan& plan, const Fabric& f, const CollectiveParams& p, const hw::Rect& row,
                               std::uint32_t w, std::uint64_t release = 0);
Collective allreduce_row_centre(Plan& plan, const Fabric& f, const CollectiveParams& p, const hw::Rect& row,
                                std::uint32_t w, std::uint64_t release = 0);
Collective allreduce_row_two_level(Plan& plan, const Fabric& f, const CollectiveParams& p, const hw::Rect& row,
                                   std::uint32_t w, std::int32_t group = 0, std::uint64_t release = 0);
// The group size the two-level allreduce uses for P tiles: `group` if positive (at most P), else
// round(sqrt(P)). InputError for a negative group.
std::int32_t two_level_group(std::int32_t P, std::int32_t group);
// The healthy-row formulas above (what each collective's `formula` holds).
std::uint64_t allreduce_row_chain_formula(const CollectiveParams& p, std::int32_t P, std::uint32_t w);
std::uint64_t allreduce_row_centre_formula(const CollectiveParams& p, std::int32_t P, std::uint32_t w);
std::uint64_t allreduce_row_two_level_formula(const CollectiveParams& p, std::int32_t P, std::uint32_t w,
                                              std::int32_t group);

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
