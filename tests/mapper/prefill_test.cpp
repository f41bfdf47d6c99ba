// Steps of T new tokens per sequence (prefill chunks, speculative verify steps): the ops of a causal
// attention step computed by hand, a decode step unchanged by the machinery, and the options refused.
#include <gtest/gtest.h>

#include <algorithm>

#include "firmware/validate.h"
#include "hw/error.h"
#include "mapper/kernels.h"
#include "mapper/mapper.h"
#include "firmware_probe.h"

using namespace wafer;
using namespace wafer::mapper;
using firmware::OpKind;
using namespace wafer::mapper::test;

// tiny-llama (4 query heads, 2 KV heads of 16 dims: G = 2) on a 2 x 2 region: two segments of one column,
// each holding one KV head (dims_i = 16). Context 6 over 2 rows: row 0 holds positions 0-2, row 1 3-5.
// T = 3 new tokens (positions 3, 4, 5) attend 4, 5 and 6 positions. Row 0: every token attends its 3
// positions (9 pairs); row 1: 1, 2 and 3 of its positions (6 pairs). Per tile (elements, vectors):
//   scores GEMV (color 4): one vector op of c per token, query head and dim:
//     row 0: (G x 16 x 3 tokens x 3, G x 16 x 3) = (288, 96);
//     row 1: (32 x 1, 32), (32 x 2, 32), (32 x 3, 32) -- one op per distinct count;
//   the scores' max on the same task (a one-column segment): 9 x G = 18 and 6 x G = 12;
//   P.V GEMV (color 2): G x pairs vector ops of 16: (288, 18) and (192, 12);
//   the bottom row ropes q and k and appends k and v per token: Rope 3 x 16 x 3 = 144, Copy 2 x 16 x 3 = 96.
TEST(Prefill, CausalAttentionOpsByHand) {
  const hw::WaferSpec spec = hw::preset("tiny");
  const ModelConfig m = load_model("tiny-llama");
  ASSERT_EQ(m.group(), 2);
  ASSERT_EQ(m.head_dim, 16);
  const firmware::Image im = map_attention(spec, {0, 0, 2, 2}, m, 6, 1, 3);
  EXPECT_TRUE(firmware::validate(im).ok()) << firmware::validate(im).problems.front();
  for (std::int32_t x = 0; x < 2; ++x) {
    EXPECT_EQ(ops_of(task_on(im, {x, 0}, 4), OpKind::Fmac), (Ops{{288, 96}})) << x;
    EXPECT_EQ(ops_of(task_on(im, {x, 1}, 4), OpKind::Fmac), (Ops{{32, 32}, {64, 32}, {96, 32}})) << x;
    EXPECT_EQ(ops_of(task_on(im, {x, 0}, 4), OpKind::Max), (Ops{{18, 1}})) << x;
    EXPECT_EQ(ops_of(task_on(im, {x, 1}, 4), OpKind::Max), (Ops{{12, 1}})) << x;
    EXPECT_EQ(ops_of(task_on(im, {x, 0}, 2), OpKind::Fmac), (Ops{{288, 18}})) << x;
    EXPECT_EQ(ops_of(task_on(im, {x, 1}, 2), OpKind::Fmac), (Ops{{192, 12}})) << x;
    EXPECT_EQ(ops_of(task_on(im, {x, 1}, 8), OpKind::Rope), (Ops{{144, 1}})) << x;
    EXPECT_EQ(ops_of(task_on(im, {x, 1}, 8), OpKind::Copy), (Ops{{96, 1}})) << x;
  }
  // The same context decoded (T = 1): one token attending all 3 positions of each row.
  const firmware::Image d = map_attention(spec, {0, 0, 2, 2}, m, 6);
  EXPECT_EQ(ops_of(task_on(d, {0, 1}, 4), OpKind::Fmac), (Ops{{96, 32}}));
  EXPECT_EQ(ops_of(task_on(d, {0, 1}, 2), OpKind::Fmac), (Ops{{96, 6}}));
}

// A step of one token is the decode step, program for program; T tokens do T token vectors through every
// GEMV (the QKV block of a tile: T x K_r vector ops), the head runs on the last token only.
TEST(Prefill, OneTokenIsTheDecodeStepAndGemvsScaleWithTokens) {
  const hw::WaferSpec spec = hw::preset("tiny");
  const ModelConfig m = load_model("tiny-llama");
  const noc::Fabric f = noc::Fabric::perfect(spec.logical());
  MapOptions o;
  o.context = 64;
  const Mapping dec = map_model(spec, f, m, o);
  o.tokens = 1;
  const Mapping one = map_model(spec, f, m, o);
  ASSERT_EQ(dec.images[0].programs.size(), one.images[0].programs.size());
  EXPECT_TRUE(dec.images[0].programs == one.images[0].programs);
  EXPECT_TRUE(dec.images[0].tile_program == one.images[0].tile_program);
  o.tokens = 8;
  const Mapping pre = map_model(spec, f, m, o);
  EXPECT_TRUE(firmware::validate(pre.images[0]).ok());
  for (const char* op : {"qkv_proj", "o_proj", "gate_up_proj", "down_proj"}) EXPECT_EQ(fmacs(pre, op), 8 * fmacs(dec, op)) << op;
  EXPECT_EQ(fmacs(pre, "lm_head"), fmacs(dec, "lm_head"));
  EXPECT_GT(pre.wafers[0].sram_max, dec.wafers[0].sram_max);  // eight token vectors held
}

TEST(Prefill, BadOptionsAreRefused) {
  const hw::WaferSpec spec = hw::preset("tiny");
  const ModelConfig m = load_model("tiny-llama");
  const noc::Fabric f = noc::Fabric::perfect(spec.logical());
  auto error = [&](const MapOptions& o) { return refusal([&] { map_model(spec, f, m, o); }); };
  MapOptions o;
  o.context = 16, o.tokens = 0;
  EXPECT_NE(error(o).find("tokens = 0"), std::string::npos);
  o.tokens = 17;
  EXPECT_NE(error(o).find("tokens = 17"), std::string::npos);
  o.tokens = 4, o.kernel = Kernel::MeshGemv, o.placement = "whole-wafer";
  EXPECT_NE(error(o).find("--kernel bands only"), std::string::npos);
}
