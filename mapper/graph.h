#pragma once
// The layer graph IR of one decode step (batch B, context C): what is computed, before any partition.
// Each node names its operator kind, its LLMServingSim-style name (the `op` of the firmware breakdown), the
// stage it belongs to (embedding, layer i, head), and its sizes. GEMV nodes carry K (inputs) and N
// (outputs); attention nodes carry the context; weights are counted in parameters.
#include <cstdint>
#include <string>
#include <vector>

#include "mapper/model_config.h"

namespace wafer::mapper {

enum class NodeKind : std::uint8_t {
  EmbeddingLookup,  // one row of the vocab x hidden table per sequence
  RmsNorm,          // sum of squares (a reduction), rsqrt, scale by the weight vector
  Gemv,             // y[N] = W[N x K] x[K] (+ bias), per sequence
  Rope,             // rotary embedding of q and k
  KvAppend,         // write the new k, v at position C-1 of the cache
  AttnScores,       // s = q . K^T over the context, per query head (GQA: group query heads share a KV head)
  SoftmaxMax,       // max over the context (a reduction)
  SoftmaxExpSum,    // exp(s - max) and its sum (a reduction)
  SoftmaxScale,     // p = exp / sum
  AttnValues,       // o = p . V over the context
  ResidualAdd,      // x += y
  Silu,             // SiLU(gate)
  Mul,              // SiLU(gate) * up; MoE: routing weight * expert output
  Router,           // MoE router GEMV (hidden -> experts) and top-k selection
  Argmax,           // greedy sampling over the vocabulary
};
const char* to_string(NodeKind k);

struct Node {
  NodeKind kind = NodeKind::Gemv;
  std::string name;     // operator name for the breakdown: embedding, layernorm, qkv_proj, rotary_emb, attention,
                        // o_proj, gate_up_proj, act_fn, down_proj, moe_router, final_layernorm, lm_head, sampler
  std::string stage;    // "embedding", "layer 3", "head"
  std::int64_t k = 0;   // inputs per sequence (GEMV, reductions)
  std::int64_t n = 0;   // outputs per sequence
  std::int64_t context = 0;    // attention: positions attended
  std::int64_t heads = 0;      // attention: query heads (kv heads in `kv_heads`)
  std::int64_t kv_heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t repeat = 1;     // MoE experts computed per token (top-k) for expert GEMVs
  std::int64_t parameters = 0; // weights this node holds (all experts for MoE)
  std::int64_t held = 0;       // weights the wafer stores for it: its parameters, and a tied LM head's table again
  std::int64_t kv_values = 0;  // values of the KV cache it keeps (KvAppend: 2 kv_dim x context x batch)
  std::int64_t macs = 0;       // multiply-accumulates per decode step (all sequences)
};

struct LayerGraph {
  std::int64_t batch = 1, context = 1;
  std::vector<Node> nodes;           // in data-flow order
  std::vector<std::string> stages;   // "embedding", "layer 0", ..., "head"
  std::int64_t parameters() const;   // sum over nodes (tied embeddings counted once)
  // What one stage stores: weights (held parameters) and KV-cache values; the mapper sizes stages by it.
  std::int64_t stage_held(const std::string& stage) const;
  std::int64_t stage_kv_values(const std::string& stage) const;
  std::int64_t macs() const;
};

// Builds the graph; validates batch >= 1 and 1 <= context (context beyond max_position_embeddings is the
// caller's decision: map_model refuses it).
LayerGraph build_graph(const ModelConfig& model, std::int64_t batch, std::int64_t context);

}  // namespace wafer::mapper
