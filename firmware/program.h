#pragma once
// The tile program format: the contract between the mapper (which emits it) and the core (which runs it).
// A tile runs tasks; a task is triggered by data arriving on a color, runs vector ops with element
// counts, and sends bursts on colors. Tiles with identical programs share one copy (Image::programs), so
// a full wafer's firmware stays small; a program speaks of its neighbours by relative offsets.
#include <cstdint>
#include <string>
#include <vector>

#include "hw/coord.h"

namespace wafer::firmware {

using Color = std::uint8_t;
inline constexpr std::uint32_t kIdle = 0xFFFFFFFFu;  // Image::tile_program entry of a tile with no program

// Vector operations a core executes. Cost: vectors x (vector_setup + ceil(elements / vectors x
// cycles_per_element / simd)); the per-kind factor and the SRAM port limits live in core/ (one table,
// documented there).
enum class OpKind : std::uint8_t {
  Fmac,      // multiply-accumulate (GEMV block, dot products): `elements` MACs
  Add,       // elementwise add (residual, partial sums)
  Mul,       // elementwise multiply (gating, scaling)
  Exp,       // elementwise exp (softmax)
  Silu,      // elementwise SiLU
  Rsqrt,     // 1/sqrt of a scalar or vector (RMSNorm)
  Max,       // max-reduction over `elements`
  Sum,       // sum-reduction over `elements`
  Rope,      // rotary embedding on `elements` values (a mul-add pair per element)
  Copy,      // move `elements` values between SRAM buffers (KV-cache append, gathers)
  Argmax,    // index of the maximum over `elements`
  StreamIn,  // receive `elements` weight bytes from the MemoryX port before computing (--weights stream)
};
const char* to_string(OpKind k);

struct Op {
  OpKind kind = OpKind::Fmac;
  std::uint32_t elements = 0;
  // The vector (DSD) operations the op issues, each over elements / vectors elements and each paying its
  // setup. 1 for an elementwise op or a dot product. A GEMV block of K inputs x N outputs is K operations
  // of N: a core has no matrix instruction, so a GEMV is a loop over its inputs, each an AXPY of one input
  // value times a weight column into the N outputs (the Cerebras SDK's GEMV examples and WaferLLM's
  // `vecmat_computation`, `@map` of an `@fmach` over the input vector). `elements` is a multiple of it.
  std::uint32_t vectors = 1;
  friend bool operator==(const Op&, const Op&) = default;
};

// Where a send goes, relative to the sending tile (x + dx, y + dy). Routing turns it into a route.
struct Dest {
  enum class Kind : std::uint8_t {
    Tile,    // unicast to (x+dx, y+dy); dx = dy = 0 is a local activation through the ramp (no link)
    Row,     // multicast to (x+dx .. x+dx+span-1, y+dy): one burst fanned out along a row
    Column,  // multicast to (x+dx, y+dy .. y+dy+span-1)
  };
  Kind kind = Kind::Tile;
  std::int32_t dx = 0, dy = 0;
  std::int32_t span = 1;
  friend bool operator==(const Dest&, const Dest&) = default;
};

struct Send {
  Color color = 0;
  std::uint32_t wavelets = 1;
  Dest dest;
  // This send starts a collective (a broadcast's root, the first tile of a reduce chain or gather): the
  // core synchronises with the collective's other tiles first (WaferSpec::collective_sync cycles).
  // Relays inside a chain and point-to-point sends do not.
  bool collective = false;
  friend bool operator==(const Send&, const Send&) = default;
};

struct Task {
  enum class Start : std::uint8_t {
    Complete,  // runs when `arrivals` bursts on `trigger` have fully arrived
    Stream,    // transform-and-forward: starts when the first burst's head arrives (stage latency), its
               // sends stream out behind the incoming data (reduce-and-forward chains, relays)
  };
  Color trigger = 0;
  std::uint16_t arrivals = 1;   // bursts on `trigger` needed before the task runs
  Start start = Start::Complete;
  std::uint16_t layer = 0;      // for the breakdown: index into Image::layer_names
  std::uint16_t op = 0;         // for the breakdown: index into Image::op_names
  // > 0: the task reads what the task `after` places before it in its program computed (a reduction adds its
  // tile's own partial sum, a merge its tile's own argmax), a local input that comes through no burst, so it starts
  // only once that task has. 0: no such input the core must wait for (docs/streaming.md "Order on a tile").
  std::uint16_t after = 0;
  std::vector<Op> ops;
  std::vector<Send> sends;      // issued in order once the ops are done (or streaming, see Start)
  friend bool operator==(const Task&, const Task&) = default;
};

// Bytes of local SRAM a program's tile holds, by use (checked against the tile's capacity).
struct SramUse {
  std::uint32_t weights = 0, kv_cache = 0, activations = 0, code = 0;
  std::uint32_t total() const { return weights + kv_cache + activations + code; }
  friend bool operator==(const SramUse&, const SramUse&) = default;
};

struct Program {
  // A burst arriving on color c is credited to the first task (in this order) whose trigger is c and which
  // has not yet run; each task runs once per decode step.
  // A burst a tile sends to itself (Dest::Tile, dx = dy = 0) is a local task activation: it uses no router.
  std::vector<Task> tasks;
  SramUse sram;
  friend bool operator==(const Program&, const Program&) = default;
};

// A burst injected at the start of the step (e.g. the token id reaching the embedding tiles).
struct Injection {
  hw::Coord tile;
  Color color = 0;
  std::uint32_t wavelets = 1;
  friend bool operator==(const Injection&, const Injection&) = default;
};

// One decode step's firmware for a whole (logical) wafer.
struct Image {
  hw::Grid grid;                            // the logical array the programs are placed on
  std::vector<Program> programs;            // deduplicated
  std::vector<std::uint32_t> tile_program;  // per logical tile: index into programs, or kIdle
  std::vector<std::string> layer_names;     // Task::layer indexes these ("embedding", "layer 0", ...)
  std::vector<std::string> op_names;        // Task::op indexes these ("qkv_proj", "attn_scores", ...)
  std::vector<Injection> start;             // what starts the step
  hw::Coord done_tile;                      // the step ends when this tile ...
  Color done_color = 0;                     // ... has received its bursts on this color
  std::uint16_t done_arrivals = 1;

  const Program* program_at(hw::Coord c) const {
    std::uint32_t p = tile_program[grid.index(c)];
    return p == kIdle ? nullptr : &programs[p];
  }
  // Adds `p` unless an identical program exists; returns its index.
  std::uint32_t intern(Program p);
  friend bool operator==(const Image&, const Image&) = default;
};

// Human-readable listing of one tile's program (`wafer-emu decode --dump-firmware X,Y`).
std::string dump(const Image& image, hw::Coord tile);

}  // namespace wafer::firmware
