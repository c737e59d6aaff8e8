// CNN operators on CPU: oneDNN against the naive reference on every op
// type and option the IOS graphs use; IOS plans give the results of
// running sequentially; the profiling cost model.
#include "sylva/backend/cnn.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "support/ios_fixture.h"
#include "support/test_util.h"

namespace sylva::cnn {
namespace {

using ios::CnnGraph;

// Strided, depthwise and activated convolutions; max, average (padding
// counted) and global pooling.
const char* kOpsGraph = R"({"name": "ops", "input": {"type": "placeholder", "name": "x", "output_shape": [6, 9, 9]},
 "blocks": [{"enter_node": {"type": "placeholder", "name": "x", "output_shape": [6, 9, 9]},
  "inner_nodes": [
   {"type": "conv", "name": "s2", "inputs": [[["x", 0, 6]]], "out_channels": 4, "kernel": [3, 3], "stride": [2, 2],
    "padding": [1, 1], "groups": 1, "act": "sigmoid", "output_shape": [4, 5, 5]},
   {"type": "conv", "name": "dw", "inputs": [[["x", 0, 6]]], "out_channels": 6, "kernel": [3, 3], "stride": [1, 1],
    "padding": [1, 1], "groups": 6, "act": "tanh", "output_shape": [6, 9, 9]},
   {"type": "conv", "name": "rect", "inputs": [[["x", 2, 6]]], "out_channels": 3, "kernel": [1, 5], "stride": [1, 1],
    "padding": [0, 2], "groups": 1, "act": "relu", "output_shape": [3, 9, 9]},
   {"type": "pool", "name": "mx", "inputs": [[["dw", 0, 6]]], "pool_type": "max", "kernel": [3, 3], "stride": [2, 2],
    "padding": [1, 1], "output_shape": [6, 5, 5]},
   {"type": "pool", "name": "av", "inputs": [[["rect", 0, 3]]], "pool_type": "avg", "kernel": [3, 3],
    "stride": [1, 1], "padding": [1, 1], "output_shape": [3, 9, 9]},
   {"type": "pool", "name": "ga", "inputs": [[["x", 0, 6], ["dw", 0, 6]]], "pool_type": "global_avg",
    "kernel": [1, 1], "stride": [1, 1], "padding": [0, 0], "output_shape": [6, 1, 1]},
   {"type": "pool", "name": "gm", "inputs": [[["mx", 0, 6]]], "pool_type": "global_max", "kernel": [1, 1],
    "stride": [1, 1], "padding": [0, 0], "output_shape": [6, 1, 1]}],
  "exit_node": {"type": "identity", "name": "out", "inputs": [[["s2", 0, 4]], [["mx", 0, 6]]],
   "output_shape": [10, 5, 5]}}]})";

double max_relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double diff = 0, scale = 1e-30;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, static_cast<double>(std::abs(a[i] - b[i])));
    scale = std::max({scale, static_cast<double>(std::abs(a[i])), static_cast<double>(std::abs(b[i]))});
  }
  return diff / scale;
}

std::vector<std::string> all_names(const CnnGraph& g) {
  std::vector<std::string> names;
  for (const ios::CnnBlock& b : g.blocks)
    for (const ios::CnnNode* n : b.ops()) {
      names.push_back(n->name);
      for (const ios::CnnNode& m : n->nodes) names.push_back(m.name);
    }
  return names;
}

TEST(CnnOps, OneDnnMatchesTheReferenceOnEveryOp) {
  test::TempDir dir;
  for (const char* text : {test::kTinyCnnGraph, kOpsGraph}) {
    const CnnGraph g = ios::read_ios_graph(dir.file("g.json", text));
    CnnRunner fast(g, 2, 11), slow(g, 2, 11, Impl::reference);
    fast.run_all();
    slow.run_all();
    for (const std::string& name : all_names(g))
      EXPECT_LE(max_relative_error(fast.value(name), slow.value(name)), 1e-5) << g.name << " node " << name;
  }
}

// The reference by hand on one output: ga = global average of x + dw.
TEST(CnnOps, ReferenceGlobalAverageOfASummedTerm) {
  test::TempDir dir;
  const CnnGraph g = ios::read_ios_graph(dir.file("g.json", kOpsGraph));
  CnnRunner r(g, 1, 3, Impl::reference);
  r.run_all();
  const std::vector<float>&x = r.value("x"), &dw = r.value("dw"), &ga = r.value("ga");
  for (int c = 0; c < 6; ++c) {
    double s = 0;
    for (int k = 0; k < 81; ++k) s += x[static_cast<size_t>(c * 81 + k)] + dw[static_cast<size_t>(c * 81 + k)];
    EXPECT_NEAR(ga[static_cast<size_t>(c)], s / 81, 1e-5);
  }
}

// Stages cost their longest group: IOS then runs independent operators side by side.
struct LongestGroup : ios::StageCostModel {
  double latency(const ios::OpDag&, const ios::Stage& st) override {
    int longest = 0;
    for (ios::OpSet g : st.groups) longest = std::max(longest, std::popcount(g));
    return longest;
  }
  bool mergeable(const ios::OpDag&, ios::OpSet) override { return false; }
};

TEST(CnnPlans, AnIosPlanGivesTheResultsOfRunningSequentially) {
  test::TempDir dir;
  for (const char* text : {test::kTinyCnnGraph, kOpsGraph}) {
    const CnnGraph g = ios::read_ios_graph(dir.file("g.json", text));
    CnnRunner seq(g, 2, 5), planned(g, 2, 5);
    seq.run_all();
    planned.run(g.blocks[0].enter);  // the block's input (a placeholder needs nothing)
    for (const ios::BlockPart& part : ios::block_parts(g.blocks[0])) {
      LongestGroup cost;
      const ios::StagePlan plan = ios::schedule(part.dag, cost, {ios::Variant::parallel, 3, 8});
      EXPECT_LT(plan.stages.size(), static_cast<size_t>(part.dag.size())) << "some stage runs groups side by side";
      run_plan(planned, g.blocks[0], part, plan, 2);
    }
    for (const std::string& name : all_names(g))
      EXPECT_LE(max_relative_error(seq.value(name), planned.value(name)), 1e-6) << g.name << " node " << name;
  }
}

TEST(CnnPlans, ProfilingCostMeasuresEachStageOnce) {
  test::TempDir dir;
  const CnnGraph g = ios::read_ios_graph(dir.file("g.json", kOpsGraph));
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

TEST(CnnOps, ErrorsNameTheNode) {
  test::TempDir dir;
  const CnnGraph g = ios::read_ios_graph(dir.file("g.json", kOpsGraph));
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

TEST(CnnData, SqueezeNetOneDnnMatchesTheReference) {
  const std::string data = test::data_dir();
  const std::string path = data + "/ios/graphs/squeezenet.seq.json";
  if (data.empty() || !std::filesystem::exists(path)) GTEST_SKIP() << "no IOS graphs: set SYLVA_DATA";
  const CnnGraph g = ios::read_ios_graph(path);
  CnnRunner fast(g, 1, 2), slow(g, 1, 2, Impl::reference);
  fast.run_all();
  slow.run_all();
  const std::string out = g.blocks.back().exit.name;
  EXPECT_LE(max_relative_error(fast.value(out), slow.value(out)), 1e-4);
}

}  // namespace
}  // namespace sylva::cnn
