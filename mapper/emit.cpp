#include "mapper/emit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>

#include "hw/error.h"
#include "mapper/mapper.h"
#include "mapper/meshgemv.h"

namespace wafer::mapper::detail {

using firmware::Dest;
using firmware::Op;
using firmware::OpKind;
using firmware::Task;

const std::vector<std::string>& op_names() {
  static const std::vector<std::string> names = {
      "embedding", "layernorm", "qkv_proj", "rotary_emb", "attention", "o_proj", "moe_router", "gate_up_proj",
      "act_fn", "down_proj", "egress", "final_layernorm", "lm_head", "sampler", "gemv", "rms_norm"};
  return names;
}

std::int64_t split(std::int64_t n, std::int64_t parts, std::int64_t k) {
  return n / parts + (k < n % parts ? 1 : 0);
}

FragmentBuilder::Ix FragmentBuilder::task(firmware::Color c, std::int64_t arrivals, Task::Start st) {
  Task t;
  t.trigger = c;
  t.arrivals = std::uint16_t(std::clamp<std::int64_t>(arrivals, 1, 0xFFFF));
  t.start = st;
  t.layer = layer_;
  t.op = op_;
  f_.tasks.push_back(std::move(t));
  return f_.tasks.size() - 1;
}

std::uint32_t FragmentBuilder::u32(std::int64_t v) {
  if (v > 0xFFFFFFFFll)
    throw hw::InputError(fmt::format("one tile would process {} elements in one operation (at most 4294967295): "
                                     "the region is far too small for the model; use more tiles or a smaller batch",
                                     v));
  return std::uint32_t(v);
}

void FragmentBuilder::op(Ix t, OpKind k, std::int64_t elements) {
  if (elements > 0) f_.tasks[t].ops.push_back({k, u32(elements * B_)});
}

void FragmentBuilder::after(Ix t, Ix from) {
  if (from >= t || t - from > 0xFFFF) throw std::logic_error("emit: a task reads the output of one not before it");
  f_.tasks[t].after = std::uint16_t(t - from);
}

void FragmentBuilder::matvec(Ix t, std::int64_t K, std::int64_t N) {
  if (K > 0 && N > 0) f_.tasks[t].ops.push_back({OpKind::Fmac, u32(K * N * B_), u32(K * B_)});
}

std::int64_t streamed_expert_width(std::int64_t width, std::int64_t experts, std::int64_t k, std::int64_t tokens) {
  if (tokens <= 1 || k >= experts) return width * k;
  const double distinct = double(experts) * (1.0 - std::pow(1.0 - double(k) / double(experts), double(tokens)));
  const std::int64_t most = std::min(experts, tokens * k);  // (tokens * k: both at most 2^20 or so, checked upstream)
  return std::clamp<std::int64_t>(std::llround(double(width) * distinct), width * k, width * most);
}

void FragmentBuilder::acts(std::int64_t values) { sat_add(f_.sram.activations, values * B_ * kActivationBytes); }

Fragment FragmentBuilder::finish() {
  f_.code = program_bytes(firmware::Program{f_.tasks, {}});
  return std::move(f_);
}

namespace {

// Attention columns: S = min(w, kv_heads) segments of adjacent columns; segment s holds split(kv, S, s) KV
// heads and their head_dim-wide slices of K and V spread over its columns.
struct AttnCol {
  std::int64_t seg_first = 0, seg_last = 0, segw = 1, kvh = 0, dims = 0;
};
AttnCol attn_col(std::int64_t w, std::int64_t kv, std::int64_t hd, std::int64_t i) {
  std::int64_t S = std::min(w, kv);
  std::int64_t start = 0;
  for (std::int64_t s = 0; s < S; ++s) {
    std::int64_t segw = split(w, S, s);
    if (i < start + segw) {
      AttnCol a;
      a.segw = segw, a.kvh = split(kv, S, s);
      a.seg_first = i == start, a.seg_last = i == start + segw - 1;
      a.dims = split(a.kvh * hd, segw, i - start);
      return a;
    }
    start += segw;
  }
  return {};
}

bool has_attention(StageKind k) { return k == StageKind::Layer || k == StageKind::Attention; }

}  // namespace

RowKey row_key(const StageSpec& s, const EmitParams& p, std::int32_t r) {
  const std::int64_t h = s.region.rect.h;
  RowKey k;
  k.v[0] = r == 0, k.v[1] = r == h - 1;
  std::int64_t dim = (s.kind == StageKind::Gemv || s.kind == StageKind::Norm) ? s.k : p.model->hidden;
  k.v[2] = split(dim, h, r);
  if (has_attention(s.kind) && !p.step.empty()) {
    // A mixed step: each sequence's share of this row, as below for a uniform step.
    for (const auto& q : p.step) {
      const std::int64_t pos = split(q.context, h, r);
      const std::int64_t start = r * (q.context / h) + std::min<std::int64_t>(r, q.context % h);
      const std::int64_t first = q.context - q.tokens + 1 - start;
      k.seq.push_back(pos);
      k.seq.push_back(q.tokens > 1 ? std::max(std::min(first, pos), -q.tokens) : 0);
    }
  } else if (has_attention(s.kind)) {
    k.v[3] = split(p.context, h, r);
    if (p.tokens > 1) {
      // Causal attention of a T-token step: token t attends positions [0, C - T + 1 + t); this row holds
      // [start, start + pos). v[11] = what token 0 attends of this row before clamping (pos: every token
      // attends all of it). A decode step (T = 1) leaves it 0, so its keys are as they always were.
      const std::int64_t start = r * (p.context / h) + std::min<std::int64_t>(r, p.context % h);
      const std::int64_t first = p.context - p.tokens + 1 - start;
      k.v[11] = std::max(std::min(first, k.v[3]), -p.tokens);
    }
  }
  if (has_attention(s.kind)) k.v[12] = split(p.kv_capacity, h, r);  // (0 without a reserve)
  k.v[4] = r < std::int64_t(s.in_arrivals.size()) ? s.in_arrivals[std::size_t(r)] : 1;
  if (s.out == OutKind::Transfer && r < std::int64_t(s.out_dest.size())) {
    const Dest& d = s.out_dest[std::size_t(r)];
    k.v[5] = std::int64_t(d.kind), k.v[6] = d.dx, k.v[7] = d.dy, k.v[8] = d.span;
    k.v[10] = r < std::int64_t(s.out_color.size()) ? s.out_color[std::size_t(r)] : color::kResIn;
  }
  if (s.kind == StageKind::Norm) k.v[9] = h - 1 - r;
  return k;
}

ColKey col_key(const StageSpec& s, const EmitParams& p, std::int32_t i) {
  const std::int64_t w = s.region.rect.w;
  const ModelConfig& m = *p.model;
  ColKey k;
  k.v[0] = i == 0, k.v[1] = i == w - 1;
  if (has_attention(s.kind)) {
    AttnCol a = attn_col(w, m.kv_heads, m.head_dim, i);
    k.v[2] = a.seg_first, k.v[3] = a.seg_last, k.v[4] = a.segw, k.v[5] = a.kvh, k.v[6] = a.dims;
  }
  if (s.kind == StageKind::Layer) k.v[7] = split(m.intermediate, w, i);
  if (s.kind == StageKind::Layer && m.moe()) k.v[11] = split(m.shared_intermediate, w, i);  // (0: no shared expert)
  if (s.kind == StageKind::Embedding || s.kind == StageKind::Head) k.v[8] = split(m.vocab, w, i);
  if (s.kind == StageKind::Gemv) k.v[9] = split(s.n, w, i);
  if (s.kind == StageKind::Gemv || s.kind == StageKind::Attention) k.v[10] = w - 1 - i;
  return k;
}

namespace {

constexpr std::int64_t kStreamBuffer = 4096;  // bytes: double-buffered chunks of streamed weights per tile

class Builder : FragmentBuilder {
 public:
  Builder(const StageSpec& s, const EmitParams& p, const RowKey& rk, const ColKey& ck)
      : FragmentBuilder(s.layer, p.batch, s.kind == StageKind::Head ? 1 : p.tokens), s_(s), p_(p), h_(s.region.rect.h),
        w_(s.region.rect.w) {
    top_ = rk.v[0], bot_ = rk.v[1], Hr_ = rk.v[2], pos_ = rk.v[3], arr_ = rk.v[4], causal_ = rk.v[11];
    reserve_ = rk.v[12];
    out_.kind = Dest::Kind(rk.v[5]), out_.dx = std::int32_t(rk.v[6]), out_.dy = std::int32_t(rk.v[7]);
    out_.span = std::int32_t(rk.v[8]), collect_dy_ = rk.v[9];
    out_color_ = firmware::Color(rk.v[10]);
    first_ = ck.v[0], res_ = ck.v[1], seg_first_ = ck.v[2], seg_last_ = ck.v[3], segw_ = ck.v[4];
    kvh_ = ck.v[5], dims_ = ck.v[6], Ii_ = ck.v[7], Vi_ = ck.v[8], Ni_ = ck.v[9], collect_dx_ = ck.v[10];
    Si_ = ck.v[11];
    if (!p.step.empty()) {  // a mixed step: every sequence's new tokens go through the per-token work
      seq_ = rk.seq;
      S_ = p.sequences();
      B_ = s.kind == StageKind::Head ? S_ : p.token_vectors();
      T_ = 0;
    }
  }

  Fragment build() {
    switch (s_.kind) {
      case StageKind::Embedding: embedding(); break;
      case StageKind::Layer: layer(); break;
      case StageKind::Head: head(); break;
      case StageKind::Gemv: gemv(); break;
      case StageKind::Norm: norm_kernel(); break;
      case StageKind::Attention: attention_kernel(); break;
    }
    if (streamed_weights_ > 0) sat_add(f_.sram.activations, std::min(streamed_weights_, kStreamBuffer));
    return finish();
  }

 private:
  // ---- primitives ------------------------------------------------------------------------------------
  // Weight bytes streamed in before an operator (--weights stream), not multiplied by the batch.
  void stream_in(Ix t, std::int64_t params) {
    if (!s_.streamed || params <= 0) return;
    std::int64_t bytes = params * p_.weight_bytes;
    f_.tasks[t].ops.push_back({OpKind::StreamIn, u32(bytes)});
    streamed_weights_ = std::max(streamed_weights_, bytes);
    f_.stream_bytes += bytes;
  }
  void weights(std::int64_t params) {
    if (!s_.streamed) sat_add(f_.sram.weights, params * p_.weight_bytes);
  }
  void norm_weights(std::int64_t params) { sat_add(f_.sram.weights, params * p_.weight_bytes); }  // stay resident
  // Mirrors a local-frame destination into the global frame.
  Dest local(Dest d) const {
    if (!s_.region.mirrored) return d;
    if (d.kind == Dest::Kind::Row) d.dx = -(d.dx + d.span - 1);
    else d.dx = -d.dx;
    return d;
  }
  // `starts`: the first send of a reduce chain or gather (a multicast always starts a broadcast).
  void send_global(Ix t, firmware::Color c, std::int64_t values, Dest d, bool starts = false) {
    std::int64_t bytes = values * B_ * kActivationBytes;
    std::int64_t wl = std::max<std::int64_t>(1, (bytes + p_.spec->wavelet_bytes - 1) / p_.spec->wavelet_bytes);
    f_.tasks[t].sends.push_back({c, u32(wl), d, starts || d.kind != Dest::Kind::Tile});
  }
  void send(Ix t, firmware::Color c, std::int64_t values, Dest d, bool starts = false) {
    send_global(t, c, values, local(d), starts);
  }
  static Dest tile(std::int32_t dx, std::int32_t dy) { return {Dest::Kind::Tile, dx, dy, 1}; }
  static Dest self() { return tile(0, 0); }
  Dest row_all() const { return w_ == 1 ? self() : Dest{Dest::Kind::Row, -std::int32_t(w_ - 1), 0, std::int32_t(w_)}; }
  Dest row_seg() const {
    return segw_ == 1 ? self() : Dest{Dest::Kind::Row, -std::int32_t(segw_ - 1), 0, std::int32_t(segw_)};
  }
  Dest col_all() const { return h_ == 1 ? self() : Dest{Dest::Kind::Column, 0, -std::int32_t(h_ - 1), std::int32_t(h_)}; }

  // A scalar-ish reduction down this column, its result multicast back up (kBcast) to every row.
  void col_chain(Ix starter, std::int64_t values, OpKind red, const std::vector<std::pair<OpKind, std::int64_t>>& end) {
    auto finish = [&](Ix t) {
      for (const auto& [k, n] : end) op(t, k, n);
      send(t, color::kBcast, values, col_all());
    };
    if (h_ == 1) return finish(starter);
    if (top_) return send(starter, color::kChain, values, tile(0, 1), true);
    Ix t = task(color::kChain, 1, bot_ ? Task::Start::Complete : Task::Start::Stream);
    after(t, starter);
    op(t, red, values);
    if (!bot_) send(t, color::kChain, values, tile(0, 1));
    else finish(t);
  }
  // Partial sums reduced down this column (reduce-and-forward); `end` runs on the bottom tile's task.
  void col_reduce(Ix starter, std::int64_t values, const std::function<void(Ix)>& end) {
    if (h_ == 1) return end(starter);
    if (top_) return send(starter, color::kColPs, values, tile(0, 1), true);
    Ix t = task(color::kColPs, 1, bot_ ? Task::Start::Complete : Task::Start::Stream);
    after(t, starter);
    op(t, OpKind::Add, values);
    if (!bot_) send(t, color::kColPs, values, tile(0, 1));
    else end(t);
  }
  // Partial sums reduced along a row segment toward its residual-side end.
  void row_reduce(Ix starter, std::int64_t values, bool first, bool last, std::int64_t n,
                  const std::function<void(Ix)>& end) {
    if (n == 1) return end(starter);
    if (first) return send(starter, color::kRowPs, values, tile(1, 0), true);
    Ix t = task(color::kRowPs, 1, last ? Task::Start::Complete : Task::Start::Stream);
    after(t, starter);
    op(t, OpKind::Add, values);
    if (!last) send(t, color::kRowPs, values, tile(1, 0));
    else end(t);
  }

  // ---- sections ----------------------------------------------------------------------------------------
  // RMSNorm at the residual column: sum of squares, column reduction, rsqrt, broadcast, scale.
  // Returns the task holding the normalised slice (it still has to send it on).
  Ix rms_norm(Ix starter) {
    op(starter, OpKind::Fmac, Hr_);
    col_chain(starter, 1, OpKind::Add, {{OpKind::Rsqrt, 1}});
    Ix t = task(color::kBcast);
    op(t, OpKind::Mul, Hr_);
    op(t, OpKind::Mul, Hr_);
    norm_weights(Hr_);
    return t;
  }
  // What the residual tile does with a stage's output.
  void output(Ix t) {
    switch (s_.out) {
      case OutKind::Transfer: {
        const std::int64_t keep = B_;
        if (s_.out_last_token) B_ = S_;  // the head reads each sequence's last token only
        send_global(t, out_color_, Hr_, out_);
        B_ = keep;
        break;
      }
      case OutKind::Gather: {
        const std::int64_t H = p_.model->hidden;
        if (h_ == 1) return send(t, color::kDone, H, self());
        if (top_) return send(t, color::kGather, H, tile(0, 1), true);
        op_ = kOpEgress;
        Ix g = task(color::kGather, 1, bot_ ? Task::Start::Complete : Task::Start::Stream);
        after(g, t);  // (its own slice, with the ones above)
        send(g, bot_ ? color::kDone : color::kGather, H, bot_ ? self() : tile(0, 1));
        break;
      }
      default: break;
    }
  }
  // Scores, softmax (max and sum reductions down the segment-end column), weighted sum of V.
  // `end` gets the bottom tile's task holding this column's slice of the attention output.
  void attention(const std::function<void(Ix)>& end) {
    const ModelConfig& m = *p_.model;
    const std::int64_t G = m.group();
    op_ = kOpAttention;
    // Positions of this row each token attends (causal): (count, tokens with that count), in token order.
    // A decode step: one token attending all pos_ positions. P = (token, position) pairs on this row, per
    // sequence (times `seqs`, the sequences alike); a mixed step counts every sequence's pairs in P (seqs = 1)
    // and its groups merge the tokens of all sequences that attend as many positions of the row.
    std::vector<std::pair<std::int64_t, std::int64_t>> groups;
    std::int64_t P = 0, seqs = S_, kv_pos = pos_ * S_;  // kv_pos: positions of the KV caches this row holds
    if (seq_.empty()) {
      for (std::int64_t t = 0; t < T_; ++t) {
        const std::int64_t c = T_ == 1 ? pos_ : std::clamp<std::int64_t>(causal_ + t, 0, pos_);
        P += c;
        if (!groups.empty() && groups.back().first == c) ++groups.back().second;
        else groups.push_back({c, 1});
      }
    } else {
      seqs = 1, kv_pos = 0;
      std::map<std::int64_t, std::size_t> group_of;  // count -> its group, groups in order of first appearance
      for (std::size_t j = 0; j < p_.step.size(); ++j) {
        const std::int64_t T = p_.step[j].tokens, pos = seq_[2 * j], causal = seq_[2 * j + 1];
        kv_pos += pos;
        for (std::int64_t t = 0; t < T; ++t) {
          const std::int64_t c = T == 1 ? pos : std::clamp<std::int64_t>(causal + t, 0, pos);
          P += c;
          const auto [g, added] = group_of.try_emplace(c, groups.size());
          if (added) groups.push_back({c, 1});
          else ++groups[g->second].second;
        }
      }
    }
    // (a deployment's reserve, MapOptions::kv_capacity: the row keeps room for its share of it)
    sat_add(f_.sram.kv_cache, 2 * std::max(kv_pos, reserve_) * dims_ * kActivationBytes);
    const std::int64_t tok = B_;  // per-token multiplier; the pairs below already count the tokens
    const std::int64_t sv = P * G * kvh_;  // scores of this row's pairs, for the segment's query heads
    sat_add(f_.sram.activations, (sv * seqs + G * dims_ * tok) * kActivationBytes);
    Ix t = task(color::kColIn);
    B_ = seqs;
    for (const auto& [c, n] : groups) matvec(t, G * dims_ * n, c);  // per token, query head, dim: q x a K column
    row_reduce(t, sv, seg_first_, seg_last_, segw_, [&](Ix e) {
      B_ = seqs;
      op(e, OpKind::Max, sv);
      B_ = tok;
      col_chain(e, G * kvh_, OpKind::Max, {});  // per token and query head
      Ix t2 = task(color::kBcast);
      B_ = seqs;
      op(t2, OpKind::Exp, sv);
      op(t2, OpKind::Sum, sv);
      B_ = tok;
      col_chain(t2, G * kvh_, OpKind::Add, {{OpKind::Mul, G * kvh_}});
      Ix t3 = task(color::kBcast);
      B_ = seqs;
      op(t3, OpKind::Mul, sv);
      send(t3, color::kRowIn, sv, row_seg());
    });
    B_ = seqs;
    Ix pv = task(color::kRowIn);
    matvec(pv, G * P, dims_);  // per pair and query head: its weight times that V row
    B_ = tok;
    col_reduce(pv, G * dims_, end);
  }
  // q/k rotary embedding and the KV-cache append on the bottom row, then q up the column to the scores.
  void rope_and_append(Ix t) {
    const std::int64_t G = p_.model->group();
    if (p_.model->qk_norm) {
      // Qwen3's RMSNorm of each query and key head over its dims (q_norm, k_norm): the sums of squares of this
      // column's dims, reduced along the segment (a head's dims may span its columns), rsqrt at its end, the scales
      // multicast back along it; each column then scales its dims and applies the norm weights.
      const std::int64_t heads = (G + 1) * kvh_;
      op(t, OpKind::Fmac, (G + 1) * dims_);
      row_reduce(t, heads, seg_first_, seg_last_, segw_, [&](Ix e) {
        op(e, OpKind::Rsqrt, heads);
        send(e, color::kRowIn, heads, row_seg());
      });
      t = task(color::kRowIn);
      op(t, OpKind::Mul, (G + 1) * dims_);
      op(t, OpKind::Mul, (G + 1) * dims_);
      norm_weights(2 * std::min(dims_, p_.model->head_dim));
    }
    op(t, OpKind::Rope, (G + 1) * dims_);
    op(t, OpKind::Copy, 2 * dims_);
    send(t, color::kColIn, G * dims_, col_all());
  }

  void embedding() {
    op_ = kOpEmbedding;
    if (s_.streamed) {
      // Streamed table: MemoryX delivers each of the step's tokens' rows, slice by slice, to the residual column
      // (a row per token vector: tokens that share an id are not told apart, the ids being data).
      if (!res_) return;
      acts(Hr_);
      Ix t = task(color::kToken);
      stream_in(t, Hr_ * p_.token_vectors());
      op(t, OpKind::Copy, Hr_);
      return output(t);
    }
    if (!s_.table_in_head) weights(Vi_ * Hr_);  // (else the head's block of the table, on this tile, is read)
    acts(Hr_);
    if (res_) {
      Ix t = task(color::kToken);
      send(t, color::kRowIn, 2, row_all());  // a 32-bit token id per sequence
    }
    Ix t = task(color::kRowIn);
    op(t, OpKind::Copy, Hr_);  // the looked-up row's slice (charged to every tile: the hit is data-dependent)
    row_reduce(t, Hr_, first_, res_, w_, [&](Ix e) { output(e); });
  }

  void layer() {
    const ModelConfig& m = *p_.model;
    const std::int64_t G = m.group(), Nq = (G + 2) * dims_;
    const std::int64_t k = m.moe() ? m.experts_per_tok : 1, copies = m.moe() ? m.experts : 1;
    // Qwen-MoE's shared expert: its gate's logit computed with the router's, its sigmoid sent with the chosen
    // experts; its gate and up beside the routed experts' on every column (its own width's slice, Si_), scaled by
    // the gate where the routed ones are by their weights, and its down in the same reduction.
    const std::int64_t sh = m.moe() && m.shared_intermediate > 0 ? 1 : 0;
    // Streamed weights (--weights stream): the experts the step's N tokens route to, each streamed once. A token
    // picks k of E; under routing uniform and independent across tokens (what the load-balancing loss trains
    // towards) E (1 - (1 - k/E)^N) distinct experts are expected: k for one token, at most min(E, N k). Their
    // columns' slices, in whole weights (docs/streaming.md).
    const std::int64_t streamed_width = m.moe() ? detail::streamed_expert_width(Ii_, m.experts, k, p_.token_vectors()) : Ii_;
    acts(2 * Hr_ + Nq + 2 * (Ii_ * k + Si_));
    // Input RMSNorm on the residual column, then x along every row.
    if (res_) {
      op_ = kOpLayernorm;
      Ix t = rms_norm(task(color::kResIn, arr_));
      send(t, color::kRowIn, Hr_, row_all());
    }
    // QKV: rows split the hidden dimension, columns the (q, k, v) outputs of their attention slice.
    op_ = kOpQkv;
    Ix t = task(color::kRowIn);
    stream_in(t, Hr_ * Nq);
    weights(Hr_ * Nq);
    if (bot_ && m.qkv_bias) norm_weights(Nq);  // (Qwen2's bias: resident, as the norm weights are)
    matvec(t, Hr_, G * dims_);  // q, k and v: one GEMV per weight matrix
    matvec(t, Hr_, dims_);
    matvec(t, Hr_, dims_);
    col_reduce(t, Nq, [&](Ix e) {
      if (m.qkv_bias) op(e, OpKind::Add, Nq);
      send(e, color::kLocal, 1, self());
    });
    if (bot_) {
      op_ = kOpRotary;
      rope_and_append(task(color::kLocal));
    }
    attention([&](Ix e) { send(e, color::kColIn, G * dims_, col_all()); });
    // Output projection: columns split the attention output, rows the hidden outputs; reduced along rows.
    op_ = kOpOproj;
    t = task(color::kColIn);
    stream_in(t, G * dims_ * Hr_);
    weights(G * dims_ * Hr_);
    matvec(t, G * dims_, Hr_);
    row_reduce(t, Hr_, first_, res_, w_, [&](Ix e) {
      op(e, OpKind::Add, Hr_);  // residual
      send(e, color::kLocal, 1, self());
    });
    if (res_) {
      op_ = kOpLayernorm;
      Ix n = rms_norm(task(color::kLocal));
      if (m.moe()) {
        send(n, color::kLocal, 1, self());
        op_ = kOpRouter;
        Ix r = task(color::kLocal);
        stream_in(r, Hr_ * (m.experts + sh));
        weights(Hr_ * (m.experts + sh));
        matvec(r, Hr_, m.experts + sh);
        // (the shared expert's gate, sigmoid(g) = silu(g) / g: costed as a SiLU of its one value)
        col_chain(r, m.experts + sh, OpKind::Add,
                  {{OpKind::Max, m.experts * m.experts_per_tok}, {OpKind::Exp, m.experts}, {OpKind::Sum, m.experts},
                   {OpKind::Silu, sh}});
        n = task(color::kBcast);
        // x slice + chosen experts and weights (+ the shared expert's gate)
        send(n, color::kRowIn, Hr_ + 2 * m.experts_per_tok + sh, row_all());
      } else {
        send(n, color::kRowIn, Hr_, row_all());
      }
    }
    // Gated MLP: gate and up side by side per column (so SiLU * up is local), then down reduced along rows.
    op_ = kOpGateUp;
    t = task(color::kRowIn);
    stream_in(t, Hr_ * 2 * (streamed_width + Si_));
    weights(Hr_ * 2 * (Ii_ * copies + Si_));
    matvec(t, 2 * k * Hr_, Ii_);  // gate and up of each active expert: 2k GEMVs of Hr_ x Ii_
    matvec(t, 2 * Hr_, Si_);      // (and of the shared expert)
    col_reduce(t, 2 * (Ii_ * k + Si_), [&](Ix e) { send(e, color::kLocal, 1, self()); });
    if (bot_) {
      op_ = kOpAct;
      Ix a = task(color::kLocal);
      op(a, OpKind::Silu, Ii_ * k + Si_);
      op(a, OpKind::Mul, Ii_ * k + Si_);
      if (m.moe()) op(a, OpKind::Mul, Ii_ * k + Si_);  // routing weight (the shared expert's: its gate)
      send(a, color::kColIn, Ii_ * k + Si_, col_all());
    }
    op_ = kOpDown;
    t = task(color::kColIn);
    stream_in(t, (streamed_width + Si_) * Hr_);
    weights((Ii_ * copies + Si_) * Hr_);
    matvec(t, k * Ii_ + Si_, Hr_);
    row_reduce(t, Hr_, first_, res_, w_, [&](Ix e) {
      op(e, OpKind::Add, Hr_);  // residual
      output(e);
    });
  }

  void head() {
    acts(2 * Hr_ + Vi_);
    if (res_) {
      op_ = kOpFinalNorm;
      Ix t = rms_norm(task(color::kResIn, arr_));
      send(t, color::kRowIn, Hr_, row_all());
    }
    op_ = kOpLmHead;
    Ix t = task(color::kRowIn);
    stream_in(t, Hr_ * Vi_);
    weights(Hr_ * Vi_);
    matvec(t, Hr_, Vi_);
    col_reduce(t, Vi_, [&](Ix e) { send(e, color::kLocal, 1, self()); });
    if (!bot_) return;
    op_ = kOpSampler;
    Ix a = task(color::kLocal);
    op(a, OpKind::Argmax, Vi_);
    // (value, index) pairs, two 32-bit words per sequence, reduced along the bottom row.
    if (w_ == 1) return send(a, color::kDone, 4, self());
    if (first_) return send(a, color::kArg, 4, tile(1, 0), true);
    Ix r = task(color::kArg, 1, res_ ? Task::Start::Complete : Task::Start::Stream);
    after(r, a);  // (the tile's own argmax, with the ones west of it)
    op(r, OpKind::Max, 2);
    send(r, res_ ? color::kDone : color::kArg, 4, res_ ? self() : tile(1, 0));
  }

  // Kernels for the hand-computed tests (mapper/kernels.h).
  void gemv() {
    op_ = kOpGemv;
    weights(Hr_ * Ni_);
    if (res_) {
      Ix t = task(color::kResIn, arr_);
      send(t, color::kRowIn, Hr_, row_all());
    }
    Ix t = task(color::kRowIn);
    matvec(t, Hr_, Ni_);
    col_reduce(t, Ni_, [&](Ix e) { send(e, color::kDone, Ni_, tile(std::int32_t(collect_dx_), 0)); });
  }
  void norm_kernel() {
    if (!res_) return;
    op_ = kOpRmsNorm;
    acts(Hr_);
    Ix t = rms_norm(task(color::kResIn, arr_));
    send(t, color::kDone, Hr_, tile(0, std::int32_t(collect_dy_)));
  }
  void attention_kernel() {
    const std::int64_t G = p_.model->group();
    if (bot_) {
      op_ = kOpRotary;
      rope_and_append(task(color::kLocal));
    }
    attention([&](Ix e) { send(e, color::kDone, G * dims_, tile(std::int32_t(collect_dx_), 0)); });
  }

  const StageSpec& s_;
  const EmitParams& p_;
  std::int64_t h_, w_;
  bool top_ = false, bot_ = false, first_ = false, res_ = false, seg_first_ = false, seg_last_ = false;
  std::int64_t Hr_ = 0, pos_ = 0, arr_ = 1, collect_dy_ = 0, segw_ = 1, kvh_ = 0, dims_ = 0, Ii_ = 0, Vi_ = 0;
  std::int64_t Si_ = 0;  // this column's slice of the shared expert's width (Qwen-MoE; 0: none)
  std::int64_t Ni_ = 0, collect_dx_ = 0, causal_ = 0;
  std::int64_t reserve_ = 0;       // KV positions this row reserves (RowKey::v[12])
  std::vector<std::int64_t> seq_;  // RowKey::seq (a mixed step)
  Dest out_;
  firmware::Color out_color_ = color::kResIn;
  std::int64_t streamed_weights_ = 0;
};

std::size_t hash_fragment(const Fragment& f) {
  std::size_t h = 1469598103934665603ull;
  auto mix = [&](std::uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  for (const Task& t : f.tasks) {
    mix(t.trigger), mix(t.arrivals), mix(std::uint64_t(t.start)), mix(t.layer), mix(t.op), mix(t.after);
    for (const Op& o : t.ops) mix(std::uint64_t(o.kind) << 32 | o.elements), mix(o.vectors);
    for (const auto& s : t.sends)
      mix(std::uint64_t(s.color) << 56 ^ std::uint64_t(s.wavelets) << 16 ^ std::uint64_t(s.dest.kind)),
          mix(std::uint64_t(std::uint32_t(s.dest.dx)) << 32 | std::uint32_t(s.dest.dy)),
          mix(std::uint64_t(s.dest.span) << 1 | std::uint64_t(s.collective));
  }
  mix(f.sram.weights), mix(f.sram.kv_cache), mix(f.sram.activations);
  return h;
}

}  // namespace

Fragment build_fragment(const StageSpec& s, const EmitParams& p, const RowKey& rk, const ColKey& ck) {
  return Builder(s, p, rk, ck).build();
}

namespace {
template <class Key>
struct KeyTable {
  std::vector<Key> keys;
  std::vector<std::int64_t> counts;
  std::uint32_t intern(const Key& k) {
    for (std::size_t i = 0; i < keys.size(); ++i)
      if (keys[i] == k) return ++counts[i], std::uint32_t(i);
    keys.push_back(k);
    counts.push_back(1);
    return std::uint32_t(keys.size() - 1);
  }
};
}  // namespace

RowKey reduced(const RowKey& k) {
  RowKey r = k;
  for (std::size_t i = 4; i <= 10; ++i) r.v[i] = 0;  // arrivals, hand-off, collect: residual column only
  return r;
}

namespace {
// The rows of a stage whose input a tile relays (StageSpec::relay_in), each with its relay distance k > 0:
// f(y, k). Each relay is one task on the relaying tile (Emitter::add), counted by stage_need.
template <class F>
void for_each_relay(const StageSpec& s, F&& f) {
  for (std::int32_t y = 0; y < std::int32_t(s.relay_in.size()) && y < s.region.rect.h; ++y)
    if (const std::int32_t k = s.relay_in[std::size_t(y)]; k > 0) f(y, k);
}
}  // namespace

namespace {
// The relay of stage s's input on row y, k columns from its residual column (StageSpec::relay_in): one task
// that forwards the row's slice of the input.
Fragment relay_fragment(const StageSpec& s, const EmitParams& p, std::int32_t y, std::int32_t k) {
  Fragment fr;
  firmware::Task t;
  t.trigger = color::kRelay;
  t.layer = s.layer;
  t.op = s.kind == StageKind::Head ? kOpFinalNorm : kOpLayernorm;
  const std::int64_t vectors = s.kind == StageKind::Head ? p.sequences() : p.token_vectors();
  const std::int64_t bytes = split(p.model->hidden, s.region.rect.h, y) * vectors * kActivationBytes;
  const std::uint32_t wl =
      std::uint32_t(std::max<std::int64_t>(1, (bytes + p.spec->wavelet_bytes - 1) / p.spec->wavelet_bytes));
  t.sends.push_back({color::kResIn, wl, {Dest::Kind::Tile, s.region.mirrored ? -k : k, 0, 1}});
  fr.tasks.push_back(std::move(t));
  fr.code = program_bytes(firmware::Program{fr.tasks, {}});
  return fr;
}
}  // namespace

StageNeed stage_need(const StageSpec& s, const EmitParams& p) {
  if (p.kernel == Kernel::MeshGemv) return meshgemv_need(s, p);
  KeyTable<RowKey> rows, rows_reduced;
  KeyTable<ColKey> cols;
  for (std::int32_t r = 0; r < s.region.rect.h; ++r) {
    RowKey k = row_key(s, p, r);
    rows.intern(k);
    rows_reduced.intern(reduced(k));
  }
  for (std::int32_t i = 0; i < s.region.rect.w; ++i) cols.intern(col_key(s, p, i));
  StageNeed need;
  for (std::size_t b = 0; b < cols.keys.size(); ++b) {
    const bool res = cols.keys[b].v[1] != 0;
    const KeyTable<RowKey>& rt = res ? rows : rows_reduced;
    for (std::size_t a = 0; a < rt.keys.size(); ++a) {
      Fragment f = build_fragment(s, p, rt.keys[a], cols.keys[b]);
      firmware::SramUse u = f.sram;
      sat_add(u.code, f.code);
      if (u.total() > need.worst.total()) need.worst = u;
      need.most_held = std::max(need.most_held, u.weights + u.kv_cache);
      need.most_activations = std::max(need.most_activations, u.activations);
      need.most_code = std::max(need.most_code, u.code);
      std::int64_t n = rt.counts[a] * cols.counts[b];
      need.weight_bytes += n * (s.streamed ? f.stream_bytes : std::int64_t(f.sram.weights));
      need.stream_bytes += n * f.stream_bytes;
      need.tasks += n * std::int64_t(f.tasks.size());
    }
  }
  std::uint32_t relay_code = 0;  // (and the relays of its input)
  for_each_relay(s, [&](std::int32_t y, std::int32_t k) {
    ++need.tasks;
    relay_code = std::max(relay_code, std::uint32_t(relay_fragment(s, p, y, k).code));
  });
  sat_add(need.most_code, relay_code);
  return need;
}

// ---- Emitter -------------------------------------------------------------------------------------------

Emitter::Emitter(const EmitParams& p, hw::Grid grid) : p_(p), grid_(grid), seq_(grid.size(), 0) {
  parent_.push_back(0);
  frag_of_.push_back(0);
  frag_buckets_.resize(4096);
  trie_.assign(1 << 12, {~0ull, 0});
}

std::uint32_t Emitter::intern_fragment(Fragment f) {
  auto& bucket = frag_buckets_[hash_fragment(f) % frag_buckets_.size()];
  for (std::uint32_t id : bucket)
    if (frags_[id] == f) return id;
  frags_.push_back(std::move(f));
  bucket.push_back(std::uint32_t(frags_.size() - 1));
  return std::uint32_t(frags_.size() - 1);
}

std::uint32_t Emitter::child(std::uint32_t seq, std::uint32_t frag) {
  std::uint64_t key = std::uint64_t(seq) << 32 | frag;
  std::size_t mask = trie_.size() - 1;
  std::size_t i = std::size_t((key * 0x9E3779B97F4A7C15ull) >> 20) & mask;
  while (trie_[i].first != ~0ull) {
    if (trie_[i].first == key) return trie_[i].second;
    i = (i + 1) & mask;
  }
  std::uint32_t id = std::uint32_t(parent_.size());
  parent_.push_back(seq);
  frag_of_.push_back(frag);
  trie_[i] = {key, id};
  if (++trie_used_ * 2 > trie_.size()) {  // grow
    std::vector<std::pair<std::uint64_t, std::uint32_t>> old(trie_.size() * 2, {~0ull, 0});
    old.swap(trie_);
    mask = trie_.size() - 1;
    for (const auto& e : old) {
      if (e.first == ~0ull) continue;
      std::size_t j = std::size_t((e.first * 0x9E3779B97F4A7C15ull) >> 20) & mask;
      while (trie_[j].first != ~0ull) j = (j + 1) & mask;
      trie_[j] = e;
    }
  }
  return id;
}

void Emitter::add(const StageSpec& s) {
  if (p_.kernel == Kernel::MeshGemv) return add_meshgemv(*this, s, p_);
  const hw::Rect& r = s.region.rect;
  // Rows differ mostly in what only the residual column uses (arrivals, hand-off destination): the other
  // columns are keyed on the reduced row key, so far fewer fragments are built.
  KeyTable<RowKey> rows, rows_reduced;
  KeyTable<ColKey> cols;
  std::vector<std::uint32_t> rk(std::size_t(r.h)), rk_red(std::size_t(r.h)), ck(std::size_t(r.w));
  for (std::int32_t y = 0; y < r.h; ++y) {
    RowKey k = row_key(s, p_, y);
    rk[std::size_t(y)] = rows.intern(k);
    rk_red[std::size_t(y)] = rows_reduced.intern(reduced(k));
  }
  for (std::int32_t i = 0; i < r.w; ++i) ck[std::size_t(i)] = cols.intern(col_key(s, p_, i));
  const std::size_t nc = cols.keys.size();
  constexpr std::uint32_t kUnbuilt = 0xFFFFFFFFu, kEmpty = 0xFFFFFFFEu;
  std::vector<std::uint32_t> table(rows.keys.size() * nc, kUnbuilt), table_red(rows_reduced.keys.size() * nc, kUnbuilt);
  for (std::int32_t y = 0; y < r.h; ++y) {
    Run run;
    for (std::int32_t i = 0; i < r.w; ++i) {
      const ColKey& ckey = cols.keys[ck[std::size_t(i)]];
      const bool res = ckey.v[1] != 0;
      std::uint32_t& f = res ? table[rk[std::size_t(y)] * nc + ck[std::size_t(i)]]
                             : table_red[rk_red[std::size_t(y)] * nc + ck[std::size_t(i)]];
      if (f == kUnbuilt) {
        Fragment fr = build_fragment(s, p_, res ? rows.keys[rk[std::size_t(y)]] : rows_reduced.keys[rk_red[std::size_t(y)]], ckey);
        if (fr.tasks.empty()) {
          f = kEmpty;
        } else {
          f = intern_fragment(std::move(fr));
        }
      }
      if (f == kEmpty) continue;
      extend(grid_.index({global_x(s.region, i), r.y0 + y}), f, run);
    }
  }
  // Relays of the stage input (see StageSpec::relay_in): one small fragment on the relaying tile.
  for_each_relay(s, [&](std::int32_t y, std::int32_t k) {
    std::uint32_t f = intern_fragment(relay_fragment(s, p_, y, k));
    hw::TileIndex tile = grid_.index({global_x(s.region, s.region.rect.w - 1 - k), r.y0 + y});
    seq_[tile] = child(seq_[tile], f);
  });
}

void Emitter::extend(hw::TileIndex t, std::uint32_t f, Run& run) {
  std::uint32_t& q = seq_[t];
  if (q == run.seq && f == run.frag) {  // along a row, neighbours mostly extend the same sequence alike
    q = run.child;
  } else {
    run.seq = q, run.frag = f;
    q = run.child = child(q, f);
  }
  stream_bytes_ += frags_[f].stream_bytes;
}

bool same_but_layer(const StageSpec& a, const StageSpec& b) {
  return a.kind == b.kind && a.region == b.region && a.streamed == b.streamed && a.in_arrivals == b.in_arrivals &&
         a.relay_in == b.relay_in && a.out == b.out && a.out_dest == b.out_dest && a.out_color == b.out_color &&
         a.k == b.k && a.n == b.n && a.residual_in == b.residual_in && a.out_last_token == b.out_last_token &&
         a.table_in_head == b.table_in_head;
}

std::optional<Fragment> relabelled(const Fragment& f, std::uint16_t from, std::uint16_t to) {
  Fragment out = f;
  for (auto& t : out.tasks) {
    if (t.layer != from) return std::nullopt;
    t.layer = to;
  }
  return out;
}

bool same_but_place(const StageSpec& a, const StageSpec& b) {
  if (a.region.rect.w != b.region.rect.w || a.region.rect.h != b.region.rect.h) return false;
  StageSpec moved = b;
  moved.region.rect.x0 = a.region.rect.x0, moved.region.rect.y0 = a.region.rect.y0;
  return same_but_layer(a, moved);
}

void Emitter::add_classes(const hw::Rect& r, const std::vector<std::uint32_t>& row_class,
                          const std::vector<std::uint32_t>& col_class,
                          const std::function<Fragment(std::uint32_t, std::uint32_t)>& build, const StageSpec* stage) {
  constexpr std::uint32_t kUnbuilt = 0xFFFFFFFFu, kEmpty = 0xFFFFFFFEu;
  const std::uint32_t nc = col_class.empty() ? 1 : *std::max_element(col_class.begin(), col_class.end()) + 1;
  const std::uint32_t nr = row_class.empty() ? 1 : *std::max_element(row_class.begin(), row_class.end()) + 1;
  std::vector<std::uint32_t> table(std::size_t(nr) * nc, kUnbuilt);
  const bool relabel = stage && memo_.valid && same_but_layer(*stage, memo_.stage) && memo_.row_class == row_class &&
                       memo_.col_class == col_class && memo_.table.size() == table.size();
  // The previous stage's fragment for this pair, with this stage's layer (relabelled); nothing when there is none
  // to copy.
  auto previous = [&](std::size_t i) -> std::optional<Fragment> {
    const std::uint32_t old = memo_.table[i];
    if (old == kUnbuilt || old == kEmpty) return std::nullopt;
    return relabelled(frags_[old], memo_.stage.layer, stage->layer);
  };
  for (std::int32_t y = 0; y < r.h; ++y) {
    Run run;
    for (std::int32_t x = 0; x < r.w; ++x) {
      const std::uint32_t rc = row_class[std::size_t(y)], cc = col_class[std::size_t(x)];
      const std::size_t i = std::size_t(rc) * nc + cc;
      std::uint32_t& f = table[i];
      if (f == kUnbuilt) {
        if (relabel && memo_.table[i] == kEmpty) {
          f = kEmpty;
        } else {
          std::optional<Fragment> copy = relabel ? previous(i) : std::nullopt;
          Fragment fr = copy ? std::move(*copy) : build(rc, cc);
          f = fr.tasks.empty() ? kEmpty : intern_fragment(std::move(fr));
        }
      }
      if (f == kEmpty) continue;
      extend(grid_.index({r.x0 + x, r.y0 + y}), f, run);
    }
  }
  if (stage) memo_ = {true, *stage, row_class, col_class, std::move(table)};
}

namespace {
bool same_code(const Fragment& a, const Fragment& b) {
  if (a.tasks.size() != b.tasks.size()) return false;
  for (std::size_t i = 0; i < a.tasks.size(); ++i) {
    firmware::Task t = b.tasks[i];
    t.layer = a.tasks[i].layer;
    if (!(t == a.tasks[i])) return false;
  }
  return true;
}
std::size_t hash_program(const firmware::Program& p) {
  Fragment f{p.tasks, p.sram, 0, 0};
  return hash_fragment(f);
}
}  // namespace

void Emitter::hold(firmware::SramUse& u, std::vector<std::uint32_t>& code_held, std::uint32_t id) const {
  const Fragment& f = frags_[id];
  sat_add(u.weights, f.sram.weights);
  sat_add(u.kv_cache, f.sram.kv_cache);
  u.activations = std::max(u.activations, f.sram.activations);
  if (std::none_of(code_held.begin(), code_held.end(), [&](std::uint32_t h) { return same_code(frags_[h], f); })) {
    code_held.push_back(id);
    sat_add(u.code, f.code);
  }
}

firmware::SramUse Emitter::tile_sram(hw::TileIndex t) {
  constexpr std::uint32_t kUnknown = 0xFFFFFFFFu;
  const std::uint32_t q = seq_[t];
  if (q == 0) return {};
  if (seq_sram_.size() < parent_.size()) {
    firmware::SramUse unknown;
    unknown.code = kUnknown;
    seq_sram_.resize(parent_.size(), unknown);
  }
  firmware::SramUse& u = seq_sram_[q];
  if (u.code == kUnknown) {
    std::vector<std::uint32_t> chain, code_held;
    for (std::uint32_t c = q; c != 0; c = parent_[c]) chain.push_back(frag_of_[c]);
    u = {};
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) hold(u, code_held, *it);
  }
  return u;
}

firmware::Image Emitter::finish(std::vector<std::string> layer_names) {
  firmware::Image img;
  img.grid = grid_;
  img.layer_names = std::move(layer_names);
  img.op_names = op_names();
  img.tile_program.assign(grid_.size(), firmware::kIdle);
  std::vector<std::uint32_t> prog_of_seq(parent_.size(), firmware::kIdle);
  std::vector<std::vector<std::uint32_t>> buckets(1024);
  std::vector<std::uint32_t> chain;
  for (std::size_t t = 0; t < seq_.size(); ++t) {
    std::uint32_t q = seq_[t];
    if (q == 0) continue;
    std::uint32_t& pi = prog_of_seq[q];
    if (pi == firmware::kIdle) {
      chain.clear();
      for (std::uint32_t c = q; c != 0; c = parent_[c]) chain.push_back(frag_of_[c]);
      firmware::Program prog;
      std::vector<std::uint32_t> code_held;
      for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
        const Fragment& f = frags_[*it];
        prog.tasks.insert(prog.tasks.end(), f.tasks.begin(), f.tasks.end());
        hold(prog.sram, code_held, *it);
      }
      auto& bucket = buckets[hash_program(prog) % buckets.size()];
      for (std::uint32_t id : bucket)
        if (img.programs[id] == prog) pi = id;
      if (pi == firmware::kIdle) {
        img.programs.push_back(std::move(prog));
        pi = std::uint32_t(img.programs.size() - 1);
        bucket.push_back(pi);
      }
    }
    img.tile_program[t] = pi;
  }
  return img;
}

}  // namespace wafer::mapper::detail
