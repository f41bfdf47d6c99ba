#pragma once
// The logical mesh as routing sees it after repair: per link a latency in physical hops, and the faults
// repair could not hide (a logical tile with no physical tile, a logical link with no healthy path).
#include <cstdint>
#include <vector>

#include "hw/coord.h"
#include "hw/repair.h"

namespace wafer::noc {

using hw::Coord;
using hw::Dir;
using hw::Grid;
using hw::TileIndex;

// A directed link: the output of `tile` in mesh direction `dir` (N, E, S, W).
using LinkId = std::uint32_t;
constexpr LinkId link_id(TileIndex tile, Dir dir) { return tile * 4u + std::uint32_t(dir); }
constexpr TileIndex link_tile(LinkId l) { return l / 4u; }
constexpr Dir link_dir(LinkId l) { return Dir(l % 4u); }

class Fabric {
 public:
  Fabric() = default;
  // Fault-free mesh, every link one hop.
  static Fabric perfect(Grid grid);
  // From a repair: hop counts per logical link, unmapped tiles as failed routers, links with no path failed.
  static Fabric from_repair(const hw::RepairResult& repair);

  const Grid& grid() const { return grid_; }
  std::size_t links() const { return grid_.size() * 4; }
  bool router_ok(TileIndex t) const { return !(fault_[t] & kRouterDead); }
  // The link exists (inside the grid), is healthy, and both ends' routers work.
  bool link_ok(TileIndex t, Dir d) const { return !(fault_[t] & (1u << unsigned(d))); }
  // Physical hops this logical link spans (its latency is hops x hop_latency).
  std::uint32_t link_hops(TileIndex t, Dir d) const;

  void fail_router(TileIndex t);
  void fail_link(TileIndex t, Dir d);  // both directions
  void set_hops(TileIndex t, Dir d, std::uint16_t hops);  // both directions

 private:
  static constexpr std::uint8_t kRouterDead = 16;
  Grid grid_;
  std::vector<std::uint8_t> fault_;       // bits 0..3: outgoing link in Dir failed/absent; bit 4: router
  std::vector<std::uint16_t> hops_east_;  // per tile, the link to the east neighbour (also used westward)
  std::vector<std::uint16_t> hops_south_;
};

}  // namespace wafer::noc
