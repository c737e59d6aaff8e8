// The CNN runner on the GPU (cuDNN): every operator against the naive
// reference, IOS plans whose concurrent groups run on their own streams
// and whose merged stages run as one convolution against the sequential
// run, and the profiling cost model timing stages on the GPU. Without a
// GPU every case checks that asking for cuDNN says so, then skips.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <filesystem>

#include "gpu.h"
#include "support/cnn_plans.h"
#include "support/ios_fixture.h"
#include "support/test_util.h"
#include "sylva/graph/cnn.h"

namespace sylva::cnn {
namespace {

using ios::CnnGraph;

class CudnnCnn : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = test::no_gpu_reason();
    if (!why.empty()) {
      const CnnGraph g = ios::read_ios_graph(dir.file("g.json", test::kTinyCnnGraph));
      EXPECT_CONTAINS(test::error_of([&] { CnnRunner(g, 1, 1, Impl::cudnn); }), "[cuda] no CUDA device 0 visible");
      GTEST_SKIP() << why << test::kGpuTestsHint;
    }
  }
  test::TempDir dir;
};

TEST_F(CudnnCnn, MatchesTheReferenceOnEveryOp) {
  for (const char* text : {test::kTinyCnnGraph, test::kCnnOpsGraph}) {
    const CnnGraph g = ios::read_ios_graph(dir.file("g.json", text));
    for (int64_t batch : {1, 3}) {
      CnnRunner gpu(g, batch, 11, Impl::cudnn), ref(g, batch, 11, Impl::reference);
      gpu.run_all();
      ref.run_all();
      for (const std::string& name : test::all_names(g))
        EXPECT_LE(test::max_relative_error(gpu.value(name), ref.value(name)), 1e-5)
            << g.name << " node " << name << " batch " << batch;
    }
  }
}

TEST_F(CudnnCnn, PlansWithStreamsAndMergedStagesGiveTheSequentialResults) {
  for (const char* text : {test::kTinyCnnGraph, test::kCnnOpsGraph}) {
    const CnnGraph g = ios::read_ios_graph(dir.file("g.json", text));
    CnnRunner seq(g, 2, 5, Impl::cudnn);
    seq.run_all();
    for (bool merge : {false, true}) {
      CnnRunner planned(g, 2, 5, Impl::cudnn);
      planned.run(g.blocks[0].enter);
      size_t concurrent = 0, merged = 0;
      for (const ios::BlockPart& part : ios::block_parts(g.blocks[0])) {
        const ios::StagePlan plan = test::side_by_side_plan(planned, g.blocks[0], part, merge);
        for (const ios::Stage& st : plan.stages) {
          concurrent += st.groups.size() > 1;
          merged += st.kind == ios::Stage::Kind::merged;
        }
        run_plan(planned, g.blocks[0], part, plan, 1);
        run_plan(planned, g.blocks[0], part, plan, 1);  // again: streams, events and weights are reused
      }
      if (merge && g.name == "tiny") {
        EXPECT_GE(merged, 1u) << "a and b merge";
      } else if (!merge) {
        EXPECT_GE(concurrent, 1u) << g.name << ": some stage runs groups on streams side by side";
      }
      for (const std::string& name : test::all_names(g))
        EXPECT_LE(test::max_relative_error(seq.value(name), planned.value(name)), 1e-5)
            << g.name << " node " << name << (merge ? " (merged plan)" : " (stream plan)");
    }
  }
}

TEST_F(CudnnCnn, ProfilingCostTimesStagesOnTheGpu) {
  const CnnGraph g = ios::read_ios_graph(dir.file("g.json", test::kCnnOpsGraph));
  CnnRunner r(g, 1, 5, Impl::cudnn);
  r.run_all();
  const ios::BlockPart part = ios::block_parts(g.blocks[0])[0];
  ProfilingCost cost(r, g.blocks[0], part, 1, 2);
  const ios::Stage both{ios::Stage::Kind::concurrent, {0b001, 0b010}};  // s2 and dw on two streams
  const double t = cost.latency(part.dag, both);
  EXPECT_GT(t, 0.0);
  EXPECT_EQ(cost.latency(part.dag, both), t);
  EXPECT_EQ(cost.profiled(), 1);
  const ios::StagePlan plan = ios::schedule(part.dag, cost, {ios::Variant::both, 2, 3});
  EXPECT_TRUE(ios::valid_plan(part.dag, plan));
}

TEST_F(CudnnCnn, ErrorsNameTheNode) {
  const CnnGraph g = ios::read_ios_graph(dir.file("g.json", test::kCnnOpsGraph));
  CnnRunner r(g, 1, 3, Impl::cudnn);
  EXPECT_CONTAINS(test::error_of([&] { r.run(g.blocks[0].inner[3]); }), "node 'dw' has no value");
  EXPECT_CONTAINS(test::error_of([&] { r.value("s2"); }), "node 's2' has no value");
}

TEST_F(CudnnCnn, RealGraphsMatchOneDnn) {
  const std::string data = test::data_dir();
  for (const char* name : {"squeezenet", "inception_v3"}) {
    const std::string path = data + "/ios/graphs/" + name + ".seq.json";
    if (data.empty() || !std::filesystem::exists(path)) GTEST_SKIP() << "no IOS graphs: set SYLVA_DATA";
    const CnnGraph g = ios::read_ios_graph(path);
    CnnRunner gpu(g, 2, 2, Impl::cudnn), cpu(g, 2, 2);
    gpu.run_all();
    cpu.run_all();
    const std::string out = g.blocks.back().exit.name;
    EXPECT_LE(test::max_relative_error(gpu.value(out), cpu.value(out)), 1e-4) << name;
  }
}

}  // namespace
}  // namespace sylva::cnn
