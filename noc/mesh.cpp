#include "noc/mesh.h"

#include <fmt/format.h>

#include "hw/error.h"
#include "noc/approx.h"
#include "noc/cycle.h"

namespace wafer::noc {

const char* to_string(Fidelity f) { return f == Fidelity::Approx ? "approx" : "cycle"; }

Fidelity parse_fidelity(std::string_view s) {
  if (s == "approx") return Fidelity::Approx;
  if (s == "cycle") return Fidelity::Cycle;
  throw hw::InputError(fmt::format("unknown fidelity '{}' (known: approx, cycle)", s));
}

MeshParams MeshParams::from(const hw::WaferSpec& spec) {
  MeshParams p;
  p.hop_latency = std::uint32_t(spec.hop_latency);
  p.ramp_latency = std::uint32_t(spec.ramp_latency);
  p.stream_stage_latency = std::uint32_t(spec.stream_stage_latency);
  p.colors = std::uint32_t(spec.colors);
  return p;
}

std::unique_ptr<Mesh> make_mesh(Fidelity fidelity, const Fabric& fabric, const MeshParams& params) {
  if (fidelity == Fidelity::Approx) return std::make_unique<ApproxMesh>(fabric, params);
  return std::make_unique<CycleMesh>(fabric, params);  // refuses large meshes before allocating
}

void Mesh::require_all_ran(const std::vector<std::uint8_t>& done) {
  for (std::size_t f = 0; f < done.size(); ++f)
    if (!done[f])
      throw hw::InputError(fmt::format("plan flow {} never ran: its triggers wait on each other (a cycle)", f));
}

}  // namespace wafer::noc
