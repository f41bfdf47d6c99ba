#include "firmware/validate.h"

#include <fmt/format.h>

#include <array>
#include <bitset>
#include <deque>

namespace wafer::firmware {

int colors_used(const Program& p) {
  std::bitset<256> seen;
  for (const Task& t : p.tasks) {
    seen.set(t.trigger);
    for (const Send& s : t.sends) seen.set(s.color);
  }
  return int(seen.count());
}

namespace {

// Per program: for each color, the tasks it triggers in program order.
struct ProgramIndex {
  std::vector<std::vector<std::uint16_t>> by_color;  // 256 entries, lazily sized
  std::vector<std::uint8_t> slot;                    // color -> dense slot, 0xFF = none
};

}  // namespace

ValidationResult validate(const Image& image, std::size_t max_problems) {
  ValidationResult res;
  auto problem = [&](std::string s) {
    if (res.problems.size() < max_problems) res.problems.push_back(std::move(s));
  };
  const hw::Grid& g = image.grid;
  if (g.width <= 0 || g.height <= 0) {
    problem("the image's grid is empty");
    return res;
  }
  if (image.tile_program.size() != g.size()) {
    problem(fmt::format("tile_program has {} entries for a {} x {} grid", image.tile_program.size(), g.width, g.height));
    return res;
  }
  // Index programs.
  std::vector<ProgramIndex> index(image.programs.size());
  std::size_t max_slots = 0;
  for (std::size_t p = 0; p < image.programs.size(); ++p) {
    ProgramIndex& ix = index[p];
    ix.slot.assign(256, 0xFF);
    const auto& tasks = image.programs[p].tasks;
    if (tasks.size() > 0xFFFF) problem(fmt::format("program {} has {} tasks (at most 65535)", p, tasks.size()));
    for (std::size_t t = 0; t < tasks.size() && t <= 0xFFFF; ++t) {
      Color c = tasks[t].trigger;
      if (ix.slot[c] == 0xFF) {
        ix.slot[c] = std::uint8_t(ix.by_color.size());
        ix.by_color.emplace_back();
      }
      ix.by_color[ix.slot[c]].push_back(std::uint16_t(t));
      if (tasks[t].arrivals == 0) problem(fmt::format("program {} task {} waits for 0 arrivals", p, t));
      if (tasks[t].after > t)
        problem(fmt::format("program {} task {} reads the output of a task {} before it, before the program's first", p, t,
                            tasks[t].after));
    }
    max_slots = std::max(max_slots, ix.by_color.size());
  }
  for (std::size_t t = 0; t < g.size(); ++t) {
    std::uint32_t p = image.tile_program[t];
    if (p != kIdle && p >= image.programs.size()) {
      problem(fmt::format("tile ({},{}) names program {} of {}", g.coord(hw::TileIndex(t)).x,
                          g.coord(hw::TileIndex(t)).y, p, image.programs.size()));
      return res;
    }
  }
  if (!res.problems.empty()) return res;

  // Per tile and color slot: which task of the color's list is next, and how many bursts it holds.
  struct Slot {
    std::uint16_t next = 0;
    std::uint16_t count = 0;
  };
  const std::size_t slots = std::max<std::size_t>(max_slots, 1);
  std::vector<Slot> state(g.size() * slots);
  std::uint64_t done_count = 0;
  std::deque<std::pair<hw::TileIndex, std::uint16_t>> ready;  // (tile, task) ready to run

  auto deliver = [&](hw::Coord at, Color c, hw::Coord from, std::size_t from_task) {
    if (!g.inside(at)) {
      problem(fmt::format("a burst on color {} from tile ({},{}) task {} leaves the {} x {} grid at ({},{})", int(c),
                          from.x, from.y, from_task, g.width, g.height, at.x, at.y));
      return;
    }
    ++res.bursts_delivered;
    hw::TileIndex ti = g.index(at);
    if (at == image.done_tile && c == image.done_color) {
      ++done_count;
      return;
    }
    std::uint32_t p = image.tile_program[ti];
    if (p == kIdle) {
      problem(fmt::format("a burst on color {} from ({},{}) reaches idle tile ({},{})", int(c), from.x, from.y, at.x,
                          at.y));
      return;
    }
    const ProgramIndex& ix = index[p];
    if (ix.slot[c] == 0xFF) {
      problem(fmt::format("tile ({},{}) receives a burst on color {} (from ({},{})) but has no task triggered by it",
                          at.x, at.y, int(c), from.x, from.y));
      return;
    }
    Slot& s = state[std::size_t(ti) * slots + ix.slot[c]];
    const auto& list = ix.by_color[ix.slot[c]];
    if (s.next >= list.size()) {
      problem(fmt::format("tile ({},{}) receives one burst too many on color {} (from ({},{})): every task it triggers "
                          "has run",
                          at.x, at.y, int(c), from.x, from.y));
      return;
    }
    const Task& task = image.programs[p].tasks[list[s.next]];
    if (++s.count == task.arrivals) {
      ready.emplace_back(ti, list[s.next]);
      ++s.next;
      s.count = 0;
    }
  };

  for (const Injection& inj : image.start) deliver(inj.tile, inj.color, inj.tile, 0);
  while (!ready.empty()) {
    auto [ti, t] = ready.front();
    ready.pop_front();
    ++res.tasks_run;
    hw::Coord here = g.coord(ti);
    const Task& task = image.programs[image.tile_program[ti]].tasks[t];
    for (const Send& s : task.sends) {
      if (s.wavelets == 0) problem(fmt::format("tile ({},{}) task {} sends an empty burst", here.x, here.y, t));
      const Dest& d = s.dest;
      hw::Coord first{here.x + d.dx, here.y + d.dy};
      if (d.span < 1) {
        problem(fmt::format("tile ({},{}) task {} multicasts over {} tiles", here.x, here.y, t, d.span));
        continue;
      }
      switch (d.kind) {
        case Dest::Kind::Tile: deliver(first, s.color, here, t); break;
        case Dest::Kind::Row:
          for (std::int32_t k = 0; k < d.span; ++k) deliver({first.x + k, first.y}, s.color, here, t);
          break;
        case Dest::Kind::Column:
          for (std::int32_t k = 0; k < d.span; ++k) deliver({first.x, first.y + k}, s.color, here, t);
          break;
      }
    }
  }
  // Every task of every placed program ran; no burst is waiting.
  std::size_t unrun_reported = 0;
  for (std::size_t ti = 0; ti < g.size() && res.problems.size() < max_problems; ++ti) {
    std::uint32_t p = image.tile_program[ti];
    if (p == kIdle) continue;
    const ProgramIndex& ix = index[p];
    for (std::size_t k = 0; k < ix.by_color.size(); ++k) {
      const Slot& s = state[ti * slots + k];
      if (s.next < ix.by_color[k].size() && unrun_reported++ < max_problems) {
        hw::Coord c = g.coord(hw::TileIndex(ti));
        std::uint16_t t = ix.by_color[k][s.next];
        problem(fmt::format("tile ({},{}) task {} (color {}) never runs: it got {} of {} bursts", c.x, c.y, t,
                            int(image.programs[p].tasks[t].trigger), s.count, image.programs[p].tasks[t].arrivals));
      }
    }
  }
  if (!g.inside(image.done_tile))
    problem(fmt::format("the done tile ({},{}) is outside the grid", image.done_tile.x, image.done_tile.y));
  else if (done_count != image.done_arrivals)
    problem(fmt::format("the done tile ({},{}) gets {} burst(s) on color {}, expected {}", image.done_tile.x,
                        image.done_tile.y, done_count, int(image.done_color), image.done_arrivals));
  return res;
}

}  // namespace wafer::firmware
