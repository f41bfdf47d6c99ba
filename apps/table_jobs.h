#pragma once
// `table --jobs N` (docs/tables.md "Worker processes"): the distinct steps of a table's points (decode steps,
// prefill chunks) emulated on N worker processes. SystemC elaborates once per process, so the workers are
// forked before anything SystemC exists in the parent; each makes its own sim::Simulator and apps::PointCache
// (mesh model, memory and mappings kept between its steps; the workers take turns for memory, apps/memory_gate.h)
// and answers one step at a time over a socket with
// what a table needs of it: the latency and the critical-path cycles per operator. The parent hands the
// steps out as workers come free, in the order of the points, and assembles the points.
#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "apps/decode_point.h"
#include "hw/coord.h"
#include "hw/error.h"

namespace wafer::apps {

// A worker died or failed: the run ends with it (never taken for a point's refusal, which is a plain
// hw::InputError).
class WorkerFailure : public hw::InputError {
 public:
  using hw::InputError::InputError;
};

// A step of `tokens` tokens per sequence whose last sits at position `context`, for `batch` sequences.
using StepKey = std::tuple<std::int64_t, std::int64_t, std::int64_t>;  // (tokens, context, batch)

struct StepOutcome {
  std::string error;  // the hw::InputError of its mapping or emulation; empty when it ran
  hw::Cycle latency = 0;
  // sim::StepResult::per_op in its order, each operator's cycles summed over the causes.
  std::vector<std::pair<std::string, hw::Cycle>> ops;
};

// The critical-path cycles of each operator of `r` in its order (all causes summed).
std::vector<std::pair<std::string, hw::Cycle>> op_cycles(const sim::StepResult& r);

class StepWorkers {
 public:
  // Forks `jobs` workers; each emulates the steps of `base` (its options' tokens, context and batch replaced by
  // the step's) through a PointCache (enabled: `cache`). Call before anything SystemC exists in the process.
  StepWorkers(int jobs, const DecodePoint& base, bool cache);
  // Kills and waits every worker still there (an error unwinding the parent leaves no orphan).
  ~StepWorkers();
  StepWorkers(const StepWorkers&) = delete;
  StepWorkers& operator=(const StepWorkers&) = delete;

  // Queues a step (each key once); the queued steps go to the workers in the order submitted.
  void submit(const StepKey& key);
  // Gives queued steps to idle workers, then waits up to timeout_ms (-1: until one answers; 0: not at all)
  // for answers, calling on_done for each. WorkerFailure when a worker died or failed (the others killed).
  void poll(int timeout_ms, const std::function<void(const StepKey&, StepOutcome)>& on_done);
  bool busy() const;  // steps queued or running

  // Ends the workers (none may be busy) and sums their figures.
  struct Stats {
    std::int64_t steps_emulated = 0, mappings_reused = 0, mappings_built = 0, meshes_reused = 0;
  };
  Stats finish();

 private:
  struct Worker {
    pid_t pid = -1;
    int fd = -1;
    bool running = false;
    StepKey step{};
  };
  [[noreturn]] void fail(std::size_t k, const std::string& what);
  void kill_all();  // ends every worker and removes their memory table
  std::vector<Worker> workers_;
  std::deque<StepKey> queue_;
  std::filesystem::path gate_dir_;  // the workers' memory table (apps/memory_gate.h), removed at the end
};

}  // namespace wafer::apps
