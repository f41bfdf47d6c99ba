#pragma once
// The MemoryX port and the links between wafers as TLM-2.0 targets (loosely timed: b_transport with time
// annotation, no wait()). A request is a TLM READ (MemoryX: weights towards the wafer) or WRITE (a wafer
// link: activations towards the next wafer) whose data_length is the byte count and whose address is the
// edge channel. The targets model timing only and never touch the data pointer, which may be null.
// On return the annotated delay is the time from sc_time_stamp() at which the last byte has arrived:
// queueing behind earlier requests + bytes / bandwidth + latency (memory/link.h); for MemoryX, the last
// byte has also crossed its edge channel into the fabric (memory/edge_channels.h).
#include <cstdint>
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include "hw/wafer_spec.h"
#include "memory/edge_channels.h"
#include "memory/link.h"

namespace wafer::memory {

class BandwidthTarget : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<BandwidthTarget> socket;

  // `channels`: addresses 0 .. channels-1 are valid; others get TLM_ADDRESS_ERROR_RESPONSE.
  BandwidthTarget(sc_core::sc_module_name name, double bandwidth_gbs, double latency_ns, std::uint32_t channels);

  virtual ~BandwidthTarget() = default;
  const BandwidthLink& link() const { return link_; }
  void reset() { link_.reset(); }
  // New parameters (between runs; also resets the state).
  void configure(double bandwidth_gbs, double latency_ns, std::uint32_t channels) {
    link_ = BandwidthLink(bandwidth_gbs, latency_ns);
    channels_ = channels;
  }

 protected:
  // After the shared link: a request on `channel` whose first byte came out at `first` and its last at
  // `done`; returns when the request is complete (default: `done`).
  virtual Picos forward(std::uint32_t /*channel*/, Picos /*first*/, Picos done, std::uint64_t /*bytes*/) { return done; }

 private:
  void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  BandwidthLink link_;
  std::uint32_t channels_;
};

// The MemoryX weight-streaming port at the wafer edge: io_bandwidth_gbs, io_latency_ns, shared by all
// requests; behind it the io_channels edge channels (the address), each its own bandwidth resource
// (memory/edge_channels.h). The annotated delay ends when the last byte has entered the fabric at the
// channel's entry tile.
class MemoryX : public BandwidthTarget {
 public:
  MemoryX(sc_core::sc_module_name name, const hw::WaferSpec& spec)
      : BandwidthTarget(name, spec.io_bandwidth_gbs, spec.io_latency_ns, std::uint32_t(spec.io_channels)),
        channels_(spec) {}
  void configure(const hw::WaferSpec& spec) {
    BandwidthTarget::configure(spec.io_bandwidth_gbs, spec.io_latency_ns, std::uint32_t(spec.io_channels));
    channels_ = EdgeChannels(spec);
  }
  void reset() {
    BandwidthTarget::reset();
    channels_.reset();
  }
  const EdgeChannels& channels() const { return channels_; }

 protected:
  Picos forward(std::uint32_t channel, Picos first, Picos done, std::uint64_t bytes) override {
    return channels_.push(channel, first, done, bytes);
  }

 private:
  EdgeChannels channels_;
};

// The link from one wafer of a pipeline to the next: interwafer_bandwidth_gbs, interwafer_latency_ns.
class WaferLink : public BandwidthTarget {
 public:
  WaferLink(sc_core::sc_module_name name, const hw::WaferSpec& spec)
      : BandwidthTarget(name, spec.interwafer_bandwidth_gbs, spec.interwafer_latency_ns, 1) {}
  void configure(const hw::WaferSpec& spec) {
    BandwidthTarget::configure(spec.interwafer_bandwidth_gbs, spec.interwafer_latency_ns, 1);
  }
};

}  // namespace wafer::memory
