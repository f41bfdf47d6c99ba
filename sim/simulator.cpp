#include "sim/simulator.h"

#if defined(__SANITIZE_ADDRESS__)
#include <pthread.h>
#include <sanitizer/common_interface_defs.h>
#endif

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <exception>
#include <systemc>
#include <thread>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "hw/error.h"
#include "memory/link.h"
#include "memory/memoryx.h"
#include "memory/stream_port.h"
#include "noc/cycle.h"

namespace wafer::sim {

namespace {
// AddressSanitizer builds only. SystemC announces its coroutine switches to ASan, but when a step returns to
// the caller's stack ASan is left with wrong bounds for it (its top at 0); an exception thrown later on this
// thread then trips a false stack-buffer-overflow while unwinding. Announcing the thread's real stack again
// after every step puts the bookkeeping right. Nothing at all in other builds.
void reannounce_stack_to_asan() {
#if defined(__SANITIZE_ADDRESS__)
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  void* addr = nullptr;
  std::size_t size = 0;
  const bool ok = pthread_attr_getstack(&attr, &addr, &size) == 0;
  pthread_attr_destroy(&attr);
  if (!ok) return;
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, addr, size);
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
}
}  // namespace

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
memory::Picos to_ps(const sc_core::sc_time& t) {
  return memory::Picos(t.value() / sc_core::sc_time(1, sc_core::SC_PS).value());
}
// A new mesh model as a step runs on it. The cores stream on behind a burst's head (reduce-and-forward chains,
// docs/design.md section 1): the cycle reference tells them of a unicast when its head is in, as approx does
// (noc/cycle.h, report_heads).
std::unique_ptr<noc::Mesh> new_mesh(noc::Fidelity fidelity, const noc::Fabric& fabric, const noc::MeshParams& params) {
  auto mesh = noc::make_mesh(fidelity, fabric, params);
  if (auto* cm = dynamic_cast<noc::CycleMesh*>(mesh.get())) cm->report_heads(true);
  return mesh;
}
// The cycles a tile's cores ran tasks, task_overhead included (RegionTotals::task_cycles), from its spans.
Cycle task_cycles(const std::pair<Cycle, Cycle>* first, const std::pair<Cycle, Cycle>* last, Cycle overhead) {
  Cycle sum = 0;
  for (const auto* p = first; p != last; ++p) sum += p->second - (p->first - std::min(p->first, overhead));
  return sum;
}
}  // namespace

// The top-level module. Its thread runs one job per `go` notification.
class Top : public sc_core::sc_module {
 public:
  memory::MemoryX memx;
  memory::WaferLink link;
  tlm_utils::simple_initiator_socket<Top> mx_init;
  tlm_utils::simple_initiator_socket<Top> link_init;

  Top(sc_core::sc_module_name name, const hw::WaferSpec& spec)
      : sc_core::sc_module(name), memx("memoryx", spec), link("wafer_link", spec), mx_init("mx_init"),
        link_init("link_init"), spec_(spec) {
    mx_init.bind(memx.socket);
    link_init.bind(link.socket);
    SC_HAS_PROCESS(Top);
    SC_THREAD(thread);
    sensitive << go_;
    dont_initialize();
  }

  // Runs `job` inside the SystemC thread; rethrows what it threw.
  void configure(const hw::WaferSpec& spec) {
    spec_ = spec;
    memx.configure(spec);
    link.configure(spec);
  }

  template <class F>
  void execute(F&& job) {
    job_ = [&] { job(); };
    error_ = nullptr;
    go_.notify(sc_core::SC_ZERO_TIME);
    sc_core::sc_start();
    reannounce_stack_to_asan();  // before anything can throw on this stack
    job_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

  // Streamed weights: a TLM READ of `bytes` on `channel`, annotated with the step-local time.
  Cycle fetch(Cycle at, std::uint64_t bytes, std::uint32_t channel) {
    return transport(mx_init, tlm::TLM_READ_COMMAND, at, bytes, channel, "MemoryX");
  }
  Cycle hand_off(Cycle at, std::uint64_t bytes) {
    return transport(link_init, tlm::TLM_WRITE_COMMAND, at, bytes, 0, "inter-wafer link");
  }
  void advance(Cycle cycles) { wait(sc_core::sc_time(double(memory::cycles_to_ps(cycles, spec_.clock_ghz)), sc_core::SC_PS)); }

 private:
  Cycle transport(tlm_utils::simple_initiator_socket<Top>& s, tlm::tlm_command cmd, Cycle at, std::uint64_t bytes,
                  std::uint32_t channel, const char* what) {
    tlm::tlm_generic_payload gp;
    gp.set_command(cmd);
    gp.set_address(channel);
    gp.set_data_ptr(nullptr);  // the targets model timing only
    gp.set_data_length(unsigned(std::min<std::uint64_t>(bytes, 0xFFFFFFFFu)));
    gp.set_streaming_width(gp.get_data_length());
    gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_core::sc_time delay(double(memory::cycles_to_ps(at, spec_.clock_ghz)), sc_core::SC_PS);
    s->b_transport(gp, delay);
    if (gp.get_response_status() != tlm::TLM_OK_RESPONSE)
      throw std::runtime_error(fmt::format("{} refused a request on channel {}", what, channel));
    return memory::ps_to_cycles(to_ps(delay), spec_.clock_ghz);
  }
  void thread() {
    for (;;) {
      try {
        if (job_) job_();
      } catch (...) {
        error_ = std::current_exception();
      }
      wait();
    }
  }

  hw::WaferSpec spec_;
  sc_core::sc_event go_;
  std::function<void()> job_;
  std::exception_ptr error_;
};

namespace {
class TlmStreamPort final : public memory::StreamPort {
 public:
  explicit TlmStreamPort(Top& top) : top_(top) {}
  Cycle fetch(Cycle at, std::uint64_t bytes, std::uint32_t channel) override { return top_.fetch(at, bytes, channel); }

 private:
  Top& top_;
};
}  // namespace

RegionGrid RegionGrid::fit(const hw::Grid& g, std::int32_t max_side) {
  max_side = std::max(1, max_side);
  RegionGrid r;
  const std::int32_t side = std::max(g.width, g.height);
  r.cell = std::max(1, (side + max_side - 1) / max_side);
  r.cols = (g.width + r.cell - 1) / r.cell;
  r.rows = (g.height + r.cell - 1) / r.cell;
  return r;
}

std::vector<std::uint32_t> RegionGrid::of_tiles(const hw::Grid& g) const {
  std::vector<std::uint32_t> out(g.size()), col(std::size_t(g.width));
  for (std::int32_t x = 0; x < g.width; ++x) col[std::size_t(x)] = std::uint32_t(of({x, 0}));
  for (std::int32_t y = 0, t = 0; y < g.height; ++y) {
    const std::uint32_t row = std::uint32_t(of({0, y}));
    for (std::int32_t x = 0; x < g.width; ++x, ++t) out[std::size_t(t)] = row + col[std::size_t(x)];
  }
  return out;
}

namespace {
// Appends one value per cell of `rg`: the busy cycles of the links leaving the cell's tiles.
// (busy: every link's counter, or null: the mesh's own)
void sum_link_busy(const noc::Mesh& mesh, const hw::Grid& grid, const RegionGrid& rg, std::vector<std::uint64_t>& out,
                   const std::uint64_t* busy = nullptr) {
  const std::size_t base = out.size();
  out.resize(base + rg.size(), 0);
  if (!busy) busy = mesh.link_busy_data();
  for (std::int32_t y = 0; y < grid.height; ++y) {
    std::uint64_t* row = out.data() + base + std::size_t(y / rg.cell) * std::size_t(rg.cols);
    for (std::int32_t cx = 0; cx < rg.cols; ++cx) {
      const std::size_t l0 = 4 * (std::size_t(y) * std::size_t(grid.width) + std::size_t(cx * rg.cell));
      const std::size_t l1 = 4 * (std::size_t(y) * std::size_t(grid.width) + std::size_t(std::min(grid.width, (cx + 1) * rg.cell)));
          std::uint64_t sum = 0;
      if (busy) {
        std::uint64_t s4[4] = {0, 0, 0, 0};  // (four sums: the loop vectorises)
        std::size_t l = l0;
        for (; l + 4 <= l1; l += 4) s4[0] += busy[l], s4[1] += busy[l + 1], s4[2] += busy[l + 2], s4[3] += busy[l + 3];
        for (; l < l1; ++l) sum += busy[l];
        sum += s4[0] + s4[1] + s4[2] + s4[3];
      } else {
        for (std::size_t l = l0; l < l1; ++l) sum += mesh.link_busy(noc::LinkId(l));
      }
      row[cx] += sum;
    }
  }
}
// Per cell of `rg`: healthy links leaving its tiles (each direction), the hops beyond one of those going east and
// south (each link once, as repair counts them), and its tiles.
void count_links(const noc::Fabric& fabric, const RegionGrid& rg, std::vector<std::uint32_t>& links,
                 std::vector<std::uint32_t>* extra, std::vector<std::uint32_t>& tiles) {
  const hw::Grid& g = fabric.grid();
  links.assign(rg.size(), 0);
  tiles.assign(rg.size(), 0);
  if (extra) extra->assign(rg.size(), 0);
  for (hw::TileIndex t = 0; t < g.size(); ++t) {
    const std::size_t c = rg.of(g.coord(t));
    ++tiles[c];
    for (hw::Dir d : hw::kMeshDirs) {
      if (!fabric.link_ok(t, d)) continue;
      ++links[c];
      if (extra && (d == hw::Dir::East || d == hw::Dir::South)) (*extra)[c] += std::max<std::uint32_t>(1, fabric.link_hops(t, d)) - 1;
    }
  }
}
}  // namespace

memory::SramStats check_sram(const hw::WaferSpec& spec, const firmware::Image& image) {
  memory::TileSram sram(spec);
  std::vector<std::uint64_t> uses(image.programs.size(), 0);
  std::vector<hw::TileIndex> first(image.programs.size(), hw::kNoTile);
  for (std::size_t t = 0; t < image.tile_program.size(); ++t) {
    std::uint32_t p = image.tile_program[t];
    if (p == firmware::kIdle || p >= uses.size()) continue;
    if (!uses[p]++) first[p] = hw::TileIndex(t);
  }
  memory::SramStats stats;
  for (std::size_t p = 0; p < image.programs.size(); ++p) {
    if (!uses[p]) continue;
    const auto& s = image.programs[p].sram;
    memory::SramFootprint f{s.weights, s.kv_cache, s.activations, s.code};
    const hw::Coord at = image.grid.coord(first[p]);
    sram.check(at, f);  // names the first tile holding this program
    stats.add(at, f.total(), uses[p]);
  }
  return stats;
}

namespace {
// Whether the image streams weights (StreamIn ops): its timing then depends on the shared MemoryX port.
bool streams(const firmware::Image& im) {
  for (const auto& p : im.programs)
    for (const auto& t : p.tasks)
      for (const auto& op : t.ops)
        if (op.kind == firmware::OpKind::StreamIn) return true;
  return false;
}

// A wafer's result moved `shift` cycles later (its task runs apart: Simulator::runs_).
void shift_step(WaferStep& ws, Cycle shift) {
  ws.step.start += shift;
  ws.step.end += shift;
  for (auto& seg : ws.step.path) seg.from += shift, seg.to += shift;
  for (Cycle& t : ws.series.t) t += shift;
}

// Whether a step's wafers may run side by side: none streams weights (the MemoryX port is shared in simulated
// time) and no trace's extras follow the run tile by tile (keep_tile asks in wafer order, the series sample it).
bool side_by_side_ok(const std::vector<const firmware::Image*>& images, const StepOptions& opt) {
  return !opt.keep_task_runs && !opt.keep_tile && opt.series_cells == 0 &&
         std::none_of(images.begin(), images.end(), [](const firmware::Image* im) { return streams(*im); });
}

// Per wafer the earlier wafer whose step it is (same_step on an equal fabric; itself when none), and the wafers to
// emulate.
void plan_wafers(const std::vector<const firmware::Image*>& images, const noc::WaferFabrics& fabrics, bool reuse_wafers,
                 std::vector<std::size_t>& from, std::vector<std::size_t>& emulated) {
  from.assign(images.size(), 0);
  emulated.clear();
  for (std::size_t k = 0; k < images.size(); ++k) {
    from[k] = k;
    if (reuse_wafers)
      for (std::size_t j = 0; j < k && from[k] == k; ++j)
        if (from[j] == j && same_step(*images[j], *images[k]) && fabrics.same(j, k)) from[k] = j;
    if (from[k] == k) emulated.push_back(k);
  }
}
}  // namespace

bool same_step(const firmware::Image& a, const firmware::Image& b) {
  auto same_start = [](const firmware::Injection& x, const firmware::Injection& y) {
    return x.tile == y.tile && x.color == y.color && x.wavelets == y.wavelets;
  };
  return a.grid.width == b.grid.width && a.grid.height == b.grid.height && a.done_tile == b.done_tile &&
         a.done_color == b.done_color && a.done_arrivals == b.done_arrivals &&
         a.layer_names.size() == b.layer_names.size() && a.op_names == b.op_names &&
         std::equal(a.start.begin(), a.start.end(), b.start.begin(), b.start.end(), same_start) &&
         a.tile_program == b.tile_program && a.programs == b.programs && !streams(a);
}

Simulator::Simulator() {
  auto t0 = std::chrono::steady_clock::now();
  top_ = std::make_unique<Top>(sc_core::sc_gen_unique_name("wafer_top"), hw::preset("tiny"));
  elaboration_s_ = seconds_since(t0);
}

Simulator::~Simulator() = default;

void Simulator::keep_mesh(bool on) {
  keep_mesh_ = on;
  if (!on) mesh_.reset(), mesh_fabric_.reset(), mesh_fresh_ = false;
}

bool Simulator::prepare_mesh(const hw::WaferSpec& spec, const noc::Fabric& fabric, noc::Fidelity fidelity) noexcept {
  if (!keep_mesh_) return false;
  try {
    mesh_.reset(), mesh_fabric_.reset(), mesh_fresh_ = false;
    auto copy = std::make_unique<noc::Fabric>(fabric);
    auto mesh = new_mesh(fidelity, *copy, noc::MeshParams::from(spec));
    mesh_fabric_ = std::move(copy), mesh_ = std::move(mesh), mesh_fresh_ = true;
    return true;
  } catch (...) {
    mesh_.reset(), mesh_fabric_.reset();
    return false;
  }
}


// The mesh a step runs on: the kept one, reset, when it was built for this fabric, fidelity and parameters;
// else a new one (kept when keep_mesh is on, else held by `own`).
noc::Mesh* Simulator::step_mesh(const hw::WaferSpec& spec, const noc::Fabric& fabric, const StepOptions& opt,
                                std::unique_ptr<noc::Mesh>& own, bool& kept) {
  const noc::MeshParams params = noc::MeshParams::from(spec);
  noc::Mesh* mesh = nullptr;
  if (keep_mesh_ && mesh_ && mesh_->fidelity() == opt.fidelity && mesh_->params() == params && *mesh_fabric_ == fabric) {
    if (!mesh_fresh_) mesh_->reset();  // whatever the last step left (it may have thrown part way)
    mesh = mesh_.get();
    kept = !mesh_fresh_;  // (a mesh prepare_mesh built for this step is not one kept from another)
    mesh_fresh_ = false;
  } else {
    mesh_fresh_ = false;
    if (keep_mesh_) {
      mesh_.reset();
      mesh_fabric_ = std::make_unique<noc::Fabric>(fabric);
      mesh_ = new_mesh(opt.fidelity, *mesh_fabric_, params);
      mesh = mesh_.get();
    } else {
      own = new_mesh(opt.fidelity, fabric, params);
      mesh = own.get();
    }
  }
  return mesh;
}

// Wafer k's step (image `im`) on the mesh `wm` (reset) from cycle `from_cycle`; the seconds spent building its
// executor and running it are added to elab and emul. Task runs kept go to runs_[k] (traces). `spare`: a core is
// free beside it (its slots are then faulted in behind it, ExecOptions::populate_behind, and its region totals
// summed on two threads).
WaferStep Simulator::emulate_wafer(const hw::WaferSpec& spec, const noc::Fabric& fabric, const firmware::Image& im,
                                   std::size_t k, noc::Mesh* wm, memory::StreamPort* port, Cycle from_cycle,
                                   const StepOptions& opt, double& elab, double& emul, bool spare) {
  auto t1 = std::chrono::steady_clock::now();
  core::ExecOptions eo;
  eo.weight_bytes = opt.weight_bytes;
  eo.start = from_cycle;
  eo.keep_path = opt.keep_path;
  eo.populate_behind = spare;
  // Counters over time: the links' busy cycles per cell, sampled every `every` cycles; when there are
  // more intervals than asked, every other sample is dropped and the interval doubles. The mesh sums
  // them per cell as it books them (noc::Mesh::tally), so a sample copies a dozen sums; a mesh that
  // does not tally has every link's counter read at each sample (a few ms on wse3).
  WaferStep ws;
  RegionSeries& se = ws.series;
  std::vector<std::uint64_t> cum;  // per sample: cumulative link busy per cell
  bool tallied = false;            // the mesh sums the cells' counters
  auto sample_cells = [&](const std::uint64_t* busy) {
    if (!tallied) return sum_link_busy(*wm, fabric.grid(), se.grid, cum, busy);
    const std::uint64_t* sums = busy ? busy : wm->tallied()->data();
    cum.insert(cum.end(), sums, sums + se.grid.size());
  };
  if (opt.series_cells > 0) {
    se.grid = RegionGrid::fit(fabric.grid(), opt.series_cells);
    tallied = wm->tally(se.grid.of_tiles(fabric.grid()), se.grid.size());
    const std::size_t cap = std::max<std::uint32_t>(2, opt.series_intervals);
    // First guess of the interval: a step crosses the array a few hundred times (wse3, 8B: 8 x (W + H)
    // gives ~44 intervals of its 668 k cycles, the tiny wafer 32), then doubling keeps at most 64.
    const Cycle first = std::max<Cycle>(16, 8 * Cycle(fabric.grid().width + fabric.grid().height));
    eo.sample = [&, cap, every = first](Cycle t, const std::uint64_t* busy) mutable {
      se.t.push_back(t);
      sample_cells(busy);
      if (se.t.size() > cap + 1) {
        std::size_t n = 0;
        const std::size_t cells = se.grid.size();
        for (std::size_t i = 0; i < se.t.size(); i += 2, ++n) {
          se.t[n] = se.t[i];
          std::copy_n(cum.begin() + std::ptrdiff_t(i * cells), cells, cum.begin() + std::ptrdiff_t(n * cells));
        }
        se.t.resize(n);
        cum.resize(n * cells);
        every *= 2;
      }
      return se.t.back() + every;
    };
  }
  eo.reuse = opt.reuse;
  eo.reuse_bytes = opt.reuse_bytes;
  eo.progress = opt.progress;
  core::Executor ex(spec, im, fabric, *wm, port, eo);
  auto t2 = std::chrono::steady_clock::now();
  ws.elaboration_s = std::chrono::duration<double>(t2 - t1).count();
  elab += ws.elaboration_s;
  ws.step = ex.run();
  ws.emulation_s = seconds_since(t2);
  emul += ws.emulation_s;
  if (!ws.step.finished)
    throw std::runtime_error(fmt::format(
        "wafer {}: the step never finished: the done tile ({},{}) received {} of {} bursts on color {} ({} of {} "
        "tasks ran, {} bursts unclaimed)",
        k, im.done_tile.x, im.done_tile.y, ws.step.done_received, im.done_arrivals,
        int(im.done_color), ws.step.tasks_run, ws.step.tasks_total, ws.step.unclaimed));
  ws.network = wm->stats();
  ws.mesh_bytes = wm->state_bytes();
  // (from the counters' array where the mesh has one: a plain loop, not a virtual call a link)
  if (const std::uint64_t* busy = wm->link_busy_data()) {
    std::uint64_t m = ws.link_busy_max;
    for (std::size_t l = 0, n = fabric.links(); l < n; ++l) m = std::max(m, busy[l]);
    ws.link_busy_max = m;
  } else {
    for (std::size_t l = 0; l < fabric.links(); ++l) ws.link_busy_max = std::max(ws.link_busy_max, wm->link_busy(noc::LinkId(l)));
  }
  // What traces and the report want of the runs, in one pass over them (tile order).
  const bool filter = opt.keep_task_runs && opt.keep_tile, series = opt.series_cells > 0, regions = opt.region_cells > 0;
  if (opt.keep_task_runs && !opt.keep_tile) runs_[k] = ex.task_runs();
  RegionTotals& rt = ws.regions;
  std::vector<std::uint32_t> series_links, series_tiles;
  std::size_t n = 0;
  const std::size_t cells = se.grid.size();
  if (series) {
    if (se.t.empty()) se.t.push_back(from_cycle), sample_cells(nullptr);  // not a Mesh: no slices
    // (a sample the executor took at or after the step's end, the mesh draining, is dropped: the last interval
    // ends with the step, and its shares are of its own length)
    while (se.t.size() > 1 && se.t.back() >= ws.step.end) se.t.pop_back(), cum.resize(cum.size() - cells);
    se.t.push_back(std::max(ws.step.end, se.t.back() + 1));
    sample_cells(nullptr);
    count_links(fabric, se.grid, series_links, nullptr, series_tiles);
    n = se.intervals();
    se.link_utilisation.assign(n * cells, 0.0);
    se.tiles_busy.assign(n * cells, 0.0);
    for (std::size_t i = 0; i < n; ++i) {
      const double dt = double(se.t[i + 1] - se.t[i]);
      for (std::size_t c = 0; c < cells; ++c)
        if (series_links[c])
          se.link_utilisation[i * cells + c] = double(cum[(i + 1) * cells + c] - cum[i * cells + c]) / (double(series_links[c]) * dt);
    }
  }
  // The region totals alone (no series: a report without a trace) with a core to spare: two threads (below).
  const bool two_threads = regions && !series && spare;
  if (regions) {
    rt.grid = RegionGrid::fit(fabric.grid(), opt.region_cells);
    rt.task_cycles.assign(rt.grid.size(), 0);
    if (!two_threads) {
      sum_link_busy(*wm, fabric.grid(), rt.grid, rt.link_busy);
      count_links(fabric, rt.grid, rt.links, &rt.extra_hops, rt.tiles);
    }
  }
  if (filter)
    ex.for_each_kept_run([&](hw::TileIndex t, std::uint32_t runs) { return opt.keep_tile(k, t, runs); },
                         [&](const core::TaskRun& r) { runs_[k].push_back(r); });
  const Cycle overhead = core::CostModel::react(spec.task_overhead);  // (a task's span begins with it; 0 acts as 1)
  using Span = std::pair<Cycle, Cycle>;
  if (two_threads) {
    // The task cycles per cell (a pass over every slot, the copies' computed: 80 ms of the default decode's 0.6 s
    // with --json, perf) over blocks of tiles taken in turn by this thread and one on the core to spare, which the
    // links' sums (30 ms) keep busy meanwhile; each sums per cell as integers: the same sums.
    // (blocks of up to 16 k tiles, at least eight in all: both threads have some on a small array too)
    const hw::TileIndex tiles = hw::TileIndex(fabric.grid().size()),
                        block = std::max<hw::TileIndex>(1, std::min<hw::TileIndex>(1u << 14, tiles / 8));
    auto pass = [&](hw::TileIndex first_block, std::vector<std::uint64_t>& sums) {
      for (hw::TileIndex from = first_block * block; from < tiles; from += 2 * block)
        ex.for_each_tile_spans(
            [&](hw::TileIndex tile, const Span* first, const Span* last) {
              sums[rt.grid.of(fabric.grid().coord(tile))] += task_cycles(first, last, overhead);
            },
            from, std::min(tiles, from + block));
    };
    std::vector<std::uint64_t> second(rt.task_cycles.size(), 0);
    std::exception_ptr error;
    std::thread other([&] {
      try {
        pass(1, second);
      } catch (...) {
        error = std::current_exception();
      }
    });
    try {
      sum_link_busy(*wm, fabric.grid(), rt.grid, rt.link_busy);
      count_links(fabric, rt.grid, rt.links, &rt.extra_hops, rt.tiles);
      pass(0, rt.task_cycles);
    } catch (...) {
      other.join();
      throw;
    }
    other.join();
    if (error) std::rethrow_exception(error);
    for (std::size_t c = 0; c < second.size(); ++c) rt.task_cycles[c] += second[c];
  } else if (series || regions) {
    // The busy cycles per interval and cell, summed as integers (each below 2^53, so the doubles they
    // become are the sums of doubles they stand for).
    std::vector<std::uint64_t> busy(n * cells, 0);
    // Samples every d cycles from t[0] (the last interval aside, which ends the step): a cycle's interval
    // is a division away; else a search.
    const Cycle every = n ? se.t[1] - se.t[0] : 0;
    bool evenly = every > 0;
    for (std::size_t i = 0; i < n && evenly; ++i) evenly = se.t[i] == se.t[0] + Cycle(i) * every;
    ex.for_each_tile_spans([&](hw::TileIndex tile, const Span* first, const Span* last) {
      const hw::Coord at = fabric.grid().coord(tile);
      if (regions) rt.task_cycles[rt.grid.of(at)] += task_cycles(first, last, overhead);
      if (!series) return;
      // (locals, so that the stores to busy do not make the loop read them again)
      const std::size_t ni = n, nc = cells;
      const Cycle* const t = se.t.data();
      const bool even = evenly;
      const Cycle d = every, ov = overhead;
      std::uint64_t* const col = busy.data() + se.grid.of(at);  // the tile's cell, interval 0
      std::size_t si = ni;   // the interval of the last span (a tile's spans mostly follow one another)
      Cycle lo = 1, hi = 0;  // its cycles [lo, hi) (none yet)
      for (const Span* p = first; p != last; ++p) {
        const Cycle s = p->first, e = p->second;
        const Cycle a = s - std::min(s, ov);
        if (lo <= a && e <= hi) {  // inside the last one's interval
          col[si * nc] += e - a;
          continue;
        }
        // The interval holding a (the first when a comes before it; any interval past the last adds
        // nothing below).
        if (even) {
          si = a < t[0] ? 0 : std::min<std::size_t>(ni - 1, std::size_t((a - t[0]) / d));
        } else {
          const Cycle* it = std::upper_bound(t, t + ni + 1, a);
          si = it == t ? 0 : std::min<std::size_t>(ni - 1, std::size_t(it - t) - 1);
        }
        lo = t[si], hi = t[si + 1];
        for (std::size_t i = si; i < ni && t[i] < e; ++i) {
          const Cycle l = std::max(a, t[i]), h = std::min(e, t[i + 1]);
          if (h > l) col[i * nc] += h - l;
        }
      }
    });
    for (std::size_t i = 0; i < n * cells; ++i) se.tiles_busy[i] = double(busy[i]);
  }
  for (std::size_t i = 0; i < n; ++i) {
    const double dt = double(se.t[i + 1] - se.t[i]);
    for (std::size_t c = 0; c < cells; ++c)
      if (series_tiles[c]) se.tiles_busy[i * cells + c] /= double(series_tiles[c]) * dt;
  }
  return ws;
}

// Jobs run side by side on `threads` threads, each taking the next job in order until none is left (or one
// failed: every job before it has been taken, so the first failure in job order is among those run): worker 0
// on `mesh0`, the others on a mesh each of their own. Rethrows the first failure in job order. Returns the
// split of its wall time: the longest building of executors and meshes on one thread, and the rest.
std::pair<double, double> Simulator::side_by_side(std::size_t jobs, std::size_t threads, noc::Mesh* mesh0,
                                                  const noc::Fabric& fabric0,
                                                  const std::function<const noc::Fabric&(std::size_t)>& fabric_of,
                                                  const StepOptions& opt,
                                                  const std::function<void(std::size_t, noc::Mesh*, double&, double&)>& job) {
  const std::size_t n = std::max<std::size_t>(1, std::min(threads, jobs));
  const noc::MeshParams params = mesh0->params();
  std::vector<std::exception_ptr> error(jobs);
  std::vector<double> elab(n, 0.0), emul(n, 0.0);
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  const auto tp = std::chrono::steady_clock::now();
  auto work = [&](std::size_t w) {
    std::unique_ptr<noc::Mesh> own_mesh;
    noc::Mesh* m = w == 0 ? mesh0 : nullptr;
    const noc::Fabric* on = w == 0 ? &fabric0 : nullptr;  // the fabric m was built on
    bool used = false;
    for (std::size_t i = next++; i < jobs && !failed; i = next++) {
      try {
        const noc::Fabric& fabric = fabric_of(i);
        if (m && on != &fabric && !(*on == fabric)) m = nullptr;  // (a wafer of its own fabric: a mesh of its own)
        if (!m) {
          const auto t1 = std::chrono::steady_clock::now();
          own_mesh.reset();
          own_mesh = new_mesh(opt.fidelity, fabric, params);
          m = own_mesh.get(), on = &fabric, used = false;
          elab[w] += seconds_since(t1);
        } else if (used) {
          m->reset();
        }
        used = true;
        job(i, m, elab[w], emul[w]);
      } catch (...) {
        error[i] = std::current_exception();
        failed = true;
      }
    }
  };
  {
    std::vector<std::thread> pool;
    struct Join {  // (the threads started are joined however this block is left)
      std::vector<std::thread>& threads;
      ~Join() {
        for (auto& t : threads) t.join();
      }
    } join{pool};
    for (std::size_t w = 1; w < n; ++w) pool.emplace_back(work, w);
    work(0);
  }
  for (std::size_t i = 0; i < jobs; ++i)
    if (error[i]) std::rethrow_exception(error[i]);
  const double wall = seconds_since(tp), e = *std::max_element(elab.begin(), elab.end());
  return {e, std::max(0.0, wall - e)};
}

StepResult Simulator::run(const hw::WaferSpec& spec, const noc::WaferFabrics& fabrics,
                          const std::vector<const firmware::Image*>& images, const StepOptions& opt) {
  return run_step(spec, fabrics, images, opt, nullptr);
}

std::vector<StepResult> Simulator::run_batch(const hw::WaferSpec& spec, const noc::WaferFabrics& fabrics,
                                             const std::vector<BatchStep>& steps, std::uint32_t threads) {
  std::vector<StepResult> out;
  std::vector<Ahead> ahead(steps.size());
  std::vector<std::pair<std::size_t, std::size_t>> jobs;  // (step, wafer), in that order
  bool together = threads > 1 && steps.size() > 1;
  for (std::size_t s = 0; s < steps.size() && together; ++s) {
    const BatchStep& st = steps[s];
    together = !st.images.empty() && side_by_side_ok(st.images, st.opt) && st.opt.fidelity == steps[0].opt.fidelity;
    plan_wafers(st.images, fabrics, st.opt.reuse && !st.opt.keep_tile, ahead[s].from, ahead[s].emulated);
    for (std::size_t k : ahead[s].emulated) jobs.push_back({s, k});
  }
  if (!together || jobs.size() < 2) {
    for (const BatchStep& st : steps) out.push_back(run_step(spec, fabrics, st.images, st.opt, nullptr));
    return out;
  }
  for (std::size_t s = 0; s < steps.size(); ++s) {
    for (const auto* im : steps[s].images) check_sram(spec, *im);  // (before anything runs, as run() does)
    ahead[s].steps.resize(steps[s].images.size());
  }
  std::vector<double> job_elab(jobs.size(), 0.0), job_emul(jobs.size(), 0.0);
  {
    std::unique_ptr<noc::Mesh> own;
    bool kept = false;
    const noc::Fabric& fabric0 = fabrics.of(jobs[0].second);
    noc::Mesh* mesh0 = step_mesh(spec, fabric0, steps[0].opt, own, kept);
    side_by_side(jobs.size(), threads, mesh0, fabric0,
                 [&](std::size_t i) -> const noc::Fabric& { return fabrics.of(jobs[i].second); }, steps[0].opt,
                 [&](std::size_t i, noc::Mesh* m, double& elab, double& emul) {
                   const auto [s, k] = jobs[i];
                   ahead[s].steps[k] = emulate_wafer(spec, fabrics.of(k), *steps[s].images[k], k, m, nullptr, 0,
                                                     steps[s].opt, job_elab[i], job_emul[i]);
                   elab += job_elab[i], emul += job_emul[i];
                 });
  }
  for (std::size_t s = 0; s < steps.size(); ++s) {
    out.push_back(run_step(spec, fabrics, steps[s].images, steps[s].opt, &ahead[s]));
    for (std::size_t i = 0; i < jobs.size(); ++i)
      if (jobs[i].first == s) out.back().elaboration_s += job_elab[i], out.back().emulation_s += job_emul[i];
    out.back().threads = std::uint32_t(std::min<std::size_t>(threads, jobs.size()));
  }
  return out;
}

StepResult Simulator::run_step(const hw::WaferSpec& spec, const noc::WaferFabrics& fabrics,
                               const std::vector<const firmware::Image*>& images, const StepOptions& opt,
                               Ahead* ahead) {
  if (images.empty()) throw hw::InputError("nothing to run: no firmware image");
  if (fabrics.size() != 1 && fabrics.size() != images.size())
    throw hw::InputError(fmt::format("{} fabrics (defect maps) for {} wafers: give one, or one per wafer", fabrics.size(),
                                     images.size()));
  if (!ahead)
    for (const auto* im : images) check_sram(spec, *im);
  StepResult res;
  res.elaboration_s = elaboration_s_;
  runs_.assign(images.size(), {});
  top_->configure(spec);
  top_->execute([&] {
    auto t0 = std::chrono::steady_clock::now();
    std::unique_ptr<noc::Mesh> own;  // a mesh for this step only (keep_mesh off)
    noc::Mesh* mesh = step_mesh(spec, fabrics.of(0), opt, own, res.mesh_kept);
    std::size_t mesh_wafer = 0;  // the wafer whose fabric the mesh was built on
    res.elaboration_s += seconds_since(t0);
    TlmStreamPort port(*top_);
    Cycle start = 0;
    bool mesh_used = false;
    // Reuse copies results, a trace's extras included: the kept runs and the timed path are read from the
    // copied records, the counters sampled in time are taken at a jump from the template's link
    // reservations (core::Executor), and a reused wafer's are the earlier wafer's shifted. A wafer is not
    // reused when a caller chooses the tiles whose runs it keeps (keep_tile: it is asked tile by tile, as the
    // runs of each wafer are read).
    const bool reuse_wafers = opt.reuse && !opt.keep_tile;
    // An earlier wafer ran the same step (same_step): the models are deterministic and invariant under a
    // shift in time (the mesh is reset before every wafer; the cores read no absolute cycle but the
    // start; without streamed weights nothing else is shared), so this wafer's result is that one's with
    // every cycle shifted by the difference of the starts. from[k]: that wafer (k: none; wafer k is emulated).
    Ahead mine;
    if (!ahead) plan_wafers(images, fabrics, reuse_wafers, mine.from, mine.emulated);
    const std::vector<std::size_t>& from = ahead ? ahead->from : mine.from;
    const std::vector<std::size_t>& emulated = ahead ? ahead->emulated : mine.emulated;
    // The wafers emulated side by side (StepOptions::threads): each from cycle 0 on a mesh of its own thread,
    // shifted to its start below (the same invariance); not when side_by_side_ok says no. (`ahead`: run_batch
    // has emulated them so already.)
    if (!ahead && opt.threads > 1 && emulated.size() > 1 && side_by_side_ok(images, opt)) {
      res.threads = std::uint32_t(std::min<std::size_t>(opt.threads, emulated.size()));
      mine.steps.resize(images.size());
      const auto [e, r] = side_by_side(
          emulated.size(), opt.threads, mesh, fabrics.of(0),
          [&](std::size_t i) -> const noc::Fabric& { return fabrics.of(emulated[i]); }, opt,
          [&](std::size_t i, noc::Mesh* m, double& elab, double& emul) {
            const std::size_t k = emulated[i];
            mine.steps[k] = emulate_wafer(spec, fabrics.of(k), *images[k], k, m, nullptr, 0, opt, elab, emul);
          });
      res.elaboration_s += e;
      res.emulation_s += r;
      ahead = &mine;
    }
    for (std::size_t k = 0; k < images.size(); ++k) {
      if (k > 0) {
        std::uint64_t bytes = std::max<std::uint64_t>(1, opt.interwafer_bytes);
        Cycle arrive = top_->hand_off(start, bytes);
        res.link_cycles.push_back(arrive - start);
        start = arrive;
      }
      if (from[k] < k) {
        WaferStep ws = res.wafers[from[k]];
        const Cycle shift = start - ws.step.start;
        shift_step(ws, shift);
        ws.reused_from = int(from[k]);
        // (nothing built or run for it: its own cost is none, the result's is the earlier wafer's)
        ws.elaboration_s = ws.emulation_s = 0;
        ws.step.tasks_executed = 0, ws.step.layers_reused = ws.step.layers_watched = 0, ws.step.cuts_s = 0;
        ws.step.reuse_bytes = 0, ws.step.reuse_dropped = false;
        if (opt.progress) opt.progress->fetch_add(ws.step.tasks_run, std::memory_order_relaxed);
        if (opt.keep_task_runs) {
          runs_[k] = runs_[from[k]];
          for (auto& t : runs_[k]) t.trigger += shift, t.start += shift, t.end += shift;
        }
        start = ws.step.end;
        res.wafers.push_back(std::move(ws));
        ++res.wafers_reused;
        continue;
      }
      WaferStep ws;
      if (ahead) {
        ws = std::move(ahead->steps[k]);
        shift_step(ws, start);
      } else {
        if (!fabrics.same(mesh_wafer, k)) {  // a wafer with a fabric of its own runs on a mesh built on it
          const auto t1 = std::chrono::steady_clock::now();
          bool kept = false;
          own.reset();
          mesh = step_mesh(spec, fabrics.of(k), opt, own, kept);
          mesh_wafer = k, mesh_used = false;
          res.elaboration_s += seconds_since(t1);
        }
        if (mesh_used) mesh->reset();
        mesh_used = true;
        ws = emulate_wafer(spec, fabrics.of(k), *images[k], k, mesh, &port, start, opt, res.elaboration_s,
                           res.emulation_s, opt.core_to_spare);
      }
      start = ws.step.end;
      res.tasks_executed += ws.step.tasks_executed;
      res.layers_reused += ws.step.layers_reused;
      res.layers_watched += ws.step.layers_watched;
      res.cuts_s += ws.step.cuts_s;
      res.wafers.push_back(std::move(ws));
    }
    res.latency = start;
    top_->advance(start);  // the kernel's time catches up with the decoupled step
  });

  // Merge the breakdowns (layer and op names are per image; wafers of one mapping share the lists' meaning
  // by name, so merge by name).
  core::Breakdown& bd = res.breakdown;
  for (const auto& w : res.wafers) {
    const auto& b = w.step.breakdown;
    for (std::size_t c = 0; c < core::kCauses; ++c) bd.cause[c] += b.cause[c];
    bd.path_tasks += b.path_tasks;
    bd.path_bursts += b.path_bursts;
  }
  for (Cycle l : res.link_cycles) bd.cause[std::size_t(core::Cause::InterWafer)] += l;
  auto merge = [](std::vector<Named>& into, const std::vector<std::string>& names, const std::vector<core::CauseCycles>& v) {
    for (std::size_t i = 0; i < v.size() && i < names.size(); ++i) {
      auto it = std::find_if(into.begin(), into.end(), [&](const Named& n) { return n.name == names[i]; });
      if (it == into.end()) it = into.insert(into.end(), Named{names[i], {}});
      for (std::size_t c = 0; c < core::kCauses; ++c) it->cycles[c] += v[i][c];
    }
  };
  for (std::size_t k = 0; k < res.wafers.size(); ++k) {
    const auto& b = res.wafers[k].step.breakdown;
    merge(res.per_layer, images[k]->layer_names, b.per_layer);
    merge(res.per_op, images[k]->op_names, b.per_op);
    merge(res.work_per_op, images[k]->op_names, b.work_per_op);
  }
  if (!res.link_cycles.empty()) {
    core::CauseCycles links{};
    for (Cycle l : res.link_cycles) links[std::size_t(core::Cause::InterWafer)] += l;
    res.per_layer.push_back({"inter-wafer links", links});
    res.per_op.push_back({"inter_wafer", links});
  }
  for (const auto& w : res.wafers) res.tasks_represented += w.step.tasks_run;
  res.latency_us = spec.cycles_to_us(double(res.latency));
  res.memoryx_bytes = top_->memx.link().bytes();
  res.memoryx_requests = top_->memx.link().requests();
  res.memoryx_busy_us = double(top_->memx.link().busy()) / 1e6;
  res.channel_rule = top_->memx.channels().rule();
  for (const auto& p : top_->memx.channels().pipes())
    res.channel_busy_max_us = std::max(res.channel_busy_max_us, double(p.busy()) / 1e6);
  return res;
}

}  // namespace wafer::sim
