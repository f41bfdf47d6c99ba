#pragma once
// A bandwidth-and-latency pipe (FIFO): the timing behind the MemoryX port and the links between wafers.
// A request of `bytes` arriving at `t` starts when the pipe is free, occupies it bytes / bandwidth and
// completes `latency` after its last byte left: done = max(t, free) + bytes / bandwidth + latency.
// Concurrent requests therefore share the bandwidth (the second waits for the first's bytes). Time is
// integer picoseconds so results are the same on every machine. Pure C++: no SystemC.
#include <cmath>
#include <cstdint>

namespace wafer::memory {

using Picos = std::uint64_t;

class BandwidthLink {
 public:
  BandwidthLink() = default;
  BandwidthLink(double bandwidth_gbs, double latency_ns) : gbs_(bandwidth_gbs), latency_ps_(to_ps(latency_ns)) {}

  // Picoseconds the bytes occupy the pipe (rounded up): bytes / (GB/s) = ns.
  Picos occupancy(std::uint64_t bytes) const { return Picos(std::ceil(double(bytes) * 1000.0 / gbs_)); }
  Picos latency() const { return latency_ps_; }

  // Books a request arriving at `arrival`; returns when its last byte is delivered.
  Picos request(Picos arrival, std::uint64_t bytes) {
    Picos start = arrival > free_ ? arrival : free_;
    free_ = start + occupancy(bytes);
    bytes_ += bytes;
    ++requests_;
    busy_ += occupancy(bytes);
    return free_ + latency_ps_;
  }
  void reset() { free_ = 0, bytes_ = 0, requests_ = 0, busy_ = 0; }

  std::uint64_t bytes() const { return bytes_; }
  std::uint64_t requests() const { return requests_; }
  Picos busy() const { return busy_; }

 private:
  static Picos to_ps(double ns) { return Picos(std::llround(ns * 1000.0)); }
  double gbs_ = 1;
  Picos latency_ps_ = 0;
  Picos free_ = 0;
  std::uint64_t bytes_ = 0, requests_ = 0;
  Picos busy_ = 0;
};

// Cycles <-> picoseconds at a clock in GHz (cycles round up: data is usable at the next clock edge).
inline Picos cycles_to_ps(std::uint64_t cycles, double clock_ghz) {
  return Picos(std::llround(double(cycles) * 1000.0 / clock_ghz));
}
inline std::uint64_t ps_to_cycles(Picos ps, double clock_ghz) {
  return std::uint64_t(std::ceil(double(ps) * clock_ghz / 1000.0 - 1e-9));
}

}  // namespace wafer::memory
