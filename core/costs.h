#pragma once
// What a vector op costs on a tile core: the one table of per-kind factors (docs/design.md section 1).
//
//   cycles(op) = V x (vector_setup + max( ceil(n x factor / simd_width),           -- the FMAC lanes
//                                         ceil(n x read_bytes  / (read_ports  x 8)),  -- SRAM reads
//                                         ceil(n x write_bytes / (write_ports x 8)) ) -- SRAM writes
//
// for an op of V = `vectors` vector operations of n = elements / V elements each: 1 for an elementwise
// op, K for a GEMV block of K inputs (K AXPYs of one weight column each, firmware/program.h).
//
// factor = lane-cycles per element; read/write bytes per element at 16-bit activations (weights of an
// Fmac at the configured weight precision). The SRAM terms bind when an op moves more bytes per cycle than
// the ports carry: an FP16 Fmac reads a weight and an activation (4 bytes) per MAC, so with 2 x 64-bit
// read ports it runs at most 4 MACs per cycle even on a SIMD-8 core.
//
//   kind      factor  reads  writes  why
//   Fmac        1     w+2     0     one MAC per lane per cycle; reads weight (w bytes) + activation; the
//                                   accumulator stays in registers (partial sums leave as one send)
//   Add         1      4      2     a + b -> c
//   Mul         1      4      2
//   Exp         4      2      2     exp by range reduction + a degree-3 polynomial: ~4 FMA-equivalents
//   Silu        6      2      2     x / (1 + exp(-x)): exp (4) + add + reciprocal step
//   Rsqrt       4      2      2     initial estimate + Newton-Raphson steps (~4 FMA-equivalents)
//   Max         1      2      0     reduction: compare per lane
//   Sum         1      2      0     reduction: add per lane
//   Rope        2      4      2     a mul-add pair per element; reads the value and its sin/cos entry
//   Copy        1      2      2     SRAM to SRAM (KV-cache append, gathers): the write port binds
//   Argmax      1      2      0     compare + index select per lane
//   StreamIn    0      0      1     `elements` weight BYTES written to SRAM as they arrive from MemoryX
//                                   (their transfer is the weight-streaming burst, not core time)
//
// Factors are first-principles estimates (no published per-op microbenchmarks for this class of core);
// they are the place to calibrate when such figures appear.
#include <algorithm>
#include <array>
#include <cstdint>

#include "firmware/program.h"
#include "hw/wafer_spec.h"

namespace wafer::core {

using hw::Cycle;

struct OpCost {
  std::uint32_t factor;       // lane-cycles per element
  std::uint32_t read_bytes;   // SRAM bytes read per element (Fmac: + weight bytes)
  std::uint32_t write_bytes;  // SRAM bytes written per element
};

inline constexpr std::size_t kOpKinds = std::size_t(firmware::OpKind::StreamIn) + 1;

class CostModel {
 public:
  // `weight_bytes`: bytes per weight (2 at 16-bit, 1 at 8-bit), read by Fmac.
  explicit CostModel(const hw::WaferSpec& spec, std::uint32_t weight_bytes = 2);

  const OpCost& cost(firmware::OpKind k) const { return table_[std::size_t(k)]; }
  // Cycles of the op without its vector setups (lanes or SRAM ports, whichever binds, per vector op).
  Cycle body(const firmware::Op& op) const;
  // Its vector setups: one per vector operation.
  Cycle setup(const firmware::Op& op) const { return vector_setup * Cycle(op.vectors); }
  // The whole op: setups + body.
  Cycle cycles(const firmware::Op& op) const { return setup(op) + body(op); }
  // Whether the SRAM ports, not the lanes, set the op's body.
  bool port_bound(const firmware::Op& op) const;

  // A task's delays after the input that triggers it, at least 1 each: a core reacts to an arrival the cycle after
  // at the earliest (docs/timing.md, "Rules both models implement"; the meshes' Plans charge max(delay, 1) alike).
  // A wafer parameter of 0 is taken as 1 (react).
  static Cycle react(std::int64_t delay) { return Cycle(std::max<std::int64_t>(delay, 1)); }
  Cycle task_overhead = 0;
  Cycle vector_setup = 0;
  Cycle stream_stage_latency = 0;
  Cycle color_switch = 0;     // before a send whose color's route must be reconfigured (core/executor.h)
  Cycle collective_sync = 0;  // before a send that starts a collective (firmware::Send::collective)
  std::uint32_t weight_bytes = 2;

 private:
  std::array<OpCost, kOpKinds> table_{};
  std::uint64_t simd_ = 1, read_bpc_ = 16, write_bpc_ = 8;
};

}  // namespace wafer::core
