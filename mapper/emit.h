#pragma once
// The firmware emitter (internal to the mapper): builds the per-tile programs of each stage from the
// partition rules of docs/mapping.md and deduplicates them. A tile's program within a stage depends only
// on a few per-row facts (RowKey) and per-column facts (ColKey), so a stage is emitted by building one
// fragment per distinct (row key, column key) pair and stamping it on the tiles: no per-tile objects.
#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "firmware/program.h"
#include "hw/wafer_spec.h"
#include "mapper/mapper.h"
#include "mapper/model_config.h"
#include "mapper/placement.h"

namespace wafer::mapper::detail {

// Colors, by role. A color is a route role reused by successive operators of a tile in causal order
// (a burst for the next use can only exist after the previous use's task has run).
namespace color {
inline constexpr firmware::Color kResIn = 0;   // stage input arriving at the residual column
inline constexpr firmware::Color kToken = 1;   // token ids injected at the embedding's residual column
inline constexpr firmware::Color kRowIn = 2;   // input broadcast along a row (A-oriented operators)
inline constexpr firmware::Color kColPs = 3;   // partial sums reduced down a column (A-oriented)
inline constexpr firmware::Color kColIn = 4;   // input broadcast up a column from the bottom row (B-oriented)
inline constexpr firmware::Color kRowPs = 5;   // partial sums reduced along a row toward the residual column
inline constexpr firmware::Color kChain = 6;   // scalar reductions down a column (norm, softmax max/sum, router)
inline constexpr firmware::Color kBcast = 7;   // a column reduction's result multicast back up the column
inline constexpr firmware::Color kLocal = 8;   // local activation: the next operator on the same tile
inline constexpr firmware::Color kArg = 9;     // argmax reduction along the bottom row
inline constexpr firmware::Color kGather = 10; // egress gather down the residual column (pipeline of wafers)
inline constexpr firmware::Color kDone = 11;   // the step's end at the done tile
inline constexpr firmware::Color kRelay = 12;  // a stage input relayed to the residual column (band hand-offs)
}  // namespace color

// Operator names (Image::op_names), LLMServingSim names where they fit.
enum OpName : std::uint16_t {
  kOpEmbedding, kOpLayernorm, kOpQkv, kOpRotary, kOpAttention, kOpOproj, kOpRouter, kOpGateUp, kOpAct,
  kOpDown, kOpEgress, kOpFinalNorm, kOpLmHead, kOpSampler, kOpGemv, kOpRmsNorm, kOpCount
};
const std::vector<std::string>& op_names();

enum class StageKind : std::uint8_t { Embedding, Layer, Head, Gemv, Norm, Attention };
enum class OutKind : std::uint8_t {
  Transfer,  // to the next stage's residual column (per-row destinations in `out_dest`, global frame)
  Gather,    // gather down the residual column to its bottom tile, which ends the step (wafer egress)
  Argmax,    // head: argmax along the bottom row, the residual-side bottom tile ends the step
  Collect,   // kernels: every output tile sends its result to the done tile
};

struct StageSpec {
  StageKind kind = StageKind::Layer;
  std::string name;
  std::uint16_t layer = 0;                // index into Image::layer_names
  Region region;
  bool streamed = false;
  std::vector<std::uint16_t> in_arrivals;  // per row: bursts arriving at the residual column (kResIn)
  // Per row: 0 = the input burst arrives at the residual tile itself; k > 0 = it arrives (on kRelay) at the
  // tile k columns before the residual column, which forwards it along the row. Vertical hand-offs between
  // bands use it so the h bursts cross the band boundary on h different columns instead of queueing on one.
  std::vector<std::int32_t> relay_in;
  OutKind out = OutKind::Transfer;
  std::vector<firmware::Dest> out_dest;    // per row (Transfer)
  std::vector<firmware::Color> out_color;  // per row (Transfer): kResIn, or kRelay when the next stage relays
  // Kernel sizes (Gemv: k x n; Norm: k).
  std::int64_t k = 0, n = 0;
  bool residual_in = false;  // meshgemv: the input is a decoder layer's output to add to the residual stream
  bool out_last_token = false;  // the next stage is the head: only each sequence's last token goes on
  // Embedding, tied to the head (tie_word_embeddings), on the head's tiles in the same split (one region, the bands
  // kernel), the head's weights resident: the lookup reads its rows from the head's table rather than holding the
  // table again (mapper::map_model sets it, and clears it when either stage streams).
  bool table_in_head = false;
  // (A new field must be compared in same_but_layer.)
};

// Whether two stages differ at most in their layer index and name: then their fragments differ only in
// the layer their tasks report (time-multiplexed decoder layers on one region), and so do their needs.
bool same_but_layer(const StageSpec& a, const StageSpec& b);
// Whether two stages differ at most in their layer, name and where their region lies (not its size or mirroring).
// The bands kernel's stage_need reads no absolute position (row_key, col_key and the fragment builder take the
// region's size and mirroring only), so two such stages need the same (layer-bands' decoder layers, band by band).
bool same_but_place(const StageSpec& a, const StageSpec& b);

struct EmitParams {
  const hw::WaferSpec* spec = nullptr;
  const ModelConfig* model = nullptr;
  std::int64_t batch = 1, context = 1;
  std::int64_t tokens = 1;        // new tokens per sequence (MapOptions::tokens)
  // A mixed step (MapOptions::step): each sequence's tokens and context; batch = its size, tokens = 1 and
  // context = its largest context then. Empty: batch sequences of `tokens` tokens at `context`.
  std::vector<StepSequence> step;
  std::int64_t kv_capacity = 0;   // MapOptions::kv_capacity (0: what the step holds)
  std::int64_t weight_bytes = 2;  // per parameter
  // Sequences in the step, and token vectors through every per-token operator (their new tokens summed).
  std::int64_t sequences() const { return step.empty() ? batch : std::int64_t(step.size()); }
  std::int64_t token_vectors() const {
    if (step.empty()) return batch * tokens;
    std::int64_t n = 0;
    for (const auto& q : step) n += q.tokens;
    return n;
  }
  Kernel kernel = Kernel::Bands;
  AllreduceAlgo allreduce = AllreduceAlgo::Tree;  // meshgemv
  std::int32_t group = 0;                         // meshgemv, tree: tiles per group (0: sqrt of the line)
};

// Per-tile facts a fragment depends on (so equal keys give equal fragments).
struct RowKey {
  // v[11]: causal offset of a T-token step; v[12]: the row's share of EmitParams::kv_capacity (both kept by reduced())
  std::array<std::int64_t, 13> v{};
  // A mixed step (EmitParams::step): per sequence, the positions of its KV cache this row holds and what its
  // first new token attends of them (as v[3] and v[11] for a uniform step); empty otherwise. Kept by reduced().
  std::vector<std::int64_t> seq;
  friend bool operator==(const RowKey&, const RowKey&) = default;
};
struct ColKey {
  std::array<std::int64_t, 12> v{};
  friend bool operator==(const ColKey&, const ColKey&) = default;
};
RowKey row_key(const StageSpec& s, const EmitParams& p, std::int32_t r);
ColKey col_key(const StageSpec& s, const EmitParams& p, std::int32_t i);  // i: local column (0 = far side)
// The row key with the facts only the residual column uses cleared (fragments off the residual column
// depend on this one only).
RowKey reduced(const RowKey& k);

struct Fragment {
  std::vector<firmware::Task> tasks;
  firmware::SramUse sram;  // code left 0: charged per program
  std::int64_t code = 0;   // program_bytes of these tasks
  std::int64_t stream_bytes = 0;  // weight bytes streamed into this tile per step
  friend bool operator==(const Fragment& a, const Fragment& b) { return a.tasks == b.tasks && a.sram == b.sram; }
};
Fragment build_fragment(const StageSpec& s, const EmitParams& p, const RowKey& rk, const ColKey& ck);
// The fragment of a stage the same as another but for its layer (same_but_layer), from the other's: `f` with its
// tasks' layer `from` stamped `to`, as building it again would give; nothing when some task of `f` reports
// another layer than `from` (every builder stamps the stage's own).
std::optional<Fragment> relabelled(const Fragment& f, std::uint16_t from, std::uint16_t to);

// What every kernel's fragment builder does the same way: tasks stamped with the stage's layer and the
// current operator, ops with per-sequence element counts (times the batch), activation buffers, SRAM
// figures that saturate instead of wrapping.
class FragmentBuilder {
 protected:
  using Ix = std::size_t;
  // `tokens`: token vectors per sequence (a prefill chunk's T); per-token work is done batch x tokens times.
  FragmentBuilder(std::uint16_t layer, std::int64_t batch, std::int64_t tokens = 1)
      : layer_(layer), B_(batch * tokens), S_(batch), T_(tokens) {}

  Ix task(firmware::Color c, std::int64_t arrivals = 1, firmware::Task::Start st = firmware::Task::Start::Complete);
  // InputError when one op would process more than 2^32 - 1 elements.
  static std::uint32_t u32(std::int64_t v);
  void op(Ix t, firmware::OpKind k, std::int64_t elements);  // per sequence; nothing when elements <= 0
  // Task t reads what the earlier task `from` computed, through no burst (firmware::Task::after).
  void after(Ix t, Ix from);
  // A GEMV block of K inputs x N outputs per sequence: K vector ops of N MACs each (firmware::Op::vectors).
  void matvec(Ix t, std::int64_t K, std::int64_t N);
  void acts(std::int64_t values);                             // per-sequence activation values held
  // The fragment, its code size filled in.
  Fragment finish();

  std::uint16_t layer_;
  std::int64_t B_;  // multiplier of the per-token element counts: batch x tokens (batch inside per-sequence parts)
  std::int64_t S_;  // sequences (batch)
  std::int64_t T_;  // token vectors per sequence
  std::uint16_t op_ = 0;  // index into op_names(): the operator the next tasks report
  Fragment f_;
};

// Largest SRAM need of one stage's tiles (all row/column classes), with the parts of the worst tile.
struct StageNeed {
  firmware::SramUse worst;  // code included
  // Bounds on what any one tile holds of the stage, each over the stage's fragments on its own: weights and KV
  // cache together, activation buffers, and code (its fragment's, and a relay's of the stage's input on the
  // tiles that relay one). A tile holding several stages holds at most their sum (activations: the largest),
  // one code for stages alike but for their layer (same_but_layer): what map_model checks before stamping.
  std::uint32_t most_held = 0, most_activations = 0, most_code = 0;
  std::int64_t weight_bytes = 0;  // sum over the stage's tiles (resident or streamed)
  std::int64_t stream_bytes = 0;  // per step, when streamed
  std::int64_t tasks = 0;         // tasks its tiles run per step (summed over them)
};
StageNeed stage_need(const StageSpec& s, const EmitParams& p);

// Stamps stages onto one wafer's Image, in order; finish() builds the deduplicated programs.
class Emitter {
 public:
  Emitter(const EmitParams& p, hw::Grid grid);
  void add(const StageSpec& s);
  // Stamps a stage whose tile (x, y) of `region` runs build(row_class[y], col_class[x]) (local frame, x = 0 the
  // west column): one fragment per distinct pair of classes, built when first needed; empty fragments are
  // skipped.
  // With `stage`: when the stage before it (stamped the same way) is the same but for its layer
  // (same_but_layer) with the same classes, its fragments are copied with their tasks' layer changed
  // instead of built again (the decoder layers of a time-multiplexed region: 32 builds become one).
  void add_classes(const hw::Rect& region, const std::vector<std::uint32_t>& row_class,
                   const std::vector<std::uint32_t>& col_class,
                   const std::function<Fragment(std::uint32_t, std::uint32_t)>& build,
                   const StageSpec* stage = nullptr);
  firmware::Image finish(std::vector<std::string> layer_names);
  std::int64_t stream_bytes() const { return stream_bytes_; }
  // The SRAM tile t's program holds, counted as finish() counts it (without building the program): what
  // map_model checks each tile against. Kept per fragment sequence, so a call per tile is cheap.
  firmware::SramUse tile_sram(hw::TileIndex t);

 private:
  // Adds fragment f to a tile's use (finish, tile_sram): weights and KV cache add up, activation buffers are
  // reused, and time-multiplexed decoder layers run the same code: fragments that differ only in the layer
  // their tasks report share one copy (code_held: the fragments whose code the tile holds).
  void hold(firmware::SramUse& u, std::vector<std::uint32_t>& code_held, std::uint32_t f) const;
  std::vector<firmware::SramUse> seq_sram_;  // tile_sram's, per sequence (code == kUnknown: not yet)
  std::uint32_t intern_fragment(Fragment f);
  struct Run {  // the last extension made along a row
    std::uint32_t seq = 0xFFFFFFFFu, frag = 0xFFFFFFFFu, child = 0;
  };
  // Appends fragment f to tile t's sequence.
  void extend(hw::TileIndex t, std::uint32_t f, Run& run);
  std::uint32_t child(std::uint32_t seq, std::uint32_t frag);
  EmitParams p_;
  hw::Grid grid_;
  std::vector<std::uint32_t> seq_;        // per tile: id of its fragment sequence (0 = none)
  std::vector<std::uint32_t> parent_, frag_of_;
  std::vector<Fragment> frags_;
  std::vector<std::vector<std::uint32_t>> frag_buckets_;  // by hash % size
  struct TrieMap;
  std::vector<std::pair<std::uint64_t, std::uint32_t>> trie_;  // open addressing: key (seq<<32|frag) -> child
  std::size_t trie_used_ = 0;
  std::int64_t stream_bytes_ = 0;
  struct ClassMemo {  // add_classes' last stage: its classes and fragment per pair of classes
    bool valid = false;
    StageSpec stage;
    std::vector<std::uint32_t> row_class, col_class, table;
  };
  ClassMemo memo_;
};

// Global <-> local column of a region (local 0 = the side away from the residual column).
inline std::int32_t global_x(const Region& r, std::int32_t i) { return r.mirrored ? r.rect.x0 + r.rect.w - 1 - i : r.rect.x0 + i; }
inline std::int32_t residual_x(const Region& r) { return global_x(r, r.rect.w - 1); }

std::int64_t split(std::int64_t n, std::int64_t parts, std::int64_t k);

// SRAM figures saturate at 1 GiB per part, so SramUse::total() (four parts) cannot wrap around and an absurd
// mapping is refused as too big instead of looking small.
inline constexpr std::uint32_t kSramSaturate = 1u << 30;
inline void sat_add(std::uint32_t& a, std::int64_t b) {
  a = std::uint32_t(std::min<std::int64_t>(std::int64_t(a) + std::max<std::int64_t>(b, 0), kSramSaturate));
}  // balanced: n/parts, +1 for the first n%parts

// The expert width a column streams for a step of `tokens` tokens (--weights stream): its slice `width` of each of
// the experts they route to, E (1 - (1 - k/E)^tokens) expected of `experts` E when each token picks k (routing
// uniform and independent across tokens), rounded to whole weights: exactly k x width for one token, at most
// min(E, tokens x k) x width.
std::int64_t streamed_expert_width(std::int64_t width, std::int64_t experts, std::int64_t k, std::int64_t tokens);

}  // namespace wafer::mapper::detail
