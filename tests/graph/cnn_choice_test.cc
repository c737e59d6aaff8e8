// IOS measured on the CNN runner: the stage-cost cache (shared between
// searches, kept in a file), and the final choice between candidate plans.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "support/cnn_plans.h"
#include "support/ios_fixture.h"
#include "support/test_util.h"
#include "sylva/core/file.h"
#include "sylva/graph/cnn.h"

namespace sylva::cnn {
namespace {

TEST(StageCosts, AFileKeepsTheCostsOfItsContextOnly) {
  test::TempDir dir;
  const std::string file = (dir.path / "costs.txt").string();
  {
    StageCosts c("tiny batch 2", file);
    EXPECT_EQ(c.loaded(), 0);
    c.put("a | b", {2e-3, 1e-3, 4e-3});
    c.put("merged a,b", {1.5e-3, 1.5e-3, 1.5e-3});
    c.save();
  }
  StageCosts again("tiny batch 2", file);
  EXPECT_EQ(again.loaded(), 2);
  ASSERT_NE(again.find("a | b"), nullptr);
  EXPECT_DOUBLE_EQ(again.find("a | b")->median, 2e-3);
  EXPECT_DOUBLE_EQ(again.find("a | b")->min, 1e-3);
  EXPECT_DOUBLE_EQ(again.find("a | b")->max, 4e-3);
  EXPECT_EQ(again.find("a"), nullptr);
  StageCosts other("tiny batch 16", file);  // measured for another batch: not used
  EXPECT_EQ(other.loaded(), 0);
  EXPECT_EQ(other.find("a | b"), nullptr);

  const std::string bad = dir.file("bad.txt", "# sylva IOS stage costs v1: tiny batch 2\n0.002 0.001 0.004 a | b\n"
                                              "0.002 0.003 0.001 c\n");
  EXPECT_CONTAINS(test::error_of([&] { StageCosts("tiny batch 2", bad); }), "bad.txt:3");
  const std::string short_line = dir.file("short.txt", "# sylva IOS stage costs v1: tiny batch 2\n0.002 0.001\n");
  EXPECT_CONTAINS(test::error_of([&] { StageCosts("tiny batch 2", short_line); }), "short.txt:2");
  const std::string foreign = dir.file("foreign.txt", "median,min,max\n");
  EXPECT_CONTAINS(test::error_of([&] { StageCosts("tiny batch 2", foreign); }), "not a stage-cost file");
}

TEST(StageCosts, SearchesShareMeasuredStagesByTheirOperators) {
  test::TempDir dir;
  const ios::CnnGraph g = ios::read_ios_graph(dir.file("g.json", test::kTinyCnnGraph));
  const ios::CnnBlock& b = g.blocks[0];
  CnnRunner runner(g, 1, 3);
  runner.run_all();
  const ios::BlockPart part = ios::block_parts(b).front();
  StageCosts costs("tiny");
  ProfilingCost first(runner, b, part, 2, 1, &costs);
  const ios::StagePlan both = ios::schedule(part.dag, first, {ios::Variant::both, 0, 0});
  EXPECT_GT(first.profiled(), 0);
  EXPECT_EQ(costs.size(), first.profiled());
  ProfilingCost second(runner, b, part, 2, 1, &costs, runner.working_set_bytes());  // another search of the part
  const ios::StagePlan again = ios::schedule(part.dag, second, {ios::Variant::both, 0, 0});
  EXPECT_EQ(second.profiled(), 0);
  EXPECT_DOUBLE_EQ(again.cost, both.cost);
  for (const ios::Stage& st : both.stages) {
    const StageCosts::Cost* c = costs.find(stage_key(b, part, st));
    ASSERT_NE(c, nullptr);
    EXPECT_LE(c->min, c->median);
    EXPECT_LE(c->median, c->max);
  }
  // Keys name the operators: groups in order, each in topological order.
  std::vector<int> ids(static_cast<size_t>(part.dag.size()));
  const std::vector<const ios::CnnNode*> ops = b.ops();
  const auto op = [&](const char* name) {
    for (int v = 0; v < part.dag.size(); ++v)
      if (ops[static_cast<size_t>(part.ops[static_cast<size_t>(v)])]->name == name) return ios::OpSet{1} << v;
    return ios::OpSet{0};
  };
  EXPECT_EQ(stage_key(b, part, {ios::Stage::Kind::concurrent, {op("a"), op("b")}}), "a | b");
  EXPECT_EQ(stage_key(b, part, {ios::Stage::Kind::concurrent, {op("b") | op("c")}}), "b,c");
  EXPECT_EQ(stage_key(b, part, {ios::Stage::Kind::merged, {op("a") | op("b")}}), "merged a,b");
}

// What a run of the whole graph touches: every output, every weight; the
// outputs grow with the batch, the weights do not.
TEST(StageCosts, TheWorkingSetIsEveryOutputAndWeight) {
  test::TempDir dir;
  const ios::CnnGraph g = ios::read_ios_graph(dir.file("g.json", test::kTinyCnnGraph));
  int64_t per_sample = 0;  // floats of one sample's outputs: input, enter, inner (sequential members too), exit
  const auto add = [&](const ios::CnnNode& n) {
    per_sample += n.output_shape[0] * n.output_shape[1] * n.output_shape[2];
  };
  add(g.input);
  add(g.blocks[0].enter);
  for (const ios::CnnNode& n : g.blocks[0].inner) {
    add(n);
    for (const ios::CnnNode& m : n.nodes) add(m);
  }
  add(g.blocks[0].exit);
  // Weights and biases: conv "1" 4x3x3x3 + 4, a 2x4x1x1 + 2, b 2x4x3x3 + 2, s2 4x2x1x1 + 4 (groups 2).
  const int64_t weights = 4 * 3 * 9 + 4 + 2 * 4 + 2 + 2 * 4 * 9 + 2 + 4 * 2 + 4;
  for (int64_t batch : {1, 3}) {
    CnnRunner r(g, batch, 1);
    EXPECT_EQ(r.working_set_bytes(), static_cast<size_t>((batch * per_sample + weights) * 4)) << "batch " << batch;
  }
}

// The final choice runs every candidate, keeps the lowest median, runs
// equal candidates once; the chosen plan computes what running the graph
// in order does, also with more cores than a stage has groups.
TEST(PlanChoice, TheFastestCandidateIsKeptAndComputesTheSameValues) {
  test::TempDir dir;
  const ios::CnnGraph g = ios::read_ios_graph(dir.file("g.json", test::kTinyCnnGraph));
  const ios::CnnBlock& b = g.blocks[0];
  CnnRunner seq(g, 2, 9), planned(g, 2, 9);
  seq.run_all();
  planned.run_all();
  for (const ios::BlockPart& part : ios::block_parts(b)) {
    ProfilingCost cost(planned, b, part, 2, 1);
    const std::vector<ios::StagePlan> candidates{ios::schedule(part.dag, cost, {ios::Variant::sequential}),
                                                 test::side_by_side_plan(planned, b, part, false),
                                                 ios::schedule(part.dag, cost, {ios::Variant::sequential})};
    ASSERT_GT(std::count_if(candidates[1].stages.begin(), candidates[1].stages.end(),
                            [](const ios::Stage& st) { return st.groups.size() > 1; }),
              0);  // a plan with concurrent stages competes
    for (int cores : {2, 4}) {
      const PlanChoice pick = choose_plan(planned, b, part, candidates, cores, 2);
      EXPECT_EQ(pick.same, (std::vector<size_t>{0, 1, 0}));
      ASSERT_EQ(pick.contest.seconds.size(), 3u);
      EXPECT_EQ(pick.contest.seconds[2], pick.contest.seconds[0]);  // run once, shared
      for (size_t k = 0; k < 3; ++k) {
        EXPECT_EQ(pick.contest.seconds[k].size(), 2u);
        EXPECT_LE(pick.contest.median(pick.contest.best), pick.contest.median(k));
      }
      EXPECT_NE(pick.contest.best, 2u);  // the first of equal candidates is the one named
      run_plan(planned, b, part, candidates[pick.contest.best], cores);
      for (const ios::CnnNode* n : b.ops()) {
        const std::vector<float>&a = seq.value(n->name), &z = planned.value(n->name);
        ASSERT_EQ(a.size(), z.size()) << n->name;
        for (size_t i = 0; i < a.size(); ++i)
          ASSERT_NEAR(a[i], z[i], 1e-5 * std::max(1.0f, std::abs(a[i]))) << n->name << " cores " << cores;
      }
    }
    ios::StagePlan broken = candidates[0];
    std::reverse(broken.stages.begin(), broken.stages.end());
    EXPECT_CONTAINS(test::error_of([&] { choose_plan(planned, b, part, {candidates[0], broken}, 2, 1); }),
                    "candidate plan 1");
    EXPECT_CONTAINS(test::error_of([&] { choose_plan(planned, b, part, {}, 2, 1); }), "no candidate");
  }
}

}  // namespace
}  // namespace sylva::cnn
