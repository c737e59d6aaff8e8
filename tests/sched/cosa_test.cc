// CoSA's MIP: optimal for its own objective on a tiny layer (all 64
// placements enumerated), valid mappings on real layers.
#include "sylva/sched/cosa.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "support/cosa_fixture.h"
#include "support/ios_fixture.h"
#include "support/test_util.h"
#include "sylva/sched/cosa_cpu.h"

namespace sylva::cosa {
namespace {

const std::string kArch = test::tiny_cosa_arch(8);

TEST(Cosa, PrimeFactors) {
  EXPECT_EQ(prime_factors(1), std::vector<int64_t>{});
  EXPECT_EQ(prime_factors(56), (std::vector<int64_t>{2, 2, 2, 7}));
  EXPECT_EQ(prime_factors(97), std::vector<int64_t>{97});
  EXPECT_CONTAINS(test::error_of([] { prime_factors(0); }), "cannot factor 0");
}

// P = C = K = 2: three factors, four places each (Reg temporal, Buf
// temporal, Buf spatial, DRAM temporal): 64 mappings.
TEST(Cosa, LargePrimesAreNotedAndCanBePadded) {
  Problem p;
  p.bounds = {11, 11, 55, 55, 3, 96, 1};
  EXPECT_EQ(large_primes(p, 7), "R=11 S=11 P=55 Q=55");
  EXPECT_EQ(large_primes(p, 11), "");
  const Problem padded = pad_problem(p, 7);
  EXPECT_EQ(padded.bounds, (std::array<int64_t, kDims>{12, 12, 56, 56, 3, 96, 1}));
  EXPECT_EQ(large_primes(padded, 7), "");
  EXPECT_GT(padded.macs(), p.macs());
  EXPECT_CONTAINS(test::error_of([&] { pad_problem(p, 1); }), "prime limit >= 2");
}

// The CPU's objective (with the blocks term) and its limits: a valid
// mapping that fits; a mapping proven optimal within the gap says so; bad
// limits are an error.
TEST(Cosa, CpuObjectiveAndLimits) {
  const Arch a = cpu_arch(test::two_core_facts());
  Problem p;
  p.name = "conv";
  p.bounds = {3, 3, 14, 14, 32, 64, 1};
  const Result r = schedule(p, a, cpu_mapspace(a), cpu_objective(), cpu_limits());
  check_mapping(r.mapping, p, a);
  EXPECT_TRUE(r.evaluation.valid) << r.evaluation.why;
  EXPECT_EQ(cpu_objective().blocks, 1.0);
  const Result exact = schedule(p, a, cpu_mapspace(a), cpu_objective());
  EXPECT_TRUE(exact.optimal);
  EXPECT_LE(exact.objective, r.objective + 1e-9);
  EXPECT_LE(r.objective, exact.objective + cpu_limits().gap + 1e-9);  // within the gap of the optimum
  EXPECT_CONTAINS(test::error_of([&] { schedule(p, a, cpu_mapspace(a), {}, SolveLimits{-1, 0}); }),
                  "solve limits must be >= 0");
}

// kArch's three levels, a layer of P, C and K 2 each, and a mapspace
// keeping Weights at level 0 and Inputs and Outputs at 1.
struct TinyLayer {
  Arch a;
  Problem p;
  Mapspace free;
};
TinyLayer tiny_layer() {
  test::TempDir dir;
  TinyLayer t{read_arch(dir.file("a.yaml", kArch)), {}, {}};
  t.p.name = "tiny";
  t.p.bounds = {1, 1, 2, 1, 2, 2, 1};
  t.free.keep = {{true, false, false}, {false, true, true}, {true, true, true}};
  return t;
}

TEST(Cosa, TheMipIsOptimalForItsObjectiveOnATinyLayer) {
  const auto [a, p, free] = tiny_layer();
  // Each tensor held stationary at the top level: the MIP's loop-order choice fixed there.
  std::vector<Mapspace> mapspaces{free};
  for (int t : {Weights, Inputs, Outputs}) {
    mapspaces.push_back(free);
    mapspaces.back().stationary = {-1, -1, t};
  }
  for (const Mapspace& ms : mapspaces)
  for (const ObjectiveWeights w : {ObjectiveWeights{}, ObjectiveWeights{0.5, 1, 2}, ObjectiveWeights{2, 0.1, 1},
                                   ObjectiveWeights{1, 1, 1, 1, 1.5}}) {  // the last with the blocks term
    const Result r = schedule(p, a, ms, w);
    if (!ms.stationary.empty()) {
      Mapping held = r.mapping;
      apply_stationary(held, ms);
      EXPECT_EQ(held.levels[2].temporal_permutation, r.mapping.levels[2].temporal_permutation);
      EXPECT_GE(r.objective, schedule(p, a, free, w).objective - 1e-9);  // a constraint cannot do better
    }
    EXPECT_TRUE(r.evaluation.valid) << r.evaluation.why;
    bool feasible = false;
    EXPECT_NEAR(mip_objective(r.mapping, p, a, ms, w, &feasible), r.objective, 1e-6);
    EXPECT_TRUE(feasible);
    double best = INFINITY;
    int candidates = 0, valid = 0;
    const int dims[] = {P, C, K};
    for (int code = 0; code < 64; ++code) {
      Mapping m = r.mapping;  // names, keep, permutations
      for (LevelMapping& l : m.levels) l.temporal = l.spatial = {1, 1, 1, 1, 1, 1, 1};
      for (int f = 0; f < 3; ++f) {
        const int place = code >> (2 * f) & 3, d = dims[f];
        if (place == 0) m.levels[0].temporal[static_cast<size_t>(d)] = 2;
        if (place == 1) m.levels[1].temporal[static_cast<size_t>(d)] = 2;
        if (place == 2) m.levels[1].spatial[static_cast<size_t>(d)] = 2;
        if (place == 3) m.levels[2].temporal[static_cast<size_t>(d)] = 2;
      }
      ++candidates;
      bool ok = false;
      const double o = mip_objective(m, p, a, ms, w, &ok);
      if (!ok) continue;
      ++valid;
      best = std::min(best, o);
      EXPECT_TRUE(evaluate(m, p, a).valid) << "the MIP's constraints admit a mapping the model refuses, code " << code;
    }
    EXPECT_EQ(candidates, 64);
    EXPECT_GT(valid, 1);
    EXPECT_LT(valid, 64);  // the buffer of 8 words rules some out
    EXPECT_NEAR(r.objective, best, 1e-6);
  }
}

// The blocks term by hand: P, C and K each 2, all at level 2. Every factor
// there reruns the kernel's block (3 log 2), except C where the outputs
// are held at level 2: it runs innermost there and folds into the block.
TEST(Cosa, TheBlocksTermSparesReductionsFoldedIntoTheBlock) {
  const auto [a, p, free] = tiny_layer();
  Mapspace held = free;
  held.stationary = {-1, -1, Outputs};
  Mapping m = blank_mapping(a, free);
  for (int d : {P, C, K}) m.levels[2].temporal[static_cast<size_t>(d)] = 2;
  const ObjectiveWeights blocks_only{0, 0, 0, 0, 1};
  EXPECT_NEAR(mip_objective(m, p, a, free, blocks_only), 3 * std::log(2.0), 1e-12);
  EXPECT_NEAR(mip_objective(m, p, a, held, blocks_only), 2 * std::log(2.0), 1e-12);
}

TEST(Cosa, ImpossibleLayersAreErrors) {
  test::TempDir dir;
  std::string tiny = kArch;
  tiny.replace(tiny.find("entries: 8"), 10, "entries: 0");
  const Arch a = read_arch(dir.file("a.yaml", tiny));
  Problem p;
  p.name = "any";
  p.bounds = {1, 1, 2, 1, 2, 2, 1};
  Mapspace ms;
  ms.keep = {{true, false, false}, {false, true, true}, {true, true, true}};
  EXPECT_CONTAINS(test::error_of([&] { schedule(p, a, ms); }), "infeasible");
  ms.keep[1] = {false, false, true};
  ms.keep[0] = {true, false, false};
  EXPECT_CONTAINS(test::error_of([&] { schedule(p, a, ms); }), "keeps Inputs in no level inside DRAM");
}

// Every distinct ResNet-50 layer solves (in well under a second each) and
// its mapping is valid in the model.
TEST(CosaData, EveryResNet50LayerGetsAValidMapping) {
  const std::string data = test::data_dir();
  const std::string cosa = data + "/cosa";
  if (data.empty() || !std::filesystem::exists(cosa)) GTEST_SKIP() << "no CoSA data: set SYLVA_DATA";
  const Arch a = read_arch(cosa + "/arch/simba.yaml");
  const Mapspace ms = read_mapspace(cosa + "/mapspace/mapspace.yaml", a);
  const std::vector<std::string> layers = read_layer_list(cosa + "/workloads/resnet50/unique_layers.yaml");
  EXPECT_EQ(layers.size(), 24u);
  for (const std::string& layer : layers) {
    const Problem p = read_problem(layer);
    const Result r = schedule(p, a, ms);
    EXPECT_TRUE(r.evaluation.valid) << layer << ": " << r.evaluation.why;
    EXPECT_NO_THROW(check_mapping(r.mapping, p, a));
    bool feasible = false;
    EXPECT_NEAR(mip_objective(r.mapping, p, a, ms, {}, &feasible), r.objective, 1e-6) << layer;
    EXPECT_TRUE(feasible) << layer;
    std::printf("[cosa] %s: %lld cycles (compute %lld), utilization %.3f, %d variables, %.3f s\n", p.name.c_str(),
                static_cast<long long>(r.evaluation.cycles), static_cast<long long>(r.evaluation.compute_cycles),
                r.evaluation.utilization, r.variables, r.solve_seconds);
  }
}

}  // namespace
}  // namespace sylva::cosa
