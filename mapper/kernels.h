#pragma once
// Single-operator builders for hand-computed tests: each maps one operator onto a rectangle of a wafer
// (usually `tiny`) with exactly the partition map_model uses, and returns the Image. The expected cycle
// count follows from the execution rules of firmware/program.h (a burst of w wavelets occupies a link w
// cycles, its head crosses a link in hop_latency cycles; a task starts at max(trigger, core free) +
// task_overhead; an op costs vector_setup + ceil(elements x factor / simd_width), a GEMV block one such
// vector op per input (firmware::Op::vectors); a Stream task starts
// stream_stage_latency after the first head and its sends trail the input).
//
// Local frame: column i = 0 .. w-1 from west to east (E = w-1 is the residual column), row r = 0 .. h-1
// from north to south. Values are fp16 (2 bytes), wavelets = ceil(values x batch x 2 / wavelet_bytes).
#include <cstdint>
#include <vector>

#include "firmware/program.h"
#include "hw/coord.h"
#include "hw/wafer_spec.h"
#include "mapper/mapper.h"
#include "mapper/model_config.h"

namespace wafer::mapper {

// GEMV y[N] = W[N x K] x[K] on `region` (w columns x h rows). Row r holds K_r = split(K, h, r) inputs,
// column i holds N_i = split(N, w, i) outputs (split: n/parts, one more for the first n%parts).
//   start:  (E, r) gets an injection on color 0 (K_r values) for every row r.
//   (E, r):   task [color 0]: no ops; send K_r values on color 2 as a Row multicast to (0..E, r) (itself incl.).
//   (i, r):   task [color 2]: Fmac K_r x N_i as K_r vector ops of N_i; row 0 sends N_i partial sums on color 3 to (i, 1).
//   (i, r>0): task [color 3, Stream for r < h-1, Complete on the last row]: Add N_i; forward to (i, r+1).
//   (i, h-1): sends its N_i results on color 11 to the done tile (E, h-1). The step ends when (E, h-1) has w
//             bursts on color 11. With h = 1 the Fmac task sends the results itself.
firmware::Image map_gemv(const hw::WaferSpec& spec, hw::Rect region, std::int64_t k, std::int64_t n,
                         std::int64_t batch = 1);

// RMSNorm of a vector of `n` values held down the east column of `region` (row r holds split(n, h, r)).
//   start:  (E, r) gets n_r values on color 0.
//   (E, r):   task [color 0]: Fmac n_r (sum of squares); row 0 sends 1 value on color 6 to (E, 1).
//   (E, r>0): task [color 6, Stream except the last row]: Add 1; forward; the last row also does Rsqrt 1 and
//             multicasts 1 value on color 7 up the column (E, 0..h-1).
//   (E, r):   task [color 7]: Mul n_r, Mul n_r (scale, weight); send n_r values on color 11 to (E, h-1).
//   The step ends when (E, h-1) has h bursts on color 11. Only the east column is programmed.
firmware::Image map_rmsnorm(const hw::WaferSpec& spec, hw::Rect region, std::int64_t n, std::int64_t batch = 1);

// One attention step (scores, softmax with max and sum reductions, weighted sum of V) for `model`'s head
// shape at `context` positions, on `region`: columns split into S = min(w, kv_heads) segments, each
// holding split(kv_heads, S, s) KV heads whose K/V dims spread over the segment's columns (dims_i); rows
// split the context (pos_r positions). The new q/k/v arrive as injections on color 8 at every bottom-row
// tile; the bottom row ropes q and k, appends k and v to the cache and multicasts q up its column (color 4).
// Scores are reduced along each segment (color 5), the segment-end column reduces max and sum down the
// column (color 6, broadcast back on 7), probabilities go along the segment (color 2), P.V partials are
// reduced down the columns (color 3) and every bottom tile sends its output slice on color 11 to (E, h-1).
// `tokens` = T > 1: a prefill chunk of T tokens per sequence, causal: token t attends the first
// context - T + 1 + t positions, so row r (positions [start_r, start_r + pos_r)) does, per token, a scores
// GEMV of G x dims_i vector ops of c_t = clamp(context - T + 1 + t - start_r, 0, pos_r) (one op per distinct
// c_t), softmax over P_r = sum of c_t pairs, and a P.V GEMV of G x P_r vector ops of dims_i; the per-token
// parts (rope, append, q, the max / sum chains, the output) are done T times.
firmware::Image map_attention(const hw::WaferSpec& spec, hw::Rect region, const ModelConfig& model,
                              std::int64_t context, std::int64_t batch = 1, std::int64_t tokens = 1);
// The same for a mixed step (MapOptions::step): per sequence j its own rows' share of its context (pos_rj,
// positions [start_rj, start_rj + pos_rj)) and causal counts c_jt as above; a row's scores GEMV does one op
// per distinct count over all sequences (G x dims_i x the tokens with that count vector ops of c), softmax
// and P.V over the pairs of every sequence, its KV cache holds every sequence's positions; the per-token
// parts are done once per new token of every sequence.
firmware::Image map_attention(const hw::WaferSpec& spec, hw::Rect region, const ModelConfig& model,
                              const std::vector<StepSequence>& step);

}  // namespace wafer::mapper
