#pragma once
// The edge I/O channels through which streamed weights enter the fabric (WaferSpec::io_channels), each a
// bandwidth resource: a FIFO pipe (memory/link.h) behind the shared MemoryX port. Pure C++: no SystemC.
//
// The rule (docs/streaming.md):
//   share  = io_bandwidth_gbs / io_channels               what the port gives one channel
//   lane   = wavelet_bytes x clock_ghz  (GB/s)             one fabric link at the wafer edge
//   lanes  = min( ceil(share / lane), rows per channel )   the channel enters the fabric on that many rows'
//            rows per channel = max(1, logical_height / channels on its edge (west or east))   edge links
//   gbs    = min( share, lanes x lane )                    what the channel can push into the fabric
// A request of `bytes` whose first byte leaves the port at `first` and whose last byte leaves it at
// `port_done` holds the channel for bytes / gbs (FIFO, after the channel's earlier requests) and rides one
// lane, so it also takes at least ceil(bytes / wavelet_bytes) cycles:
//   start = max(first, channel free);  done = max(port_done, start + bytes / gbs, start + lane cycles)
// `done` is when its last byte has entered the fabric at the channel's entry tile.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "hw/wafer_spec.h"
#include "memory/link.h"

namespace wafer::memory {

struct EdgeChannelRule {
  double share_gbs = 1;      // io_bandwidth_gbs / io_channels
  double lane_gbs = 1;       // wavelet_bytes x clock_ghz
  std::uint32_t lanes = 1;   // edge links a channel feeds
  double gbs = 1;            // the channel's bandwidth into the fabric

  static EdgeChannelRule from(const hw::WaferSpec& spec) {
    EdgeChannelRule r;
    const double channels = double(std::max<std::int64_t>(1, spec.io_channels));
    r.share_gbs = spec.io_bandwidth_gbs / channels;
    r.lane_gbs = double(std::max<std::int64_t>(1, spec.wavelet_bytes)) * spec.clock_ghz;
    const std::int64_t per_side = (std::max<std::int64_t>(1, spec.io_channels) + 1) / 2;  // west takes the odd one
    const std::int64_t rows = std::max<std::int64_t>(1, spec.logical_height / per_side);
    const double need = std::ceil(r.share_gbs / r.lane_gbs - 1e-12);
    r.lanes = std::uint32_t(std::clamp<double>(need, 1.0, double(rows)));
    r.gbs = std::min(r.share_gbs, double(r.lanes) * r.lane_gbs);
    return r;
  }
};

class EdgeChannels {
 public:
  EdgeChannels() = default;
  explicit EdgeChannels(const hw::WaferSpec& spec)
      : rule_(EdgeChannelRule::from(spec)),
        clock_ghz_(spec.clock_ghz),
        wavelet_bytes_(std::uint64_t(std::max<std::int64_t>(1, spec.wavelet_bytes))),
        pipes_(std::size_t(std::max<std::int64_t>(1, spec.io_channels)), BandwidthLink(rule_.gbs, 0)) {}

  // Books `bytes` on `channel`; returns when the last byte has entered the fabric (see the rule above).
  Picos push(std::uint32_t channel, Picos first, Picos port_done, std::uint64_t bytes) {
    BandwidthLink& p = pipes_.at(channel);
    const Picos end = p.request(first, bytes);
    const Picos start = end - p.occupancy(bytes);
    const Picos lane = cycles_to_ps((bytes + wavelet_bytes_ - 1) / wavelet_bytes_, clock_ghz_);
    return std::max({port_done, end, start + lane});
  }
  void reset() {
    for (auto& p : pipes_) p.reset();
  }
  const EdgeChannelRule& rule() const { return rule_; }
  const std::vector<BandwidthLink>& pipes() const { return pipes_; }

 private:
  EdgeChannelRule rule_;
  double clock_ghz_ = 1;
  std::uint64_t wavelet_bytes_ = 4;
  std::vector<BandwidthLink> pipes_;
};

}  // namespace wafer::memory
