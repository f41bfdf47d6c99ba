#pragma once
// Helpers shared by the noc tests.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "noc/mesh.h"
#include "noc/routing/fabric.h"
#include "noc/routing/plan.h"

namespace wafer::noc::test {

// ramp: each ramp's latency (core -> router, router -> core); 2 is the wafers' default
// (WaferSpec::ramp_latency). A test pinning another rule by hand passes 0.
inline MeshParams params(std::uint32_t hop = 1, std::uint32_t stage = 2, std::uint32_t ramp = 2) {
  MeshParams p;
  p.hop_latency = hop;
  p.stream_stage_latency = stage;
  p.ramp_latency = ramp;
  p.colors = 4;
  return p;
}

struct Arrival {
  std::uint64_t tag;
  TileIndex sink;
  Cycle head, tail, seen;
};

// Records every arrival and the cycle the network reported it.
class Recorder : public NetworkClient {
 public:
  explicit Recorder(Network& n) : net_(n) { n.set_client(this); }
  void on_arrival(std::uint64_t tag, TileIndex sink, Cycle head, Cycle tail) override {
    arrivals.push_back({tag, sink, head, tail, net_.now()});
  }
  void on_timer(std::uint64_t, Cycle) override {}
  std::vector<Arrival> arrivals;

 private:
  Network& net_;
};

inline const char* name(Fidelity f) { return to_string(f); }

}  // namespace wafer::noc::test
