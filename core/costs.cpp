#include "core/costs.h"

#include <algorithm>

#include "memory/sram.h"

namespace wafer::core {

using firmware::OpKind;

CostModel::CostModel(const hw::WaferSpec& spec, std::uint32_t wb)
    : task_overhead(react(spec.task_overhead)),
      vector_setup(Cycle(spec.vector_setup)),
      stream_stage_latency(react(spec.stream_stage_latency)),
      color_switch(Cycle(spec.color_switch)),
      collective_sync(Cycle(spec.collective_sync)),
      weight_bytes(wb),
      simd_(std::uint64_t(std::max<std::int64_t>(1, spec.simd_width))) {
  memory::TileSram sram(spec);
  read_bpc_ = sram.read_bytes_per_cycle();
  write_bpc_ = sram.write_bytes_per_cycle();
  auto set = [&](OpKind k, OpCost c) { table_[std::size_t(k)] = c; };
  set(OpKind::Fmac, {1, wb + 2, 0});
  set(OpKind::Add, {1, 4, 2});
  set(OpKind::Mul, {1, 4, 2});
  set(OpKind::Exp, {4, 2, 2});
  set(OpKind::Silu, {6, 2, 2});
  set(OpKind::Rsqrt, {4, 2, 2});
  set(OpKind::Max, {1, 2, 0});
  set(OpKind::Sum, {1, 2, 0});
  set(OpKind::Rope, {2, 4, 2});
  set(OpKind::Copy, {1, 2, 2});
  set(OpKind::Argmax, {1, 2, 0});
  set(OpKind::StreamIn, {0, 0, 1});
}

namespace {
Cycle ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }
}  // namespace

Cycle CostModel::body(const firmware::Op& op) const {
  const OpCost& c = cost(op.kind);
  const std::uint64_t v = std::max<std::uint32_t>(1, op.vectors), n = op.elements / v;
  Cycle lanes = ceil_div(n * c.factor, simd_);
  Cycle reads = ceil_div(n * c.read_bytes, read_bpc_);
  Cycle writes = ceil_div(n * c.write_bytes, write_bpc_);
  return v * std::max({lanes, reads, writes});
}

bool CostModel::port_bound(const firmware::Op& op) const {
  const OpCost& c = cost(op.kind);
  const std::uint64_t n = op.elements / std::max<std::uint32_t>(1, op.vectors);
  return ceil_div(n * c.factor, simd_) < body(op);
}

}  // namespace wafer::core
