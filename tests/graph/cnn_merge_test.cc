// IOS's operator merge for convolutions: which convolutions merge, the
// merged convolution's outputs against the separate ones (float64 through
// the reference, float32 through oneDNN), and plans with merged stages.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "sylva/graph/cnn.h"
#include "support/cnn_plans.h"
#include "support/ios_fixture.h"
#include "support/test_util.h"

namespace sylva::cnn {
namespace {

using ios::CnnGraph;
using ios::CnnNode;

// Five convolutions of x that merge (1x1, 3x3, 5x5, 1x7, 7x1, each padded
// to keep 9x9) and two strided ones (1x1 and 3x3, stride 2).
const char* kMergeGraph = R"({"name": "merge", "input": {"type": "placeholder", "name": "x", "output_shape": [5, 9, 9]},
 "blocks": [{"enter_node": {"type": "placeholder", "name": "x", "output_shape": [5, 9, 9]},
  "inner_nodes": [
   {"type": "conv", "name": "k1", "inputs": [[["x", 0, 5]]], "out_channels": 3, "kernel": [1, 1], "stride": [1, 1],
    "padding": [0, 0], "groups": 1, "act": "tanh", "output_shape": [3, 9, 9]},
   {"type": "conv", "name": "k3", "inputs": [[["x", 0, 5]]], "out_channels": 4, "kernel": [3, 3], "stride": [1, 1],
    "padding": [1, 1], "groups": 1, "act": "tanh", "output_shape": [4, 9, 9]},
   {"type": "conv", "name": "k5", "inputs": [[["x", 0, 5]]], "out_channels": 2, "kernel": [5, 5], "stride": [1, 1],
    "padding": [2, 2], "groups": 1, "act": "tanh", "output_shape": [2, 9, 9]},
   {"type": "conv", "name": "r17", "inputs": [[["x", 0, 5]]], "out_channels": 3, "kernel": [1, 7], "stride": [1, 1],
    "padding": [0, 3], "groups": 1, "act": "tanh", "output_shape": [3, 9, 9]},
   {"type": "conv", "name": "r71", "inputs": [[["x", 0, 5]]], "out_channels": 2, "kernel": [7, 1], "stride": [1, 1],
    "padding": [3, 0], "groups": 1, "act": "tanh", "output_shape": [2, 9, 9]},
   {"type": "conv", "name": "s1", "inputs": [[["x", 0, 5]]], "out_channels": 2, "kernel": [1, 1], "stride": [2, 2],
    "padding": [0, 0], "groups": 1, "act": "relu", "output_shape": [2, 5, 5]},
   {"type": "conv", "name": "s3", "inputs": [[["x", 0, 5]]], "out_channels": 3, "kernel": [3, 3], "stride": [2, 2],
    "padding": [1, 1], "groups": 1, "act": "relu", "output_shape": [3, 5, 5]}],
  "exit_node": {"type": "identity", "name": "out", "inputs": [[["k1", 0, 3]], [["k3", 0, 4]], [["k5", 0, 2]],
    [["r17", 0, 3]], [["r71", 0, 2]]], "output_shape": [14, 9, 9]}}]})";

std::vector<const CnnNode*> pick(const CnnGraph& g, std::initializer_list<const char*> names) {
  std::vector<const CnnNode*> out;
  for (const char* name : names)
    for (const CnnNode& n : g.blocks[0].inner)
      if (n.name == name) out.push_back(&n);
  return out;
}

TEST(ConvMerge, MergedEqualsSeparateInFloat64) {
  test::TempDir dir;
  const CnnGraph g = ios::read_ios_graph(dir.file("g.json", kMergeGraph));
  for (auto names : {std::initializer_list<const char*>{"k1", "k3", "k5", "r17", "r71"}, {"s3", "s1"}}) {
    const std::vector<const CnnNode*> convs = pick(g, names);
    const std::optional<ios::MergedConv> m = ios::merge_convs(convs);
    ASSERT_TRUE(m);
    std::mt19937_64 rng(3);
    const int64_t N = 2, C = 5, H = 9, W = 9;
    const std::vector<double> x = test::uniform<double>(static_cast<size_t>(N * C * H * W), rng);
    std::vector<std::vector<double>> w, b;
    for (const CnnNode* n : convs) {
      w.push_back(test::uniform<double>(static_cast<size_t>(n->out_channels * C * n->kernel[0] * n->kernel[1]), rng));
      b.push_back(test::uniform<double>(static_cast<size_t>(n->out_channels), rng));
    }
    std::vector<const std::vector<double>*> wp, bp;
    for (size_t j = 0; j < convs.size(); ++j) {
      wp.push_back(&w[j]);
      bp.push_back(&b[j]);
    }
    std::vector<double> mw, mb, merged;
    merge_conv_weights(*m, convs, wp, bp, mw, mb);
    conv_reference(m->conv, x, N, C, H, W, mw, mb, merged);
    const int64_t HW = m->conv.output_shape[1] * m->conv.output_shape[2], KM = m->conv.out_channels;
    for (size_t j = 0; j < convs.size(); ++j) {
      std::vector<double> alone;
      conv_reference(*convs[j], x, N, C, H, W, w[j], b[j], alone);
      const int64_t K = convs[j]->out_channels;
      double worst = 0;
      for (int64_t i = 0; i < N; ++i)
        for (int64_t k = 0; k < K * HW; ++k) {
          const double a = alone[static_cast<size_t>(i * K * HW + k)];
          const double z = merged[static_cast<size_t>((i * KM + m->offsets[j]) * HW + k)];
          worst = std::max(worst, std::abs(a - z) / std::max(std::abs(a), 1e-12));
        }
      EXPECT_LE(worst, 1e-10) << convs[j]->name << " in " << m->conv.name;
    }
  }
}

TEST(ConvMerge, TheMergedConvolutionCentresEveryKernel) {
  test::TempDir dir;
  const CnnGraph g = ios::read_ios_graph(dir.file("g.json", kMergeGraph));
  const std::optional<ios::MergedConv> m = ios::merge_convs(pick(g, {"k3", "r17", "k1"}));
  ASSERT_TRUE(m);
  EXPECT_EQ(m->conv.name, "k3+r17+k1");
  EXPECT_EQ(m->conv.out_channels, 10);
  EXPECT_EQ(m->conv.output_shape[0], 10);
  EXPECT_EQ(m->conv.kernel, (std::array<int64_t, 2>{3, 7}));
  EXPECT_EQ(m->conv.padding, (std::array<int64_t, 2>{1, 3}));
  EXPECT_EQ(m->offsets, (std::vector<int64_t>{0, 4, 7}));
}

TEST(ConvMerge, RefusesWhatWouldChangeAResult) {
  test::TempDir dir;
  const CnnGraph g = ios::read_ios_graph(dir.file("g.json", kMergeGraph));
  std::string why;
  EXPECT_FALSE(ios::merge_convs(pick(g, {"k1"}), &why));
  EXPECT_CONTAINS(why, "two or more");
  EXPECT_FALSE(ios::merge_convs(pick(g, {"k1", "s1"}), &why));
  EXPECT_CONTAINS(why, "differ in stride, activation or output size");
  // Same stride and output size, but 5x5 padded 1 is not 3x3 padded 1 centred (4x4 from 12x12 at stride 3).
  CnnNode a = *pick(g, {"k3"})[0], b = *pick(g, {"k5"})[0];
  for (CnnNode* n : {&a, &b}) {
    n->stride = {3, 3};
    n->padding = {1, 1};
    n->output_shape = {n->out_channels, 4, 4};
  }
  EXPECT_FALSE(ios::merge_convs({&a, &b}, &why));
  EXPECT_CONTAINS(why, "padding does not line up");
  b = a;
  b.name = "even";
  b.kernel = {2, 2};
  EXPECT_FALSE(ios::merge_convs({&a, &b}, &why));
  EXPECT_CONTAINS(why, "cannot be centred");
  b = a;
  b.inputs[0][0].begin = 1;
  EXPECT_FALSE(ios::merge_convs({&a, &b}, &why));
  EXPECT_CONTAINS(why, "read different inputs");
  b = a;
  b.groups = a.out_channels;
  EXPECT_FALSE(ios::merge_convs({&a, &b}, &why));
  EXPECT_CONTAINS(why, "groups 1");
}

TEST(ConvMerge, PlansWithMergedStagesGiveTheResultsOfRunningSequentially) {
  test::TempDir dir;
  for (const char* text : {test::kTinyCnnGraph, kMergeGraph}) {
    const CnnGraph g = ios::read_ios_graph(dir.file("g.json", text));
    for (Impl impl : {Impl::onednn, Impl::reference}) {
      CnnRunner seq(g, 2, 5, impl), planned(g, 2, 5, impl);
      seq.run_all();
      planned.run(g.blocks[0].enter);
      for (const ios::BlockPart& part : ios::block_parts(g.blocks[0])) {
        ProfilingCost rule(planned, g.blocks[0], part, 2);
        test::SideBySide cost;
        cost.rule = &rule;
        const ios::StagePlan plan = ios::schedule(part.dag, cost, {ios::Variant::both, 0, 0});
        const auto merged = std::count_if(plan.stages.begin(), plan.stages.end(),
                                          [](const ios::Stage& st) { return st.kind == ios::Stage::Kind::merged; });
        EXPECT_GE(merged, 1) << g.name;
        run_plan(planned, g.blocks[0], part, plan, 2);
        run_plan(planned, g.blocks[0], part, plan, 2);  // again: the merged weights are kept, not rebuilt
      }
      for (const ios::CnnNode* n : g.blocks[0].ops()) {
        const std::vector<float>&a = seq.value(n->name), &z = planned.value(n->name);
        ASSERT_EQ(a.size(), z.size()) << n->name;
        double worst = 0;
        for (size_t i = 0; i < a.size(); ++i)
          worst = std::max(worst, static_cast<double>(std::abs(a[i] - z[i])) / std::max(1.0, std::abs(double{a[i]})));
        EXPECT_LE(worst, impl == Impl::reference ? 1e-6 : 1e-5) << g.name << " node " << n->name;
      }
    }
  }
}

}  // namespace
}  // namespace sylva::cnn
