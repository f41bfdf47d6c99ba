#pragma once
// What a mesh timing model offers the tile cores: inject bursts, be told when they arrive, and schedule
// the cores' own work on the same clock. Both fidelities implement it (approx: burst events; cycle:
// wavelet by wavelet). Routes come from the pure routing function (noc/routing), hop by hop, so a send
// allocates nothing.
#include <cstdint>
#include <functional>
#include <vector>

#include "hw/coord.h"
#include "noc/routing/fabric.h"
#include "noc/routing/plan.h"

namespace wafer::noc {

using hw::Cycle;

// Where a burst goes: one tile, or a multicast along a row or column segment (every tile of the segment
// but the source receives it: a source inside its segment fans the burst out and keeps its own data; one
// link occupation per link used). A segment need not contain the source: the burst travels
// dimension-order to the segment, then spreads along it.
struct Destination {
  enum class Kind : std::uint8_t { Tile, RowSegment, ColumnSegment };
  Kind kind = Kind::Tile;
  Coord first;               // Tile: the tile; segments: one end
  std::int32_t span = 1;     // segments: number of tiles from `first` going East (row) or South (column)
};

struct BurstSpec {
  TileIndex src = 0;
  Destination dest;
  std::uint32_t wavelets = 1;
  // Cycles from the head to the tail leaving the source, >= wavelets - 1. Larger when the source streams
  // out data that itself arrives slowly (a reduce-and-forward stage behind a stretched input). A link
  // carrying the burst is occupied lag + 1 cycles.
  std::uint32_t lag = 0;
  Color color = 0;
  std::uint64_t tag = 0;     // returned to the client with every arrival
};

// The party the network reports to (the cores, or a Plan executor).
class NetworkClient {
 public:
  virtual ~NetworkClient() = default;
  // The head of burst `tag` reached `sink`'s core at `head`; its tail arrives at `tail` (>= head). When it
  // is called: approx, as the head reaches the sink's router and takes the delivery ramp (now() == head -
  // ramp_latency); cycle, as the tail is handed to the delivery ramp (now() == tail - ramp_latency), or
  // the head for a unicast once CycleMesh::report_heads is on (its tail's cycle is then fixed). From
  // there nothing can delay the burst, so both cycles are final. A burst a tile sends to itself has no
  // ramp latency (now() == head, resp. tail). A client must therefore accept a head and a tail in the
  // future (and, starting work "stage cycles after the head", a head in the past).
  virtual void on_arrival(std::uint64_t tag, TileIndex sink, Cycle head, Cycle tail) = 0;
  // A hint, optional: burst `tag` on `color` will soon reach `sink` (approx calls it as it queues the head's
  // last hop, dozens of events before on_arrival), so a client whose per-tile state is too large for the
  // caches can fetch what on_arrival will read. It must not change anything the model computes.
  virtual void expect_arrival(std::uint64_t /*tag*/, TileIndex /*sink*/, Color /*color*/) {}
  // Whether expect_arrival does anything (asked once, by set_client: a client without it costs no call).
  virtual bool wants_expect_arrival() const { return false; }
  // A timer set with Network::timer fired.
  virtual void on_timer(std::uint64_t tag, Cycle now) = 0;
};

// Counted as each burst completes (every sink has its tail), so complete once the network is idle.
struct NetworkStats {
  std::uint64_t bursts = 0;
  std::uint64_t link_traversals = 0;   // link occupations (a multicast counts each link once)
  std::uint64_t wavelet_link_cycles = 0;
  std::uint64_t wait_cycles = 0;       // cycles heads spent waiting for a busy link (contention)
  std::uint64_t transfer_cycles = 0;   // head latency + serialisation, without waits
};

class Network {
 public:
  virtual ~Network() = default;
  virtual void set_client(NetworkClient* client) = 0;
  // Inject a burst at cycle `at` (>= now).
  virtual void send(const BurstSpec& burst, Cycle at) = 0;
  virtual void timer(Cycle at, std::uint64_t tag) = 0;
  // Runs until no event is left; returns the last event's cycle.
  virtual Cycle run() = 0;
  virtual Cycle now() const = 0;
  virtual const NetworkStats& stats() const = 0;

  // ---- Exact reuse of a repeated stretch of a run (optional; core::Executor, docs/timing.md) ----------
  // A model that supports it can stop at a cycle boundary, describe its state there relative to that
  // cycle, and jump: repeat the stretch since a mark `times` more times by shifting its state in time.
  virtual bool supports_reuse() const { return false; }
  // run() that returns early, at the boundary `pause_at` asked for (every event before it handled, none
  // after); returns whether events are left.
  virtual bool run_paused() {
    run();
    return false;
  }
  // From inside an event: stop once the events before cycle `at` (> now) are handled.
  virtual void pause_at(Cycle /*at*/) {}
  // At a boundary: appends a description of the state that decides the future (pending events in the order
  // they will run, the bursts in flight, the resources busy beyond now()), every cycle relative to now()
  // and every tile relative to row `origin_row` (a tile index less origin_row x width, a row less
  // origin_row: two states equal but for a shift of whole rows describe alike when each is described from
  // its own origin). A client tag is described by `tag(tag, is_timer, out)`. Returns false when the state
  // cannot be described (the caller must not jump).
  using TagDescriber = std::function<void(std::uint64_t tag, bool timer, std::vector<std::uint64_t>& out)>;
  virtual bool describe_state(const TagDescriber& /*tag*/, std::vector<std::uint64_t>& /*out*/,
                              std::int32_t /*origin_row*/ = 0) const {
    return false;
  }
  // At a boundary: remembers the statistics (and per-link counters) as they are now; with `log`, also
  // records every link reservation from now on (its cycle, link and busy cycles) until the next mark or
  // repeat, for a caller that samples the counters in time (reservations()).
  virtual void mark(bool /*log*/ = false) {}
  // Drops the mark when no repeat will follow (what the model did for it stops).
  virtual void unmark() {}
  struct Reservation {
    Cycle at;               // the cycle of the event that made it
    std::uint64_t link;     // noc::LinkId
    std::uint64_t cycles;   // busy cycles added to the link's counter
  };
  // The reservations logged since mark(true), in the order they were made (time order); null when the
  // model keeps no such log.
  virtual const std::vector<Reservation>* reservations() const { return nullptr; }
  // At a boundary whose state is, `period` cycles and `rows` rows of tiles later (rows >= 0; 0: the same
  // tiles), that of the mark's boundary shifted (equal descriptions, each from its own origin row): the
  // stretch since the mark repeats `times` more times. Adds `times` x the statistics since the mark (each
  // link's busy cycles to the link `rows` on per repeat), moves every pending event, burst in flight and
  // busy resource times x period cycles and times x rows rows on (what it leaves behind is idle), and
  // renames the client tags of what is in flight with `retag(tag, is_timer)`.
  using Retag = std::function<std::uint64_t(std::uint64_t tag, bool timer)>;
  virtual void repeat(Cycle /*period*/, std::uint64_t /*times*/, const Retag& /*retag*/, std::int32_t /*rows*/ = 0) {}
};

}  // namespace wafer::noc
