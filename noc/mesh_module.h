#pragma once
// noc::MeshModule: the mesh timing model inside SystemC (docs/design.md section 2). One sc_module holds a
// Mesh (approx for the full wafer; cycle works too) whose tiles are compact arrays, and advances the
// mesh's own event queue in quantum-sized slices: run the mesh up to (SystemC time + quantum), then
// wait() for that long, so the kernel is entered once per quantum, not once per event (temporal
// decoupling, the TLM-2.0 loosely-timed style). While the mesh has nothing to do the module sleeps on
// an event, so an idle mesh costs nothing.
//
// Boundary: `edge` is a TLM-2.0 target socket through which an off-mesh party (host loader, MemoryX
// port) injects bursts at the wafer edge with b_transport. Payload: a WRITE whose address is the
// destination tile (logical TileIndex) and whose data length gives the wavelets (ceil(bytes /
// wavelet_bytes)); the burst enters the mesh at the west-edge tile of the destination's row at the
// annotated time (sc_time_stamp() + delay, in cycles) and crosses the fabric like any other burst (the
// entry tile's injection ramp, with its latency, included).
// The extension EdgeBurst (optional) sets the entry tile, a multicast destination, the color and the tag
// the mesh's client hears back with the arrival. b_transport returns at once (a posted write) and does
// not change the delay.
//
// How a SystemC top uses it (sim/ runs a whole decode step as one decoupled job and drives the mesh
// directly instead; docs/timing.md):
//   noc::Fabric fabric = noc::Fabric::from_repair(repair);
//   auto mesh = noc::make_mesh(noc::Fidelity::Approx, fabric, noc::MeshParams::from(spec));
//   noc::MeshModule mm("mesh", *mesh, sc_core::sc_time(1.0 / spec.clock_ghz, sc_core::SC_NS), 256);
//   mesh->set_client(&cores);           // arrivals and timers go to the cores (noc::NetworkClient)
//   memoryx.socket.bind(mm.edge);       // off-wafer parties inject through TLM
//   ... cores call mesh->send()/timer() from on_arrival/on_timer, or call mm.kick() after sending from
//   ... a SystemC process so a sleeping module wakes up; then sc_start().
// The kernel cannot be re-elaborated in one process: between runs call mesh->reset() (the module keeps
// running on the same mesh), or run one elaboration per process.
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include "noc/mesh.h"

namespace wafer::noc {

// Optional payload extension for MeshModule::edge.
struct EdgeBurst : tlm::tlm_extension<EdgeBurst> {
  TileIndex entry = hw::kNoTile;  // kNoTile: the west-edge tile of the destination's row
  Destination dest;               // used when has_dest; otherwise the payload address is the tile
  bool has_dest = false;
  Color color = 0;
  std::uint64_t tag = 0;
  tlm::tlm_extension_base* clone() const override { return new EdgeBurst(*this); }
  void copy_from(const tlm::tlm_extension_base& e) override { *this = static_cast<const EdgeBurst&>(e); }
};

class MeshModule : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket_optional<MeshModule> edge;  // may stay unbound

  // `cycle` is one core clock period; `quantum` the cycles the mesh may run ahead of SystemC time.
  MeshModule(sc_core::sc_module_name name, Mesh& mesh, sc_core::sc_time cycle, Cycle quantum,
             std::uint32_t wavelet_bytes = 4);

  Mesh& mesh() { return mesh_; }
  // Wakes the module after bursts were sent from outside its thread while it slept.
  void kick() { wake_.notify(sc_core::SC_ZERO_TIME); }
  Cycle cycle_of(const sc_core::sc_time& t) const;
  std::uint64_t slices() const { return slices_; }  // quantum slices run (kernel synchronisations)

 private:
  void loop();
  void b_transport(tlm::tlm_generic_payload& p, sc_core::sc_time& delay);

  Mesh& mesh_;
  sc_core::sc_time cycle_;
  Cycle quantum_;
  std::uint32_t wavelet_bytes_;
  sc_core::sc_event wake_;
  std::uint64_t slices_ = 0;
};

}  // namespace wafer::noc
