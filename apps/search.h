#pragma once
// `--placement auto`: the mapping space searched the way Timeloop does it (docs/mapping.md section 4b).
// Candidates are placements x kernels x allreduce algorithms x group sizes. Each is mapped (a refusal
// keeps the mapper's reason), ranked by a closed form where its kernel has one, and the most promising
// are emulated within a budget of tile task runs; the best emulated candidate is chosen.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "apps/decode_point.h"
#include "noc/routing/fabric.h"
#include "sim/simulator.h"

namespace wafer::apps {

struct SearchCandidate {
  mapper::MapOptions options;
  std::string label;           // "meshgemv / square / tree, groups of 20"
  std::string rejected;        // the mapper's reason when it refuses; empty when it maps
  std::int64_t task_runs = 0;  // tile tasks one emulated step runs
  double predicted = -1;       // closed-form cycles per step; < 0: no closed form for its kernel
  double emulated = -1;        // emulated cycles per step; < 0: not emulated
  std::string skipped;         // why a candidate that maps was not emulated
};

struct SearchBudget {
  std::int64_t task_runs = 30'000'000;  // summed over the emulated candidates (~4 M tasks per second)
  int emulations = 6;                   // at most this many emulated
  int formula_slots = 2;                // of which at most this many ranked by a closed form
};

struct SearchResult {
  std::vector<SearchCandidate> candidates;  // in enumeration order
  int chosen = -1;                          // index into candidates; -1: nothing maps (InputError thrown)
  bool chosen_by_formula = false;           // no candidate could be emulated within the budget
  std::string note;                         // a candidate predicted faster than the choice but not emulated
  // The chosen candidate's full mapping and its emulated step (as emulate_point gives it for `base` with
  // the chosen options), when it was emulated: a caller running the same point need not run it again.
  struct Run {
    mapper::Mapping mapping;
    sim::StepResult step;
  };
  std::optional<Run> chosen_run;
};

// The candidates for `base` (its placement is ignored). Throws hw::InputError with every candidate's
// reason when none maps.
std::vector<SearchCandidate> enumerate_candidates(const DecodePoint& base, const noc::WaferFabrics& fabrics);

// Closed-form cycles of one decode step of a meshgemv mapping: the work of the tile that ends the step (it
// is the final root of every row and column allreduce it takes part in) plus, for each allreduce it
// multicasts, the zero-load network time of the algorithm's chains, blocking phases and broadcast.
double meshgemv_closed_form(const hw::WaferSpec& spec, const mapper::Mapping& m);

// `core_to_spare`: a core is free beside the caller's thread (the candidates emulated one at a time, base.threads
// 1): the candidates are mapped on two threads, the mesh is built meanwhile when the simulator keeps meshes
// (MeshPrepare), and each emulated candidate has the core to spare (sim::StepOptions::core_to_spare). The same
// results either way.
SearchResult search(sim::Simulator& simulator, const DecodePoint& base, const noc::WaferFabrics& fabrics,
                    const SearchBudget& budget = {}, bool core_to_spare = false);

}  // namespace wafer::apps
