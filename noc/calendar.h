#pragma once
// A calendar (bucket) queue for discrete-event models: one bucket per cycle over a sliding window of
// `kBuckets` cycles, events further out parked in an overflow heap and moved into their bucket the cycle
// it enters the window. Same-cycle events run in the order they were pushed (FIFO), whatever the window
// size, which makes the models deterministic. Near events (the bulk: hops one link latency ahead) cost no
// heap operation and no allocation once the buckets have grown to their working size. The window is kept
// small so the buckets in use stay in cache. Its size changes no order: a bucket holds its events in push
// order whether they came from the heap or straight in.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "hw/coord.h"

namespace wafer::noc {

template <class Event>
class Calendar {
 public:
  // power of two. 512 rather than 128: a task's ready timer often lies a long burst's tail ahead, beyond
  // 128 cycles, and the overflow heap cost 3 % of the defective 8B's instructions (bench/jobs.sh defects_50:
  // 12.95 G -> 12.60 G instructions, user time 1.48 -> 1.41 s median of 5; 1024 was no better).
  static constexpr std::uint32_t kBuckets = 512;
  static constexpr std::uint32_t kMask = kBuckets - 1;

  Calendar() = default;
  Calendar(const Calendar&) = delete;
  Calendar& operator=(const Calendar&) = delete;

  hw::Cycle now() const { return now_; }
  bool empty() const { return in_window_ == 0 && overflow_.empty(); }
  std::size_t size() const { return in_window_ + overflow_.size(); }

  // `t` must be >= now(). (The event by value, here and below: built in registers and stored into its bucket
  // from them. Taken by reference it was built field by field on the stack and read back whole, a load the
  // narrower stores could not forward: the stall of 17 % of the approx mesh's event loop samples, perf.)
  [[gnu::always_inline]] void push(hw::Cycle t, Event e) {
    if (t < now_ + kBuckets) [[likely]] {
      ++in_window_;
      ring_[t & kMask].push(e);  // (last: its growth is a tail call, nothing kept across it)
    } else {
      push_far(t, e);
    }
  }

  // Calls f(t, event) for every event with t < limit, in time order; f may push further events (at
  // t >= the current event's time). Leaves now() at the first cycle not processed (<= limit).
  template <class F>
  void run(hw::Cycle limit, F&& f) {
    run(limit, f, [](const Event&) {});
  }
  // `limit` is read again after every cycle (a handler may lower it: Network::pause_at).
  // The same; before each event runs, `pre(event)` is called on the event kAhead places further in the
  // current bucket, so a model can prefetch the records that event will touch (the events of one cycle
  // are independent reads of scattered records: memory latency, not work, bounds them). Order is unchanged.
  static constexpr std::size_t kAhead = 6;
  template <class F, class P>
  void run(const hw::Cycle& limit, F&& f, P&& pre) {
    while (now_ < limit) {
      // Far events enter their bucket the cycle it enters the window, before any event pushed straight
      // into it (which needs now() > t - kBuckets): a bucket holds its events in push order.
      if (!overflow_.empty() && overflow_.front().t < now_ + kBuckets) sweep();
      if (in_window_ == 0) {
        if (overflow_.empty()) {
          if (limit != ~hw::Cycle(0)) now_ = limit;  // nothing left before the limit
          return;
        }
        const hw::Cycle tmin = overflow_.front().t;  // >= now() + kBuckets
        if (tmin >= limit) {
          now_ = limit;
          return;
        }
        now_ = tmin;
        continue;
      }
      Bucket& b = ring_[now_ & kMask];
      // Index-based: handlers may append to this very bucket (events at the same cycle), moving it.
      std::uint32_t n = b.size;
      for (std::uint32_t i = 0; i < kAhead && i < n; ++i) pre(b.data[i]);
      for (std::uint32_t i = 0; i < n; ++i) {
        if (i + kAhead < n) pre(b.data[i + kAhead]);
        const Event e = b.data[i];
        f(now_, e);
        n = b.size;
      }
      in_window_ -= n;
      b.size = 0;
      ++now_;
    }
  }

  // Drops every event and restarts time at zero (capacity kept).
  // The pending events in the order they will run (time, then push order; at one cycle the events already
  // in the window's bucket before the far ones moved into it), each with its cycle.
  void pending(std::vector<std::pair<hw::Cycle, Event>>& out) const {
    out.clear();
    std::vector<Far> far(overflow_);
    std::sort(far.begin(), far.end(), [](const Far& a, const Far& b) { return b < a; });
    std::size_t f = 0;
    for (hw::Cycle t = now_; t < now_ + kBuckets; ++t) {
      const Bucket& b = ring_[t & kMask];
      for (std::uint32_t i = 0; i < b.size; ++i) out.push_back({t, b.data[i]});
      for (; f < far.size() && far[f].t == t; ++f) out.push_back({t, far[f].e});
    }
    for (; f < far.size(); ++f) out.push_back({far[f].t, far[f].e});
  }
  // Empties the queue, sets its clock to `now` and pushes `events` (in pending()'s order, none before now):
  // they then run in that order.
  void rebuild(hw::Cycle now, const std::vector<std::pair<hw::Cycle, Event>>& events) {
    reset();
    now_ = now;
    for (const auto& [t, e] : events) push(t, e);
  }

  void reset() {
    for (auto& b : ring_) b.size = 0;
    overflow_.clear();
    in_window_ = 0;
    now_ = 0;
    far_seq_ = 0;
  }

  std::size_t bytes() const {
    std::size_t n = overflow_.capacity() * sizeof(Far) + sizeof(ring_);
    for (const auto& b : ring_) n += std::size_t(b.cap) * sizeof(Event);
    return n;
  }

 private:
  struct Far {
    hw::Cycle t;
    std::uint64_t seq;  // push order: same-cycle events keep it
    Event e;
    // std::push_heap keeps the greatest on top: "greater" is the earlier (t, seq).
    bool operator<(const Far& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };
  // Out of line: the heap's push inlined in every caller of push() made them save registers on the near path.
  [[gnu::noinline]] void push_far(hw::Cycle t, Event e) {
    overflow_.push_back({t, far_seq_++, e});
    std::push_heap(overflow_.begin(), overflow_.end());
  }
  // Moves every overflow event that now fits the window into its bucket, in time then push order. The
  // overflow is a binary heap: a far event costs log(n) twice, and no sweep scans the others.
  void sweep() {
    while (!overflow_.empty() && overflow_.front().t < now_ + kBuckets) {
      std::pop_heap(overflow_.begin(), overflow_.end());
      ring_[overflow_.back().t & kMask].push(overflow_.back().e);
      ++in_window_;
      overflow_.pop_back();
    }
  }

  // One cycle's events: a plain growable array (kept, not freed, when the bucket empties).
  struct Bucket {
    std::unique_ptr<Event[]> data;
    std::uint32_t size = 0, cap = 0;
    void push(Event e) {
      if (size == cap) [[unlikely]] return grow_and_push(e);
      data[size++] = e;
    }
    [[gnu::noinline]] void grow_and_push(Event e) {
      const std::uint32_t c = cap ? 2 * cap : 64;
      std::unique_ptr<Event[]> d(new Event[c]);
      std::copy(data.get(), data.get() + size, d.get());
      data = std::move(d), cap = c;
      data[size++] = e;
    }
  };
  Bucket ring_[kBuckets];
  std::vector<Far> overflow_;
  std::size_t in_window_ = 0;
  hw::Cycle now_ = 0;
  std::uint64_t far_seq_ = 0;
};

}  // namespace wafer::noc
