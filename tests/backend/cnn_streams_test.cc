// The GPU's stream logic for IOS plans, checked on the CPU: a simulator of
// lanes (CnnOps) whose work runs out of step, as streams may. With the side
// lanes late, their work runs only at the join, last lane first, so a stage
// that read a group's output before joining would read nothing; with the
// main lane late, its work runs only at the next fork, so a group that
// started before the work it depends on would read stale inputs. Plans run
// on either must give the sequential results.
#include <gtest/gtest.h>

#include <bit>
#include <functional>
#include <vector>

#include "../../src/backend/cnn_ops.h"
#include "support/cnn_plans.h"
#include "support/ios_fixture.h"
#include "support/test_util.h"
#include "sylva/backend/cnn.h"

namespace sylva::cnn {
namespace {

using ios::CnnGraph;
using ios::CnnNode;

class LaneSim final : public CnnOps {
 public:
  explicit LaneSim(bool late_main) : cpu_(make_cpu_cnn_ops(false)), late_main_(late_main) {}
  Memory& memory() override { return cpu_->memory(); }
  void upload(float* dst, const float* src, int64_t count) override {
    synchronize();
    cpu_->upload(dst, src, count);
  }
  void download(float* dst, const float* src, int64_t count) override {
    synchronize();
    cpu_->download(dst, src, count);
  }
  void move_channels(const float* x, int64_t xc, int64_t x0, float* y, int64_t yc, int64_t y0, int64_t c, int64_t n,
                     int64_t hw, bool add) override {
    submit([=, this] { cpu_->move_channels(x, xc, x0, y, yc, y0, c, n, hw, add); });
  }
  void activate(float* y, int64_t count, Act act) override {
    submit([=, this] { cpu_->activate(y, count, act); });
  }
  void element(const float* x, float* y, int64_t n, int64_t terms, int64_t each, bool mul) override {
    submit([=, this] { cpu_->element(x, y, n, terms, each, mul); });
  }
  void conv(const CnnNode& node, const float* x, Nchw in, const float* w, const float* b, float* y) override {
    submit([=, this, &node] { cpu_->conv(node, x, in, w, b, y); });
  }
  void pool(const CnnNode& node, const float* x, Nchw in, float* y) override {
    submit([=, this, &node] { cpu_->pool(node, x, in, y); });
  }
  int lanes() const override { return 8; }
  void fork(int k) override {
    EXPECT_EQ(forked_, 1) << "fork inside a fork";
    run(0);  // the side lanes start after lane 0's work so far
    forked_ = k;
  }
  void lane(int g) override {
    ASSERT_LT(g, forked_) << "lane " << g << " used without a fork";
    cur_ = g;
  }
  void join() override {
    for (int g = forked_ - 1; g >= 1; --g) run(g);  // lane 0 goes on after every side lane
    forked_ = 1;
    cur_ = 0;
  }
  void synchronize() override {
    for (int g = 7; g >= 0; --g) run(g);
  }

 private:
  void submit(std::function<void()> fn) {
    if ((cur_ == 0) == late_main_)
      queues_[static_cast<size_t>(cur_)].push_back(std::move(fn));
    else
      fn();
  }
  void run(int g) {
    std::vector<std::function<void()>> q = std::move(queues_[static_cast<size_t>(g)]);
    queues_[static_cast<size_t>(g)].clear();
    for (auto& fn : q) fn();
  }

  std::unique_ptr<CnnOps> cpu_;
  bool late_main_;
  int cur_ = 0, forked_ = 1;
  std::vector<std::function<void()>> queues_[8];
};

TEST(CnnStreams, PlansOnLanesRunningOutOfStepGiveTheSequentialResults) {
  test::TempDir dir;
  for (const char* text : {test::kTinyCnnGraph, test::kCnnOpsGraph}) {
    const CnnGraph g = ios::read_ios_graph(dir.file("g.json", text));
    CnnRunner seq(g, 2, 5);
    seq.run_all();
    for (bool late_main : {false, true})
      for (bool merge : {false, true}) {
        const std::string what = g.name + (late_main ? ", main lane late" : ", side lanes late") +
                                 (merge ? ", merges allowed" : "");
        CnnRunner planned(g, 2, 5, std::make_unique<LaneSim>(late_main));
        EXPECT_EQ(planned.impl(), Impl::custom);
        planned.run(g.blocks[0].enter);
        size_t concurrent = 0;
        for (const ios::BlockPart& part : ios::block_parts(g.blocks[0])) {
          ProfilingCost rule(planned, g.blocks[0], part, 1);
          test::SideBySide cost;
          if (merge) cost.rule = &rule;
          const ios::StagePlan plan =
              ios::schedule(part.dag, cost, {merge ? ios::Variant::both : ios::Variant::parallel, 3, 8});
          for (const ios::Stage& st : plan.stages) concurrent += st.groups.size() > 1;
          run_plan(planned, g.blocks[0], part, plan, 1);
        }
        if (!merge) {
          EXPECT_GE(concurrent, 1u) << what << ": some stage runs groups on lanes";
        }
        for (const std::string& name : test::all_names(g))
          EXPECT_LE(test::max_relative_error(seq.value(name), planned.value(name)), 1e-6) << what << " node " << name;
      }
  }
}

TEST(CnnStreams, ProfilingOnLanesWaitsForTheWork) {
  test::TempDir dir;
  const CnnGraph g = ios::read_ios_graph(dir.file("g.json", test::kCnnOpsGraph));
  CnnRunner r(g, 1, 5, std::make_unique<LaneSim>(false));
  r.run_all();
  const ios::BlockPart part = ios::block_parts(g.blocks[0])[0];
  ProfilingCost cost(r, g.blocks[0], part, 1, 1);
  EXPECT_GT(cost.latency(part.dag, {ios::Stage::Kind::concurrent, {0b001, 0b010}}), 0.0);
  EXPECT_CONTAINS(test::error_of([&] { CnnRunner(g, 1, 5, Impl::custom); }), "Impl::custom needs the constructor");
  EXPECT_CONTAINS(test::error_of([&] { CnnRunner(g, 1, 5, std::unique_ptr<CnnOps>()); }), "no operators given");
}

}  // namespace
}  // namespace sylva::cnn
