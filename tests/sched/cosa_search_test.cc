// The search baselines: random search's contract, the Hybrid mapper finding
// the true optimum (all placements and loop orders enumerated) on a tiny
// layer, reproducibility, time budgets, option errors, and hybrid vs
// random-5 on a real ResNet-50 layer.
#include "sylva/sched/cosa_search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <limits>
#include <optional>

#include "support/cosa_fixture.h"
#include "support/ios_fixture.h"
#include "support/test_util.h"
#include "sylva/sched/cosa.h"

namespace sylva::cosa {
namespace {

// The tiny layer of cosa_test.cc: P = C = K = 2 on 4 MACs, 1-word
// registers (Weights), an 8-word buffer (Inputs, Outputs) and DRAM.
struct Tiny {
  test::TempDir dir;
  Arch a = read_arch(dir.file("a.yaml", test::tiny_cosa_arch(8)));
  Problem p;
  Mapspace ms;
  Tiny() {
    p.name = "tiny";
    p.bounds = {1, 1, 2, 1, 2, 2, 1};
    ms.keep = {{true, false, false}, {false, true, true}, {true, true, true}};
  }
};

std::string data_or_empty() {
  const std::string data = test::data_dir();
  if (data.empty() || !std::filesystem::exists(data + "/cosa")) return "";
  return data + "/cosa";
}

TEST(CosaSearch, BetterRanksCyclesThenTrafficThenValidity) {
  Evaluation fast, slow, light, invalid;
  fast.cycles = 10;
  fast.dram_reads = {5, 5, 0};
  fast.dram_updates = 5;
  slow = fast;
  slow.cycles = 11;
  light = fast;
  light.dram_reads[Inputs] = 1;  // same cycles, less traffic
  invalid = fast;
  invalid.cycles = 1;
  invalid.valid = false;
  EXPECT_TRUE(better(fast, slow));
  EXPECT_FALSE(better(slow, fast));
  EXPECT_TRUE(better(light, fast));
  EXPECT_FALSE(better(fast, light));
  EXPECT_FALSE(better(fast, fast));
  EXPECT_TRUE(better(slow, invalid));
  EXPECT_FALSE(better(invalid, slow));
  EXPECT_FALSE(better(invalid, invalid));
}

TEST(CosaSearch, RandomMappingsFitTheProblemAndFitsFanoutAgreesWithCheckMapping) {
  Tiny t;
  std::mt19937_64 rng(7);
  int fit = 0, unfit = 0;
  for (int i = 0; i < 2000; ++i) {
    const Mapping m = random_mapping(t.p, t.a, t.ms, rng);
    for (const LevelMapping& l : m.levels) {
      if (l.has_spatial) continue;
      EXPECT_EQ(l.spatial, (std::array<int64_t, kDims>{1, 1, 1, 1, 1, 1, 1}));
    }
    const std::string err = test::error_of([&] { check_mapping(m, t.p, t.a); });
    if (fits_fanout(m, t.a)) {
      ++fit;
      EXPECT_EQ(err, "<no error>");
    } else {
      ++unfit;
      EXPECT_CONTAINS(err, "fan-out");
    }
  }
  EXPECT_GT(fit, 0);
  EXPECT_GT(unfit, 0);  // all three factors spatial in Buf (8 > 4): about 1 draw in 216
}

TEST(CosaSearch, RandomSearchFindsValidMappingsReproducibly) {
  Tiny t;
  const SearchResult r = random_search(t.p, t.a, t.ms, {.valid = 5, .seed = 3});
  ASSERT_TRUE(r.found);
  EXPECT_EQ(r.valid, 5);
  EXPECT_GE(r.sampled, 5);
  EXPECT_NO_THROW(check_mapping(r.mapping, t.p, t.a));
  const Evaluation e = evaluate(r.mapping, t.p, t.a);
  EXPECT_TRUE(e.valid) << e.why;
  EXPECT_EQ(e.cycles, r.evaluation.cycles);
  const SearchResult again = random_search(t.p, t.a, t.ms, {.valid = 5, .seed = 3});
  EXPECT_EQ(mapping_yaml(again.mapping), mapping_yaml(r.mapping));
  EXPECT_EQ(again.sampled, r.sampled);
  // More valid mappings never do worse from the same seed (the first five are the same draws).
  const SearchResult more = random_search(t.p, t.a, t.ms, {.valid = 50, .seed = 3});
  EXPECT_EQ(more.valid, 50);
  EXPECT_FALSE(better(r.evaluation, more.evaluation));
}

TEST(CosaSearch, NothingValidIsNotFoundRatherThanAnError) {
  Tiny t;
  Arch small = t.a;
  small.levels[1].entries = 1;  // Inputs and Outputs tiles of at least 1 word each: never fit
  const SearchResult r = random_search(t.p, small, t.ms, {.valid = 1, .max_samples = 500});
  EXPECT_FALSE(r.found);
  EXPECT_EQ(r.valid, 0);
  EXPECT_EQ(r.sampled, 500);
  const SearchResult h = hybrid_search(t.p, small, t.ms, {.threads = 2, .max_samples = 500});
  EXPECT_FALSE(h.found);
  EXPECT_EQ(h.sampled, 500);
}

// The true best cycles of a tiny layer (R = S = Q = N = 1) by enumeration:
// every prime factor of P, C and K in each of the four places (Reg
// temporal, Buf temporal, Buf spatial, DRAM temporal) x all 6^3 orders of
// P C K at the three levels (the other dimensions have factor 1 everywhere).
// Also the best with the default order everywhere.
struct Optimum {
  int64_t cycles = std::numeric_limits<int64_t>::max(), default_order_cycles = cycles;
};
Optimum enumerate_all(const Problem& p, const Arch& a, const Mapspace& ms) {
  std::vector<size_t> factors;
  for (const int d : {P, C, K})
    for (size_t i = 0; i < prime_factors(p.bounds[static_cast<size_t>(d)]).size(); ++i) factors.push_back(d);
  Optimum best;
  for (int code = 0; code < 1 << (2 * factors.size()); ++code) {
    Mapping m = blank_mapping(a, ms);
    for (size_t f = 0; f < factors.size(); ++f) {
      const int place = code >> (2 * f) & 3;
      const size_t d = factors[f];
      const int64_t q = prime_factors(p.bounds[d])[0];  // P, C, K are powers of one prime here
      if (place == 0) m.levels[0].temporal[d] *= q;
      if (place == 1) m.levels[1].temporal[d] *= q;
      if (place == 2) m.levels[1].spatial[d] *= q;
      if (place == 3) m.levels[2].temporal[d] *= q;
    }
    if (!fits_fanout(m, a)) continue;
    std::array<std::string, 3> order{"CKP", "CKP", "CKP"};
    for (int o = 0; o < 216; ++o) {
      for (size_t l = 0; l < 3; ++l) m.levels[l].temporal_permutation = order[l] + "RSQN";
      const Evaluation e = evaluate(m, p, a);
      if (e.valid) best.cycles = std::min(best.cycles, e.cycles);
      for (size_t l = 0; l < 3 && !std::next_permutation(order[l].begin(), order[l].end()); ++l) {
      }
    }
    for (LevelMapping& l : m.levels) l.temporal_permutation = "RSPQCKN";
    const Evaluation e = evaluate(m, p, a);
    if (e.valid) best.default_order_cycles = std::min(best.default_order_cycles, e.cycles);
  }
  return best;
}

void expect_hybrid_finds(const Problem& p, const Arch& a, const Mapspace& ms, int64_t cycles) {
  const SearchResult h = hybrid_search(p, a, ms, {.threads = 2, .victory = 3000, .seed = 5});
  ASSERT_TRUE(h.found);
  EXPECT_EQ(h.evaluation.cycles, cycles);
  EXPECT_EQ(evaluate(h.mapping, p, a).cycles, cycles);
  EXPECT_NO_THROW(check_mapping(h.mapping, p, a));
  EXPECT_GE(h.valid, 2 * 3000);  // each thread ran at least `victory` valid mappings
  EXPECT_GE(h.sampled, h.valid);
}

TEST(CosaSearch, HybridFindsTheTrueOptimumOnATinyLayer) {
  Tiny t;
  const Optimum best = enumerate_all(t.p, t.a, t.ms);
  ASSERT_LT(best.cycles, std::numeric_limits<int64_t>::max());
  expect_hybrid_finds(t.p, t.a, t.ms, best.cycles);
}

// A 3-word buffer and C = 4: the optimum needs a loop order other than the
// default at some level, so the order exploration must work to reach it.
TEST(CosaSearch, HybridFindsTheTrueOptimumWhenLoopOrdersMatter) {
  Tiny t;
  const Arch a = read_arch(t.dir.file("a3.yaml", test::tiny_cosa_arch(3)));
  t.p.bounds[C] = 4;
  const Optimum best = enumerate_all(t.p, a, t.ms);
  ASSERT_LT(best.cycles, std::numeric_limits<int64_t>::max());
  ASSERT_LT(best.cycles, best.default_order_cycles);
  expect_hybrid_finds(t.p, a, t.ms, best.cycles);
}

// The best cycles over every loop order of m's tiling: at each level every
// permutation of the dimensions with a temporal factor > 1 (factors of 1
// never count). Empty if there are more than `limit` combinations.
std::optional<int64_t> best_over_orders(Mapping m, const Problem& p, const Arch& a, int64_t limit) {
  std::vector<std::string> active(m.levels.size()), tail(m.levels.size());
  int64_t combos = 1;
  for (size_t l = 0; l < m.levels.size(); ++l) {
    for (size_t d = 0; d < kDims; ++d) (m.levels[l].temporal[d] > 1 ? active[l] : tail[l]) += kDimNames[d];
    for (size_t k = 2; k <= active[l].size(); ++k) combos *= static_cast<int64_t>(k);
  }
  if (combos > limit) return std::nullopt;
  int64_t best = std::numeric_limits<int64_t>::max();
  for (int64_t c = 0; c < combos; ++c) {
    for (size_t l = 0; l < m.levels.size(); ++l) m.levels[l].temporal_permutation = active[l] + tail[l];
    best = std::min(best, evaluate(m, p, a).cycles);
    for (size_t l = 0; l < active.size() && !std::next_permutation(active[l].begin(), active[l].end()); ++l) {
    }
  }
  return best;
}

// With victory above a tiling's order combinations (at most 3! on this layer,
// all tried when <= max_orders), the best mapping's tiling was explored in
// full: no other order of it does better. Small victory: the search stops
// early, on tilings that are not optimal, where orders still matter.
TEST(CosaSearch, HybridPicksTheBestLoopOrderOfItsTiling) {
  Tiny t;
  const Arch a = read_arch(t.dir.file("a3.yaml", test::tiny_cosa_arch(3)));
  t.p.bounds[C] = 4;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const SearchResult h = hybrid_search(t.p, a, t.ms, {.threads = 1, .victory = 7, .seed = seed});
    ASSERT_TRUE(h.found);
    EXPECT_EQ(h.evaluation.cycles, best_over_orders(h.mapping, t.p, a, 1000).value()) << "seed " << seed;
  }
}

TEST(CosaSearch, HybridWithOneThreadIsReproducible) {
  Tiny t;
  for (const int max_orders : {1, 2, 16}) {
    const HybridOptions o{.threads = 1, .victory = 50, .max_orders = max_orders, .seed = 11};
    const SearchResult a = hybrid_search(t.p, t.a, t.ms, o), b = hybrid_search(t.p, t.a, t.ms, o);
    ASSERT_TRUE(a.found);
    EXPECT_EQ(mapping_yaml(a.mapping), mapping_yaml(b.mapping));
    EXPECT_EQ(a.sampled, b.sampled);
    EXPECT_EQ(a.valid, b.valid);
  }
}

TEST(CosaSearch, OptionErrorsNameTheOption) {
  Tiny t;
  const auto random = [&](RandomOptions o) { return test::error_of([&] { random_search(t.p, t.a, t.ms, o); }); };
  const auto hybrid = [&](HybridOptions o) { return test::error_of([&] { hybrid_search(t.p, t.a, t.ms, o); }); };
  EXPECT_CONTAINS(random({.valid = 0}), "valid");
  EXPECT_CONTAINS(random({.seconds = -1}), "seconds");
  EXPECT_CONTAINS(random({.max_samples = 0}), "max_samples");
  EXPECT_CONTAINS(hybrid({.threads = -1}), "threads");
  EXPECT_CONTAINS(hybrid({.victory = 0}), "victory");
  EXPECT_CONTAINS(hybrid({.seconds = -0.5}), "seconds");
  EXPECT_CONTAINS(hybrid({.max_orders = 0}), "max_orders");
  EXPECT_CONTAINS(hybrid({.max_samples = -3}), "max_samples");
}

TEST(CosaSearchData, ATimeBudgetStopsTheSearch) {
  const std::string cosa = data_or_empty();
  if (cosa.empty()) GTEST_SKIP() << "no CoSA data: set SYLVA_DATA";
  const Arch a = read_arch(cosa + "/arch/simba.yaml");
  const Mapspace ms = read_mapspace(cosa + "/mapspace/mapspace.yaml", a);
  const Problem p = read_problem(cosa + "/workloads/resnet50/_outputs_input.5.yaml");
  const auto t0 = std::chrono::steady_clock::now();
  const SearchResult h =
      hybrid_search(p, a, ms, {.threads = 2, .victory = std::numeric_limits<int64_t>::max(), .seconds = 0.2});
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(h.found);
  EXPECT_GE(h.seconds, 0.2);
  EXPECT_LT(wall, 2.0);
  const SearchResult r = random_search(p, a, ms, {.valid = 1, .seconds = 0.2});
  EXPECT_TRUE(r.found);
  EXPECT_GE(r.seconds, 0.2);
  EXPECT_LT(r.seconds, 2.0);
  EXPECT_GT(r.valid, 1);  // `valid` is ignored under a time budget
  std::printf("[cosa search] 0.2 s: hybrid %lld valid of %lld, %lld cycles (%.3f s); random %lld valid, %lld cycles\n",
              static_cast<long long>(h.valid), static_cast<long long>(h.sampled),
              static_cast<long long>(h.evaluation.cycles), wall, static_cast<long long>(r.valid),
              static_cast<long long>(r.evaluation.cycles));
}

TEST(CosaSearchData, HybridIsAtLeastAsGoodAsRandom5) {
  const std::string cosa = data_or_empty();
  if (cosa.empty()) GTEST_SKIP() << "no CoSA data: set SYLVA_DATA";
  const Arch a = read_arch(cosa + "/arch/simba.yaml");
  const Mapspace ms = read_mapspace(cosa + "/mapspace/mapspace.yaml", a);
  const Problem p = read_problem(cosa + "/workloads/resnet50/_outputs_input.5.yaml");
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    const SearchResult r = random_search(p, a, ms, {.valid = 5, .seed = seed});
    const SearchResult h = hybrid_search(p, a, ms, {.threads = 2, .victory = 500, .seed = seed});
    ASSERT_TRUE(r.found && h.found);
    EXPECT_TRUE(evaluate(h.mapping, p, a).valid);
    EXPECT_LE(h.evaluation.cycles, r.evaluation.cycles) << "seed " << seed;
    std::printf(
        "[cosa search] seed %llu: random-5 %lld cycles (%lld samples, %.3f s), hybrid %lld cycles (%lld valid "
        "of %lld, %.3f s)\n",
        static_cast<unsigned long long>(seed), static_cast<long long>(r.evaluation.cycles),
        static_cast<long long>(r.sampled), r.seconds, static_cast<long long>(h.evaluation.cycles),
        static_cast<long long>(h.valid), static_cast<long long>(h.sampled), h.seconds);
  }
}

}  // namespace
}  // namespace sylva::cosa
