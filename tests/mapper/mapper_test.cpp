#include "mapper/mapper.h"

#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "firmware/validate.h"
#include "hw/defect_map.h"
#include "hw/error.h"
#include "hw/repair.h"
#include "mapper/emit.h"
#include "mapper/kernels.h"
#include "mapper/placement.h"

using namespace wafer;
using namespace wafer::mapper;

namespace {
noc::Fabric perfect(const hw::WaferSpec& s) { return noc::Fabric::perfect(s.logical()); }

std::string map_error(const hw::WaferSpec& spec, const ModelConfig& m, const MapOptions& o) {
  try {
    map_model(spec, perfect(spec), m, o);
  } catch (const hw::InputError& e) {
    return e.what();
  }
  return "";
}
bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::int64_t sum_elements(const firmware::Image& img, firmware::OpKind kind) {
  std::int64_t s = 0;
  for (std::uint32_t p : img.tile_program) {
    if (p == firmware::kIdle) continue;
    for (const auto& t : img.programs[p].tasks)
      for (const auto& o : t.ops)
        if (o.kind == kind) s += o.elements;
  }
  return s;
}
}  // namespace

TEST(Placement, EveryStrategyIsRegistered) {
  auto names = placement_names();
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()),
            (std::set<std::string>{"whole-wafer", "layer-bands", "serpentine-bands", "defect-aware", "square"}));
  for (const auto& n : names) EXPECT_EQ(placement(n).name(), n);
  try {
    placement("random");
    FAIL();
  } catch (const hw::InputError& e) {
    EXPECT_TRUE(has(e.what(), "random") && has(e.what(), "layer-bands")) << e.what();
  }
}

TEST(Placement, BandsPlaceEveryStageInsideTheArrayWithoutOverlap) {
  noc::Fabric f = noc::Fabric::perfect({40, 60});
  std::vector<StageShape> stages;
  stages.push_back({"embedding", 500, false});
  for (int i = 0; i < 12; ++i) stages.push_back({"layer", 200, true});
  stages.push_back({"head", 500, false});
  for (const auto& name : placement_names()) {
    auto regions = placement(name).place(stages, f);
    ASSERT_EQ(regions.size(), stages.size()) << name;
    std::vector<int> owner(40 * 60, -1);
    for (std::size_t s = 0; s < regions.size(); ++s) {
      const hw::Rect& r = regions[s].rect;
      ASSERT_TRUE(r.w >= 1 && r.h >= 1 && r.x0 >= 0 && r.y0 >= 0 && r.x0 + r.w <= 40 && r.y0 + r.h <= 60) << name;
      if (name == "whole-wafer") {
        EXPECT_EQ(r, (hw::Rect{0, 0, 40, 60}));
        continue;
      }
      if (name == "square") {  // the largest centred square
        EXPECT_EQ(r, (hw::Rect{0, 10, 40, 40}));
        continue;
      }
      for (int y = r.y0; y < r.y0 + r.h; ++y)
        for (int x = r.x0; x < r.x0 + r.w; ++x) {
          EXPECT_EQ(owner[std::size_t(y * 40 + x)], -1) << name << " stage " << s << " overlaps";
          owner[std::size_t(y * 40 + x)] = int(s);
        }
    }
    if (name != "whole-wafer" && name != "square") {
      // Layers are equally tall; the heavier embedding and head are taller.
      // (serpentine pairs stages per band row: the embedding's and the head's partners share their height)
      std::size_t first = name == "serpentine-bands" ? 2 : 1, last = regions.size() - (name == "serpentine-bands" ? 2 : 1);
      for (std::size_t s = first; s < last; ++s) EXPECT_EQ(regions[s].rect.h, regions[first].rect.h) << name;
      EXPECT_GT(regions[0].rect.h, regions[first].rect.h) << name;
    }
  }
}

// A wafer of a pipeline that holds only decoder layers: every layer one height, the rows left over idle below
// the last band (docs/mapping.md: all decoder layers equally tall). With an embedding and a head they take them.
TEST(Placement, LayersAloneKeepOneHeightAndLeaveTheRestIdle) {
  std::vector<StageShape> layers(7, StageShape{"layer", 100, true});
  EXPECT_EQ(placement_detail::band_heights(layers, 60, "layer-bands"), std::vector<std::int32_t>(7, 8));  // 56 of 60
  EXPECT_EQ(placement_detail::band_heights(layers, 56, "layer-bands"), std::vector<std::int32_t>(7, 8));  // no rest
  EXPECT_EQ(placement_detail::band_heights(layers, 55, "layer-bands"), std::vector<std::int32_t>(7, 7));  // 49 of 55
  noc::Fabric f = noc::Fabric::perfect({40, 60});
  for (const char* name : {"layer-bands", "defect-aware"}) {
    auto regions = placement(name).place(layers, f);
    ASSERT_EQ(regions.size(), 7u) << name;
    for (std::size_t s = 0; s < regions.size(); ++s) {
      EXPECT_EQ(regions[s].rect.h, 8) << name << " stage " << s;
      EXPECT_EQ(regions[s].rect.y0, std::int32_t(8 * s)) << name << " stage " << s;
    }
  }
  // serpentine-bands: 8 layers in 4 band rows of 14 (56 of 58 rows)
  auto serp = placement("serpentine-bands")
                  .place(std::vector<StageShape>(8, StageShape{"layer", 100, true}), noc::Fabric::perfect({40, 58}));
  for (std::size_t s = 0; s < serp.size(); ++s)
    EXPECT_EQ(serp[s].rect, (hw::Rect{serp[s].rect.x0, std::int32_t(14 * (s / 2)), 20, 14})) << s;
  std::vector<StageShape> with = layers;
  with.insert(with.begin(), StageShape{"embedding", 100, false});
  with.push_back(StageShape{"head", 100, false});
  // 9 stages in 60 rows: 6 each (54), the 6 left over to the embedding and the head in turn
  EXPECT_EQ(placement_detail::band_heights(with, 60, "layer-bands"), (std::vector<std::int32_t>{9, 6, 6, 6, 6, 6, 6, 6, 9}));
}

TEST(Placement, SerpentineOutputLandsNextToTheNextInput) {
  noc::Fabric f = noc::Fabric::perfect({40, 60});
  std::vector<StageShape> stages(10, StageShape{"layer", 100, true});
  auto regions = placement("serpentine-bands").place(stages, f);
  auto residual = [](const Region& r) { return r.mirrored ? r.rect.x0 : r.rect.x0 + r.rect.w - 1; };
  for (std::size_t s = 0; s + 1 < regions.size(); ++s) {
    int dx = std::abs(residual(regions[s + 1]) - residual(regions[s]));
    EXPECT_LE(dx, 1) << "stage " << s;
    if (regions[s].rect.y0 == regions[s + 1].rect.y0) EXPECT_NE(regions[s].mirrored, regions[s + 1].mirrored) << s;
    else EXPECT_EQ(regions[s].mirrored, regions[s + 1].mirrored) << s;  // straight down to the next band row
  }
}

TEST(Placement, DefectAwareWorksOnTheLargestHealthyRectangle) {
  noc::Fabric f = noc::Fabric::perfect({20, 20});
  f.fail_router(f.grid().index({5, 5}));
  std::vector<StageShape> stages(4, StageShape{"layer", 100, true});
  EXPECT_THROW(placement("layer-bands").place(stages, f), hw::InputError);
  auto regions = placement("defect-aware").place(stages, f);
  for (const auto& r : regions) EXPECT_FALSE(r.rect.contains({5, 5}));
  hw::Rect big = placement_detail::largest_healthy_rect(f);
  EXPECT_EQ(big.area(), 20 * 14);  // rows 6..19 (or columns 6..19): 14 x 20
  // A long repaired link on the east column moves the residual column west.
  noc::Fabric g = noc::Fabric::perfect({20, 20});
  g.set_hops(g.grid().index({19, 3}), hw::Dir::South, 3);
  auto mirrored = placement("defect-aware").place(stages, g);
  EXPECT_TRUE(mirrored[0].mirrored);
}

// The healthy rectangle excludes only what it would use: a tile beside a dead one, or whose dead link leaves the
// rectangle, is in it. (Until 2026-12-07 a tile whose east or south link was bad was left out: the column west of
// a dead tile, the row north of it, went with it.) Against a brute force over every rectangle, on random fabrics.
TEST(Placement, TheHealthyRectangleKeepsTilesBesideADeadOne) {
  noc::Fabric f = noc::Fabric::perfect({8, 8});
  f.fail_router(f.grid().index({6, 6}));
  // 8 x 6 (rows 0..5, the row above (6,6) included) or 6 x 8 (columns 0..5): 48 either way; not 8 x 5 = 40.
  EXPECT_EQ(placement_detail::largest_healthy_rect(f).area(), 48);
  noc::Fabric e = noc::Fabric::perfect({8, 8});
  e.fail_router(e.grid().index({7, 5}));  // the east column: columns 0..6 whole, 7 x 8
  EXPECT_EQ(placement_detail::largest_healthy_rect(e), (hw::Rect{0, 0, 7, 8}));
  noc::Fabric l = noc::Fabric::perfect({8, 8});
  for (hw::Dir d : {hw::Dir::East, hw::Dir::South}) l.fail_link(l.grid().index({3, 3}), d);
  for (hw::Dir d : {hw::Dir::West, hw::Dir::North}) l.fail_link(l.grid().index({3, 3}), d);
  // (3,3) cut off by its four links: columns 4..7 (32) or rows 4..7 (32), or 8 x 3 = 24; a rectangle holding
  // (3,3) and a neighbour crosses a dead link. Columns 0..3, rows 0..3 hold (3,3) alone at a corner: 16.
  EXPECT_EQ(placement_detail::largest_healthy_rect(l).area(), 32);

  auto brute = [](const noc::Fabric& fb) {
    const hw::Grid& g = fb.grid();
    std::int64_t best = 0;
    for (std::int32_t y0 = 0; y0 < g.height; ++y0)
      for (std::int32_t y1 = y0; y1 < g.height; ++y1)
        for (std::int32_t x0 = 0; x0 < g.width; ++x0)
          for (std::int32_t x1 = x0; x1 < g.width; ++x1) {
            bool ok = true;
            for (std::int32_t y = y0; y <= y1 && ok; ++y)
              for (std::int32_t x = x0; x <= x1 && ok; ++x) {
                const hw::TileIndex t = g.index({x, y});
                ok = fb.router_ok(t) && (x == x1 || fb.link_ok(t, hw::Dir::East)) &&
                     (y == y1 || fb.link_ok(t, hw::Dir::South));
              }
            if (ok) best = std::max<std::int64_t>(best, std::int64_t(x1 - x0 + 1) * (y1 - y0 + 1));
          }
    return best;
  };
  std::uint64_t rng = 12345;
  auto next = [&](std::uint32_t n) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return std::uint32_t((rng >> 33) % n);
  };
  for (int trial = 0; trial < 300; ++trial) {
    const std::int32_t w = 1 + std::int32_t(next(9)), h = 1 + std::int32_t(next(9));
    noc::Fabric fb = noc::Fabric::perfect({w, h});
    const std::uint32_t faults = next(6);
    for (std::uint32_t k = 0; k < faults; ++k) {
      const hw::TileIndex t = fb.grid().index({std::int32_t(next(std::uint32_t(w))), std::int32_t(next(std::uint32_t(h)))});
      const hw::Coord c = fb.grid().coord(t);
      if (next(2) == 0) fb.fail_router(t);
      else if (next(2) == 0 && c.x + 1 < w) fb.fail_link(t, hw::Dir::East);
      else if (c.y + 1 < h) fb.fail_link(t, hw::Dir::South);
    }
    const hw::Rect r = placement_detail::largest_healthy_rect(fb);
    ASSERT_EQ(r.area(), brute(fb)) << "trial " << trial << ": " << w << " x " << h;
    for (std::int32_t y = r.y0; y < r.y0 + r.h; ++y)  // and what it returns is healthy
      for (std::int32_t x = r.x0; x < r.x0 + r.w; ++x) {
        const hw::TileIndex t = fb.grid().index({x, y});
        ASSERT_TRUE(fb.router_ok(t) && (x + 1 == r.x0 + r.w || fb.link_ok(t, hw::Dir::East)) &&
                    (y + 1 == r.y0 + r.h || fb.link_ok(t, hw::Dir::South)))
            << "trial " << trial << " tile (" << x << "," << y << ")";
      }
  }
}

TEST(Kernels, GemvPartitionCoversExactlyKTimesNMacs) {
  hw::WaferSpec tiny = hw::preset("tiny");
  for (auto [k, n, w, h] : std::vector<std::array<int, 4>>{{100, 37, 8, 8}, {64, 64, 3, 5}, {7, 300, 8, 1}, {9, 2, 1, 4}}) {
    firmware::Image img = map_gemv(tiny, {0, 0, w, h}, k, n);
    EXPECT_EQ(sum_elements(img, firmware::OpKind::Fmac), std::int64_t(k) * n) << k << "x" << n;
    auto v = firmware::validate(img);
    EXPECT_TRUE(v.ok()) << (v.problems.empty() ? "" : v.problems.front());
  }
  // Batch 3: three vectors.
  EXPECT_EQ(sum_elements(map_gemv(tiny, {1, 1, 4, 4}, 50, 30, 3), firmware::OpKind::Fmac), 3 * 50 * 30);
}

TEST(Kernels, NormAndAttentionImagesAreConnected) {
  hw::WaferSpec tiny = hw::preset("tiny");
  auto v = firmware::validate(map_rmsnorm(tiny, {7, 0, 1, 8}, 64));
  EXPECT_TRUE(v.ok()) << v.problems.front();
  ModelConfig m = load_model("tiny-llama");
  firmware::Image a = map_attention(tiny, {0, 0, 4, 4}, m, 64);
  v = firmware::validate(a);
  EXPECT_TRUE(v.ok()) << v.problems.front();
  // Scores and values: context x heads x head_dim MACs each.
  EXPECT_EQ(sum_elements(a, firmware::OpKind::Fmac), 2 * 64 * m.heads * m.head_dim);
}

TEST(Mapper, TinyModelsMapAndValidateOnEveryPlacement) {
  hw::WaferSpec tiny = hw::preset("tiny");
  for (const char* model : {"tiny-llama", "tiny-moe", "tiny-qwen"}) {
    ModelConfig m = load_model(model);
    for (const auto& name : placement_names()) {
      MapOptions o;
      o.placement = name;
      o.context = 128;
      Mapping mp = map_model(tiny, perfect(tiny), m, o);
      ASSERT_EQ(mp.images.size(), 1u);
      auto v = firmware::validate(mp.images[0]);
      EXPECT_TRUE(v.ok()) << model << " " << name << ": " << v.problems.front();
      EXPECT_EQ(std::int64_t(v.tasks_run), mp.wafers[0].task_runs);
      EXPECT_LE(mp.wafers[0].colors_used, tiny.colors);
      EXPECT_LE(mp.wafers[0].sram_max, tiny.sram_bytes);
      EXPECT_GT(mp.tiles_used(), 0);
      EXPECT_EQ(mp.stages.size(), std::size_t(m.layers + 2));
      // Every GEMV MAC of the model appears once: embedding copies aside, Fmac elements are the weights used.
      if (!m.moe()) {
        std::int64_t fmac = sum_elements(mp.images[0], firmware::OpKind::Fmac);
        std::int64_t weights_used = m.parameter_count() - m.vocab * m.hidden - (m.tie_embeddings ? 0 : m.vocab * m.hidden) +
                                    m.vocab * m.hidden;  // layers + LM head
        std::int64_t qkv_bias = m.qkv_bias ? m.layers * (m.q_dim() + 2 * m.kv_dim()) : 0;
        std::int64_t norms = (2 * m.layers + 1) * m.hidden;  // sums of squares
        std::int64_t attention = 2 * m.layers * o.context * m.q_dim();
        EXPECT_EQ(fmac, weights_used - qkv_bias - norms + norms + attention) << model << " " << name;
      }
    }
  }
}

TEST(Mapper, Qwen3sQueryAndKeyNormsAreEmittedOncePerHeadAndDim) {
  // The same model with and without Qwen3's per-head q/k norms, on the tiny wafer: each layer's bottom row adds the
  // sums of squares of every query and key dim (heads + kv_heads) x head_dim, an rsqrt per head at each segment's
  // end, two multiplies per dim (the scale and the norm weight); nothing else changes but the reduction's adds.
  hw::WaferSpec tiny = hw::preset("tiny");
  ModelConfig base = load_model("tiny-llama");
  base.head_dim = 32;  // (two KV heads of 32 dims: the segments' columns split them)
  ModelConfig q3 = base;
  q3.qk_norm = true;
  MapOptions o;
  o.context = 64;
  const Mapping a = map_model(tiny, perfect(tiny), base, o), b = map_model(tiny, perfect(tiny), q3, o);
  ASSERT_EQ(a.images.size(), 1u);
  const std::int64_t per_layer = (base.heads + base.kv_heads) * base.head_dim, layers = base.layers;
  EXPECT_EQ(sum_elements(b.images[0], firmware::OpKind::Fmac) - sum_elements(a.images[0], firmware::OpKind::Fmac),
            layers * per_layer);
  EXPECT_EQ(sum_elements(b.images[0], firmware::OpKind::Mul) - sum_elements(a.images[0], firmware::OpKind::Mul),
            layers * 2 * per_layer);
  EXPECT_EQ(sum_elements(b.images[0], firmware::OpKind::Rsqrt) - sum_elements(a.images[0], firmware::OpKind::Rsqrt),
            layers * (base.heads + base.kv_heads));
  EXPECT_EQ(sum_elements(b.images[0], firmware::OpKind::Rope), sum_elements(a.images[0], firmware::OpKind::Rope));
  EXPECT_GT(b.task_runs(), a.task_runs());  // (the scale's task on every bottom-row attention tile)
  o.kernel = Kernel::MeshGemv;
  o.placement = "square";
  EXPECT_TRUE(has(map_error(tiny, q3, o), "--kernel meshgemv maps models without per-head q/k norms"));
}

TEST(Mapper, QwenMoesSharedExpertIsEmittedBesideTheRoutedOnes) {
  // tiny-moe with and without a shared expert of S: each layer adds its gate and up (2 H S MACs), its down (S H),
  // its gate's logit beside the router's (H), one SiLU and two multiplies per unit of its width, and its gate's
  // sigmoid (costed as one SiLU).
  hw::WaferSpec tiny = hw::preset("tiny");
  ModelConfig base = load_model("tiny-moe");
  ASSERT_TRUE(base.moe());
  ModelConfig sh = base;
  sh.shared_intermediate = 48;
  MapOptions o;
  o.context = 64;
  const Mapping a = map_model(tiny, perfect(tiny), base, o), b = map_model(tiny, perfect(tiny), sh, o);
  const std::int64_t H = base.hidden, S = sh.shared_intermediate, L = base.layers;
  auto diff = [&](firmware::OpKind k) { return sum_elements(b.images[0], k) - sum_elements(a.images[0], k); };
  EXPECT_EQ(diff(firmware::OpKind::Fmac), L * (3 * H * S + H));
  EXPECT_EQ(diff(firmware::OpKind::Silu), L * (S + 1));
  EXPECT_EQ(diff(firmware::OpKind::Mul), L * 2 * S);
  EXPECT_EQ(diff(firmware::OpKind::Exp), 0);
}

TEST(Mapper, BadOptionsAreRefusedWithTheReason) {
  hw::WaferSpec tiny = hw::preset("tiny");
  ModelConfig m = load_model("tiny-llama");
  MapOptions o;
  o.context = 0;
  EXPECT_TRUE(has(map_error(tiny, m, o), "context = 0"));
  o.context = 100000;
  EXPECT_TRUE(has(map_error(tiny, m, o), "max_position_embeddings"));
  {  // a sliding window: every position attended up to it (mapped as without one), refused one beyond
    ModelConfig w = m;
    w.sliding_window = 64;
    MapOptions at;
    at.context = 64;
    EXPECT_EQ(map_error(tiny, w, at), "");
    const Mapping with = map_model(tiny, perfect(tiny), w, at), without = map_model(tiny, perfect(tiny), m, at);
    EXPECT_EQ(with.task_runs(), without.task_runs());
    EXPECT_EQ(with.firmware_bytes(), without.firmware_bytes());
    at.context = 65;
    EXPECT_TRUE(has(map_error(tiny, w, at), "context 65 exceeds tiny-llama's sliding_window 64")) << map_error(tiny, w, at);
  }
  o = {};
  o.context = 64;
  o.batch = 0;
  EXPECT_TRUE(has(map_error(tiny, m, o), "batch = 0"));
  o.batch = 1;
  o.placement = "diagonal";
  EXPECT_TRUE(has(map_error(tiny, m, o), "unknown placement 'diagonal'"));
  o.placement = "layer-bands";
  o.weight_bits = 4;
  EXPECT_TRUE(has(map_error(tiny, m, o), "16 or 8"));
}

TEST(Mapper, SramBudgetExceededSaysWhyAndWhatToTry) {
  hw::WaferSpec tiny = hw::preset("tiny");
  ModelConfig m = load_model("tiny-llama");
  m.hidden = 512, m.intermediate = 1536, m.head_dim = 128;  // ~14 MB of weights on a 3 MB wafer
  MapOptions o;
  o.context = 64;
  std::string e = map_error(tiny, m, o);
  EXPECT_TRUE(has(e, "KB of SRAM per tile") && has(e, "a tile has 48.0 KB") && has(e, "--weights stream") &&
              has(e, "--wafers"))
      << e;
  // Streaming makes it fit: StreamIn ops appear and each streamed stage says how many bytes it streams.
  o.weights = WeightMode::Stream;
  Mapping mp = map_model(tiny, perfect(tiny), m, o);
  EXPECT_GT(mp.streamed_bytes_per_step(), 0);
  EXPECT_GT(sum_elements(mp.images[0], firmware::OpKind::StreamIn), 0);
  std::int64_t per_stage = 0;
  for (const auto& s : mp.stages) per_stage += s.streamed_bytes_per_step;
  EXPECT_EQ(per_stage, mp.streamed_bytes_per_step());
  auto v = firmware::validate(mp.images[0]);
  EXPECT_TRUE(v.ok()) << v.problems.front();
  // A context whose KV cache alone overflows cannot be fixed by streaming.
  o.context = 512;
  o.batch = 64;
  e = map_error(tiny, m, o);
  EXPECT_TRUE(has(e, "even with its weights streamed") && has(e, "--context")) << e;
  // ... nor by more wafers: the search tried up to one stage a wafer and says so (it suggested "more than" that).
  EXPECT_TRUE(has(e, "or a smaller --batch (no --wafers count maps it, not even one stage a wafer (4 wafers))")) << e;
  // Resident, a model that ties its embeddings holds the table twice (the lookup's and the head's): the figure says so.
  ModelConfig q = load_model("tiny-qwen");
  q.hidden = 512, q.intermediate = 1536, q.head_dim = 128;
  o = {};
  o.context = 64;
  e = map_error(tiny, q, o);
  EXPECT_TRUE(has(e, "at 16-bit as held (the tied embedding table twice: by the lookup and by the head) against")) << e;
  EXPECT_FALSE(has(map_error(tiny, m, o), "tied")) << map_error(tiny, m, o);
}

TEST(Mapper, StreamedExpertsAreThoseTheStepsTokensRouteTo) {
  // A step of N tokens streams each expert its tokens route to once: E (1 - (1 - k/E)^N) expected, k for one token,
  // at most min(E, N k) (detail::streamed_expert_width, a column's slice of each).
  using detail::streamed_expert_width;
  EXPECT_EQ(streamed_expert_width(10, 8, 2, 1), 20);
  EXPECT_EQ(streamed_expert_width(10, 8, 2, 2), 35);     // 8 (1 - 0.75^2) = 3.5 experts
  EXPECT_EQ(streamed_expert_width(10, 8, 2, 3), 46);     // 8 (1 - 0.75^3) = 4.625
  EXPECT_EQ(streamed_expert_width(10, 8, 2, 1000), 80);  // every expert
  EXPECT_EQ(streamed_expert_width(10, 64, 1, 2), 20);    // 64 (1 - (63/64)^2) = 1.98: rounded, at most N k = 2
  EXPECT_EQ(streamed_expert_width(10, 4, 4, 5), 40);     // (k = E: all of them)
  // Mapped: tiny-moe made too large for the tiny wafer, streamed. A layer streams its attention, its router and,
  // of its experts' gate, up and down, k experts' worth for one sequence and every expert for 12 (4 (1 - 0.5^12) =
  // 3.999 expected: every column's slice rounds to all 4).
  hw::WaferSpec tiny = hw::preset("tiny");
  ModelConfig m = load_model("tiny-moe");
  m.hidden = 256, m.intermediate = 512, m.head_dim = 64;
  MapOptions o;
  o.context = 32;
  o.weights = WeightMode::Stream;
  auto layer0 = [&](std::int64_t batch) {
    o.batch = batch;
    for (const auto& s : map_model(tiny, perfect(tiny), m, o).stages)
      if (s.name == "layer 0") return s.streamed_bytes_per_step;
    return std::int64_t(-1);
  };
  const std::int64_t H = m.hidden, attn = H * m.q_dim() + 2 * H * m.kv_dim() + m.q_dim() * H, router = H * m.experts;
  const std::int64_t expert = 3 * H * m.intermediate;
  EXPECT_EQ(layer0(1), 2 * (attn + router + m.experts_per_tok * expert));  // (16-bit weights)
  EXPECT_EQ(layer0(12), 2 * (attn + router + m.experts * expert));
  const std::int64_t two = layer0(2);  // 4 (1 - 0.5^2) = 3 experts expected of 4 (top-2)
  EXPECT_GT(two, layer0(1));
  EXPECT_LT(two, layer0(12));
  EXPECT_NEAR(double(two), 2.0 * double(attn + router + 3 * expert), 0.001 * double(two));
}

// A streamed embedding fetches a row per token vector of the step (hidden x 2 bytes each), where the GEMVs' weights
// stream once whatever the batch: batch 1, batch 8, a prefill of 4 tokens, a mixed step of 1 + 4 tokens. (It
// fetched one row whatever the step.)
TEST(Mapper, AStreamedEmbeddingFetchesARowPerToken) {
  hw::WaferSpec tiny = hw::preset("tiny");
  const ModelConfig m = load_model("small-llama");
  auto embedding = [&](MapOptions o) {
    o.context = 16;
    o.weights = WeightMode::Stream;
    o.placement = "whole-wafer";
    for (const auto& s : map_model(tiny, perfect(tiny), m, o).stages)
      if (s.name == "embedding") return s.streamed_bytes_per_step;
    return std::int64_t(-1);
  };
  const std::int64_t row = 2 * m.hidden;
  MapOptions o;
  EXPECT_EQ(embedding(o), row);
  o.batch = 8;
  EXPECT_EQ(embedding(o), 8 * row);
  o.batch = 1, o.tokens = 4;
  EXPECT_EQ(embedding(o), 4 * row);
  o.tokens = 1, o.step = {{1, 16}, {4, 16}};
  EXPECT_EQ(embedding(o), 5 * row);
}

// A tied embedding on the head's tiles (whole-wafer, square: one region, the table split alike, with either
// kernel) reads the head's resident table: the wafer holds every parameter once (tiny-qwen: 98,816 of them,
// 16-bit; meshgemv copies its norms' weights besides). On layer-bands the
// lookup and the head lie on other tiles, and the table is held twice (+ vocab x hidden); so it is when the model is
// not tied, and when the head streams (the lookup then holds its own).
TEST(Mapper, ATiedEmbeddingOnTheHeadsTilesReadsTheHeadsTable) {
  hw::WaferSpec tiny = hw::preset("tiny");
  auto held = [&](const ModelConfig& m, const std::string& placement, Kernel kernel = Kernel::Bands) {
    MapOptions o;
    o.context = 64;
    o.placement = placement;
    o.kernel = kernel;
    const Mapping mp = map_model(tiny, perfect(tiny), m, o);
    std::int64_t sum = 0;
    for (const auto& im : mp.images)
      for (std::uint32_t p : im.tile_program)
        if (p != firmware::kIdle) sum += im.programs[p].sram.weights;
    return sum;
  };
  ModelConfig m = load_model("tiny-qwen");
  ASSERT_TRUE(m.tie_embeddings);
  const std::int64_t once = 2 * m.parameter_count(), table = 2 * m.vocab * m.hidden;
  EXPECT_EQ(held(m, "whole-wafer"), once);
  EXPECT_EQ(held(m, "square"), once);
  EXPECT_EQ(held(m, "layer-bands"), once + table);
  // The meshgemv kernel splits the lookup's table as the head's too (vocabulary over columns, hidden over rows); it
  // copies each norm's weights to every column (and a bias to every row), so it holds more than the parameters, but
  // the tied table once: the same model untied holds one table more.
  const std::int64_t mesh_tied = held(m, "whole-wafer", Kernel::MeshGemv);
  EXPECT_GT(mesh_tied, once);
  m.tie_embeddings = false;  // (the same shapes, untied: the head's table is a parameter of its own)
  EXPECT_EQ(held(m, "whole-wafer"), 2 * m.parameter_count());
  EXPECT_EQ(held(m, "whole-wafer", Kernel::MeshGemv), mesh_tied + table);
  EXPECT_EQ(2 * m.parameter_count(), once + table);
  // Llama-3.2-1B (tied) on small, whole-wafer, streamed: the head streams, so does the lookup (its rows), and no
  // note says the table is held.
  hw::WaferSpec small = hw::preset("small");
  MapOptions o;
  o.context = 256;
  o.placement = "whole-wafer";
  o.weights = WeightMode::Stream;
  const Mapping mp = map_model(small, perfect(small), load_model("llama-3.2-1b"), o);
  for (const auto& s : mp.stages) {
    if (s.name == "head" || s.name == "embedding") {
      EXPECT_TRUE(s.streamed) << s.name;
    }
  }
  for (const auto& n : mp.notes) EXPECT_EQ(n.find("tied embeddings"), std::string::npos) << n;
}

TEST(Mapper, PipelineOfWafersSplitsTheStages) {
  hw::WaferSpec tiny = hw::preset("tiny");
  ModelConfig m = load_model("tiny-llama");
  m.layers = 6;
  MapOptions o;
  o.context = 64;
  o.wafers = 3;
  Mapping mp = map_model(tiny, perfect(tiny), m, o);
  ASSERT_EQ(mp.images.size(), 3u);
  EXPECT_EQ(mp.interwafer_bytes_per_step(), m.hidden * 2);
  int last = -1;
  for (const auto& s : mp.stages) {
    EXPECT_GE(s.wafer, last);
    last = s.wafer;
  }
  EXPECT_EQ(mp.stages.front().wafer, 0);
  EXPECT_EQ(mp.stages.back().wafer, 2);
  for (const auto& img : mp.images) {
    auto v = firmware::validate(img);
    EXPECT_TRUE(v.ok()) << v.problems.front();
  }
  EXPECT_EQ(mp.wafers.back().egress_bytes_per_token, 0);
}

// A mapping fits exactly when its fullest tile's program does: with a tile of that many bytes it maps, with one
// byte less it is refused (resident) or streams more (streamed), on placements where stages share tiles and
// where they do not.
// (The check summed each stage's fullest fragment and held the layers' code once: stages sharing tiles whose
// fullest fragments lie on different tiles, or resident and streamed layers on one tile, which hold two codes,
// were refused where they fit or let through to the image's check. Llama-3.2-1B streamed on small over the
// whole wafer at context 1024 was refused: a tile needs 48.1 KB.)
TEST(Mapper, AMappingFitsExactlyWhenItsFullestTileDoes) {
  struct Case {
    const char* wafer;
    const char* model;
    const char* placement;
    std::int64_t context;
    WeightMode weights;
  };
  for (const Case& c : {Case{"tiny", "tiny-llama", "whole-wafer", 64, WeightMode::Resident},
                        Case{"tiny", "tiny-moe", "square", 64, WeightMode::Resident},
                        Case{"tiny", "tiny-llama", "layer-bands", 256, WeightMode::Resident},
                        Case{"small", "llama-3.2-1b", "whole-wafer", 256, WeightMode::Stream},
                        Case{"small", "llama-3.2-1b", "square", 256, WeightMode::Stream}}) {
    SCOPED_TRACE(::testing::Message() << c.model << " on " << c.wafer << ", " << c.placement << ", context " << c.context);
    hw::WaferSpec spec = hw::preset(c.wafer);
    const ModelConfig m = load_model(c.model);
    MapOptions o;
    o.placement = c.placement, o.context = c.context, o.weights = c.weights;
    spec.sram_bytes *= 4;
    const std::int64_t fullest = map_model(spec, perfect(spec), m, o).wafers[0].sram_max;
    spec.sram_bytes = fullest;
    Mapping at;
    ASSERT_NO_THROW(at = map_model(spec, perfect(spec), m, o));
    EXPECT_LE(at.wafers[0].sram_max, fullest);
    spec.sram_bytes = fullest - 1;
    if (c.weights == WeightMode::Resident) {
      EXPECT_THROW(map_model(spec, perfect(spec), m, o), hw::InputError);
    } else {
      Mapping less;
      ASSERT_NO_THROW(less = map_model(spec, perfect(spec), m, o));
      EXPECT_LT(less.wafers[0].sram_max, fullest);
      EXPECT_GT(less.streamed_bytes_per_step(), at.streamed_bytes_per_step());
    }
  }
  hw::WaferSpec small = hw::preset("small");
  MapOptions o;
  o.placement = "whole-wafer", o.context = 1024, o.weights = WeightMode::Stream;
  Mapping mp;
  ASSERT_NO_THROW(mp = map_model(small, perfect(small), load_model("llama-3.2-1b"), o));
  EXPECT_LE(mp.wafers[0].sram_max, small.sram_bytes);
}

// A region whose stages share tiles streams no stage its tiles could hold: Mixtral on wse3's square at context 1024
// streamed 25 of its 34 stages, as many as the sum of each stage's fullest fragment asked, where its tiles hold
// 10 resident (the fullest 48,840 bytes of 49,152); the stage taken back is the lightest of those streamed.
TEST(Mapper, ASharedRegionStreamsNoStageItsTilesCouldHold) {
  hw::WaferSpec wse3 = hw::preset("wse3");
  MapOptions o;
  o.placement = "square", o.context = 1024, o.weights = WeightMode::Stream;
  const Mapping mp = map_model(wse3, perfect(wse3), load_model("mixtral-8x7b"), o);
  int streamed = 0;
  for (const auto& s : mp.stages) streamed += s.streamed;
  EXPECT_EQ(streamed, 24);
  EXPECT_LE(mp.wafers[0].sram_max, wse3.sram_bytes);
  EXPECT_GT(mp.wafers[0].sram_max, wse3.sram_bytes - 1024);  // (the stage taken back filled what was left)
}

// The pipeline's split: the fewest bytes on the fullest wafer, then the most even split.
TEST(Mapper, PipelineSplitPutsTheFewestBytesOnTheFullestWafer) {
  using V = std::vector<std::size_t>;
  // An embedding, identical layers and a head a little larger (it holds the final norm): the halves are the
  // embedding and half the layers, and the other half with the head. (A cut at the first stage past half the
  // bytes put a layer more on the first wafer: 10 + 4 x 100 | 12 + 2 x 100 for this model on 2 wafers.)
  const std::vector<std::int64_t> model{10, 100, 100, 100, 100, 100, 100, 12};
  EXPECT_EQ(split_pipeline(model, 2), (V{0, 4, 8}));
  EXPECT_EQ(split_pipeline(model, 1), (V{0, 8}));
  EXPECT_EQ(split_pipeline(model, 8), (V{0, 1, 2, 3, 4, 5, 6, 7, 8}));
  // 6 layers on 4 wafers: some wafer holds 2 layers; 200 at most leaves the embedding and the head a layer
  // each (110, 200, 200, 112; the cut past each quarter of the bytes gave 210, 200, 100, 112).
  EXPECT_EQ(split_pipeline(model, 4), (V{0, 2, 4, 6, 8}));
  // the least largest group decides before evenness: 1, 1, 1, 6 on 2 wafers is 3 | 6, not 1 + 1 | 1 + 6
  EXPECT_EQ(split_pipeline({1, 1, 1, 6}, 2), (V{0, 3, 4}));
  // both sides of a tie in the largest group: 5 | 5 + 5 and 5 + 5 | 5 hold 10 at most; equal squares, the
  // earlier cut
  EXPECT_EQ(split_pipeline({5, 5, 5}, 2), (V{0, 1, 3}));
  EXPECT_EQ(split_pipeline({5, 5, 6}, 2), (V{0, 2, 3}));  // 10 | 6 (10 at most) against 5 | 11
  EXPECT_EQ(split_pipeline({6, 5, 5}, 2), (V{0, 1, 3}));  // 6 | 10
  EXPECT_THROW(split_pipeline({1, 2}, 3), hw::InputError);
  EXPECT_THROW(split_pipeline({1, 2}, 0), hw::InputError);
}

// tiny-llama on 2 wafers: the embedding and layer 0 on the first, layer 1 and the head on the second.
TEST(Mapper, PipelineOfTwoWafersHalvesTinyLlama) {
  hw::WaferSpec tiny = hw::preset("tiny");
  ModelConfig m = load_model("tiny-llama");
  MapOptions o;
  o.context = 128;
  o.wafers = 2;
  Mapping mp = map_model(tiny, perfect(tiny), m, o);
  std::vector<std::pair<std::string, int>> got;
  for (const auto& s : mp.stages) got.emplace_back(s.name, s.wafer);
  EXPECT_EQ(got, (std::vector<std::pair<std::string, int>>{{"embedding", 0}, {"layer 0", 0}, {"layer 1", 1}, {"head", 1}}));
  // A 10-layer small-llama on 2 small wafers: 5 layers a wafer fit (as 5 layers with both ends do on one); the
  // split with 6 on the first was refused for a layer that did not fit there.
  hw::WaferSpec small = hw::preset("small");
  ModelConfig sl = load_model("small-llama");
  o.wafers = 1;
  sl.layers = 5;
  EXPECT_EQ(map_error(small, sl, o), "");
  sl.layers = 10;
  EXPECT_NE(map_error(small, sl, o), "");
  o.wafers = 2;
  EXPECT_EQ(map_error(small, sl, o), "");
}

TEST(Mapper, Llama70BIsRejectedResidentAndAcceptedStreamedOrOnFourWafers) {
  hw::WaferSpec wse3 = hw::preset("wse3");
  ModelConfig m = load_model("llama-3.1-70b");
  MapOptions o;
  o.context = 4096;
  std::string e = map_error(wse3, m, o);
  EXPECT_TRUE(has(e, "layer") && has(e, "a tile has 48.0 KB") && has(e, "--weights stream") && has(e, "--wafers"))
      << e;
  o.weights = WeightMode::Stream;
  Mapping s = map_model(wse3, perfect(wse3), m, o);
  EXPECT_GT(s.streamed_bytes_per_step(), 100'000'000'000);  // ~141 GB of 16-bit weights
  o.weights = WeightMode::Resident;
  o.wafers = 4;
  Mapping w = map_model(wse3, perfect(wse3), m, o);
  EXPECT_EQ(w.images.size(), 4u);
  EXPECT_EQ(w.streamed_bytes_per_step(), 0);
  EXPECT_EQ(w.interwafer_bytes_per_step(), 8192 * 2);
  for (const auto& wr : w.wafers) EXPECT_LE(wr.sram_max, wse3.sram_bytes);
}

TEST(Mapper, RealModelValidatesOnEveryPlacementOfASmallWafer) {
  // Llama-3.2-1B on the 64 x 64 `small` wafer: its weights stream, its KV cache stays resident.
  hw::WaferSpec small = hw::preset("small");
  ModelConfig m = load_model("llama-3.2-1b");
  for (const auto& name : placement_names()) {
    MapOptions o;
    o.placement = name;
    o.context = 256;
    o.weights = WeightMode::Stream;
    Mapping mp = map_model(small, perfect(small), m, o);
    auto v = firmware::validate(mp.images[0]);
    EXPECT_TRUE(v.ok()) << name << ": " << v.problems.front();
    EXPECT_GT(mp.streamed_bytes_per_step(), 2'000'000'000) << name;  // ~2.5 GB of 16-bit weights, lm head twice
    for (const auto& s : mp.stages) EXPECT_EQ(s.streamed, s.streamed_bytes_per_step > 0) << name << " " << s.name;
  }
}

TEST(Mapper, Llama8BOnWse3SharesProgramsAndCoversEveryMac) {
  hw::WaferSpec wse3 = hw::preset("wse3");
  ModelConfig m = load_model("llama-3.1-8b");
  MapOptions o;  // layer-bands, context 4096, batch 1, 16-bit, resident
  Mapping mp = map_model(wse3, perfect(wse3), m, o);
  const WaferReport& w = mp.wafers[0];
  EXPECT_EQ(w.tiles_used, wse3.logical_tiles());
  EXPECT_LT(w.programs, 5000u);               // 893 k tiles share a few thousand programs at most
  EXPECT_LT(w.firmware_bytes, 2'000'000);     // a couple of MB of firmware for the whole wafer
  EXPECT_LE(w.sram_max, wse3.sram_bytes);
  EXPECT_GT(w.sram_mean, 16e9 / 893064.0);    // 16 GB of weights spread over the tiles, plus KV cache
  EXPECT_LE(w.colors_used, wse3.colors);
  EXPECT_EQ(mp.streamed_bytes_per_step(), 0);
  EXPECT_GT(w.task_runs, 8 * w.tiles_used);   // every tile runs its operators' tasks ...
  EXPECT_LT(w.task_runs, 20 * w.tiles_used);  // ... once per step (layer-bands: one stage per tile)
  // (The full replay of this image by firmware::validate takes ~0.5 s in a release build and several seconds in
  // a debug one; the same emitter is replayed on `small` above and on every placement of the tiny models.)
  // Every weight is used once per token: the Fmac elements cover the model's MACs.
  const firmware::Image& img = mp.images[0];
  std::vector<std::int64_t> uses(img.programs.size(), 0);
  for (std::uint32_t p : img.tile_program) ++uses[p];
  std::int64_t fmac = 0;
  for (std::size_t p = 0; p < img.programs.size(); ++p)
    for (const auto& t : img.programs[p].tasks)
      for (const auto& op : t.ops)
        if (op.kind == firmware::OpKind::Fmac) fmac += uses[p] * op.elements;
  std::int64_t expected = m.parameter_count() - m.vocab * m.hidden  // no MACs for the embedding lookup
                          + 2 * m.layers * o.context * m.q_dim();   // attention scores and values
  EXPECT_EQ(fmac, expected);
}

TEST(Kernels, GemvProgramsAreTheDocumentedOnes) {
  // docs/mapping.md section 6 and mapper/kernels.h: K = 16, N = 8 on the 2 x 2 corner of `tiny`.
  hw::WaferSpec tiny = hw::preset("tiny");
  firmware::Image img = map_gemv(tiny, {0, 0, 2, 2}, 16, 8);
  using K = firmware::Dest::Kind;
  ASSERT_EQ(img.start.size(), 2u);
  EXPECT_EQ(img.start[0].tile, (hw::Coord{1, 0}));
  EXPECT_EQ(img.start[0].wavelets, 4u);
  EXPECT_EQ(img.start[0].color, 0);
  const firmware::Program* relay = img.program_at({1, 0});
  ASSERT_NE(relay, nullptr);
  ASSERT_EQ(relay->tasks.size(), 2u);
  EXPECT_TRUE(relay->tasks[0].ops.empty());
  ASSERT_EQ(relay->tasks[0].sends.size(), 1u);
  EXPECT_EQ(relay->tasks[0].sends[0], (firmware::Send{2, 4, {K::Row, -1, 0, 2}, true}));  // a broadcast's root
  // K_r = 8 inputs x N_i = 4 outputs: 8 vector ops of 4 MACs (one per input).
  EXPECT_EQ(relay->tasks[1].ops, (std::vector<firmware::Op>{{firmware::OpKind::Fmac, 32, 8}}));
  EXPECT_EQ(relay->tasks[1].sends[0], (firmware::Send{3, 2, {K::Tile, 0, 1, 1}, true}));  // starts the column reduce
  const firmware::Program* bottom_west = img.program_at({0, 1});
  ASSERT_NE(bottom_west, nullptr);
  ASSERT_EQ(bottom_west->tasks.size(), 2u);
  EXPECT_EQ(bottom_west->tasks[1].trigger, 3);
  EXPECT_EQ(bottom_west->tasks[1].start, firmware::Task::Start::Complete);
  EXPECT_EQ(bottom_west->tasks[1].ops, (std::vector<firmware::Op>{{firmware::OpKind::Add, 4}}));
  EXPECT_EQ(bottom_west->tasks[1].sends[0], (firmware::Send{11, 2, {K::Tile, 1, 0, 1}, false}));  // point to point
  EXPECT_EQ(img.done_tile, (hw::Coord{1, 1}));
  EXPECT_EQ(img.done_color, 11);
  EXPECT_EQ(img.done_arrivals, 2);
  EXPECT_EQ(img.program_at({2, 0}), nullptr);
}

TEST(Mapper, EightBitWeightsHalveTheWeightBytesAndContextGrowsTheKvCache) {
  hw::WaferSpec tiny = hw::preset("tiny");
  ModelConfig m = load_model("tiny-llama");
  MapOptions o;
  o.context = 64;
  Mapping a = map_model(tiny, perfect(tiny), m, o);
  o.weight_bits = 8;
  Mapping b = map_model(tiny, perfect(tiny), m, o);
  std::int64_t wa = 0, wb = 0, kva = 0, kvc = 0;
  for (const auto& s : a.stages) wa += s.weight_bytes, kva += s.kv_bytes;
  for (const auto& s : b.stages) wb += s.weight_bytes;
  EXPECT_EQ(wa, 2 * wb);
  EXPECT_LT(b.wafers[0].sram_max, a.wafers[0].sram_max);
  o.weight_bits = 16;
  o.context = 256;
  Mapping c = map_model(tiny, perfect(tiny), m, o);
  for (const auto& s : c.stages) kvc += s.kv_bytes;
  EXPECT_EQ(kvc, 4 * kva);
  EXPECT_GT(c.wafers[0].sram_max, a.wafers[0].sram_max);
}

// apps::PointCache shares one mapping between the defect maps of a study when the placement reads no link lengths:
// every placement that says so (PlacementStrategy::reads_links) maps fabrics whose links' lengths differ (from a
// complete repair, and set by hand) but whose grid and faults are alike exactly as it maps the perfect fabric; the
// placements that read links say so. (A failed link is a fault they read: Mapper.ALinkWithoutAPathIsRefused...)
TEST(Mapper, PlacementsThatReadNoLinkLengthsMapFabricsWithTheSameFaultsAlike) {
  hw::WaferSpec tiny = hw::preset("tiny");
  const noc::Fabric f = perfect(tiny);
  const hw::Grid& g = f.grid();
  std::vector<noc::Fabric> others;
  for (std::uint64_t seed = 1; seed <= 40 && others.empty(); ++seed) {
    hw::DefectGenParams gp;
    gp.density_per_cm2 = 100;
    hw::RepairResult rep = hw::repair_scheme("row-shift").repair(tiny, hw::generate_defects(tiny, gp, seed));
    noc::Fabric r = noc::Fabric::from_repair(rep);
    if (rep.complete && !(r == f)) others.push_back(std::move(r));
  }
  ASSERT_FALSE(others.empty()) << "no seed gave a complete repair with longer links";
  noc::Fabric by_hand = f;
  by_hand.set_hops(g.index({2, 3}), hw::Dir::East, 3);
  by_hand.set_hops(g.index({5, 1}), hw::Dir::South, 2);
  others.push_back(by_hand);
  ModelConfig m = load_model("tiny-llama");
  int without_links = 0;
  for (const auto& name : placement_names()) {
    MapOptions o;
    o.placement = name;
    o.context = 64;
    EXPECT_EQ(mapping_reads_links(o), placement(name).reads_links()) << name;
    if (mapping_reads_links(o)) continue;
    ++without_links;
    const Mapping a = map_model(tiny, f, m, o);
    for (const noc::Fabric& other : others) {
      ASSERT_TRUE(other.same_faults(f));
      ASSERT_FALSE(other == f);
      const Mapping b = map_model(tiny, other, m, o);
      EXPECT_TRUE(a.images == b.images) << name;
      ASSERT_EQ(a.stages.size(), b.stages.size());
      for (std::size_t i = 0; i < a.stages.size(); ++i) EXPECT_EQ(a.stages[i].region, b.stages[i].region) << name;
      EXPECT_EQ(a.notes, b.notes) << name;
    }
  }
  EXPECT_EQ(without_links, 4);  // layer-bands, serpentine-bands, whole-wafer, square
  MapOptions o;
  o.placement = "defect-aware";
  EXPECT_TRUE(mapping_reads_links(o));
  o.placement = "auto";  // (decode's search, not a placement map_model knows: it emulates candidates)
  EXPECT_TRUE(mapping_reads_links(o));
  o.placement = "no-such-placement";
  EXPECT_TRUE(mapping_reads_links(o));
}

TEST(Mapper, DefectAwareMapsAroundAnIncompleteRepair) {
  hw::WaferSpec small = hw::preset("small");
  hw::DefectGenParams gp;
  gp.density_per_cm2 = 150;  // far beyond a real wafer: some rows lose more tiles than there are spares
  hw::DefectMap defects = hw::generate_defects(small, gp, 7);
  hw::RepairResult rep = hw::repair_scheme("row-shift").repair(small, defects);
  noc::Fabric fabric = noc::Fabric::from_repair(rep);
  ASSERT_FALSE(rep.complete) << defects.size() << " defects were all repaired; raise the density";
  ModelConfig m = load_model("tiny-llama");
  MapOptions o;
  o.context = 64;
  o.placement = "layer-bands";
  try {
    map_model(small, fabric, m, o);
    FAIL() << "layer-bands accepted an array with dead tiles";
  } catch (const hw::InputError& e) {
    EXPECT_TRUE(has(e.what(), "defect-aware")) << e.what();
  }
  o.placement = "defect-aware";
  Mapping mp = map_model(small, fabric, m, o);
  auto v = firmware::validate(mp.images[0]);
  EXPECT_TRUE(v.ok()) << v.problems.front();
  hw::Rect usable = placement_detail::largest_healthy_rect(fabric);
  for (const auto& s : mp.stages) {
    EXPECT_TRUE(usable.contains({s.region.x0, s.region.y0}) &&
                usable.contains({s.region.x0 + s.region.w - 1, s.region.y0 + s.region.h - 1}))
        << s.name;
  }
  const hw::Grid g = fabric.grid();
  for (std::uint32_t t = 0; t < g.size(); ++t)
    if (mp.images[0].tile_program[t] != firmware::kIdle) {
      EXPECT_TRUE(fabric.router_ok(t));
    }
}

// A pipeline whose wafers have defect maps of their own (noc::WaferFabrics): each wafer is placed on its own
// fabric, so its image is the one the pipeline mapped on its fabric alone gives that wafer; one fabric for every
// wafer is the same as that fabric given once per wafer; a count other than one or the wafers' is refused.
TEST(Mapper, EachWaferOfAPipelineIsPlacedOnItsOwnFabric) {
  hw::WaferSpec tiny = hw::preset("tiny");
  ModelConfig m = load_model("tiny-llama");
  MapOptions o;
  o.context = 64;
  o.wafers = 2;
  o.placement = "defect-aware";
  const noc::Fabric f = perfect(tiny);
  noc::Fabric dead = f;  // a router repair could not replace, where the perfect fabric's regions lie
  dead.fail_router(dead.grid().index({1, 1}));
  const Mapping on_f = map_model(tiny, f, m, o), on_dead = map_model(tiny, dead, m, o);
  ASSERT_FALSE(on_f.images[1] == on_dead.images[1]);
  const noc::Fabric* const pf = &f;
  const noc::Fabric* const pd = &dead;
  for (const auto& [a, b] : {std::pair{pf, pd}, std::pair{pd, pf}}) {
    const Mapping both = map_model(tiny, noc::WaferFabrics({a, b}), m, o);
    const Mapping& first = a == pf ? on_f : on_dead;
    const Mapping& second = b == pf ? on_f : on_dead;
    ASSERT_EQ(both.images.size(), 2u);
    EXPECT_TRUE(both.images[0] == first.images[0]);
    EXPECT_TRUE(both.images[1] == second.images[1]);
    EXPECT_TRUE(firmware::validate(both.images[1]).ok());
  }
  EXPECT_TRUE(map_model(tiny, noc::WaferFabrics({&f, &f}), m, o).images[1] == on_f.images[1]);
  EXPECT_THROW(map_model(tiny, noc::WaferFabrics({&f, &f, &f}), m, o), hw::InputError);
}

// A link repair left without a healthy path (both its routers working) is refused by the placements that need the
// whole array, naming it, as a dead router is: their rows' multicasts would cross it (it was refused at routing, as
// "route it as a Plan"); defect-aware maps around it.
TEST(Mapper, ALinkWithoutAPathIsRefusedByTheWholeArrayPlacements) {
  hw::WaferSpec tiny = hw::preset("tiny");
  ModelConfig m = load_model("tiny-llama");
  MapOptions o;
  o.context = 64;
  noc::Fabric f = perfect(tiny);
  f.fail_link(f.grid().index({0, 0}), hw::Dir::East);
  for (const char* name : {"layer-bands", "serpentine-bands", "whole-wafer"}) {
    o.placement = name;
    try {
      map_model(tiny, f, m, o);
      ADD_FAILURE() << name << " accepted a link without a path";
    } catch (const hw::InputError& e) {
      EXPECT_TRUE(has(e.what(), "1 logical link(s) without a healthy path (first (0,0)-(1,0))")) << e.what();
      EXPECT_TRUE(has(e.what(), "defect-aware")) << e.what();
    }
  }
  o.placement = "defect-aware";
  EXPECT_TRUE(firmware::validate(map_model(tiny, f, m, o).images[0]).ok());
  o.placement = "layer-bands";
  EXPECT_NO_THROW(map_model(tiny, perfect(tiny), m, o));
}

TEST(Mapper, AbsurdModelsAreRefusedNotWrappedAround) {
  // 405B resident on the 8 x 8 wafer: gigabytes per tile must be refused, never wrap to something small.
  hw::WaferSpec tiny = hw::preset("tiny");
  ModelConfig m = load_model("llama-3.1-405b");
  MapOptions o;
  o.context = 64;
  std::string e = map_error(tiny, m, o);
  EXPECT_TRUE(has(e, "one row of tiles per stage") && has(e, "128 stages")) << e;
  o.placement = "whole-wafer";
  e = map_error(tiny, m, o);
  EXPECT_TRUE(has(e, "a tile has 48.0 KB") && has(e, "more than 1 GB")) << e;  // saturated, not wrapped
  nlohmann::json j = {{"hidden_size", 1 << 20}, {"intermediate_size", 1 << 20}, {"num_attention_heads", 1024},
                      {"num_hidden_layers", 4096}, {"vocab_size", 1 << 20}};
  try {
    parse_model_config(j, "absurd.json");
    FAIL();
  } catch (const hw::InputError& e2) {
    EXPECT_TRUE(has(e2.what(), "absurd.json") && has(e2.what(), "parameters")) << e2.what();
  }
}

// A refusal for lack of SRAM suggests the fewest wafers that map (found by mapping), never one that is
// refused in turn.
TEST(Mapper, SuggestedWaferCountMapsAndOneFewerDoesNot) {
  hw::WaferSpec small = hw::preset("small");
  ModelConfig m = load_model("tinyllama-1.1b");
  MapOptions o;
  o.context = 1024;
  o.wafers = 2;
  const std::string e = map_error(small, m, o);
  const auto at = e.find("--wafers ");
  ASSERT_NE(at, std::string::npos) << e;
  const int n = std::stoi(e.substr(at + 9));
  EXPECT_GT(n, 2);
  o.wafers = n;
  EXPECT_EQ(map_error(small, m, o), "");
  o.wafers = n - 1;
  EXPECT_NE(map_error(small, m, o), "");
}

// A plan (MapOptions::plan_only, what --placement auto maps every candidate by first) of the bands kernel counts
// the full mapping's task runs wafer by wafer and names its done tile, on every placement, with streamed weights,
// a batch, a pipeline of wafers and a repaired fabric; a refusal up to SRAM is the same.
TEST(Mapper, ABandsPlanCountsTheFullMappingsTaskRuns) {
  hw::WaferSpec small = hw::preset("small");
  std::vector<noc::Fabric> fabrics{perfect(small)};
  for (std::uint64_t seed = 1; seed <= 40 && fabrics.size() < 2; ++seed) {
    hw::DefectGenParams gp;
    gp.density_per_cm2 = 20;
    hw::RepairResult rep = hw::repair_scheme("row-shift").repair(small, hw::generate_defects(small, gp, seed));
    noc::Fabric r = noc::Fabric::from_repair(rep);
    if (rep.complete && !(r == fabrics.front())) fabrics.push_back(std::move(r));
  }
  ASSERT_EQ(fabrics.size(), 2u) << "no seed gave a complete repair with longer links";
  int compared = 0;
  for (const char* model : {"small-llama", "tiny-moe", "tiny-qwen"}) {
    const ModelConfig m = load_model(model);
    for (const auto& name : placement_names())
      for (const auto& [batch, weights, wafers] : {std::tuple{1, WeightMode::Resident, 1}, std::tuple{2, WeightMode::Resident, 2},
                                                   std::tuple{1, WeightMode::Stream, 1}})
        for (std::size_t fi = 0; fi < fabrics.size(); ++fi) {
          SCOPED_TRACE(::testing::Message() << model << " " << name << " batch " << batch << " wafers " << wafers
                                            << " fabric " << fi);
          MapOptions o;
          o.placement = name, o.context = 256, o.batch = batch, o.weights = weights, o.wafers = wafers;
          std::string full_reason, plan_reason;
          Mapping full, plan;
          try {
            full = map_model(small, fabrics[fi], m, o);
          } catch (const hw::InputError& e) {
            full_reason = e.what();
          }
          o.plan_only = true;
          try {
            plan = map_model(small, fabrics[fi], m, o);
          } catch (const hw::InputError& e) {
            plan_reason = e.what();
          }
          if (!plan_reason.empty()) {  // (a plan stops at SRAM: what it refuses, the full mapping refuses alike)
            EXPECT_EQ(plan_reason, full_reason);
            continue;
          }
          if (!full_reason.empty()) continue;  // a check after SRAM, which a plan does not make
          ASSERT_EQ(plan.wafers.size(), full.wafers.size());
          for (std::size_t w = 0; w < full.wafers.size(); ++w) {
            EXPECT_EQ(plan.wafers[w].task_runs, full.wafers[w].task_runs) << "wafer " << w;
            EXPECT_GT(plan.wafers[w].task_runs, 0) << "wafer " << w;
            EXPECT_EQ(plan.images[w].done_tile, full.images[w].done_tile) << "wafer " << w;
            EXPECT_EQ(plan.images[w].done_color, full.images[w].done_color) << "wafer " << w;
            EXPECT_TRUE(plan.images[w].programs.empty()) << "wafer " << w;
          }
          ++compared;
        }
  }
  EXPECT_GE(compared, 40);
}

// The bands kernel's needs of a stage do not depend on where its region lies (the mapper takes them from an
// earlier stage the same but for its layer and its region's place: detail::same_but_place): two decoder-layer
// stages with relays, multicast hand-offs and a mirrored region, one moved by (7, 13), need the same SRAM and run
// the same tasks; a region of another size or mirroring is not the same.
TEST(Mapper, AStagesNeedsDoNotDependOnWhereItsRegionLies) {
  const hw::WaferSpec small = hw::preset("small");
  const ModelConfig m = load_model("small-llama");
  detail::EmitParams p;
  p.spec = &small, p.model = &m, p.context = 256, p.batch = 2;
  for (bool mirrored : {false, true}) {
    SCOPED_TRACE(::testing::Message() << "mirrored " << mirrored);
    detail::StageSpec a;
    a.kind = detail::StageKind::Layer, a.layer = 1, a.name = "layer 1";
    a.region.rect = {2, 5, 40, 6}, a.region.mirrored = mirrored;
    a.in_arrivals = {1, 2, 1, 1, 2, 1};
    a.relay_in = {0, 3, 0, 5, 0, 0};
    a.out = detail::OutKind::Transfer;
    for (std::int32_t r = 0; r < 6; ++r) {
      a.out_dest.push_back({r % 2 ? firmware::Dest::Kind::Row : firmware::Dest::Kind::Tile, -4 + r, 6, r % 2 ? 3 : 1});
      a.out_color.push_back(r % 3 ? detail::color::kResIn : detail::color::kRowIn);
    }
    detail::StageSpec b = a;
    b.layer = 2, b.name = "layer 2", b.region.rect.x0 += 7, b.region.rect.y0 += 13;
    EXPECT_TRUE(detail::same_but_place(a, b));
    const detail::StageNeed na = detail::stage_need(a, p), nb = detail::stage_need(b, p);
    EXPECT_GT(na.tasks, 0);
    EXPECT_EQ(na.worst, nb.worst);
    EXPECT_EQ(na.weight_bytes, nb.weight_bytes);
    EXPECT_EQ(na.stream_bytes, nb.stream_bytes);
    EXPECT_EQ(na.tasks, nb.tasks);
    detail::StageSpec taller = b, flipped = b, other = b;
    taller.region.rect.h = 7, taller.in_arrivals.push_back(1), taller.relay_in.push_back(0);
    taller.out_dest.push_back(a.out_dest.back()), taller.out_color.push_back(detail::color::kResIn);
    flipped.region.mirrored = !mirrored;
    other.out_dest[2].dy = 7;
    EXPECT_FALSE(detail::same_but_place(a, taller));
    EXPECT_FALSE(detail::same_but_place(a, flipped));
    EXPECT_FALSE(detail::same_but_place(a, other));
  }
}

// A KV cache reserved for a deployment (MapOptions::kv_capacity): the mapping keeps room for N positions, as the
// mapping at a context of N does, while the step's work is its own context's. On whole-wafer (one region whatever
// the bytes) the step at context 128 reserved for 2048 runs the tasks of the step at 128, tile for tile, and holds
// the KV cache of the step at 2048, tile for tile; on layer-bands (regions weighed by bytes) its regions are those
// of the step at 2048. A reserve below what the step holds is refused, naming the option.
TEST(Mapper, AReservedKvCacheKeepsTheDeploymentsRoomAndTheStepsWork) {
  const hw::WaferSpec small = hw::preset("small");
  const ModelConfig m = load_model("small-llama");
  auto map = [&](const std::string& placement, Kernel kernel, std::int64_t context, std::int64_t capacity,
                 std::int64_t batch = 1) {
    MapOptions o;
    o.placement = placement, o.kernel = kernel, o.context = context, o.kv_capacity = capacity, o.batch = batch;
    return map_model(small, perfect(small), m, o);
  };
  for (Kernel kernel : {Kernel::Bands, Kernel::MeshGemv}) {
    SCOPED_TRACE(to_string(kernel));
    // (batch 2 at 128: 256 positions held, 2048 reserved, as one sequence at 2048 holds)
    const Mapping reserved = map("whole-wafer", kernel, 128, 2048, 2), own = map("whole-wafer", kernel, 128, 0, 2),
                  full = map("whole-wafer", kernel, 2048, 0);
    ASSERT_EQ(reserved.images.size(), 1u);
    const firmware::Image &r = reserved.images[0], &o = own.images[0], &f = full.images[0];
    std::int64_t tiles = 0, larger = 0;
    for (std::size_t t = 0; t < r.tile_program.size(); ++t) {
      if (r.tile_program[t] == firmware::kIdle) continue;
      ++tiles;
      const firmware::Program &pr = r.programs[r.tile_program[t]], &po = o.programs[o.tile_program[t]],
                              &pf = f.programs[f.tile_program[t]];
      ASSERT_EQ(pr.tasks, po.tasks) << "tile " << t;
      ASSERT_EQ(pr.sram.kv_cache, pf.sram.kv_cache) << "tile " << t;
      EXPECT_GE(pr.sram.kv_cache, po.sram.kv_cache) << "tile " << t;
      larger += pr.sram.kv_cache > po.sram.kv_cache;
    }
    EXPECT_GT(tiles, 0);
    EXPECT_GT(larger, 0);  // (the reserve is room the step itself does not fill)
    for (std::size_t s = 0; s < reserved.stages.size(); ++s)
      EXPECT_EQ(reserved.stages[s].kv_bytes, full.stages[s].kv_bytes) << reserved.stages[s].name;
  }
  const Mapping reserved = map("layer-bands", Kernel::Bands, 128, 2048), own = map("layer-bands", Kernel::Bands, 128, 0),
                full = map("layer-bands", Kernel::Bands, 2048, 0);
  bool moved = false;
  for (std::size_t s = 0; s < reserved.stages.size(); ++s) {
    EXPECT_EQ(reserved.stages[s].region, full.stages[s].region) << reserved.stages[s].name;
    moved |= !(own.stages[s].region == full.stages[s].region);
  }
  EXPECT_TRUE(moved);  // (else this shows nothing: the step at 128 mapped alone lies elsewhere)
  EXPECT_EQ(sum_elements(reserved.images[0], firmware::OpKind::Exp), sum_elements(own.images[0], firmware::OpKind::Exp));
  EXPECT_LT(sum_elements(reserved.images[0], firmware::OpKind::Exp), sum_elements(full.images[0], firmware::OpKind::Exp));
  // What the step holds is the least reserve: batch x context, or a mixed step's contexts summed.
  MapOptions o;
  o.context = 128, o.batch = 2, o.kv_capacity = 255;
  EXPECT_TRUE(has(map_error(small, m, o), "--kv-capacity 255 is fewer positions than the step's KV cache holds (256 = "
                                          "batch 2 x context 128)"))
      << map_error(small, m, o);
  o.kv_capacity = 256;
  EXPECT_EQ(map_error(small, m, o), "");
  o.step = parse_step("1@100,8@60");
  o.kv_capacity = 159;
  EXPECT_TRUE(has(map_error(small, m, o), "(160 over its sequences' contexts)")) << map_error(small, m, o);
  o.kv_capacity = 160;
  EXPECT_EQ(map_error(small, m, o), "");
  o.step.clear(), o.kv_capacity = -1;
  EXPECT_TRUE(has(map_error(small, m, o), "--kv-capacity -1: must be between 1 and 2^40")) << map_error(small, m, o);
  // A reserve that does not fit is the mapper's usual refusal, naming it.
  o.kv_capacity = std::int64_t(1) << 30;
  EXPECT_TRUE(has(map_error(small, m, o), "with a KV cache reserved for 1073741824 positions")) << map_error(small, m, o);
}
