#pragma once
// A calendar (bucket) queue for discrete-event models: one bucket per cycle over a sliding window of
// `kBuckets` cycles, events further out parked in an overflow list that is swept into the window every
// half window. Same-cycle events run in insertion order (FIFO), which makes the models deterministic.
// No binary heap, no allocation per event once the buckets have grown to their working size.
#include <cstdint>
#include <vector>

#include "hw/coord.h"

namespace wafer::noc {

template <class Event>
class Calendar {
 public:
  static constexpr std::uint32_t kBuckets = 1024;  // power of two
  static constexpr std::uint32_t kMask = kBuckets - 1;

  Calendar() : buckets_(kBuckets) {}

  hw::Cycle now() const { return now_; }
  bool empty() const { return in_window_ == 0 && overflow_.empty(); }
  std::size_t size() const { return in_window_ + overflow_.size(); }

  // `t` must be >= now().
  void push(hw::Cycle t, const Event& e) {
    if (t < now_ + kBuckets) {
      buckets_[t & kMask].push_back(e);
      ++in_window_;
    } else {
      overflow_.push_back({t, e});
    }
  }

  // Calls f(t, event) for every event with t < limit, in time order; f may push further events (at
  // t >= the current event's time). Leaves now() at the first cycle not processed (<= limit).
  template <class F>
  void run(hw::Cycle limit, F&& f) {
    run(limit, f, [](const Event&, bool) {});
  }
  // The same; before each event runs, `pre(event, false)` is called on the event 2 x kAhead places further
  // in the current bucket and `pre(event, true)` on the one kAhead further, so a model can prefetch the
  // records those events will touch in two dependent stages (the events of one cycle are independent reads
  // of scattered tile and burst records: memory latency, not work, bounds them). Order is unchanged.
  static constexpr std::size_t kAhead = 4;
  template <class F, class P>
  void run(hw::Cycle limit, F&& f, P&& pre) {
    while (now_ < limit) {
      if (in_window_ == 0) {
        if (overflow_.empty()) {
          if (limit != ~hw::Cycle(0)) now_ = limit;  // nothing left before the limit
          return;
        }
        hw::Cycle tmin = overflow_.front().t;
        for (const auto& o : overflow_) tmin = o.t < tmin ? o.t : tmin;
        if (tmin >= limit) {
          now_ = limit;
          return;
        }
        now_ = tmin;
        sweep();
        continue;
      }
      if (now_ >= next_sweep_) sweep();
      auto& b = buckets_[now_ & kMask];
      // Index-based: handlers may append to this very bucket (events at the same cycle).
      for (std::size_t i = 0; i < 2 * kAhead && i < b.size(); ++i) pre(b[i], false);
      for (std::size_t i = 0; i < kAhead && i < b.size(); ++i) pre(b[i], true);
      for (std::size_t i = 0; i < b.size(); ++i) {
        if (i + 2 * kAhead < b.size()) pre(b[i + 2 * kAhead], false);
        if (i + kAhead < b.size()) pre(b[i + kAhead], true);
        Event e = b[i];
        --in_window_;
        f(now_, e);
      }
      b.clear();
      ++now_;
    }
  }

  // Drops every event and restarts time at zero (capacity kept).
  void reset() {
    for (auto& b : buckets_) b.clear();
    overflow_.clear();
    in_window_ = 0;
    now_ = 0;
    next_sweep_ = 0;
  }

  std::size_t bytes() const {
    std::size_t n = overflow_.capacity() * sizeof(Far) + buckets_.capacity() * sizeof(std::vector<Event>);
    for (const auto& b : buckets_) n += b.capacity() * sizeof(Event);
    return n;
  }

 private:
  struct Far {
    hw::Cycle t;
    Event e;
  };
  // Moves every overflow event that now fits the window into its bucket.
  void sweep() {
    std::size_t keep = 0;
    for (std::size_t i = 0; i < overflow_.size(); ++i) {
      if (overflow_[i].t < now_ + kBuckets) {
        buckets_[overflow_[i].t & kMask].push_back(overflow_[i].e);
        ++in_window_;
      } else {
        overflow_[keep++] = overflow_[i];
      }
    }
    overflow_.resize(keep);
    next_sweep_ = now_ + kBuckets / 2;
  }

  std::vector<std::vector<Event>> buckets_;
  std::vector<Far> overflow_;
  std::size_t in_window_ = 0;
  hw::Cycle now_ = 0;
  hw::Cycle next_sweep_ = 0;
};

}  // namespace wafer::noc
