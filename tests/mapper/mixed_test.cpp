// Mixed steps (MapOptions::step: decode tokens and prefill chunks of several sequences at once): the ops of
// a mixed attention step computed by hand, the uniform steps reproduced program for program, the token
// vectors of every sequence through each GEMV, and the bad input refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "firmware/validate.h"
#include "hw/error.h"
#include "mapper/kernels.h"
#include "mapper/mapper.h"
#include "firmware_probe.h"

using namespace wafer;
using namespace wafer::mapper;
using firmware::OpKind;
using namespace wafer::mapper::test;

// tiny-llama (G = 2 query heads per KV head, head_dim 16) on a 2 x 2 region: two one-column segments of one
// KV head each (dims_i = 16), two rows. The step: sequence A = 3@6 (3 new tokens at positions 3, 4, 5) and
// sequence B = 1@4 (one decode token at position 3).
//   A: row 0 holds positions 0-2, row 1 3-5; its tokens attend 4, 5, 6 positions: row 0 3, 3, 3; row 1 1, 2, 3.
//   B: row 0 holds 0-1, row 1 2-3; its token attends both rows' 2 positions.
// Row 0: counts 3 (A's three tokens) and 2 (B): scores GEMV (G x 16 x 3 x 3, G x 16 x 3) = (288, 96) and
// (32 x 2, 32) = (64, 32); pairs 9 + 2 = 11: max over 11 x G = 22 scores; P.V (G x 11 x 16, G x 11) = (352, 22).
// Row 1: counts 1 (A), 2 (A and B: one op for both), 3 (A): (32, 32), (128, 64), (96, 32); pairs 6 + 2 = 8:
// max over 16; P.V (256, 16). Bottom row: rope (G + 1) x 16 x 4 tokens = 192, append 2 x 16 x 4 = 128.
// KV cache per tile: 2 (K, V) x 16 dims x 2 bytes x positions held (5 on either row) = 320 bytes.
TEST(Mixed, AttentionOpsByHand) {
  const hw::WaferSpec spec = hw::preset("tiny");
  const ModelConfig m = load_model("tiny-llama");
  ASSERT_EQ(m.group(), 2);
  ASSERT_EQ(m.head_dim, 16);
  const firmware::Image im = map_attention(spec, {0, 0, 2, 2}, m, {{3, 6}, {1, 4}});
  ASSERT_TRUE(firmware::validate(im).ok()) << firmware::validate(im).problems.front();
  for (std::int32_t x = 0; x < 2; ++x) {
    EXPECT_EQ(ops_of(task_on(im, {x, 0}, 4), OpKind::Fmac), (Ops{{288, 96}, {64, 32}})) << x;
    EXPECT_EQ(ops_of(task_on(im, {x, 1}, 4), OpKind::Fmac), (Ops{{32, 32}, {128, 64}, {96, 32}})) << x;
    EXPECT_EQ(ops_of(task_on(im, {x, 0}, 4), OpKind::Max), (Ops{{22, 1}})) << x;
    EXPECT_EQ(ops_of(task_on(im, {x, 1}, 4), OpKind::Max), (Ops{{16, 1}})) << x;
    EXPECT_EQ(ops_of(task_on(im, {x, 0}, 2), OpKind::Fmac), (Ops{{352, 22}})) << x;
    EXPECT_EQ(ops_of(task_on(im, {x, 1}, 2), OpKind::Fmac), (Ops{{256, 16}})) << x;
    EXPECT_EQ(ops_of(task_on(im, {x, 1}, 8), OpKind::Rope), (Ops{{192, 1}})) << x;
    EXPECT_EQ(ops_of(task_on(im, {x, 1}, 8), OpKind::Copy), (Ops{{128, 1}})) << x;
    for (std::int32_t y = 0; y < 2; ++y) EXPECT_EQ(program_at(im, {x, y}).sram.kv_cache, 320u) << x << "," << y;
  }
}

// A mixed step of B sequences 1@C is the decode step of batch B at context C, and one sequence T@C is the
// T-token step at C: the same firmware, program for program.
TEST(Mixed, UniformStepsAreTheDecodeAndPrefillSteps) {
  const hw::WaferSpec spec = hw::preset("tiny");
  const ModelConfig m = load_model("tiny-llama");
  const noc::Fabric f = noc::Fabric::perfect(spec.logical());
  auto same = [](const Mapping& a, const Mapping& b) {
    return a.images[0].programs == b.images[0].programs && a.images[0].tile_program == b.images[0].tile_program &&
           a.images[0].start == b.images[0].start;
  };
  MapOptions o;
  o.context = 64, o.batch = 3;
  const Mapping dec = map_model(spec, f, m, o);
  MapOptions s;
  s.step = {{1, 64}, {1, 64}, {1, 64}};
  const Mapping mix = map_model(spec, f, m, s);
  EXPECT_TRUE(same(dec, mix));
  EXPECT_EQ(mix.options.batch, 3);
  EXPECT_EQ(mix.options.context, 64);
  o.batch = 1, o.tokens = 16;
  s.step = {{16, 64}};
  EXPECT_TRUE(same(map_model(spec, f, m, o), map_model(spec, f, m, s)));
  // Different sequences are not the uniform step: 1@64 and 1@32 hold fewer positions than batch 2 at 64.
  s.step = {{1, 64}, {1, 32}};
  o.batch = 2, o.tokens = 1;
  EXPECT_FALSE(same(map_model(spec, f, m, o), map_model(spec, f, m, s)));
}

// Every sequence's new tokens go through each GEMV together (the GEMV work of 1 + 1 + 8 tokens is 10
// decode tokens' worth), the head runs once per sequence; the firmware is a valid step.
TEST(Mixed, GemvWorkScalesWithTheStepsTokens) {
  const hw::WaferSpec spec = hw::preset("tiny");
  const ModelConfig m = load_model("tiny-llama");
  const noc::Fabric f = noc::Fabric::perfect(spec.logical());
  MapOptions o;
  o.context = 64;
  const Mapping dec = map_model(spec, f, m, o);
  MapOptions s;
  s.step = {{1, 64}, {1, 32}, {8, 40}};
  const Mapping mix = map_model(spec, f, m, s);
  ASSERT_TRUE(firmware::validate(mix.images[0]).ok()) << firmware::validate(mix.images[0]).problems.front();
  for (const char* op : {"qkv_proj", "o_proj", "gate_up_proj", "down_proj"}) EXPECT_EQ(fmacs(mix, op), 10 * fmacs(dec, op)) << op;
  EXPECT_EQ(fmacs(mix, "lm_head"), 3 * fmacs(dec, "lm_head"));
}

TEST(Mixed, StepListsAreParsedAndBadOnesRefused) {
  EXPECT_EQ(parse_step("1@4096,1@2048,128@512"), (std::vector<StepSequence>{{1, 4096}, {1, 2048}, {128, 512}}));
  EXPECT_EQ(to_string(parse_step("1@4096,128@512")), "1@4096,128@512");
  auto error = [](std::string_view s) { return refusal([&] { parse_step(s); }); };
  EXPECT_NE(error("").find("--step ''"), std::string::npos);
  EXPECT_NE(error("0@64").find("at least 1"), std::string::npos);
  EXPECT_NE(error("65@64").find("more than its context 64"), std::string::npos);
  for (const char* bad : {"1@", "@64", "1x64", "1@64,", "1@64,,1@64", "a@b", "-1@64", "1@+64", "1@64@2", " 1@64"})
    EXPECT_NE(error(bad).find("expected TOKENS@CONTEXT"), std::string::npos) << bad;
  const hw::WaferSpec spec = hw::preset("tiny");
  const ModelConfig m = load_model("tiny-llama");
  const noc::Fabric f = noc::Fabric::perfect(spec.logical());
  auto map_error = [&](const MapOptions& o) { return refusal([&] { map_model(spec, f, m, o); }); };
  MapOptions o;
  o.step = {{1, 64}, {1, 100000}};
  EXPECT_NE(map_error(o).find("max_position_embeddings"), std::string::npos);
  o.step = {{1, 64}, {4, 2}};
  EXPECT_NE(map_error(o).find("need 1 <= tokens <= context"), std::string::npos);
  o.step = {{1, 64}}, o.kernel = Kernel::MeshGemv, o.placement = "whole-wafer";
  EXPECT_NE(map_error(o).find("--kernel bands only"), std::string::npos);
}
