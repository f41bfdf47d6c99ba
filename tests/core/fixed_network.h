#pragma once
// A trivial noc::Network for unit tests of the cores: a fixed latency per hop (Manhattan distance on the
// logical grid) and per ramp, no contention. Head = at + 2 x ramp + hops x hop (at for a burst to the
// sender itself), tail = head + lag. A segment multicast reaches every tile of the segment; its distance is
// Manhattan from the source. Arrivals are reported at the head's cycle.
#include <cstdlib>
#include <queue>
#include <vector>

#include "noc/network.h"

namespace wafer::testing {

class FixedNetwork final : public noc::Network {
 public:
  FixedNetwork(hw::Grid grid, hw::Cycle hop, hw::Cycle ramp = 0) : grid_(grid), hop_(hop), ramp_(ramp) {}
  void set_client(noc::NetworkClient* c) override { client_ = c; }
  void send(const noc::BurstSpec& b, hw::Cycle at) override {
    ++stats_.bursts;
    hw::Coord s = grid_.coord(b.src);
    auto one = [&](hw::Coord d) {
      hw::Cycle hops = hw::Cycle(std::abs(d.x - s.x) + std::abs(d.y - s.y));
      hw::Cycle head = at + hops * hop_ + (hops ? 2 * ramp_ : 0);
      push({head, seq_++, false, b.tag, grid_.index(d), head + b.lag});
    };
    if (b.dest.kind == noc::Destination::Kind::Tile) one(b.dest.first);
    for (std::int32_t i = 0; b.dest.kind != noc::Destination::Kind::Tile && i < b.dest.span; ++i)
      one(b.dest.kind == noc::Destination::Kind::RowSegment ? hw::Coord{b.dest.first.x + i, b.dest.first.y}
                                                             : hw::Coord{b.dest.first.x, b.dest.first.y + i});
  }
  void timer(hw::Cycle at, std::uint64_t tag) override { push({at, seq_++, true, tag, 0, 0}); }
  hw::Cycle run() override {
    while (!q_.empty()) {
      Ev e = q_.top();
      q_.pop();
      now_ = e.t;
      if (e.timer) client_->on_timer(e.tag, e.t);
      else client_->on_arrival(e.tag, e.sink, e.t, e.tail);
    }
    return now_;
  }
  hw::Cycle now() const override { return now_; }
  const noc::NetworkStats& stats() const override { return stats_; }

 private:
  struct Ev {
    hw::Cycle t;
    std::uint64_t seq;
    bool timer;
    std::uint64_t tag;
    hw::TileIndex sink;
    hw::Cycle tail;
    bool operator>(const Ev& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };
  void push(Ev e) {
    if (e.t < now_) std::abort();
    q_.push(e);
  }
  hw::Grid grid_;
  hw::Cycle hop_, ramp_;
  noc::NetworkClient* client_ = nullptr;
  std::priority_queue<Ev, std::vector<Ev>, std::greater<>> q_;
  std::uint64_t seq_ = 0;
  hw::Cycle now_ = 0;
  noc::NetworkStats stats_;
};

}  // namespace wafer::testing
