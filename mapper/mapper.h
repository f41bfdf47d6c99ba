#pragma once
// The mapper's entry point: a model config -> layer graph -> partition -> placement -> one firmware Image
// per wafer, with the budgets checked (SRAM per tile, colors per tile, edge I/O channels) and the figures
// the report shows. Pure code: no SystemC. docs/mapping.md explains the partition, strategies and budgets.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "firmware/program.h"
#include "hw/coord.h"
#include "hw/wafer_spec.h"
#include "mapper/model_config.h"
#include "noc/routing/fabric.h"

namespace wafer::mapper {

enum class WeightMode : std::uint8_t {
  Resident,  // every weight lives in tile SRAM (rejected, with the reason, when it does not fit)
  Stream,    // stages whose weights do not fit are streamed per token through the MemoryX port
};
const char* to_string(WeightMode m);
WeightMode parse_weight_mode(std::string_view s);  // "resident" | "stream"; InputError otherwise

// How a region computes a layer (docs/mapping.md).
enum class Kernel : std::uint8_t {
  Bands,     // input multicast along a row before every GEMV, partial sums reduced down columns / along rows
             // toward the residual column (the first scheme)
  MeshGemv,  // WaferLLM's MeshGEMV: weights pre-partitioned so the reduction axis alternates (Y, X, Y, ...);
             // every GEMV ends in an allreduce that leaves its result where the next one reads it
};
const char* to_string(Kernel k);
Kernel parse_kernel(std::string_view s);  // "bands" | "meshgemv"; InputError otherwise

// How a MeshGemv allreduce along a line of n tiles is done (docs/mapping.md, docs/routing.md).
enum class AllreduceAlgo : std::uint8_t {
  Chain,   // reduce-and-forward chain from one end to the other, the far end multicasts the result back
  Centre,  // chains from both ends to the middle tile, which multicasts the result both ways
  Tree,    // two-level tree (WaferLLM's K = 2): chains inside groups of g tiles to their middle roots, a
           // chain over the roots to the centre root (tiles between roots only forward), then a multicast
};
const char* to_string(AllreduceAlgo a);
AllreduceAlgo parse_allreduce(std::string_view s);  // "chain" | "centre" | "tree"; InputError otherwise

// One sequence of a mixed step (MapOptions::step): `tokens` new tokens, the last at position `context`
// (1 token: a decode token; more: a prefill chunk ending at `context`, causal).
struct StepSequence {
  std::int64_t tokens = 1, context = 1;
  friend bool operator==(const StepSequence&, const StepSequence&) = default;
};
// "T@C,T@C,...": InputError naming --step and the entry when malformed (checks syntax, 1 <= T <= C and
// that the list is not empty; the model's limit is the mapper's).
std::vector<StepSequence> parse_step(std::string_view s);
std::string to_string(const std::vector<StepSequence>& step);  // "1@4096,128@512"

// The largest KV-cache reserve a mapping takes (MapOptions::kv_capacity), in positions.
inline constexpr std::int64_t kMaxKvCapacity = std::int64_t(1) << 40;

struct MapOptions {
  std::string placement = "layer-bands";  // a registered placement strategy (placement_names())
  std::int64_t context = 4096;            // KV-cache length C (positions attended, incl. the new token)
  std::int64_t batch = 1;                 // sequences decoded together (B)
  // New tokens per sequence in this step (T): 1 is a decode step; T > 1 a prefill chunk (or a speculative
  // verify step of T draft tokens), the last of them at position `context`, token t (0-based) attending
  // context - T + 1 + t positions (causal). Every per-token operator does T token vectors per sequence; the
  // head (final norm, LM head, argmax) runs on each sequence's last token only. Bands kernel only.
  std::int64_t tokens = 1;
  // A mixed step (continuous batching): sequences each with their own new tokens and context, their token
  // vectors going through every GEMV together, attention per sequence over its own KV cache (causal within
  // a chunk). Non-empty: it replaces batch, tokens and context (batch = its size, context = its largest
  // context, tokens = 1 are what the mapping's reports show). Bands kernel only. docs/mapping.md section 3d.
  std::vector<StepSequence> step;
  // KV-cache positions the mapping reserves over all the step's sequences: 0 (default) reserves what the step
  // holds (batch x context; a mixed step, the sum of its contexts); more maps the cache of a deployment sized
  // for a longer context or more sequences (every step of a latency table on one placement), while the step
  // attends its own context. The reserve shares the rows as the positions do (split(N, rows, r) per row, at
  // least what the row holds); it sets the stages' bytes the placement weighs and each tile's SRAM, never the
  // work. At least what the step holds. docs/mapping.md section 3e.
  std::int64_t kv_capacity = 0;  // at most kMaxKvCapacity
  int weight_bits = 16;                   // 16 (default) or 8
  WeightMode weights = WeightMode::Resident;
  int wafers = 1;                         // > 1: the stages are split into a pipeline of wafers
  Kernel kernel = Kernel::Bands;
  AllreduceAlgo allreduce = AllreduceAlgo::Tree;  // MeshGemv only
  int group = 0;                          // Tree: tiles per group; 0 = round(sqrt(n)) for a line of n tiles
  // A plan for ranking a candidate (apps/search.h), not for emulation: every check of the full mapping up to
  // SRAM (the stages' needs), then each wafer's WaferReport holds the task runs counted from the stages' classes
  // and its Image the done tile (meshgemv: and that tile's program alone, what a closed form reads; bands: no
  // program); the other per-program figures are left 0 (meshgemv: but the tiles used).
  bool plan_only = false;
  friend bool operator==(const MapOptions&, const MapOptions&) = default;  // every field (apps::PointCache keys)
};

// One stage of the decode step: "embedding", "layer 0" .. "layer N-1", "head" (final norm, LM head, argmax).
struct StageReport {
  std::string name;
  int wafer = 0;
  hw::Rect region;                 // logical tiles it occupies on its wafer
  bool mirrored = false;           // its data flows westward (serpentine); its residual column is the west one
  bool streamed = false;           // weights streamed through MemoryX instead of resident
  std::int64_t weight_bytes = 0;   // all its weights at the chosen precision
  // Bytes it streams in a step when streamed (else 0): every streamed weight once, of the experts those the step's
  // tokens are expected to route to (detail::streamed_expert_width), and the embedding's row of every token vector;
  // norm weights and Qwen2's bias stay resident.
  std::int64_t streamed_bytes_per_step = 0;
  std::int64_t kv_bytes = 0;       // its KV cache at the chosen context and batch (or as reserved: kv_capacity)
  std::int64_t sram_max = 0;       // most SRAM bytes one of its tiles needs (this stage only)
};

struct WaferReport {
  std::int64_t tiles_used = 0;       // tiles with a program
  std::int64_t sram_max = 0;         // bytes, the fullest tile
  double sram_mean = 0;              // bytes, mean over the tiles used
  int colors_used = 0;               // most distinct colors one tile's program uses
  std::size_t programs = 0;          // distinct programs after sharing
  std::int64_t firmware_bytes = 0;   // encoded size of the distinct programs (see program_bytes)
  std::int64_t streamed_bytes_per_step = 0;
  std::int64_t io_channels_used = 0;  // edge channels carrying streamed weights
  std::int64_t egress_bytes_per_token = 0;  // bytes leaving over the inter-wafer link (0 on the last)
  std::int64_t task_runs = 0;        // tasks run per step over all tiles (what the emulator will execute)
};

struct Mapping {
  std::vector<firmware::Image> images;   // one per wafer, in pipeline order
  std::vector<WaferReport> wafers;       // same order
  std::vector<StageReport> stages;       // in data-flow order
  std::string placement;
  MapOptions options;
  ModelConfig model;
  std::vector<std::string> notes;        // warnings a person should read (e.g. "3 stages are streamed")
  // Totals over wafers.
  std::int64_t tiles_used() const;
  std::int64_t task_runs() const;  // the tile tasks one step runs
  std::int64_t streamed_bytes_per_step() const;
  std::int64_t interwafer_bytes_per_step() const;  // per link (every link carries the same activations)
  std::size_t program_count() const;
  std::int64_t firmware_bytes() const;
};

// The whole step. `fabrics`: the repaired logical mesh of each wafer, or one every wafer shares (a single
// noc::Fabric converts to that); InputError for another count than 1 or options.wafers.
// Throws hw::InputError with a reason a person can act on: bad options, a model that does not fit (which
// stage, how many bytes per tile against how many, what to try), an unknown placement.
Mapping map_model(const hw::WaferSpec& spec, const noc::WaferFabrics& fabrics, const ModelConfig& model,
                  const MapOptions& options);
// Whether map_model's result with these options can depend on the fabric's links. map_model reads the
// fabric's grid and, through the placement, what the placement reads (PlacementStrategy::reads_links); so
// when this is false, two fabrics alike in grid and faults, lengths aside (noc::Fabric::same_faults), get the
// same Mapping, as the defect maps of a study that repair completely do. True for a placement map_model
// does not know.
bool mapping_reads_links(const MapOptions& options);

// The pipeline's split of stages (in order, of these bytes each) into `wafers` consecutive nonempty groups:
// first[w] is wafer w's first stage (first[wafers] = the stage count). Of the splits whose largest group holds
// the fewest bytes (what decides whether the wafers fit), the most even (least sum of squared group bytes;
// the earlier cut between equals). InputError when there are more wafers than stages, or none.
std::vector<std::size_t> split_pipeline(const std::vector<std::int64_t>& stage_bytes, int wafers);

// Encoded size of one program: 8 bytes per task header, 4 per op, 8 per send (the figure the SRAM budget
// charges as `code`).
std::int64_t program_bytes(const firmware::Program& p);

// Activation bytes per value (fp16) and weight bytes per parameter at `weight_bits`.
inline constexpr std::int64_t kActivationBytes = 2;

}  // namespace wafer::mapper
