#include "noc/mesh_module.h"

#include <algorithm>

namespace wafer::noc {

MeshModule::MeshModule(sc_core::sc_module_name name, Mesh& mesh, sc_core::sc_time cycle, Cycle quantum,
                       std::uint32_t wavelet_bytes)
    : sc_core::sc_module(name),
      edge("edge"),
      mesh_(mesh),
      cycle_(cycle),
      quantum_(std::max<Cycle>(1, quantum)),
      wavelet_bytes_(std::max<std::uint32_t>(1, wavelet_bytes)) {
  edge.register_b_transport(this, &MeshModule::b_transport);
  SC_HAS_PROCESS(MeshModule);
  SC_THREAD(loop);
}

Cycle MeshModule::cycle_of(const sc_core::sc_time& t) const {
  return Cycle(t.value() / cycle_.value());
}

void MeshModule::loop() {
  for (;;) {
    if (mesh_.idle()) wait(wake_);
    // Catch the mesh up with SystemC time, then let it run one quantum ahead and wait for the kernel.
    const Cycle now = std::max(cycle_of(sc_core::sc_time_stamp()), mesh_.now());
    const Cycle limit = now + quantum_;
    mesh_.run_until(limit);
    ++slices_;
    const Cycle sys = cycle_of(sc_core::sc_time_stamp());
    wait(cycle_ * double(limit - sys));
  }
}

void MeshModule::b_transport(tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
  const Grid& g = mesh_.fabric().grid();
  if (p.get_command() != tlm::TLM_WRITE_COMMAND) {
    p.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
    return;
  }
  EdgeBurst* x = nullptr;
  p.get_extension(x);
  BurstSpec b;
  if (x && x->has_dest) {
    b.dest = x->dest;
  } else {
    if (p.get_address() >= g.size()) {
      p.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
      return;
    }
    b.dest.kind = Destination::Kind::Tile;
    b.dest.first = g.coord(TileIndex(p.get_address()));
  }
  b.src = x && x->entry != hw::kNoTile ? x->entry : g.index({0, b.dest.first.y});
  b.wavelets = std::max<std::uint32_t>(1, std::uint32_t((p.get_data_length() + wavelet_bytes_ - 1) / wavelet_bytes_));
  b.color = x ? x->color : 0;
  b.tag = x ? x->tag : p.get_address();
  mesh_.send(b, cycle_of(sc_core::sc_time_stamp() + delay));
  p.set_response_status(tlm::TLM_OK_RESPONSE);
  wake_.notify(sc_core::SC_ZERO_TIME);
}

}  // namespace wafer::noc
