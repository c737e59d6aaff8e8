// The CNN runner on the CPU: oneDNN against the naive reference on every op
// type and option the IOS graphs use; IOS plans give the results of
// running sequentially; the profiling cost model.
#include "sylva/graph/cnn.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "support/cnn_plans.h"
#include "support/ios_fixture.h"
#include "support/test_util.h"

namespace sylva::cnn {
namespace {

using ios::CnnGraph;

TEST(CnnKernels, OneDnnMatchesTheReferenceOnEveryOp) {
  test::TempDir dir;
  for (const char* text : {test::kTinyCnnGraph, test::kCnnOpsGraph}) {
    const CnnGraph g = ios::read_ios_graph(dir.file("g.json", text));
    CnnRunner fast(g, 2, 11), slow(g, 2, 11, Impl::reference);
    fast.run_all();
    slow.run_all();
    for (const std::string& name : test::all_names(g))
      EXPECT_LE(test::max_relative_error(fast.value(name), slow.value(name)), 1e-5) << g.name << " node " << name;
  }
}

// The reference by hand on one output: ga = global average of x + dw.
TEST(CnnKernels, ReferenceGlobalAverageOfASummedTerm) {
  test::TempDir dir;
  const CnnGraph g = ios::read_ios_graph(dir.file("g.json", test::kCnnOpsGraph));
  CnnRunner r(g, 1, 3, Impl::reference);
  r.run_all();
  const std::vector<float>&x = r.value("x"), &dw = r.value("dw"), &ga = r.value("ga");
  for (int c = 0; c < 6; ++c) {
    double s = 0;
    for (int k = 0; k < 81; ++k) s += x[static_cast<size_t>(c * 81 + k)] + dw[static_cast<size_t>(c * 81 + k)];
    EXPECT_NEAR(ga[static_cast<size_t>(c)], s / 81, 1e-5);
  }
}

// The element terms by hand: ea = dw[0:3] + x[3:6], em = rect * (x[0:3] + dw[1:4]).
TEST(CnnKernels, ElementTermsByHand) {
  test::TempDir dir;
  const CnnGraph g = ios::read_ios_graph(dir.file("g.json", test::kCnnOpsGraph));
  for (Impl impl : {Impl::onednn, Impl::reference}) {
    CnnRunner r(g, 2, 3, impl);
    r.run_all();
    const std::vector<float>&x = r.value("x"), &dw = r.value("dw"), &rect = r.value("rect");
    const std::vector<float>&ea = r.value("ea"), &em = r.value("em");
    ASSERT_EQ(ea.size(), size_t{2 * 3 * 81});
    for (size_t i = 0; i < 2; ++i)
      for (size_t k = 0; k < 3 * 81; ++k) {
        const size_t at = i * 3 * 81 + k;
        EXPECT_FLOAT_EQ(ea[at], dw[i * 6 * 81 + k] + x[i * 6 * 81 + 3 * 81 + k]);
        EXPECT_FLOAT_EQ(em[at], rect[at] * (x[i * 6 * 81 + k] + dw[i * 6 * 81 + 81 + k]));
      }
  }
}

TEST(CnnPlans, AnIosPlanGivesTheResultsOfRunningSequentially) {
  test::TempDir dir;
  for (const char* text : {test::kTinyCnnGraph, test::kCnnOpsGraph}) {
    const CnnGraph g = ios::read_ios_graph(dir.file("g.json", text));
    CnnRunner seq(g, 2, 5), planned(g, 2, 5);
    seq.run_all();
    planned.run(g.blocks[0].enter);  // the block's input (a placeholder needs nothing)
    for (const ios::BlockPart& part : ios::block_parts(g.blocks[0])) {
      test::SideBySide cost;
      const ios::StagePlan plan = ios::schedule(part.dag, cost, {ios::Variant::parallel, 3, 8});
      EXPECT_LT(plan.stages.size(), static_cast<size_t>(part.dag.size())) << "some stage runs groups side by side";
      run_plan(planned, g.blocks[0], part, plan, 2);
    }
    for (const std::string& name : test::all_names(g))
      EXPECT_LE(test::max_relative_error(seq.value(name), planned.value(name)), 1e-6) << g.name << " node " << name;
  }
}

TEST(CnnPlans, ProfilingCostMeasuresEachStageOnce) {
  test::TempDir dir;
  const CnnGraph g = ios::read_ios_graph(dir.file("g.json", test::kCnnOpsGraph));
  CnnRunner r(g, 1, 5);
  r.run_all();
  const ios::BlockPart part = ios::block_parts(g.blocks[0])[0];
  ProfilingCost cost(r, g.blocks[0], part, 2, 2);
  const ios::Stage both{ios::Stage::Kind::concurrent, {0b001, 0b010}};  // s2 and dw side by side
  const double t = cost.latency(part.dag, both);
  EXPECT_GT(t, 0.0);
  EXPECT_EQ(cost.latency(part.dag, both), t);  // cached
  EXPECT_EQ(cost.profiled(), 1);
  const ios::StagePlan plan = ios::schedule(part.dag, cost, {ios::Variant::both, 2, 3});
  EXPECT_TRUE(ios::valid_plan(part.dag, plan));
  EXPECT_GT(cost.profiled(), 1);
}

TEST(CnnRunner, ErrorsNameTheNode) {
  test::TempDir dir;
  const CnnGraph g = ios::read_ios_graph(dir.file("g.json", test::kCnnOpsGraph));
  CnnRunner r(g, 1, 3);
  EXPECT_CONTAINS(test::error_of([&] { r.run(g.blocks[0].inner[3]); }), "node 'dw' has no value");
  EXPECT_CONTAINS(test::error_of([&] { r.value("nope"); }), "'nope'");
  EXPECT_CONTAINS(test::error_of([&] { CnnRunner(g, 0, 1); }), "batch must be >= 1");
  const ios::BlockPart part = ios::block_parts(g.blocks[0])[0];
  ios::StagePlan merged;
  merged.stages.push_back({ios::Stage::Kind::merged, {0b11}});
  EXPECT_CONTAINS(test::error_of([&] { run_plan(r, g.blocks[0], part, merged, 2); }),
                  "cannot merge s2+dw: 'dw' is not a convolution of groups 1");
}

// Bad graphs fail when the runner is made, naming the node.
TEST(CnnRunner, GraphErrorsNameTheNodeWhenTheRunnerIsMade) {
  test::TempDir dir;
  const auto error_for = [&](const std::string& from, const std::string& to) {
    std::string text = test::kCnnOpsGraph;
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    const CnnGraph g = ios::read_ios_graph(dir.file("bad.json", text));
    return test::error_of([&] { CnnRunner(g, 1, 1); });
  };
  EXPECT_CONTAINS(error_for(R"("sigmoid", "output_shape": [4, 5, 5])", R"("sigmoid", "output_shape": [4, 4, 4])"),
                  "node 's2' (conv) computes [4, 5, 5] per sample but declares output_shape [4, 4, 4]");
  EXPECT_CONTAINS(error_for(R"([[["dw", 0, 6]]], "pool_type": "max")", R"([[["dw", 0, 7]]], "pool_type": "max")"),
                  "node 'mx' reads channels [0, 7) of 'dw', which has 6");
  EXPECT_CONTAINS(error_for(R"([[["s2", 0, 4]], [["mx", 0, 6]]])", R"([[["s2", 0, 4]], [["dw", 0, 6]]])"),
                  "node 'out' concatenates inputs of different sizes (5x5 and 9x9)");
}

TEST(CnnData, SqueezeNetOneDnnMatchesTheReference) {
  const std::string data = test::data_dir();
  const std::string path = data + "/ios/graphs/squeezenet.seq.json";
  if (data.empty() || !std::filesystem::exists(path)) GTEST_SKIP() << "no IOS graphs: set SYLVA_DATA";
  const CnnGraph g = ios::read_ios_graph(path);
  CnnRunner fast(g, 1, 2), slow(g, 1, 2, Impl::reference);
  fast.run_all();
  slow.run_all();
  const std::string out = g.blocks.back().exit.name;
  EXPECT_LE(test::max_relative_error(fast.value(out), slow.value(out)), 1e-4);
}

}  // namespace
}  // namespace sylva::cnn
