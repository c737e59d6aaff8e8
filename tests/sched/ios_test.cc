// The IOS dynamic program against brute force over every stage sequence,
// on random DAGs with a random additive-plus-contention cost model.
#include "sylva/sched/ios.h"

#include <gtest/gtest.h>

#include <bit>
#include <map>
#include <random>

#include "support/test_util.h"

namespace sylva::ios {
namespace {

// Operator i costs c[i]. A concurrent stage takes its longest group plus
// `contention` times the rest of its work; a merged stage takes `merge`
// times its work. Operators merge when they share a "kind".
struct RandomCost : StageCostModel {
  std::vector<double> c;
  std::vector<int> kind;
  double contention = 0.3, merge = 0.6;
  RandomCost(std::mt19937_64& rng, int n) {
    std::uniform_real_distribution<double> u(1, 10), k(0, 1);
    for (int i = 0; i < n; ++i) {
      c.push_back(u(rng));
      kind.push_back(static_cast<int>(rng() % 3));
    }
    contention = k(rng);
    merge = 0.3 + 0.7 * k(rng);
  }
  double work(OpSet s) const {
    double w = 0;
    for (int i = 0; i < static_cast<int>(c.size()); ++i)
      if (s >> i & 1) w += c[static_cast<size_t>(i)];
    return w;
  }
  double latency(const OpDag&, const Stage& st) override {
    if (st.kind == Stage::Kind::merged) return merge * work(st.ops());
    double longest = 0;
    for (OpSet g : st.groups) longest = std::max(longest, work(g));
    return longest + contention * (work(st.ops()) - longest);
  }
  bool mergeable(const OpDag&, OpSet s) override {
    int k = -1;
    for (int i = 0; i < static_cast<int>(c.size()); ++i)
      if (s >> i & 1) {
        if (k >= 0 && kind[static_cast<size_t>(i)] != k) return false;
        k = kind[static_cast<size_t>(i)];
      }
    return true;
  }
};

// Brute force: every non-empty subset of the remaining operators with no
// edge into the rest is a possible last stage (found by enumerating
// submasks, not chains); as concurrent groups (its connected components)
// within the pruning, or merged if it is a set of sinks that merges.
// Memoised over the remaining set (costs add up, so this still covers
// every stage sequence).
struct Brute {
  const OpDag& dag;
  RandomCost& cost;
  Options o;
  std::map<OpSet, double> memo;
  double best(OpSet s) {
    if (!s) return 0;
    if (auto it = memo.find(s); it != memo.end()) return it->second;
    const bool parallel = o.variant == Variant::parallel || o.variant == Variant::both;
    const bool merge = o.variant == Variant::merge || o.variant == Variant::both;
    OpSet sinks = 0;
    for (int v = 0; v < dag.size(); ++v)
      if ((s >> v & 1) && !(dag.succs(v) & s)) sinks |= OpSet{1} << v;
    double b = INFINITY;
    for (OpSet e = s; e; e = (e - 1) & s) {
      bool closed = true;
      for (int v = 0; v < dag.size(); ++v)
        if ((e >> v & 1) && (dag.succs(v) & s & ~e)) closed = false;
      if (!closed) continue;
      const bool single = std::popcount(e) == 1;
      if (parallel || single) {
        Stage st{Stage::Kind::concurrent, components(dag, e)};
        bool fits = o.s == 0 || static_cast<int>(st.groups.size()) <= o.s;
        for (OpSet g : st.groups) fits = fits && (o.r == 0 || std::popcount(g) <= o.r);
        if (fits) b = std::min(b, cost.latency(dag, st) + best(s & ~e));
      }
      if (merge && std::popcount(e) >= 2 && (e & ~sinks) == 0 && cost.mergeable(dag, e))
        b = std::min(b, cost.latency(dag, {Stage::Kind::merged, {e}}) + best(s & ~e));
    }
    return memo[s] = b;
  }
};

OpDag random_dag(std::mt19937_64& rng, int n) {
  std::vector<std::pair<int, int>> edges;
  const double p = std::uniform_real_distribution<double>(0.1, 0.6)(rng);
  for (int b = 1; b < n; ++b)
    for (int a = 0; a < b; ++a)
      if (std::uniform_real_distribution<double>(0, 1)(rng) < p) edges.push_back({a, b});
  return OpDag(n, edges);
}

TEST(Ios, BothEqualsBruteForceWithAndWithoutPruning) {
  std::mt19937_64 rng(2021);
  int differs_from_sequential = 0;
  for (int trial = 0; trial < 250; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 8);
    const OpDag dag = random_dag(rng, n);
    RandomCost cost(rng, n);
    const Options pruning[] = {{Variant::both, 0, 0}, {Variant::both, 1, 3}, {Variant::both, 2, 4},
                               {Variant::both, 3, 8}, {Variant::parallel, 2, 2}, {Variant::merge, 0, 0}};
    for (const Options& o : pruning) {
      const StagePlan plan = schedule(dag, cost, o);
      Brute brute{dag, cost, o, {}};
      const double expected = brute.best(dag.all());
      const std::string what = "trial " + std::to_string(trial) + " n=" + std::to_string(n) + " " +
                               variant_name(o.variant) + " r=" + std::to_string(o.r) + " s=" + std::to_string(o.s);
      EXPECT_NEAR(plan.cost, expected, 1e-9 * expected) << what;
      std::string why;
      EXPECT_TRUE(valid_plan(dag, plan, &why)) << what << ": " << why;
      double sum = 0;  // the plan's cost is what its stages cost
      for (const Stage& st : plan.stages) sum += cost.latency(dag, st);
      EXPECT_NEAR(sum, plan.cost, 1e-9 * sum) << what;
    }
    const double seq = schedule(dag, cost, {Variant::sequential}).cost;
    EXPECT_NEAR(seq, cost.work(dag.all()), 1e-9 * seq);
    differs_from_sequential += schedule(dag, cost, {}).cost < seq - 1e-9;
  }
  EXPECT_GT(differs_from_sequential, 100);  // the search really finds better plans
}

// Brute force for the k cheapest plans: every stage sequence's cost (the k
// cheapest kept per remaining set, which keeps the k cheapest overall as
// costs add up), stages found by enumerating submasks as Brute does.
struct BruteBest {
  const OpDag& dag;
  RandomCost& cost;
  size_t k;
  std::map<OpSet, std::vector<double>> memo;
  const std::vector<double>& costs(OpSet s) {
    if (auto it = memo.find(s); it != memo.end()) return it->second;
    std::vector<double> all;
    if (!s) all.push_back(0);
    OpSet sinks = 0;
    for (int v = 0; v < dag.size(); ++v)
      if ((s >> v & 1) && !(dag.succs(v) & s)) sinks |= OpSet{1} << v;
    for (OpSet e = s; e; e = (e - 1) & s) {
      bool closed = true;
      for (int v = 0; v < dag.size(); ++v)
        if ((e >> v & 1) && (dag.succs(v) & s & ~e)) closed = false;
      if (!closed) continue;
      std::vector<Stage> stages{{Stage::Kind::concurrent, components(dag, e)}};
      if (std::popcount(e) >= 2 && (e & ~sinks) == 0 && cost.mergeable(dag, e))
        stages.push_back({Stage::Kind::merged, {e}});
      for (const Stage& st : stages) {
        const double own = cost.latency(dag, st);
        for (double rest : costs(s & ~e)) all.push_back(own + rest);
      }
    }
    std::sort(all.begin(), all.end());
    if (all.size() > k) all.resize(k);
    return memo[s] = all;
  }
};

TEST(Ios, BestPlansAreTheCheapestDistinctPlans) {
  std::mt19937_64 rng(67);
  for (int trial = 0; trial < 120; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 6);
    const OpDag dag = random_dag(rng, n);
    RandomCost cost(rng, n);
    const int k = 1 + static_cast<int>(rng() % 5);
    const std::vector<StagePlan> plans = schedule_best(dag, cost, {Variant::both, 0, 0}, k);
    BruteBest brute{dag, cost, static_cast<size_t>(k), {}};
    const std::vector<double>& expected = brute.costs(dag.all());
    const std::string what = "trial " + std::to_string(trial) + " n=" + std::to_string(n) + " k=" + std::to_string(k);
    ASSERT_EQ(plans.size(), expected.size()) << what;
    EXPECT_NEAR(plans[0].cost, schedule(dag, cost, {Variant::both, 0, 0}).cost, 1e-12) << what;
    for (size_t i = 0; i < plans.size(); ++i) {
      EXPECT_NEAR(plans[i].cost, expected[i], 1e-9 * expected[i]) << what << " plan " << i;
      std::string why;
      EXPECT_TRUE(valid_plan(dag, plans[i], &why)) << what << " plan " << i << ": " << why;
      double sum = 0;
      for (const Stage& st : plans[i].stages) sum += cost.latency(dag, st);
      EXPECT_NEAR(sum, plans[i].cost, 1e-9 * sum) << what << " plan " << i;
      for (size_t j = 0; j < i; ++j) {  // distinct stage sequences
        bool same = plans[i].stages.size() == plans[j].stages.size();
        for (size_t t = 0; same && t < plans[i].stages.size(); ++t)
          same = plans[i].stages[t].kind == plans[j].stages[t].kind &&
                 plans[i].stages[t].groups == plans[j].stages[t].groups;
        EXPECT_FALSE(same) << what << " plans " << j << " and " << i;
      }
    }
  }
}

// The measured final choice: candidates in turns after a warm-up round,
// the lowest median wins (not the lowest single run).
TEST(Ios, FastestRunsCandidatesInTurnsAndKeepsTheLowestMedian) {
  // Candidate 1 has the best single run but the worse median.
  const std::vector<std::vector<double>> times{{9, 3, 3, 3}, {9, 1, 5, 5}, {9, 4, 4, 4}};
  std::vector<size_t> order;
  std::vector<size_t> calls(3, 0);
  const Contest c = fastest(3, 3, [&](size_t k) {
    order.push_back(k);
    return times[k][calls[k]++];
  });
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(c.best, 0u);
  EXPECT_EQ(c.seconds[1], (std::vector<double>{1, 5, 5}));  // the warm-up run is not kept
  EXPECT_EQ(c.median(1), 5);
  EXPECT_EQ(c.min(1), 1);
  EXPECT_EQ(c.max(2), 4);
  EXPECT_GE(c.spent_s, 0);
  EXPECT_CONTAINS(test::error_of([] { fastest(0, 1, [](size_t) { return 1.0; }); }), "at least one candidate");
  EXPECT_CONTAINS(test::error_of([] { fastest(1, 0, [](size_t) { return 1.0; }); }), "timed round");
  EXPECT_CONTAINS(test::error_of([] { fastest(2, 1, [](size_t k) { return k ? NAN : 1.0; }); }), "candidate 1 took");
}

// Endings from chain cuts are exactly the successor-closed subsets, also
// where the descendants of two cuts overlap (the original IOS code rejected
// those and missed endings).
TEST(Ios, EndingsAreEverySuccessorClosedSubset) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 100; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 9);
    const OpDag dag = random_dag(rng, n);
    // A random predecessor-closed remaining set: drop a successor-closed one.
    OpSet remaining = dag.all();
    for (int v : dag.topo_order())
      if (rng() % 4 == 0) remaining &= ~((OpSet{1} << v) | dag.descendants(v));
    std::vector<OpSet> expected;
    for (OpSet e = remaining; e; e = (e - 1) & remaining) {
      bool closed = true;
      for (int v = 0; v < n; ++v)
        if ((e >> v & 1) && (dag.succs(v) & remaining & ~e)) closed = false;
      if (closed) expected.push_back(e);
    }
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(endings(dag, remaining), expected) << "trial " << trial;
    for (int r : {1, 2, 3}) {  // pruning r keeps the endings whose groups are small enough
      std::vector<OpSet> small;
      for (OpSet e : expected) {
        const std::vector<OpSet> groups = components(dag, e);
        if (std::all_of(groups.begin(), groups.end(), [&](OpSet g) { return std::popcount(g) <= r; }))
          small.push_back(e);
      }
      EXPECT_EQ(endings(dag, remaining, r), small) << "trial " << trial << " r=" << r;
    }
  }
  // A diamond's sink has two predecessors on different chains.
  const OpDag diamond(4, {{0, 1}, {0, 2}, {1, 3}, {2, 3}});
  EXPECT_EQ(endings(diamond, diamond.all()), (std::vector<OpSet>{0b1000, 0b1010, 0b1100, 0b1110, 0b1111}));
}

TEST(Ios, GreedyRunsWavefronts) {
  const OpDag dag(5, {{0, 2}, {1, 2}, {2, 3}, {2, 4}});
  std::mt19937_64 rng(1);
  RandomCost cost(rng, 5);
  const StagePlan p = schedule(dag, cost, {Variant::greedy});
  ASSERT_EQ(p.stages.size(), 3u);
  EXPECT_EQ(p.stages[0].ops(), 0b00011u);
  EXPECT_EQ(p.stages[0].groups.size(), 2u);
  EXPECT_EQ(p.stages[1].ops(), 0b00100u);
  EXPECT_EQ(p.stages[2].ops(), 0b11000u);
  EXPECT_TRUE(valid_plan(dag, p));
}

TEST(Ios, BadGraphsAndOptionsAreErrors) {
  EXPECT_CONTAINS(test::error_of([] { OpDag(3, {{0, 1}, {1, 2}, {2, 0}}); }), "cycle");
  EXPECT_CONTAINS(test::error_of([] { OpDag(2, {{0, 2}}); }), "outside [0, 2)");
  EXPECT_CONTAINS(test::error_of([] { OpDag(2, {{1, 1}}); }), "reads itself");
  EXPECT_CONTAINS(test::error_of([] { OpDag(65, {}); }), "at most 64");
  const OpDag dag(2, {{0, 1}});
  std::mt19937_64 rng(1);
  RandomCost cost(rng, 2);
  EXPECT_CONTAINS(test::error_of([&] { schedule(dag, cost, {Variant::both, -1, 0}); }), "r and s");
  EXPECT_CONTAINS(test::error_of([&] { schedule_best(dag, cost, {}, 0); }), "at least 1");
  std::string why;
  EXPECT_FALSE(valid_plan(dag, {{{Stage::Kind::concurrent, {0b10}}, {Stage::Kind::concurrent, {0b01}}}}, &why));
  EXPECT_CONTAINS(why, "before one of its inputs");
}

}  // namespace
}  // namespace sylva::ios
