#pragma once
// The SystemC top (docs/design.md section 2): SystemC owns simulated time, the top-level structure and the
// TLM-2.0 interfaces; the tiles are compact data inside the mesh model and the core executor.
//
//   Top (sc_module)
//    |- MemoryX        TLM-2.0 target at the wafer edge (memory/memoryx.h)
//    |- WaferLink      TLM-2.0 target between consecutive wafers of a pipeline
//    |- mx_init, link_init   initiator sockets (the host side)
//    `- one SC_THREAD running each wafer's step: a mesh model (noc::make_mesh, approx or cycle) driven by
//       a core::Executor, temporally decoupled (the inner burst queue runs ahead of sc_time; one wait()
//       per step), streamed weights fetched through b_transport with time annotation (the port, then the
//       request's edge channel; the fabric leg to the tile is the executor's, analytic: docs/streaming.md).
//       Wafers that stream nothing may be emulated beforehand on worker threads (StepOptions::threads), each
//       from cycle 0 on a mesh of its own; the SC_THREAD then hands each its start through the inter-wafer
//       link and shifts its result there.
//
// Elaborated once per process (the SystemC kernel cannot be re-elaborated): create one Simulator before
// any run; it then runs any number of steps on any wafer spec, reconfiguring and resetting its modules
// between them (a second Simulator created after the first run is refused by SystemC).
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/executor.h"
#include "firmware/program.h"
#include "hw/wafer_spec.h"
#include "memory/edge_channels.h"
#include "memory/sram.h"
#include "noc/mesh.h"
#include "noc/routing/fabric.h"

namespace wafer::sim {

using hw::Cycle;

// Tiles aggregated into square cells of `cell` x `cell` tiles (the last column and row of cells may be
// partial): what the report's heatmaps and a trace's counters show of a full wafer.
struct RegionGrid {
  std::int32_t cell = 1, cols = 0, rows = 0;
  // The smallest cell side with at most `max_side` cells across and down (max_side >= 1).
  static RegionGrid fit(const hw::Grid& g, std::int32_t max_side);
  std::size_t size() const { return std::size_t(cols) * std::size_t(rows); }
  std::size_t of(hw::Coord c) const { return std::size_t(c.y / cell) * std::size_t(cols) + std::size_t(c.x / cell); }
  // of() for every tile of `g`, by TileIndex (computed row by row: no division a tile).
  std::vector<std::uint32_t> of_tiles(const hw::Grid& g) const;
};

// One wafer's step, summed per cell of `grid` (empty unless StepOptions::region_cells).
struct RegionTotals {
  RegionGrid grid;
  std::vector<std::uint64_t> link_busy;    // cycles the healthy links leaving the cell's tiles carried wavelets
  std::vector<std::uint32_t> links;        // those links (mesh links with a path; the array's edge has none)
  std::vector<std::uint32_t> extra_hops;   // physical hops beyond one of those going east or south (each link once:
                                           // repair detours, as hw::RepairResult counts them)
  std::vector<std::uint64_t> task_cycles;  // cycles the cell's cores ran tasks (task_overhead included)
  std::vector<std::uint32_t> tiles;        // tiles in the cell
};

// One wafer's step over time, per cell of `grid` (a trace's counters; empty unless StepOptions::series_cells).
// Link occupancy is counted when a burst's head crosses the link (the approx model books the whole burst
// then), so an interval can show a little more than 100 % when long bursts straddle its end.
struct RegionSeries {
  RegionGrid grid;
  std::vector<Cycle> t;                  // interval bounds: t[0] the wafer's start ... t.back() its end
  std::vector<double> link_utilisation;  // [i * grid.size() + c]: link busy cycles / (links x interval i)
  std::vector<double> tiles_busy;        // [i * grid.size() + c]: task cycles / (tiles x interval i)
  std::size_t intervals() const { return t.empty() ? 0 : t.size() - 1; }
};

struct StepOptions {
  noc::Fidelity fidelity = noc::Fidelity::Approx;
  std::uint32_t weight_bytes = 2;  // bytes per weight (16-bit: 2, 8-bit: 1)
  // Bytes each inter-wafer link carries per token (the activation handed to the next wafer). 0: derived
  // from the done burst (done_arrivals x its wavelets x wavelet_bytes is not known up front, so the
  // caller should pass the mapper's figure).
  std::uint64_t interwafer_bytes = 0;
  bool keep_task_runs = false;  // keep every task run for task_runs() (traces)
  // With keep_task_runs: keep only the critical runs and every run of the tiles this accepts (asked once per
  // tile that ran a task, in tile order, with the number of its runs); unset: every run.
  std::function<bool(std::size_t wafer, hw::TileIndex tile, std::uint32_t runs)> keep_tile;
  bool keep_path = false;         // the critical path as timed segments (core::StepResult::path)
  std::int32_t region_cells = 0;  // RegionTotals with at most this many cells a side (0: none)
  std::int32_t series_cells = 0;  // RegionSeries with at most this many cells a side (0: none)
  std::uint32_t series_intervals = 64;  // at most this many intervals in a RegionSeries
  // Pay once for what repeats (exactly): a wafer of the pipeline whose image is an earlier wafer's (the
  // same programs on the same tiles, the same injections and done condition; only the layer names differ)
  // and that streams no weights is not emulated again: its result is the earlier wafer's shifted to its own
  // start (see Simulator::run); within a wafer, repeated layers are copied once their state repeats
  // (core::ExecOptions::reuse). false: emulate everything (`decode --no-reuse`). Off while a trace's extras
  // are asked for (keep_task_runs, keep_path, series_cells): they follow the run in time, tile by tile.
  bool reuse = true;
  // What reuse's lists may hold within a wafer, in bytes (core::ExecOptions::reuse_bytes; 0: its default). Tests.
  std::uint64_t reuse_bytes = 0;
  // Wafers of a pipeline emulated at once, each on a thread and a mesh of its own (1: one after the other).
  // Results are the same for any number: a wafer's step depends on its start only by a shift in time, so each
  // runs from cycle 0 and is shifted to its start when the inter-wafer links have given it. One after the
  // other all the same when a wafer streams weights or a trace's extras are kept (keep_task_runs, keep_tile,
  // series_cells). Each wafer run at once holds its own task records: the memory grows with the threads.
  std::uint32_t threads = 1;
  // A core beyond those `threads` uses: a wafer emulated alone then has its task slots' pages faulted in behind
  // it (core::ExecOptions::populate_behind), and its region totals (without series) summed on two threads.
  // Results the same.
  bool core_to_spare = false;
  // Where the wafers' executors add the tasks they run (core::ExecOptions::progress); a wafer reused from another
  // adds its task count at once. Over a step it grows by StepResult's tasks run summed over the wafers. Null: none.
  std::atomic<std::uint64_t>* progress = nullptr;
};

struct WaferStep {
  core::StepResult step;        // times are absolute cycles from the start of the token
  noc::NetworkStats network;
  std::size_t mesh_bytes = 0;   // mesh model state
  std::uint64_t link_busy_max = 0;  // busiest link's occupied cycles
  RegionTotals regions;             // StepOptions::region_cells
  RegionSeries series;              // StepOptions::series_cells
  int reused_from = -1;             // the earlier wafer whose result this is (shifted), -1: emulated
  // Wall seconds building this wafer's executor and running it; not deterministic, like
  // StepResult::elaboration_s. A wafer reused from another has these, and its step's tasks_executed,
  // layers_reused, layers_watched, cuts_s and reuse_bytes at 0 (nothing of it was built or run).
  double elaboration_s = 0, emulation_s = 0;
};

struct Named {
  std::string name;
  core::CauseCycles cycles{};
};

struct StepResult {
  Cycle latency = 0;                  // cycles for one token through every wafer
  double latency_us = 0;
  std::vector<WaferStep> wafers;
  std::vector<Cycle> link_cycles;     // inter-wafer hand-offs (latency + bytes / bandwidth), per link
  core::Breakdown breakdown;          // causes merged over wafers; InterWafer holds the links
  std::vector<Named> per_layer, per_op;  // critical path, merged by name over wafers (+ the links)
  std::vector<Named> work_per_op;        // all tasks' tile-cycles (compute, setup, overhead)
  std::uint64_t memoryx_bytes = 0, memoryx_requests = 0;
  double memoryx_busy_us = 0;
  // The edge channels behind the port (memory/edge_channels.h): the derived rule and the busiest one.
  memory::EdgeChannelRule channel_rule;
  double channel_busy_max_us = 0;
  double elaboration_s = 0, emulation_s = 0;
  // Cost of the emulation (StepOptions::reuse): tile tasks the cores ran, against the tasks the result
  // represents (every wafer's tasks_run); wafers whose result was reused.
  std::uint64_t tasks_executed = 0, tasks_represented = 0;
  std::uint32_t wafers_reused = 0;
  std::uint32_t layers_reused = 0;  // layers copied within the wafers emulated (core::StepResult)
  std::uint32_t layers_watched = 0;  // layers of the runs reuse watched for a repeat (core::StepResult)
  double cuts_s = 0;  // of emulation_s, the seconds in reuse's cuts (core::StepResult::cuts_s)
  bool mesh_kept = false;  // the mesh model of the previous step was reset and reused (Simulator::keep_mesh)
  std::uint32_t threads = 1;  // wafers emulated at once (StepOptions::threads, when they could be)
};

class Top;

class Simulator {
 public:
  Simulator();
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  // One decode step: images[k] runs on wafer k (on fabrics.of(k)), wafer k+1 starting when wafer k's
  // result has crossed the inter-wafer link. Checks every used tile's SRAM against its capacity first
  // (hw::InputError naming the tile and the bytes).
  StepResult run(const hw::WaferSpec& spec, const noc::WaferFabrics& fabrics,
                 const std::vector<const firmware::Image*>& images, const StepOptions& opt);

  // Several independent steps (the mapping search's candidates), each with the result run() gives it: when every
  // step lets its wafers run side by side (no streamed weights, no trace's extras, one fidelity), all their
  // wafers are emulated on `threads` threads at once, each from cycle 0, and each step is then put together
  // as run() does with its wafers emulated side by side; else the steps run one after the other. A step's
  // elaboration and emulation times are then its own wafers' (summed over the threads that ran them).
  struct BatchStep {
    std::vector<const firmware::Image*> images;
    StepOptions opt;
  };
  std::vector<StepResult> run_batch(const hw::WaferSpec& spec, const noc::WaferFabrics& fabrics,
                                    const std::vector<BatchStep>& steps, std::uint32_t threads);

  // Task runs per wafer of the last step, for traces (empty unless StepOptions::keep_task_runs).
  const std::vector<std::vector<core::TaskRun>>& task_runs() const { return runs_; }
  double elaboration_seconds() const { return elaboration_s_; }

  // Keep the mesh model between steps (off by default): a step on a fabric equal to the last one's (the same
  // grid, faults and link lengths), with the same fidelity and mesh parameters, resets the kept model
  // (noc::Mesh::reset: an idle mesh at cycle 0, allocations kept) instead of building one; any other step
  // builds a new one and keeps that. The model runs on its own copy of the fabric, so the caller's may go.
  // Results are the same either way (a reset mesh is a fresh one; the pipeline's wafers rely on it too).
  void keep_mesh(bool on);
  bool keeps_mesh() const { return keep_mesh_; }
  // Builds and keeps (keep_mesh must be on) the mesh model a step on `fabric` with this fidelity and `spec`'s mesh
  // parameters runs on, so that a caller can build it on another thread while it maps the step: nothing else may
  // use this simulator meanwhile, and `fabric` must stay unchanged (it is only read). The next such step takes
  // it as built (no reset: it is fresh; StepResult::mesh_kept false, as it was built for that step). A failure
  // builds nothing: the step builds its mesh itself and reports what fails. The mesh's large arrays are mapped
  // before the step says whether it is a large job (noc::set_large_job), so they take the probe's advice or the
  // system's huge-page policy (noc::block_advice), not a large job's. Whether it was built (tests).
  bool prepare_mesh(const hw::WaferSpec& spec, const noc::Fabric& fabric, noc::Fidelity fidelity) noexcept;

 private:
  // A step's wafers planned (plan_wafers: the earlier wafer each one's step is, and those to emulate) and the
  // emulated ones' steps from cycle 0 (run_batch; run_step when it runs them side by side).
  struct Ahead {
    std::vector<std::size_t> from, emulated;
    std::vector<WaferStep> steps;
  };
  // One step; `ahead`: its SRAM checked and its wafers planned and emulated already (their steps are moved out).
  StepResult run_step(const hw::WaferSpec& spec, const noc::WaferFabrics& fabrics,
                      const std::vector<const firmware::Image*>& images, const StepOptions& opt, Ahead* ahead);
  noc::Mesh* step_mesh(const hw::WaferSpec& spec, const noc::Fabric& fabric, const StepOptions& opt,
                       std::unique_ptr<noc::Mesh>& own, bool& kept);
  WaferStep emulate_wafer(const hw::WaferSpec& spec, const noc::Fabric& fabric, const firmware::Image& im, std::size_t k,
                          noc::Mesh* wm, memory::StreamPort* port, Cycle from_cycle, const StepOptions& opt, double& elab,
                          double& emul, bool alone = false);
  // (`fabric_of(i)`: the fabric job i runs on; mesh0 is built on `fabric0`)
  std::pair<double, double> side_by_side(std::size_t jobs, std::size_t threads, noc::Mesh* mesh0,
                                         const noc::Fabric& fabric0,
                                         const std::function<const noc::Fabric&(std::size_t)>& fabric_of,
                                         const StepOptions& opt,
                                         const std::function<void(std::size_t, noc::Mesh*, double&, double&)>& job);

  std::unique_ptr<Top> top_;
  std::vector<std::vector<core::TaskRun>> runs_;
  double elaboration_s_ = 0;
  bool keep_mesh_ = false;
  bool mesh_fresh_ = false;  // mesh_ was built by prepare_mesh and has not run
  std::unique_ptr<noc::Fabric> mesh_fabric_;  // the kept mesh's fabric (a copy)
  std::unique_ptr<noc::Mesh> mesh_;           // declared after its fabric: destroyed first
};

// Whether wafer step `b` is wafer step `a` shifted in time: the same grid, programs, tile programs, operator
// names, injections and done condition, as many layers (their names may differ), and no streamed weights
// (the MemoryX port is shared by the wafers, so a streaming wafer's timing depends on the ones before).
bool same_step(const firmware::Image& a, const firmware::Image& b);

// SRAM per used tile, checked against the capacity; returns max / mean.
memory::SramStats check_sram(const hw::WaferSpec& spec, const firmware::Image& image);

}  // namespace wafer::sim
