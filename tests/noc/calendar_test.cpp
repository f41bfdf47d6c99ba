// The calendar's pending() and rebuild() (exact reuse, docs/timing.md "Reuse"): pending() lists the events in
// the order run() handles them (cycle, then push order, near and far events alike), and a queue rebuilt
// from that list at a shifted clock handles them in the same order, shifted.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "noc/calendar.h"

namespace wafer::noc {
namespace {

using Log = std::vector<std::pair<hw::Cycle, int>>;

// Pushes a mix of near and far events, some at the same cycle from both sides of the window, and handles
// the events before `stop`; some handlers push more.
constexpr hw::Cycle kWindow = Calendar<int>::kBuckets;  // pushed at cycle 0: from here on, far events
void fill(Calendar<int>& q, hw::Cycle base) {
  int id = 0;
  for (hw::Cycle t : {base + kWindow + 172, base + 5, base + kWindow + 172, base + kWindow + 1, base + 5,
                      base + 8 * kWindow, base + kWindow + 2, base + kWindow + 1})
    q.push(t, id++);
}

Log run_all(Calendar<int>& q, hw::Cycle limit) {
  Log log;
  q.run(limit, [&](hw::Cycle t, int e) {
    log.push_back({t, e});
    if (e == 1) q.push(t + kWindow - 4, 100);  // lands at a cycle that also has a far event (kWindow + 1)
    if (e == 3) q.push(t + 1, 101);
  });
  return log;
}

TEST(CalendarReuse, PendingListsEventsInTheOrderTheyRun) {
  Calendar<int> a, b;
  fill(a, 0), fill(b, 0);
  run_all(a, 6), run_all(b, 6);  // both stop at the same boundary, with near and far events left
  std::vector<std::pair<hw::Cycle, int>> pending;
  a.pending(pending);
  ASSERT_FALSE(pending.empty());
  Log rest = run_all(b, ~hw::Cycle(0));
  // Event 101 is pushed after the boundary; the others were all pending there (among them 100, pushed into
  // the window at cycle kWindow + 1 before the far events of that cycle move in: it runs first).
  Log listed;
  for (const auto& e : rest)
    if (e.second != 101) listed.push_back(e);
  Log expect(pending.begin(), pending.end());
  EXPECT_EQ(listed, expect);
  EXPECT_EQ(expect.size(), 7u);
}

TEST(CalendarReuse, RebuiltAtAShiftedClockRunsTheSameShifted) {
  constexpr hw::Cycle kShift = 12345;
  Calendar<int> a, b;
  fill(a, 0), fill(b, 0);
  run_all(a, 6), run_all(b, 6);
  std::vector<std::pair<hw::Cycle, int>> pending;
  b.pending(pending);
  for (auto& [t, e] : pending) t += kShift;
  b.rebuild(b.now() + kShift, pending);
  EXPECT_EQ(b.now(), 6 + kShift);
  Log ra = run_all(a, ~hw::Cycle(0)), rb = run_all(b, ~hw::Cycle(0));
  ASSERT_EQ(ra.size(), rb.size());
  for (std::size_t i = 0; i < ra.size(); ++i) {
    EXPECT_EQ(ra[i].first + kShift, rb[i].first) << i;
    EXPECT_EQ(ra[i].second, rb[i].second) << i;
  }
}

}  // namespace
}  // namespace wafer::noc
