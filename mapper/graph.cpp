#include "mapper/graph.h"

#include <fmt/format.h>

#include "hw/error.h"

namespace wafer::mapper {

const char* to_string(NodeKind k) {
  switch (k) {
    case NodeKind::EmbeddingLookup: return "embedding_lookup";
    case NodeKind::RmsNorm: return "rms_norm";
    case NodeKind::Gemv: return "gemv";
    case NodeKind::Rope: return "rope";
    case NodeKind::KvAppend: return "kv_append";
    case NodeKind::AttnScores: return "attn_scores";
    case NodeKind::SoftmaxMax: return "softmax_max";
    case NodeKind::SoftmaxExpSum: return "softmax_exp_sum";
    case NodeKind::SoftmaxScale: return "softmax_scale";
    case NodeKind::AttnValues: return "attn_values";
    case NodeKind::ResidualAdd: return "residual_add";
    case NodeKind::Silu: return "silu";
    case NodeKind::Mul: return "mul";
    case NodeKind::Router: return "router";
    case NodeKind::Argmax: return "argmax";
  }
  return "?";
}

std::int64_t LayerGraph::parameters() const {
  std::int64_t s = 0;
  for (const Node& n : nodes) s += n.parameters;
  return s;
}
std::int64_t LayerGraph::stage_held(const std::string& stage) const {
  std::int64_t s = 0;
  for (const Node& n : nodes)
    if (n.stage == stage) s += n.held;
  return s;
}
std::int64_t LayerGraph::stage_kv_values(const std::string& stage) const {
  std::int64_t s = 0;
  for (const Node& n : nodes)
    if (n.stage == stage) s += n.kv_values;
  return s;
}
std::int64_t LayerGraph::macs() const {
  std::int64_t s = 0;
  for (const Node& n : nodes) s += n.macs;
  return s;
}

LayerGraph build_graph(const ModelConfig& m, std::int64_t batch, std::int64_t context) {
  if (batch < 1) throw hw::InputError(fmt::format("batch = {}: at least one sequence is needed", batch));
  if (context < 1) throw hw::InputError(fmt::format("context = {}: at least one position is needed", context));
  LayerGraph g;
  g.batch = batch;
  g.context = context;
  const std::int64_t H = m.hidden, B = batch;
  auto add = [&](NodeKind kind, std::string name, const std::string& stage, std::int64_t k, std::int64_t n,
                 std::int64_t params, std::int64_t macs) -> Node& {
    Node nd;
    nd.kind = kind, nd.name = std::move(name), nd.stage = stage, nd.k = k, nd.n = n, nd.parameters = params;
    nd.held = params;
    nd.macs = macs;
    g.nodes.push_back(nd);
    return g.nodes.back();
  };
  auto gemv = [&](std::string name, const std::string& stage, std::int64_t k, std::int64_t n, bool bias,
                  std::int64_t repeat, std::int64_t copies) -> Node& {
    Node& nd = add(NodeKind::Gemv, std::move(name), stage, k, n, copies * (k * n + (bias ? n : 0)), repeat * k * n * B);
    nd.repeat = repeat;
    return nd;
  };

  g.stages.push_back("embedding");
  add(NodeKind::EmbeddingLookup, "embedding", "embedding", 1, H, m.vocab * H, 0);
  for (std::int64_t l = 0; l < m.layers; ++l) {
    std::string st = fmt::format("layer {}", l);
    g.stages.push_back(st);
    add(NodeKind::RmsNorm, "layernorm", st, H, H, H, H * B);
    gemv("qkv_proj", st, H, m.q_dim() + 2 * m.kv_dim(), m.qkv_bias, 1, 1);
    if (m.qk_norm)  // (Qwen3's q_norm and k_norm, run in the rotary task: counted as rotary_emb)
      add(NodeKind::RmsNorm, "rotary_emb", st, m.head_dim, m.q_dim() + m.kv_dim(), 2 * m.head_dim,
          (m.q_dim() + m.kv_dim()) * B);
    add(NodeKind::Rope, "rotary_emb", st, m.q_dim() + m.kv_dim(), m.q_dim() + m.kv_dim(), 0, 0);
    add(NodeKind::KvAppend, "rotary_emb", st, 2 * m.kv_dim(), 2 * m.kv_dim(), 0, 0).kv_values = 2 * m.kv_dim() * context * B;
    auto attn = [&](NodeKind kind, std::int64_t macs) -> Node& {
      Node& nd = add(kind, "attention", st, m.head_dim, context, 0, macs);
      nd.context = context, nd.heads = m.heads, nd.kv_heads = m.kv_heads, nd.head_dim = m.head_dim;
      return nd;
    };
    attn(NodeKind::AttnScores, context * m.q_dim() * B);
    attn(NodeKind::SoftmaxMax, 0);
    attn(NodeKind::SoftmaxExpSum, 0);
    attn(NodeKind::SoftmaxScale, 0);
    attn(NodeKind::AttnValues, context * m.q_dim() * B);
    gemv("o_proj", st, m.q_dim(), H, false, 1, 1);
    add(NodeKind::ResidualAdd, "o_proj", st, H, H, 0, 0);
    add(NodeKind::RmsNorm, "layernorm", st, H, H, H, H * B);
    std::int64_t k = 1, copies = 1;
    const std::int64_t S = m.moe() ? m.shared_intermediate : 0;  // (Qwen-MoE's shared expert; its gate beside the router)
    if (m.moe()) {
      const std::int64_t logits = m.experts + (S > 0 ? 1 : 0);
      add(NodeKind::Router, "moe_router", st, H, logits, H * logits, H * logits * B);
      k = m.experts_per_tok, copies = m.experts;
    }
    gemv("gate_up_proj", st, H, 2 * m.intermediate, false, k, copies);
    add(NodeKind::Silu, "act_fn", st, m.intermediate, m.intermediate, 0, 0).repeat = k;
    add(NodeKind::Mul, "act_fn", st, m.intermediate, m.intermediate, 0, 0).repeat = k;
    gemv("down_proj", st, m.intermediate, H, false, k, copies);
    if (S > 0) {
      gemv("gate_up_proj", st, H, 2 * S, false, 1, 1);
      add(NodeKind::Silu, "act_fn", st, S, S, 0, 0);
      add(NodeKind::Mul, "act_fn", st, S, S, 0, 0);
      gemv("down_proj", st, S, H, false, 1, 1);
    }
    add(NodeKind::ResidualAdd, "down_proj", st, H, H, 0, 0);
  }
  g.stages.push_back("head");
  add(NodeKind::RmsNorm, "final_layernorm", "head", H, H, H, H * B);
  // A tied LM head shares the embedding's parameters, but the wafer holds the table a second time, in the
  // LM head's layout.
  gemv("lm_head", "head", H, m.vocab, false, 1, m.tie_embeddings ? 0 : 1).held = H * m.vocab;
  add(NodeKind::Argmax, "sampler", "head", m.vocab, 1, 0, 0);
  return g;
}

}  // namespace wafer::mapper
