#pragma once
// Static checks of an Image, run by the mapper's tests (and available to `decode`): a zero-time replay of
// the step with the crediting rule of program.h. It proves that
//   - every tile index, program index and send destination lies inside the grid;
//   - every burst that arrives at a tile is credited to a task of that tile (a trigger color with no task
//     left to consume it is an error), and no burst is left over;
//   - arrival counts match the bursts sent: every task of every placed program runs exactly once;
//   - the step is a connected DAG from Image::start: the done tile receives its done_arrivals bursts on
//     done_color (and no more).
#include <cstdint>
#include <string>
#include <vector>

#include "firmware/program.h"

namespace wafer::firmware {

struct ValidationResult {
  std::vector<std::string> problems;  // at most `max_problems`, each one line naming tile, task and color
  std::uint64_t tasks_run = 0;
  std::uint64_t bursts_delivered = 0;  // per receiving tile (a multicast counts once per tile it reaches)
  bool ok() const { return problems.empty(); }
};

ValidationResult validate(const Image& image, std::size_t max_problems = 20);

// Distinct colors one program uses (triggers and sends).
int colors_used(const Program& p);

}  // namespace wafer::firmware
