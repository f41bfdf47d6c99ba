#include "memory/memoryx.h"

namespace wafer::memory {

BandwidthTarget::BandwidthTarget(sc_core::sc_module_name name, double bandwidth_gbs, double latency_ns,
                                 std::uint32_t channels)
    : sc_core::sc_module(name), socket("socket"), link_(bandwidth_gbs, latency_ns), channels_(channels) {
  socket.register_b_transport(this, &BandwidthTarget::b_transport);
}

void BandwidthTarget::b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
  if (gp.get_address() >= channels_) {
    gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  if (gp.get_command() == tlm::TLM_IGNORE_COMMAND) {
    gp.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
    return;
  }
  const sc_core::sc_time now = sc_core::sc_time_stamp();
  const Picos base = Picos(now.value() / sc_core::sc_time(1, sc_core::SC_PS).value());
  const Picos arrival = base + Picos(delay.value() / sc_core::sc_time(1, sc_core::SC_PS).value());
  const std::uint64_t bytes = gp.get_data_length();
  const Picos port_done = link_.request(arrival, bytes);
  // The first byte left the port when the pipe started on it and arrived `latency` later.
  const Picos done = forward(std::uint32_t(gp.get_address()), port_done - link_.occupancy(bytes), port_done, bytes);
  delay = sc_core::sc_time(double(done - base), sc_core::SC_PS);
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace wafer::memory
