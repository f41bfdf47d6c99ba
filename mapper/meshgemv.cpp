#include "mapper/meshgemv.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "hw/error.h"

namespace wafer::mapper::detail {

using firmware::Color;
using firmware::Dest;
using firmware::OpKind;
using firmware::Task;

std::int32_t tree_group(std::int32_t n, std::int32_t group) {
  std::int32_t g = group > 0 ? group : std::int32_t(std::lround(std::sqrt(double(std::max(n, 1)))));
  return std::clamp(g, 1, std::max(n, 1));
}

LineRole line_role(std::int32_t n, std::int32_t p, AllreduceAlgo algo, std::int32_t group) {
  LineRole r;
  auto final_root = [&](std::int32_t at) {
    r.to = 0, r.first = -at, r.n = n;
  };
  if (n <= 1) {
    final_root(0);
    return r;
  }
  if (algo == AllreduceAlgo::Chain) {  // toward the last tile
    if (p < n - 1) {
      r.in1 = p > 0, r.to = 1;
    } else {
      r.in1 = 1;
      final_root(p);
    }
    return r;
  }
  // Centre: one group of n tiles. Tree: groups of g, chains to each group's middle, then over the roots.
  const std::int32_t g = algo == AllreduceAlgo::Centre ? n : tree_group(n, group);
  const std::int32_t G = (n + g - 1) / g, k = p / g, lo = k * g, len = std::min(g, n - lo);
  const std::int32_t root = lo + len / 2, kc = G / 2;
  auto root_of = [&](std::int32_t grp) { return grp * g + std::min(g, n - grp * g) / 2; };
  if (p < root) {
    r.in1 = p > lo, r.to = 1;
  } else if (p > root) {
    r.in1 = p < lo + len - 1, r.to = -1;
  } else {
    r.in1 = std::uint8_t((root > lo) + (root < lo + len - 1));
    if (k < kc) {
      r.in2 = k > 0, r.to = root_of(k + 1) - root, r.to_root = true;
    } else if (k > kc) {
      r.in2 = k < G - 1, r.to = root_of(k - 1) - root, r.to_root = true;
    } else {
      r.in2 = std::uint8_t((k > 0) + (k < G - 1));
      final_root(p);
    }
  }
  return r;
}

std::int32_t final_position(std::int32_t n, AllreduceAlgo algo, std::int32_t group) {
  if (n <= 1) return 0;
  if (algo == AllreduceAlgo::Chain) return n - 1;
  const std::int32_t g = algo == AllreduceAlgo::Centre ? n : tree_group(n, group);
  const std::int32_t G = (n + g - 1) / g, kc = G / 2;
  return kc * g + std::min(g, n - kc * g) / 2;
}

namespace {

// What a row (y) of the region holds and does.
struct RowFacts {
  std::int64_t hidden = 0;   // H_r: its slice of the hidden vector (the Y-split axis)
  std::int64_t pos = 0;      // context positions of the KV cache it holds (sequence along Y)
  std::int64_t reserve = 0;  // its share of MapOptions::kv_capacity (positions over the batch; 0: none)
  bool newest = false;       // holds position C-1: appends the new k and v
  LineRole y;                // its role in the column allreduces
  friend bool operator==(const RowFacts&, const RowFacts&) = default;
};
// What a column (x) holds and does.
struct ColFacts {
  std::int64_t dims = 0;     // head-dim slice of its attention segment's KV heads (d along X)
  std::int64_t kv_heads = 0; // KV heads of its segment
  std::int64_t ffn = 0;      // I_i: its slice of the intermediate dimension
  std::int64_t vocab = 0;    // V_i: its slice of the vocabulary
  bool entry = false;        // the east column: token ids are injected there
  LineRole x;                // its role in the row allreduces
  LineRole seg;              // its role in its attention segment's allreduces
  friend bool operator==(const ColFacts&, const ColFacts&) = default;
};

template <class T>
std::vector<std::uint32_t> classes(const std::vector<T>& facts, std::vector<T>& keys) {
  std::vector<std::uint32_t> out(facts.size());
  for (std::size_t i = 0; i < facts.size(); ++i) {
    auto it = std::find(keys.begin(), keys.end(), facts[i]);
    if (it == keys.end()) keys.push_back(facts[i]), it = keys.end() - 1;
    out[i] = std::uint32_t(it - keys.begin());
  }
  return out;
}

struct Layout {
  std::vector<RowFacts> rows, row_keys;
  std::vector<ColFacts> cols, col_keys;
  std::vector<std::uint32_t> row_class, col_class;
};

Layout layout(const StageSpec& s, const EmitParams& p) {
  const ModelConfig& m = *p.model;
  const std::int32_t w = s.region.rect.w, h = s.region.rect.h;
  Layout L;
  std::int64_t last_pos_row = 0;
  for (std::int32_t r = 0; r < h; ++r)
    if (split(p.context, h, r) > 0) last_pos_row = r;
  for (std::int32_t r = 0; r < h; ++r) {
    RowFacts f;
    f.hidden = split(m.hidden, h, r);
    if (s.kind == StageKind::Layer)
      f.pos = split(p.context, h, r), f.newest = r == last_pos_row, f.reserve = split(p.kv_capacity, h, r);
    f.y = line_role(h, r, p.allreduce, p.group);
    L.rows.push_back(f);
  }
  const std::int64_t S = std::min<std::int64_t>(w, m.kv_heads);
  std::int64_t seg = 0, seg_start = 0;
  for (std::int32_t i = 0; i < w; ++i) {
    if (i >= seg_start + split(w, S, seg)) seg_start += split(w, S, seg), ++seg;
    const std::int32_t segw = std::int32_t(split(w, S, seg));
    ColFacts f;
    f.x = line_role(w, i, p.allreduce, p.group);
    f.entry = i == w - 1;
    if (s.kind == StageKind::Layer) {
      f.kv_heads = split(m.kv_heads, S, seg);
      f.dims = split(f.kv_heads * m.head_dim, segw, i - seg_start);
      f.ffn = split(m.intermediate, w, i);
      f.seg = line_role(segw, std::int32_t(i - seg_start), p.allreduce, p.group);
    }
    if (s.kind == StageKind::Embedding || s.kind == StageKind::Head) f.vocab = split(m.vocab, w, i);
    L.cols.push_back(f);
  }
  L.row_class = classes(L.rows, L.row_keys);
  L.col_class = classes(L.cols, L.col_keys);
  return L;
}

struct Colors {
  Color chain, root, bcast;
};
constexpr Colors kY{mesh_color::kYChain, mesh_color::kYRoot, mesh_color::kYBcast};
constexpr Colors kX{mesh_color::kXChain, mesh_color::kXRoot, mesh_color::kXBcast};
constexpr Colors kSeg{mesh_color::kSChain, mesh_color::kSRoot, mesh_color::kSBcast};

class Builder : FragmentBuilder {
 public:
  Builder(const StageSpec& s, const EmitParams& p, const RowFacts& r, const ColFacts& c)
      : FragmentBuilder(s.layer, p.batch), s_(s), p_(p), r_(r), c_(c), w_(s.region.rect.w) {}

  Fragment build() {
    switch (s_.kind) {
      case StageKind::Embedding: embedding(); break;
      case StageKind::Layer: layer(); break;
      case StageKind::Head: head(); break;
      default: throw std::logic_error("meshgemv: kernel stages are built by the bands emitter");
    }
    return finish();
  }

 private:
  enum class Axis { Y, X };

  void weights(std::int64_t params) { sat_add(f_.sram.weights, params * p_.weight_bytes); }
  void send(Ix t, Color c, std::int64_t values, Dest d, bool starts = false) {
    const std::int64_t bytes = values * B_ * kActivationBytes;
    const std::int64_t wl = std::max<std::int64_t>(1, (bytes + p_.spec->wavelet_bytes - 1) / p_.spec->wavelet_bytes);
    f_.tasks[t].sends.push_back({c, u32(wl), d, starts || d.kind != Dest::Kind::Tile});
  }
  static Dest self() { return {Dest::Kind::Tile, 0, 0, 1}; }
  static Dest along(Axis a, std::int32_t d) { return a == Axis::Y ? Dest{Dest::Kind::Tile, 0, d, 1} : Dest{Dest::Kind::Tile, d, 0, 1}; }
  static Dest line(Axis a, std::int32_t first, std::int32_t n) {
    return a == Axis::Y ? Dest{Dest::Kind::Column, 0, first, n} : Dest{Dest::Kind::Row, first, 0, n};
  }

  // The allreduce of `values` partial sums (per sequence) that task `starter` computed, along a line where
  // this tile has role `role`. Every tile of the line then gets the result on `c.bcast` (the next task
  // triggers on it). With `end`, the final root runs end(task) instead of the multicast (a reduce only).
  // As in WaferLLM's code the phases are blocking: a chain stage streams (adds and forwards as the data
  // flows), but a group root finishes its group's sum before the chain over the roots, and the final root
  // finishes the whole sum before it multicasts. A tile's own partial sum joins an adding task as a local
  // activation on the task's color, so that task cannot run before the one that computed it.
  void allreduce(Ix starter, Axis a, const LineRole& role, std::int64_t values, const Colors& c,
                 OpKind red = OpKind::Add, const std::function<void(Ix)>& end = {}) {
    const bool final = role.to == 0;
    const Dest next = along(a, role.to);
    if (role.in1 + role.in2 == 0 && final) {  // a line of one tile: the result is its own
      if (end) return end(starter);
      return send(starter, c.bcast, values, self());
    }
    if (role.in1 + role.in2 == 0) return send(starter, role.to_root ? c.root : c.chain, values, next, true);
    Ix t = starter;
    if (role.in1 > 0) {  // the chain inside the group (the whole line for chain and centre)
      send(t, c.chain, 1, self());
      const bool streams = !final && !role.to_root;
      t = task(c.chain, role.in1 + 1, streams ? Task::Start::Stream : Task::Start::Complete);
      op(t, red, values * role.in1);
      if (streams) return send(t, c.chain, values, next);
    }
    if (role.in2 > 0) {  // the chain over the group roots
      send(t, c.root, 1, self());
      t = task(c.root, role.in2 + 1, final ? Task::Start::Complete : Task::Start::Stream);
      op(t, red, values * role.in2);
    }
    if (!final) return send(t, c.root, values, next, role.in2 == 0);
    if (end) return end(t);
    send(t, c.bcast, values, line(a, role.first, role.n));
  }

  // An RMSNorm of the row's slice of the residual stream, reported as `norm_op`: its input arrives with a
  // row allreduce's result (added to the stream first when `add`), the sum of squares is allreduced down
  // the column, and the task that finishes the norm is returned, reported as `next_op` (the GEMV that reads
  // the normalised slice runs in it).
  Ix rms_norm(std::uint16_t norm_op, bool add, std::uint16_t next_op) {
    op_ = norm_op;
    Ix t = task(kX.bcast);
    if (add) op(t, OpKind::Add, r_.hidden);
    op(t, OpKind::Fmac, r_.hidden);  // sum of squares of the row's slice
    allreduce(t, Axis::Y, r_.y, 1, kY);
    op_ = next_op;
    t = task(kY.bcast);
    op(t, OpKind::Rsqrt, 1);
    op(t, OpKind::Mul, r_.hidden);
    op(t, OpKind::Mul, r_.hidden);
    weights(r_.hidden);  // the norm's weight slice
    return t;
  }

  void embedding() {
    // The token id reaches the east column of every row and is multicast along the row; every tile copies
    // its slice of the looked-up row (the hit is data-dependent: the cost is charged to all) and a row
    // allreduce leaves the row's slice of the embedding on every tile of the row.
    op_ = kOpEmbedding;
    if (!s_.table_in_head) weights(c_.vocab * r_.hidden);  // (else the head's block, split alike, is read)
    acts(r_.hidden);
    if (c_.entry) {
      Ix t = task(mesh_color::kToken);
      if (w_ == 1) send(t, mesh_color::kIn, 2, self());
      else send(t, mesh_color::kIn, 2, line(Axis::X, -std::int32_t(w_ - 1), std::int32_t(w_)));
    }
    Ix t = task(mesh_color::kIn);
    op(t, OpKind::Copy, r_.hidden);
    allreduce(t, Axis::X, c_.x, r_.hidden, kX);
  }

  void layer() {
    const ModelConfig& m = *p_.model;
    const std::int64_t G = m.group(), Nq = (G + 2) * c_.dims, sv = r_.pos * G * c_.kv_heads;
    const std::int64_t heads = G * c_.kv_heads;
    acts(2 * r_.hidden + Nq + sv + G * c_.dims + 2 * c_.ffn);
    sat_add(f_.sram.kv_cache, 2 * std::max(r_.pos * B_, r_.reserve) * c_.dims * kActivationBytes);
    // Input RMSNorm (the previous layer's down projection is added to the residual stream first), then
    // QKV: K = H split along Y (the rows), the (q, k, v) outputs of the column's attention dims along X.
    Ix t = rms_norm(kOpLayernorm, s_.residual_in, kOpQkv);
    weights(r_.hidden * Nq + (m.qkv_bias ? Nq : 0));
    matvec(t, r_.hidden, G * c_.dims);  // q, k and v: one GEMV per weight matrix, as WaferLLM runs them
    matvec(t, r_.hidden, c_.dims);
    matvec(t, r_.hidden, c_.dims);
    allreduce(t, Axis::Y, r_.y, Nq, kY);
    // RoPE and the KV-cache append (every row holds q, k, v of its column's dims: the append is local to
    // the row holding the newest position), then the scores over the row's positions, reduced along the
    // attention segment (d along X).
    // (One task: its time is reported as attention's.)
    op_ = kOpAttention;
    t = task(kY.bcast);
    if (m.qkv_bias) op(t, OpKind::Add, Nq);
    op(t, OpKind::Rope, (G + 1) * c_.dims);
    if (r_.newest) op(t, OpKind::Copy, 2 * c_.dims);
    matvec(t, G * c_.dims, r_.pos);  // K = the dims, N = the row's positions (WaferLLM's score GEMV)
    allreduce(t, Axis::X, c_.seg, sv, kSeg);
    // Softmax: the max and the sum over the context, each a scalar-per-head allreduce down the column.
    t = task(kSeg.bcast);
    op(t, OpKind::Max, sv);
    allreduce(t, Axis::Y, r_.y, heads, kY, OpKind::Max);
    t = task(kY.bcast);
    op(t, OpKind::Exp, sv);
    op(t, OpKind::Sum, sv);
    allreduce(t, Axis::Y, r_.y, heads, kY);
    // Scale, then P.V over the row's positions for the column's dims, reduced down the column.
    t = task(kY.bcast);
    op(t, OpKind::Mul, heads);
    op(t, OpKind::Mul, sv);
    matvec(t, G * r_.pos, c_.dims);  // K = the row's positions, N = the dims
    allreduce(t, Axis::Y, r_.y, G * c_.dims, kY);
    // O projection: K = the attention output split along X, outputs along Y; reduced along the row.
    op_ = kOpOproj;
    t = task(kY.bcast);
    weights(G * c_.dims * r_.hidden);
    matvec(t, G * c_.dims, r_.hidden);
    allreduce(t, Axis::X, c_.x, r_.hidden, kX);
    // Residual, post-attention RMSNorm, then gate and up side by side per column (SiLU * up is local),
    // reduced down the column.
    t = rms_norm(kOpLayernorm, true, kOpGateUp);
    weights(r_.hidden * 2 * c_.ffn);
    matvec(t, r_.hidden, c_.ffn);  // up and gate: two GEMVs
    matvec(t, r_.hidden, c_.ffn);
    allreduce(t, Axis::Y, r_.y, 2 * c_.ffn, kY);
    // SiLU * up fused into the down projection's task (K = I split along X, outputs along Y; reduced
    // along the row; the next stage adds it to the residual stream).
    op_ = kOpDown;
    t = task(kY.bcast);
    op(t, OpKind::Silu, c_.ffn);
    op(t, OpKind::Mul, c_.ffn);
    weights(c_.ffn * r_.hidden);
    matvec(t, c_.ffn, r_.hidden);
    allreduce(t, Axis::X, c_.x, r_.hidden, kX);
  }

  void head() {
    acts(2 * r_.hidden + c_.vocab);
    // Final RMSNorm, then the LM head: K = H along Y, the vocabulary along X; reduced (not broadcast) down
    // each column: the final roots, all on one row, take the argmax of their column's logits and reduce it
    // along that row.
    Ix t = rms_norm(kOpFinalNorm, s_.residual_in, kOpLmHead);
    weights(r_.hidden * c_.vocab);
    matvec(t, r_.hidden, c_.vocab);
    allreduce(t, Axis::Y, r_.y, c_.vocab, kY, OpKind::Add, [&](Ix e) {
      op_ = kOpSampler;
      op(e, OpKind::Argmax, c_.vocab);
      // (value, index) pairs: two 32-bit words per sequence.
      allreduce(e, Axis::X, c_.x, 4, kX, OpKind::Max, [&](Ix d) { send(d, mesh_color::kDone, 4, self()); });
    });
  }

  const StageSpec& s_;
  const EmitParams& p_;
  const RowFacts& r_;
  const ColFacts& c_;
  std::int64_t w_;
};

}  // namespace

void add_meshgemv(Emitter& em, const StageSpec& s, const EmitParams& p) {
  const Layout L = layout(s, p);
  em.add_classes(s.region.rect, L.row_class, L.col_class, [&](std::uint32_t rc, std::uint32_t cc) {
    return Builder(s, p, L.row_keys[rc], L.col_keys[cc]).build();
  }, &s);
}

StageNeed meshgemv_need(const StageSpec& s, const EmitParams& p) {
  const Layout L = layout(s, p);
  std::vector<std::int64_t> rn(L.row_keys.size(), 0), cn(L.col_keys.size(), 0);
  for (auto c : L.row_class) ++rn[c];
  for (auto c : L.col_class) ++cn[c];
  StageNeed need;
  for (std::size_t a = 0; a < L.row_keys.size(); ++a)
    for (std::size_t b = 0; b < L.col_keys.size(); ++b) {
      Fragment f = Builder(s, p, L.row_keys[a], L.col_keys[b]).build();
      firmware::SramUse u = f.sram;
      sat_add(u.code, f.code);
      if (u.total() > need.worst.total()) need.worst = u;
      need.most_held = std::max(need.most_held, u.weights + u.kv_cache);
      need.most_activations = std::max(need.most_activations, u.activations);
      need.most_code = std::max(need.most_code, u.code);
      need.weight_bytes += rn[a] * cn[b] * std::int64_t(f.sram.weights);
      need.tasks += rn[a] * cn[b] * std::int64_t(f.tasks.size());
    }
  return need;
}

Fragment meshgemv_fragment_at(const StageSpec& s, const EmitParams& p, hw::Coord t) {
  const hw::Rect& r = s.region.rect;
  if (t.x < r.x0 || t.y < r.y0 || t.x >= r.x0 + r.w || t.y >= r.y0 + r.h) return {};
  const Layout L = layout(s, p);
  return Builder(s, p, L.row_keys[L.row_class[std::size_t(t.y - r.y0)]], L.col_keys[L.col_class[std::size_t(t.x - r.x0)]])
      .build();
}

hw::Coord meshgemv_done_tile(const Region& r, const EmitParams& p) {
  return {r.rect.x0 + final_position(r.rect.w, p.allreduce, p.group),
          r.rect.y0 + final_position(r.rect.h, p.allreduce, p.group)};
}

}  // namespace wafer::mapper::detail
