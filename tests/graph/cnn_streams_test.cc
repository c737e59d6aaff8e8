// The GPU's stream logic for IOS plans, checked on the CPU: a backend that
// simulates lanes (LaneSim) whose work runs out of step, as streams may,
// and CPU kernels that queue their work on its lanes. With the side lanes
// late, their work runs only when the main lane waits for it (at the join,
// last lane first), so a stage that read a group's output before joining
// would read nothing; with the main lane late, its work runs only when a
// side lane waits for it (at the next fork), so a group that started
// before the work it depends on would read stale inputs. Plans run on
// either must give the sequential results.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <functional>
#include <utility>
#include <vector>

#include "support/cnn_plans.h"
#include "support/ios_fixture.h"
#include "support/test_util.h"
#include "sylva/backend/cnn_kernels.h"
#include "sylva/graph/cnn.h"

namespace sylva::cnn {
namespace {

using ios::CnnGraph;

constexpr int kLanes = 8;

// Host memory, kLanes lanes, no ops of its own (LaneKernels queues the CNN
// kernels on it). Work on a late lane waits in that lane's queue until a
// wait() on another lane (or synchronize, download) needs it; work on the
// other lanes runs at once.
class LaneSim final : public Backend {
 public:
  explicit LaneSim(bool late_main) : late_main_(late_main) {}
  Device device() const override { return Device::cpu(); }
  std::string name() const override { return "lane_sim"; }
  bool supports(ir::OpKind) const override { return false; }
  void run(const KernelArgs&) override { unused(); }
  void copy_rows(MatView, std::span<const int32_t>, MatView, std::span<const int32_t>) override { unused(); }
  void add_rows(MatView, std::span<const int32_t>, MatView, std::span<const int32_t>) override { unused(); }
  void fill_zero(MatView) override { unused(); }
  void accumulate(MatView, MatView) override { unused(); }
  void set_threads(int) override {}
  void upload(void* dst, const void* src, size_t bytes) override {
    const auto* from = static_cast<const char*>(src);
    submit([dst, data = std::vector<char>(from, from + bytes)] { std::memcpy(dst, data.data(), data.size()); });
  }
  void download(void* dst, const void* src, size_t bytes) override {
    synchronize();
    std::memcpy(dst, src, bytes);
  }
  bool concurrent_calls() const override { return false; }
  void synchronize() override {
    for (int g = kLanes - 1; g >= 0; --g) flush(g, submitted_[g]);
  }
  int lanes() const override { return kLanes; }
  int set_lane(int lane) override {
    Backend::set_lane(lane);  // checks the range
    return std::exchange(lane_, lane);
  }
  int reserve_lanes(int) override { return kLanes; }
  // An event: the lane, and how many calls it had queued.
  uint64_t record() override { return (static_cast<uint64_t>(lane_) << 32) | submitted_[lane_]; }
  void wait(uint64_t event) override { flush(static_cast<int>(event >> 32), event & 0xffffffffu); }

  // Runs `fn` now, or queues it when the current lane is late.
  void submit(std::function<void()> fn) {
    ++submitted_[lane_];
    if ((lane_ == 0) == late_main_)
      queues_[lane_].push_back(std::move(fn));
    else
      fn();
  }

 private:
  static void unused() { ADD_FAILURE() << "[lane_sim] runs the CNN kernels only"; }
  // Runs lane g's queued calls up to number `upto` (the queue holds the
  // last queues_[g].size() of the submitted_[g] calls).
  void flush(int g, uint64_t upto) {
    std::vector<std::function<void()>>& q = queues_[g];
    const uint64_t first = submitted_[g] - q.size() + 1;
    const size_t n = upto >= first ? std::min(q.size(), static_cast<size_t>(upto - first + 1)) : 0;
    std::vector<std::function<void()>> now(std::make_move_iterator(q.begin()),
                                           std::make_move_iterator(q.begin() + static_cast<ptrdiff_t>(n)));
    q.erase(q.begin(), q.begin() + static_cast<ptrdiff_t>(n));
    for (auto& fn : now) fn();
  }

  bool late_main_;
  int lane_ = 0;
  uint64_t submitted_[kLanes] = {};
  std::vector<std::function<void()>> queues_[kLanes];
};

// The CPU's oneDNN kernels, each call queued on the LaneSim's current lane.
class LaneKernels final : public CnnKernels {
 public:
  explicit LaneKernels(bool late_main) : sim_(late_main) {}
  Backend& backend() override { return sim_; }
  void move_channels(const float* x, int64_t xc, int64_t x0, float* y, int64_t yc, int64_t y0, int64_t c, int64_t n,
                     int64_t hw, bool add) override {
    sim_.submit([=, this] { cpu_->move_channels(x, xc, x0, y, yc, y0, c, n, hw, add); });
  }
  void activate(float* y, int64_t count, Act act) override {
    sim_.submit([=, this] { cpu_->activate(y, count, act); });
  }
  void element(const float* x, float* y, int64_t n, int64_t terms, int64_t each, bool mul) override {
    sim_.submit([=, this] { cpu_->element(x, y, n, terms, each, mul); });
  }
  void conv(const ConvSpec& c, const float* x, Nchw in, const float* w, const float* b, float* y) override {
    sim_.submit([=, this] { cpu_->conv(c, x, in, w, b, y); });
  }
  void pool(const PoolSpec& p, const float* x, Nchw in, float* y) override {
    sim_.submit([=, this] { cpu_->pool(p, x, in, y); });
  }

 private:
  LaneSim sim_;
  std::unique_ptr<CnnKernels> cpu_ = make_cpu_cnn_kernels(false);
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
        CnnRunner planned(g, 2, 5, std::make_unique<LaneKernels>(late_main));
        EXPECT_EQ(planned.impl(), Impl::custom);
        planned.run(g.blocks[0].enter);
        size_t concurrent = 0;
        for (const ios::BlockPart& part : ios::block_parts(g.blocks[0])) {
          const ios::StagePlan plan = test::side_by_side_plan(planned, g.blocks[0], part, merge);
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
  CnnRunner r(g, 1, 5, std::make_unique<LaneKernels>(false));
  r.run_all();
  const ios::BlockPart part = ios::block_parts(g.blocks[0])[0];
  ProfilingCost cost(r, g.blocks[0], part, 1, 1);
  EXPECT_GT(cost.latency(part.dag, {ios::Stage::Kind::concurrent, {0b001, 0b010}}), 0.0);
  EXPECT_CONTAINS(test::error_of([&] { CnnRunner(g, 1, 5, Impl::custom); }), "Impl::custom needs the constructor");
  EXPECT_CONTAINS(test::error_of([&] { CnnRunner(g, 1, 5, std::unique_ptr<CnnKernels>()); }), "no kernels given");
}

}  // namespace
}  // namespace sylva::cnn
