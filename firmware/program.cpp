#include "firmware/program.h"

#include <fmt/format.h>

#include <functional>
#include <string>

namespace wafer::firmware {

const char* to_string(OpKind k) {
  switch (k) {
    case OpKind::Fmac: return "fmac";
    case OpKind::Add: return "add";
    case OpKind::Mul: return "mul";
    case OpKind::Exp: return "exp";
    case OpKind::Silu: return "silu";
    case OpKind::Rsqrt: return "rsqrt";
    case OpKind::Max: return "max";
    case OpKind::Sum: return "sum";
    case OpKind::Rope: return "rope";
    case OpKind::Copy: return "copy";
    case OpKind::Argmax: return "argmax";
    case OpKind::StreamIn: return "stream_in";
  }
  return "?";
}

std::uint32_t Image::intern(Program p) {
  // Linear search is fine for the few programs a mapped wafer holds; the mapper deduplicates large
  // sets itself before calling this.
  for (std::size_t i = 0; i < programs.size(); ++i)
    if (programs[i] == p) return std::uint32_t(i);
  programs.push_back(std::move(p));
  return std::uint32_t(programs.size() - 1);
}

namespace {
std::string dest_string(const Dest& d) {
  switch (d.kind) {
    case Dest::Kind::Tile:
      if (d.dx == 0 && d.dy == 0) return "self (ramp)";
      return fmt::format("tile ({:+d},{:+d})", d.dx, d.dy);
    case Dest::Kind::Row:
      return fmt::format("row ({:+d}..{:+d},{:+d})", d.dx, d.dx + d.span - 1, d.dy);
    case Dest::Kind::Column:
      return fmt::format("column ({:+d},{:+d}..{:+d})", d.dx, d.dy, d.dy + d.span - 1);
  }
  return "?";
}
}  // namespace

std::string dump(const Image& image, hw::Coord tile) {
  if (!image.grid.inside(tile))
    return fmt::format("tile ({},{}) is outside the {} x {} array\n", tile.x, tile.y, image.grid.width,
                       image.grid.height);
  std::uint32_t idx = image.tile_program[image.grid.index(tile)];
  std::string done;
  if (tile == image.done_tile)
    done = fmt::format("  the step ends when this tile has {} burst(s) on color {}\n", image.done_arrivals,
                       int(image.done_color));
  if (idx == kIdle) return fmt::format("tile ({},{}): idle (no program)\n{}", tile.x, tile.y, done);
  const Program& p = image.programs[idx];
  std::string out = fmt::format(
      "tile ({},{}): program {} of {}, {} tasks; SRAM {} B (weights {}, kv cache {}, activations {}, code {})\n",
      tile.x, tile.y, idx, image.programs.size(), p.tasks.size(), p.sram.total(), p.sram.weights, p.sram.kv_cache,
      p.sram.activations, p.sram.code);
  auto name = [](const std::vector<std::string>& names, std::uint16_t i) {
    return i < names.size() ? names[i] : fmt::format("#{}", i);
  };
  for (std::size_t t = 0; t < p.tasks.size(); ++t) {
    const Task& k = p.tasks[t];
    out += fmt::format("  task {:>3}: on color {:>2} x{} {:<8} [{} / {}]{}\n", t, int(k.trigger), k.arrivals,
                       k.start == Task::Start::Stream ? "stream" : "complete", name(image.layer_names, k.layer),
                       name(image.op_names, k.op), k.after ? fmt::format(" after task {}", t - k.after) : std::string());
    for (const Op& o : k.ops)
      out += o.vectors > 1 ? fmt::format("      {:<9} {} elements in {} vector ops of {}\n", to_string(o.kind),
                                         o.elements, o.vectors, o.elements / o.vectors)
                           : fmt::format("      {:<9} {} elements\n", to_string(o.kind), o.elements);
    for (const Send& s : k.sends)
      out += fmt::format("      send color {:>2} {} wavelets -> {}{}\n", int(s.color), s.wavelets, dest_string(s.dest),
                         s.collective ? " (starts a collective)" : "");
  }
  return out + done;
}

}  // namespace wafer::firmware
