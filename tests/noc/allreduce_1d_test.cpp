// The 1-D row allreduces of noc/routing/collectives.h (chain, centre, two-level tree) executed by both
// meshes on idle healthy rows, against their zero-load latency (= their formula). The zero-load
// evaluation has no contention at all; the meshes have one rule that it does not see, even on an idle
// mesh: a tile's delivery ramp takes one wavelet per cycle, so streams that reach one core together are
// taken one after the other. Hence (h hop, R ramp, s stage, w wavelets):
//  - chain: both meshes exact while the result, multicast back from the east end, finds the delivery ramp
//    of the tile next to it free, i.e. w <= 2h + 4R + 2s; one wavelet more and the cycle mesh is one cycle
//    late (its multicast waits there for all its branches, docs/timing.md), approx is not;
//  - centre: the root takes its two chains' streams one after the other: both meshes at exactly zero load
//    + w for odd P (the chains are equally long, their heads arrive together), + max(0, w - (h + 2R + s))
//    for even P >= 4 (the east chain is one stage shorter);
//  - two-level: every group root and the centre root merge two streams, one wavelet each: within 2 cycles
//    for one-wavelet bursts (more for long ones, whose streams also meet on links).
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "noc/mesh.h"
#include "noc/routing/collectives.h"
#include "noc_test_util.h"

namespace wafer::noc {
namespace {

// The last tail of the Plan (cycles from release 0) in one fidelity.
Cycle makespan(Fidelity fid, const Fabric& f, const CollectiveParams& cp, const Plan& plan) {
  MeshParams mp = test::params(cp.hop_latency, cp.stage_latency, cp.ramp_latency);
  mp.colors = cp.colors;
  Cycle end = 0;
  for (const FlowTiming& t : make_mesh(fid, f, mp)->execute(plan)) end = std::max(end, t.tail);
  return end;
}

const hw::Rect kRow(std::int32_t P) { return hw::Rect{1, 1, P, 1}; }
const std::int32_t kSizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 10, 13, 16, 17, 25, 37};

TEST(Allreduce1D, ChainExactUpToTheLimitOfItsOwnDeliveryRamps) {
  Fabric f = Fabric::perfect({40, 3});
  for (CollectiveParams cp : {CollectiveParams{1, 2, 24, 2}, CollectiveParams{1, 2, 24, 0}, CollectiveParams{2, 3, 24, 3}}) {
    const std::uint32_t limit = 2 * cp.hop_latency + 4 * cp.ramp_latency + 2 * cp.stage_latency;
    for (std::uint32_t w : {1u, limit - 1, limit, limit + 1})
      for (std::int32_t P : kSizes) {
        Plan plan;
        const Collective c = allreduce_row_chain(plan, f, cp, kRow(P), w);
        ASSERT_EQ(c.latency, c.formula);
        const Cycle late = w > limit && P >= 3 ? 1 : 0;
        EXPECT_EQ(makespan(Fidelity::Approx, f, cp, plan), c.latency) << "P " << P << " w " << w << " R " << cp.ramp_latency;
        EXPECT_EQ(makespan(Fidelity::Cycle, f, cp, plan), c.latency + late) << "P " << P << " w " << w << " R " << cp.ramp_latency;
      }
  }
}

TEST(Allreduce1D, CentreRootTakesItsTwoStreamsOneAfterTheOther) {
  Fabric f = Fabric::perfect({40, 3});
  for (CollectiveParams cp : {CollectiveParams{1, 2, 24, 2}, CollectiveParams{1, 2, 24, 0}, CollectiveParams{2, 3, 24, 3}}) {
    const std::uint32_t stage = cp.hop_latency + 2 * cp.ramp_latency + cp.stage_latency;  // one chain stage
    for (std::uint32_t w : {1u, stage, stage + 1, 16u, 64u})
      for (std::int32_t P : kSizes) {
        Plan plan;
        const Collective c = allreduce_row_centre(plan, f, cp, kRow(P), w);
        ASSERT_EQ(c.latency, c.formula);
        const Cycle merge = P < 3 ? 0 : P % 2 ? w : w > stage ? w - stage : 0;
        for (Fidelity fid : {Fidelity::Approx, Fidelity::Cycle})
          EXPECT_EQ(makespan(fid, f, cp, plan), c.latency + merge)
              << "P " << P << " w " << w << " R " << cp.ramp_latency << " " << to_string(fid);
      }
  }
}

TEST(Allreduce1D, TwoLevelTreeWithinItsMerges) {
  Fabric f = Fabric::perfect({40, 3});
  for (CollectiveParams cp : {CollectiveParams{1, 2, 24, 2}, CollectiveParams{1, 2, 24, 0}})
    for (std::int32_t g : {0, 2, 3, 4})
      for (std::int32_t P : kSizes) {
        Plan plan;
        const Collective c = allreduce_row_two_level(plan, f, cp, kRow(P), 1, g);
        ASSERT_EQ(c.latency, c.formula);
        const Cycle a = makespan(Fidelity::Approx, f, cp, plan), y = makespan(Fidelity::Cycle, f, cp, plan);
        EXPECT_EQ(a, y) << "P " << P << " g " << g;
        EXPECT_GE(a, c.latency) << "P " << P << " g " << g;
        EXPECT_LE(a, c.latency + 2) << "P " << P << " g " << g;
      }
  // Hand-computed (h 1, R 2, s 2, w 1), P = 9 in groups of 3 (roots at offsets 1, 4, 7; zero load 24,
  // tests/routing RowAllreduces.HandComputedAndAgainstLuczynskisFormulas): each group's two chain heads
  // reach its root's router at 3 together and are taken at 3 and 4 (cores 5 and 6), so roots 1 and 7
  // stream out at 8, not 7; their heads reach root 4's router at 13 together, taken at 13 and 14 (cores
  // 15, 16): root 4 multicasts at 18, not 16, and the farthest tile has the sum at 18 + 2 + 4 + 2 = 26.
  const CollectiveParams cp{1, 2, 24, 2};
  Plan plan;
  ASSERT_EQ(allreduce_row_two_level(plan, f, cp, kRow(9), 1, 3).latency, 24u);
  EXPECT_EQ(makespan(Fidelity::Approx, f, cp, plan), 26u);
  EXPECT_EQ(makespan(Fidelity::Cycle, f, cp, plan), 26u);
}

// The meshes rank the two-level tree and the centre chain as the formulas do at the boundary where the
// tree starts to win (tests/routing RowAllreduces.TwoLevelBeatsTheCentreChainOnlyWhenRampsAreDear): groups
// of 4, w 1. P = 8, R = 2: 34 against 36, exactly zero load in both (groups of 4 have chains of 2 and 1
// stages to their roots, so no two streams meet at a root together, and the centre chain's east side is a
// stage shorter). P = 7: 32 against 29 (the centre root's chains are equally long: + 1 as run; the tree's
// second group, 3 tiles, merges at its root together too, but off the critical path). P = 8, R = 1: 26 and
// 26, a tie.
TEST(Allreduce1D, TheMeshesAgreeWhereTheTwoLevelTreeStartsToWin) {
  Fabric f = Fabric::perfect({40, 3});
  struct Case {
    std::uint32_t R;
    std::int32_t P;
    Cycle tree, centre;
  };
  for (Case k : {Case{2, 8, 34, 36}, Case{2, 7, 32, 29}, Case{1, 8, 26, 26}})
    for (Fidelity fid : {Fidelity::Approx, Fidelity::Cycle}) {
      const CollectiveParams cp{1, 2, 24, k.R};
      Plan t, c;
      allreduce_row_two_level(t, f, cp, hw::Rect{0, 0, k.P, 1}, 1, 4);
      allreduce_row_centre(c, f, cp, hw::Rect{0, 0, k.P, 1}, 1);
      EXPECT_EQ(makespan(fid, f, cp, t), k.tree) << "P " << k.P << " R " << k.R << " " << to_string(fid);
      EXPECT_EQ(makespan(fid, f, cp, c), k.centre) << "P " << k.P << " R " << k.R << " " << to_string(fid);
    }
}

}  // namespace
}  // namespace wafer::noc

namespace wafer::noc {
namespace {

// The three row allreduces on every row of a 64 x 64 mesh at once (as a MeshGEMV layer runs them), 16
// wavelets per tile: the two fidelities within 5 % of each other on the makespan, neither below zero load.
TEST(Allreduce1D, BothMeshesAgreeOnEveryRowOf64x64) {
  const std::int32_t k = 64;
  Fabric f = Fabric::perfect({k, k});
  CollectiveParams cp;
  for (int which = 0; which < 3; ++which) {
    Plan p;
    Cycle zero = 0;
    std::string name;
    for (std::int32_t y = 0; y < k; ++y) {
      const hw::Rect row{0, y, k, 1};
      Collective c = which == 0   ? allreduce_row_chain(p, f, cp, row, 16)
                     : which == 1 ? allreduce_row_centre(p, f, cp, row, 16)
                                  : allreduce_row_two_level(p, f, cp, row, 16);
      zero = std::max<Cycle>(zero, c.latency);
      name = c.name;
    }
    Cycle end[2] = {0, 0};
    for (int m = 0; m < 2; ++m) {
      MeshParams mp = test::params(cp.hop_latency, cp.stage_latency, cp.ramp_latency);
      mp.colors = cp.colors;
      for (const auto& t : make_mesh(m ? Fidelity::Cycle : Fidelity::Approx, f, mp)->execute(p)) end[m] = std::max(end[m], t.tail);
    }
    const double err = (double(end[0]) - double(end[1])) / double(end[1]);
    std::printf("%-24s 64 rows of 64: approx %llu cycle %llu zero-load %llu (%+.2f %%)\n", name.c_str(),
                (unsigned long long)end[0], (unsigned long long)end[1], (unsigned long long)zero, 100 * err);
    EXPECT_LT(std::abs(err), 0.05) << name;
    EXPECT_GE(end[0], zero) << name;
    EXPECT_GE(end[1], zero) << name;
  }
}

}  // namespace
}  // namespace wafer::noc
