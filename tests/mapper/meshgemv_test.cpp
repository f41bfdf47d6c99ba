// The meshgemv kernel: the allreduce roles along a line (pure), the mapped images (validated at zero
// time, every GEMV MAC once, budgets), and the refusals.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "firmware/validate.h"
#include "hw/error.h"
#include "mapper/mapper.h"
#include "mapper/meshgemv.h"

using namespace wafer;
using namespace wafer::mapper;
using detail::line_role;
using detail::LineRole;

namespace {
const AllreduceAlgo kAlgos[] = {AllreduceAlgo::Chain, AllreduceAlgo::Centre, AllreduceAlgo::Tree};

// Replays the roles of a line: every partial sum is sent once, every tile receives exactly the arrivals its
// role expects on each color, the sums all reach one final root, whose multicast covers the line.
void check_line(std::int32_t n, AllreduceAlgo a, std::int32_t group) {
  SCOPED_TRACE(::testing::Message() << to_string(a) << " n=" << n << " group=" << group);
  std::vector<LineRole> roles;
  for (std::int32_t p = 0; p < n; ++p) roles.push_back(line_role(n, p, a, group));
  std::vector<int> got1(std::size_t(n), 0), got2(std::size_t(n), 0);
  int finals = 0;
  for (std::int32_t p = 0; p < n; ++p) {
    const LineRole& r = roles[std::size_t(p)];
    if (r.to == 0) {
      ++finals;
      EXPECT_EQ(p, detail::final_position(n, a, group));
      EXPECT_EQ(r.first, -p);
      EXPECT_EQ(r.n, n);
      continue;
    }
    const std::int32_t q = p + r.to;
    ASSERT_GE(q, 0);
    ASSERT_LT(q, n);
    ++(r.to_root ? got2 : got1)[std::size_t(q)];
    if (!r.to_root) {
      EXPECT_EQ(std::abs(r.to), 1) << "chain hops are between neighbours";
    }
  }
  EXPECT_EQ(finals, 1);
  for (std::int32_t p = 0; p < n; ++p) {
    EXPECT_EQ(got1[std::size_t(p)], roles[std::size_t(p)].in1) << "tile " << p;
    EXPECT_EQ(got2[std::size_t(p)], roles[std::size_t(p)].in2) << "tile " << p;
  }
  // Following `to` from any tile reaches the final root (no cycle), within n steps.
  for (std::int32_t p = 0; p < n; ++p) {
    std::int32_t q = p, steps = 0;
    while (roles[std::size_t(q)].to != 0 && steps <= n) q += roles[std::size_t(q)].to, ++steps;
    EXPECT_LE(steps, n - 1);
  }
}
}  // namespace

TEST(MeshGemv, LineRolesDeliverEveryPartialSumToOneRoot) {
  for (AllreduceAlgo a : kAlgos)
    for (std::int32_t n = 1; n <= 40; ++n)
      for (std::int32_t g : {0, 1, 2, 3, 5, 7, 40}) check_line(n, a, g);
}

TEST(MeshGemv, RootsAreWhereTheAlgorithmsPutThem) {
  // Chain: the last tile. Centre: the middle. Tree (WaferLLM's code): groups of g, group roots at g/2
  // inside each group, the final root the root of group G/2.
  EXPECT_EQ(detail::final_position(10, AllreduceAlgo::Chain, 0), 9);
  EXPECT_EQ(detail::final_position(10, AllreduceAlgo::Centre, 0), 5);
  EXPECT_EQ(detail::final_position(9, AllreduceAlgo::Centre, 0), 4);
  EXPECT_EQ(detail::tree_group(420, 0), 20);   // round(sqrt(420)) = 20.49 -> 20
  EXPECT_EQ(detail::tree_group(421, 0), 21);   // 20.52 -> 21
  EXPECT_EQ(detail::tree_group(12, 100), 12);  // at most the line
  // 420 tiles in groups of 20: 21 groups, the final root is group 10's, at 10 x 20 + 10.
  EXPECT_EQ(detail::final_position(420, AllreduceAlgo::Tree, 0), 210);
  // Tile 0 starts its group's chain; tile 10 is group 0's root and starts the chain over the roots to 30.
  LineRole r0 = line_role(420, 0, AllreduceAlgo::Tree, 0), r10 = line_role(420, 10, AllreduceAlgo::Tree, 0);
  EXPECT_EQ(r0.in1 + r0.in2, 0);
  EXPECT_EQ(r0.to, 1);
  EXPECT_EQ(r10.in1, 2);
  EXPECT_EQ(r10.in2, 0);
  EXPECT_EQ(r10.to, 20);
  EXPECT_TRUE(r10.to_root);
  // The final root adds its own group's two chains and the chains over the roots from both sides.
  LineRole rc = line_role(420, 210, AllreduceAlgo::Tree, 0);
  EXPECT_EQ(rc.in1, 2);
  EXPECT_EQ(rc.in2, 2);
}

TEST(MeshGemv, TinyModelsMapValidateAndCoverEveryGemvMac) {
  hw::WaferSpec tiny = hw::preset("tiny");
  const noc::Fabric fabric = noc::Fabric::perfect(tiny.logical());
  for (const char* name : {"tiny-llama", "tiny-qwen"}) {
    ModelConfig m = load_model(name);
    for (AllreduceAlgo a : kAlgos) {
      for (int group : {0, 2}) {
        MapOptions o;
        o.placement = "whole-wafer";
        o.kernel = Kernel::MeshGemv;
        o.allreduce = a;
        o.group = group;
        o.context = 100;
        Mapping mp = map_model(tiny, fabric, m, o);
        SCOPED_TRACE(::testing::Message() << name << " " << to_string(a) << " group " << group);
        auto v = firmware::validate(mp.images[0]);
        ASSERT_TRUE(v.ok()) << v.problems.front();
        EXPECT_EQ(std::int64_t(v.tasks_run), mp.wafers[0].task_runs);
        EXPECT_LE(mp.wafers[0].colors_used, tiny.colors);
        EXPECT_EQ(mp.tiles_used(), tiny.logical_tiles());
        // Every MAC of the GEMVs once (by operator); the attention's two products over the context once.
        std::map<std::string, std::int64_t> fmac;
        const auto& im = mp.images[0];
        for (std::uint32_t p : im.tile_program)
          for (const auto& t : im.programs[p].tasks)
            for (const auto& op : t.ops)
              if (op.kind == firmware::OpKind::Fmac) fmac[im.op_names[t.op]] += op.elements;
        const std::int64_t H = m.hidden, L = m.layers, w = tiny.logical_width;
        EXPECT_EQ(fmac["qkv_proj"], L * H * (m.q_dim() + 2 * m.kv_dim()));
        EXPECT_EQ(fmac["o_proj"], L * m.q_dim() * H);
        EXPECT_EQ(fmac["gate_up_proj"], L * H * 2 * m.intermediate);
        EXPECT_EQ(fmac["down_proj"], L * m.intermediate * H);
        EXPECT_EQ(fmac["lm_head"], H * m.vocab);
        EXPECT_EQ(fmac["attention"], 2 * L * o.context * m.q_dim());
        // The norms' sums of squares run on every column (each holds its row's slice): w copies.
        EXPECT_EQ(fmac["layernorm"], 2 * L * H * w);
        EXPECT_EQ(fmac["final_layernorm"], H * w);
      }
    }
  }
}

TEST(MeshGemv, RefusesWhatItDoesNotMap) {
  hw::WaferSpec tiny = hw::preset("tiny");
  const noc::Fabric fabric = noc::Fabric::perfect(tiny.logical());
  auto error = [&](const char* model, MapOptions o) -> std::string {
    o.kernel = Kernel::MeshGemv;
    o.context = 64;
    try {
      map_model(tiny, fabric, load_model(model), o);
    } catch (const hw::InputError& e) {
      return e.what();
    }
    return "";
  };
  MapOptions o;
  o.placement = "whole-wafer";
  EXPECT_NE(error("tiny-moe", o).find("dense models"), std::string::npos) << error("tiny-moe", o);
  o.wafers = 2;
  EXPECT_NE(error("tiny-llama", o).find("one wafer"), std::string::npos);
  o.wafers = 1;
  o.weights = WeightMode::Stream;
  EXPECT_NE(error("tiny-llama", o).find("--weights stream needs --kernel bands"), std::string::npos);
  o.weights = WeightMode::Resident;
  o.placement = "layer-bands";
  EXPECT_NE(error("tiny-llama", o).find("use --placement whole-wafer"), std::string::npos);
  EXPECT_THROW(parse_kernel("meshgem"), hw::InputError);
  EXPECT_THROW(parse_allreduce("ring"), hw::InputError);
  EXPECT_EQ(parse_allreduce(to_string(AllreduceAlgo::Centre)), AllreduceAlgo::Centre);
  EXPECT_EQ(parse_kernel(to_string(Kernel::MeshGemv)), Kernel::MeshGemv);
}

namespace {
// The meshgemv kernel on the whole tiny wafer, context 64.
MapOptions mesh_options() {
  MapOptions o;
  o.placement = "whole-wafer", o.kernel = Kernel::MeshGemv, o.context = 64;
  return o;
}
}  // namespace

TEST(MeshGemv, TheTreesGroupSizeChangesTheProgramsNotTheWork) {
  hw::WaferSpec tiny = hw::preset("tiny");
  const noc::Fabric fabric = noc::Fabric::perfect(tiny.logical());
  ModelConfig m = load_model("tiny-llama");
  MapOptions o = mesh_options();
  o.group = 2;
  Mapping a = map_model(tiny, fabric, m, o);
  o.group = 4;
  Mapping b = map_model(tiny, fabric, m, o);
  EXPECT_NE(a.images[0].programs, b.images[0].programs);
  auto weights = [](const Mapping& mp) {
    std::int64_t w = 0;
    const auto& im = mp.images[0];
    for (std::uint32_t p : im.tile_program) w += im.programs[p].sram.weights;
    return w;
  };
  EXPECT_EQ(weights(a), weights(b));
  EXPECT_NE(a.wafers[0].task_runs, b.wafers[0].task_runs);
}

// Time-multiplexed layers run one copy of their code: a tile's code does not grow with the layer count.
TEST(MeshGemv, LayersShareTheirCode) {
  hw::WaferSpec tiny = hw::preset("tiny");
  const noc::Fabric fabric = noc::Fabric::perfect(tiny.logical());
  ModelConfig m = load_model("tiny-llama");
  const MapOptions o = mesh_options();
  auto code = [&](std::int64_t layers) {
    m.layers = layers;
    const Mapping mp = map_model(tiny, fabric, m, o);
    std::uint32_t c = 0;
    for (const auto& p : mp.images[0].programs) c = std::max(c, p.sram.code);
    return c;
  };
  const std::uint32_t two = code(2), three = code(3), six = code(6);
  EXPECT_GT(two, 0u);
  EXPECT_EQ(three, two);  // layer 0 (no residual input) and one copy of the others' code
  EXPECT_EQ(six, two);
}

// The decoder layers of one region are stamped from one build (Emitter::add_classes relabels the previous
// layer's fragments): every tile's program holds one block per layer, in order, each reporting its own
// layer, and the blocks of layers 1.. are the same but for that (layer 0 has no residual input).
TEST(MeshGemv, LayersCopiedFromOneBuildReportTheirOwnLayer) {
  hw::WaferSpec tiny = hw::preset("tiny");
  const noc::Fabric fabric = noc::Fabric::perfect(tiny.logical());
  ModelConfig m = load_model("tiny-llama");
  m.layers = 5;
  const Mapping mp = map_model(tiny, fabric, m, mesh_options());
  const firmware::Image& im = mp.images[0];
  std::size_t checked = 0;
  for (const auto& p : im.programs) {
    std::map<std::string, std::vector<firmware::Task>> block;  // layer name -> its tasks, in program order
    std::vector<std::string> order;
    for (const auto& t : p.tasks) {
      const std::string& name = im.layer_names.at(t.layer);
      if (block.find(name) == block.end()) order.push_back(name);
      block[name].push_back(t);
    }
    std::vector<std::string> layers;
    for (const auto& n : order)
      if (n.rfind("layer ", 0) == 0) layers.push_back(n);
    ASSERT_EQ(layers.size(), 5u);
    for (int l = 0; l < 5; ++l) EXPECT_EQ(layers[std::size_t(l)], "layer " + std::to_string(l));
    for (int l = 2; l < 5; ++l) {
      auto a = block[layers[1]], b = block[layers[std::size_t(l)]];
      ASSERT_EQ(a.size(), b.size());
      for (std::size_t i = 0; i < a.size(); ++i) {
        EXPECT_NE(a[i].layer, b[i].layer);
        b[i].layer = a[i].layer;
        EXPECT_EQ(a[i], b[i]) << "layer " << l << " task " << i;
      }
    }
    ++checked;
  }
  EXPECT_GT(checked, 0u);
}

// A plan (MapOptions::plan_only, what --placement auto ranks meshgemv candidates by) counts the task runs of
// the full mapping and holds the done tile's program as the full mapping places it; a refusal is the same. (With
// 4 layers, layers 2 and 3 are the same as the one before but for their layer: the plan copies the fragment
// before with its layer.)
TEST(MeshGemv, APlanCountsTheTasksAndHoldsTheDoneTilesProgram) {
  hw::WaferSpec small = hw::preset("small");
  const noc::Fabric fabric = noc::Fabric::perfect(small.logical());
  ModelConfig m = load_model("small-llama");
  for (std::int64_t layers : {std::int64_t(2), std::int64_t(4)})
    for (const char* placement : {"whole-wafer", "square"})
      for (AllreduceAlgo a : kAlgos)
        for (int group : {0, 5}) {
          if (group && a != AllreduceAlgo::Tree) continue;
          SCOPED_TRACE(::testing::Message() << layers << " layers, " << placement << " " << to_string(a) << " group "
                                            << group);
          ModelConfig ml = m;
          ml.layers = layers;
          MapOptions o;
          o.placement = placement, o.kernel = Kernel::MeshGemv, o.allreduce = a, o.group = group, o.context = 512;
          const Mapping full = map_model(small, fabric, ml, o);
          o.plan_only = true;
          const Mapping plan = map_model(small, fabric, ml, o);
          ASSERT_EQ(plan.images.size(), 1u);
          EXPECT_EQ(plan.wafers[0].task_runs, full.wafers[0].task_runs);
          const firmware::Image &fi = full.images[0], &pi = plan.images[0];
          EXPECT_EQ(pi.done_tile, fi.done_tile);
          EXPECT_EQ(pi.done_color, fi.done_color);
          ASSERT_NE(pi.program_at(pi.done_tile), nullptr);
          EXPECT_EQ(pi.program_at(pi.done_tile)->tasks, fi.program_at(fi.done_tile)->tasks);
        }
  MapOptions o = mesh_options();
  o.context = 1 << 20;  // far beyond SRAM: refused by both, with the same reason
  o.placement = "whole-wafer";
  m.max_position = 1 << 21;
  std::string full_reason, plan_reason;
  try {
    map_model(small, fabric, m, o);
  } catch (const hw::InputError& e) {
    full_reason = e.what();
  }
  o.plan_only = true;
  try {
    map_model(small, fabric, m, o);
  } catch (const hw::InputError& e) {
    plan_reason = e.what();
  }
  EXPECT_FALSE(full_reason.empty());
  EXPECT_EQ(plan_reason, full_reason);
}
