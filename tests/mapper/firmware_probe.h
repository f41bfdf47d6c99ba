#pragma once
// Helpers of the mapper tests: reading a mapped image (a tile's program, its task on a trigger color, a
// task's ops of one kind as (elements, vector ops), an operator's Fmac elements) and the message of a refusal.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "firmware/program.h"
#include "mapper/mapper.h"
#include "hw/error.h"

namespace wafer::mapper::test {

inline const firmware::Program& program_at(const firmware::Image& im, hw::Coord c) {
  return im.programs.at(im.tile_program.at(im.grid.index(c)));
}
// The first task of the tile triggered by `color`.
inline const firmware::Task& task_on(const firmware::Image& im, hw::Coord c, firmware::Color color) {
  for (const auto& t : program_at(im, c).tasks)
    if (t.trigger == color) return t;
  throw std::runtime_error("no task on that color");
}
using Ops = std::vector<std::pair<std::uint32_t, std::uint32_t>>;
inline Ops ops_of(const firmware::Task& t, firmware::OpKind k) {
  Ops v;
  for (const auto& o : t.ops)
    if (o.kind == k) v.push_back({o.elements, o.vectors});
  return v;
}

// Fmac elements of every tile's tasks of operator `op` (by name) in the first image of a mapping.
inline std::int64_t fmacs(const Mapping& mp, const char* op) {
  const auto& im = mp.images[0];
  const auto id = std::uint16_t(std::find(im.op_names.begin(), im.op_names.end(), op) - im.op_names.begin());
  std::int64_t s = 0;
  for (std::uint32_t p : im.tile_program) {
    if (p == firmware::kIdle) continue;
    for (const auto& t : im.programs[p].tasks)
      if (t.op == id)
        for (const auto& x : t.ops)
          if (x.kind == firmware::OpKind::Fmac) s += x.elements;
  }
  return s;
}

// The message of the InputError f() throws, or "" when it throws none.
template <class F>
std::string refusal(F&& f) {
  try {
    f();
  } catch (const hw::InputError& e) {
    return e.what();
  }
  return {};
}

}  // namespace wafer::mapper::test
