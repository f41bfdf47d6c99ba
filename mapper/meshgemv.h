#pragma once
// The MeshGEMV kernel (internal to the mapper; docs/mapping.md section 3b). WaferLLM's decode scheme (He et
// al., OSDI'25): every weight matrix is stored pre-partitioned so that the reduction axis alternates (Y, X,
// Y, ...); each GEMV ends in an allreduce along that axis whose final multicast leaves the result spread
// along exactly the axis the next GEMV reads, so there is no separate input broadcast and no transpose.
//
// An allreduce runs along a *line* of n tiles (a column for Y, a row or an attention segment of a row for
// X) with one of three algorithms (mapper::AllreduceAlgo). `line_role` says what one tile of the line does;
// it is a pure function, so the per-tile programs depend only on a few such roles.
#include <cstdint>

#include "mapper/emit.h"
#include "mapper/mapper.h"

namespace wafer::mapper::detail {

// What tile p of a line of n tiles does in an allreduce: it adds the partial sums that arrive (`in1` on
// the chain color, `in2` on the roots' color) to its own and sends the sum `to` tiles further along the
// line (on the roots' color when `to_root`), or, being the final root (`to` == 0), multicasts the result
// over the whole line: tiles [p + first, p + first + n).
struct LineRole {
  std::uint8_t in1 = 0, in2 = 0;
  std::int32_t to = 0;
  bool to_root = false;
  std::int32_t first = 0, n = 1;  // the final root's multicast (others: 0, 1)
  friend bool operator==(const LineRole&, const LineRole&) = default;
};

// Tiles per group of the two-level tree: `group`, or round(sqrt(n)) when 0; within [1, n].
std::int32_t tree_group(std::int32_t n, std::int32_t group);
LineRole line_role(std::int32_t n, std::int32_t p, AllreduceAlgo algo, std::int32_t group);
// Position of the final root on a line of n tiles.
std::int32_t final_position(std::int32_t n, AllreduceAlgo algo, std::int32_t group);

// Colors of the meshgemv kernel, by role (a router holds one route per color and input port; giving the
// Y, X and attention-segment collectives colors of their own keeps every route fixed over the step).
namespace mesh_color {
inline constexpr firmware::Color kIn = 0;      // the token id multicast along each row (embedding)
inline constexpr firmware::Color kToken = 1;   // token ids injected at the east column
inline constexpr firmware::Color kYChain = 2, kYRoot = 3, kYBcast = 4;   // allreduces down the columns
inline constexpr firmware::Color kXChain = 5, kXRoot = 6, kXBcast = 7;   // allreduces along the rows
inline constexpr firmware::Color kSChain = 8, kSRoot = 9, kSBcast = 10;  // along an attention segment
inline constexpr firmware::Color kDone = 11;
}  // namespace mesh_color

// Stamps a stage computed by the meshgemv kernel onto the emitter (every stage of the step shares one region).
void add_meshgemv(Emitter& em, const StageSpec& s, const EmitParams& p);
// Largest SRAM need of the stage's tiles (as stage_need for the bands kernel).
StageNeed meshgemv_need(const StageSpec& s, const EmitParams& p);
// The tile that ends the step (the head's argmax root) on a region.
hw::Coord meshgemv_done_tile(const Region& r, const EmitParams& p);
// The fragment tile `t` (global coordinates) runs for stage `s`: what add_meshgemv stamps there (empty
// outside the stage's region).
Fragment meshgemv_fragment_at(const StageSpec& s, const EmitParams& p, hw::Coord t);

}  // namespace wafer::mapper::detail
