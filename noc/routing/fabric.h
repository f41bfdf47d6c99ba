#pragma once
// The logical mesh as routing sees it after repair: per link a latency in physical hops, and the faults
// repair could not hide (a logical tile with no physical tile, a logical link with no healthy path).
#include <cstdint>
#include <string>
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

  // ---- fault index (routing's fast path) --------------------------------------------------------------
  // No failed router or link anywhere (grid edges are not faults): routing is plain XY.
  bool fault_free() const { return faults_.empty(); }
  // One failed element: a dead router (dir = Ramp) or a failed link (tile, dir in E or S, canonical).
  struct Fault {
    TileIndex tile;
    Dir dir;
    friend bool operator==(const Fault&, const Fault&) = default;
  };
  const std::vector<Fault>& faults() const { return faults_; }
  // "router (3,4)" / "link (3,4)-(4,4)".
  std::string describe(const Fault& f) const;
  // Every link between columns [min(xa,xb), max(xa,xb)] on row y (horizontal), or between rows
  // [min(ya,yb), max(ya,yb)] on column x (vertical), is healthy. O(log faults on that row/column).
  bool row_clear(std::int32_t y, std::int32_t xa, std::int32_t xb) const;
  // Rows [y, y + rows) and the rows dy on (dy > 0, inside the grid) are alike: the same faults and link
  // lengths, the links north out of the first row included.
  bool rows_alike(std::int32_t y, std::int32_t rows, std::int32_t dy) const;
  bool column_clear(std::int32_t x, std::int32_t ya, std::int32_t yb) const;

  // The same mesh in every respect routing and timing read (a kept mesh model is reused only on an equal
  // fabric: sim::Simulator::keep_mesh).
  friend bool operator==(const Fabric&, const Fabric&) = default;
  // The same grid and the same faults (routers that work, links with a healthy path), whatever the links' lengths:
  // what a placement that reads no link lengths sees (mapper::mapping_reads_links, apps::PointCache).
  bool same_faults(const Fabric& other) const;

 private:
  void cut(TileIndex t, Dir d);  // marks one undirected link unusable (both ends), updates the index
  std::vector<Fault> faults_;
  // Per row y: sorted x such that the link (x,y)-(x+1,y) is unusable; per column: sorted y likewise.
  // Empty outer vectors while the fabric is fault-free (no per-tile cost).
  std::vector<std::vector<std::int32_t>> row_cuts_, col_cuts_;

  static constexpr std::uint8_t kRouterDead = 16;
  Grid grid_;
  std::vector<std::uint8_t> fault_;       // bits 0..3: outgoing link in Dir failed/absent; bit 4: router
  std::vector<std::uint16_t> hops_east_;  // per tile, the link to the east neighbour (also used westward)
  std::vector<std::uint16_t> hops_south_;
};

// The fabrics of a pipeline's wafers: one each (wafer k on of(k)), or one every wafer shares (what a single
// fabric converts to). It points at fabrics the caller keeps alive while it is used.
class WaferFabrics {
 public:
  WaferFabrics(const Fabric& shared) : each_{&shared} {}  // NOLINT: every wafer on `shared`
  explicit WaferFabrics(std::vector<const Fabric*> each);  // one per wafer, in pipeline order (none null)
  // Wafer k's fabric (the shared one when there is one).
  const Fabric& of(std::size_t wafer) const { return *each_[each_.size() == 1 ? 0 : wafer]; }
  // 1 when every wafer shares one fabric, else the wafers'.
  std::size_t size() const { return each_.size(); }
  // Wafers a and b run on equal fabrics (the same object, or equal in all routing and timing read).
  bool same(std::size_t a, std::size_t b) const { return &of(a) == &of(b) || of(a) == of(b); }

 private:
  std::vector<const Fabric*> each_;
};

}  // namespace wafer::noc
