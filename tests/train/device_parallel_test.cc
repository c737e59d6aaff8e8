// Data-parallel training with the optimiser on the device, in one process:
// a Trainer given a communicator of one rank takes the device
// data-parallel step (rows packed and summed on the device, the loss summed
// beside the gradients) and must give the plain device run's bits. Where:
// SYLVA_TEST_DEVICE=cuda (scripts/device_check.sh) on the GPU, summed by
// NCCL; otherwise on Sylva's simulated device (memory the host cannot
// touch), summed through the host. Runs with more ranks are
// tests/dist/mpi/training.cc.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "support/test_device.h"
#include "support/test_util.h"
#include "sylva/sylva.h"

namespace sylva {
namespace {

constexpr int32_t kVocab = 200;  // a batch uses a few of its rows

std::unique_ptr<Optimizer> optimiser(int which) {
  switch (which) {
    case 0: return std::make_unique<Sgd>(SgdOptions{.lr = 0.2, .momentum = 0.9});
    case 1: return std::make_unique<Adagrad>(AdagradOptions{.lr = 0.2});
    default: return std::make_unique<Adam>(AdamOptions{.lr = 0.02});
  }
}

struct TrainingRun {
  std::vector<StepResult> steps;
  std::vector<Tensor> params;
};

using Sums = DataParallelOptions::DeviceSums;

bool on_gpu() { return test::test_device() == "cuda"; }
Backend& device() { return on_gpu() ? backend_for(Device::cuda()) : test::sim_device(); }
Sums engine() { return on_gpu() ? Sums::nccl : Sums::host; }

// Four steps of DropoutTreeNet (without dropout) on the test's device.
TrainingRun train(dist::Communicator* comm, int which, double weight_decay, Sums sums = engine()) {
  ParameterSet ps(DType::f64, 3);
  test::DropoutTreeNet net(ps, kVocab, 0.0);
  ps["W"].decay = true;
  TrainerOptions o{.clip_norm = 0.5, .weight_decay = weight_decay, .communicator = comm};
  o.executor.backend = &device();
  o.parallel.device_sums = sums;
  Trainer trainer(net.program, ps, net.loss, optimiser(which), o);
  EXPECT_TRUE(trainer.optimizer_on_device());
  const std::vector<InputGraph> trees = test::random_id_trees(12, 5, kVocab, 3);
  TrainingRun run;
  for (int step = 0; step < 4; ++step) {
    std::vector<const InputGraph*> batch;
    for (int i = 0; i < 5; ++i) batch.push_back(&trees[static_cast<size_t>((3 * step + i) % 12)]);
    run.steps.push_back(trainer.step(GraphBatch(batch)));
  }
  for (const Parameter* p : ps.all()) run.params.push_back(p->value.clone());
  return run;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

TEST(DeviceDataParallel, OneRankGivesThePlainDeviceRunsBits) {
  for (int which = 0; which < 3; ++which)
    for (double l2 : {0.0, 0.01}) {  // decay makes E's gradient dense: both exchanges
      SCOPED_TRACE(testing::Message() << "optimiser " << which << ", weight decay " << l2);
      const std::unique_ptr<dist::Communicator> self = dist::self_communicator();
      const TrainingRun plain = train(nullptr, which, l2), one = train(self.get(), which, l2);
      for (size_t s = 0; s < plain.steps.size(); ++s) {
        EXPECT_EQ(one.steps[s].loss, plain.steps[s].loss) << "step " << s;
        EXPECT_EQ(one.steps[s].grad_norm, plain.steps[s].grad_norm) << "step " << s;
        EXPECT_EQ(one.steps[s].local_samples, one.steps[s].samples);
        EXPECT_GT(one.steps[s].comm_bytes, 0) << "the gradients went through the device communicator";
        if (l2 == 0.0) {  // E row-sparse: only its used rows moved
          EXPECT_GT(one.steps[s].sparse_bytes, 0);
          EXPECT_LT(one.steps[s].sparse_bytes, one.steps[s].sparse_table_bytes);
        }
      }
      for (size_t k = 0; k < plain.params.size(); ++k) EXPECT_TRUE(same_bits(one.params[k], plain.params[k])) << k;
    }
}

TEST(DeviceDataParallel, TheRunTrainsLikeTheHostOptimiser) {
  // The same model with the optimiser on the host (no device): close, not
  // equal (the device kernels sum in another order).
  ParameterSet ps(DType::f64, 3);
  test::DropoutTreeNet net(ps, kVocab, 0.0);
  ps["W"].decay = true;
  Trainer host(net.program, ps, net.loss, optimiser(2), {.clip_norm = 0.5, .weight_decay = 0.01});
  const std::vector<InputGraph> trees = test::random_id_trees(12, 5, kVocab, 3);
  for (int step = 0; step < 4; ++step) {
    std::vector<const InputGraph*> batch;
    for (int i = 0; i < 5; ++i) batch.push_back(&trees[static_cast<size_t>((3 * step + i) % 12)]);
    host.step(GraphBatch(batch));
  }
  const std::unique_ptr<dist::Communicator> self = dist::self_communicator();
  const TrainingRun device = train(self.get(), 2, 0.01);
  for (size_t k = 0; k < device.params.size(); ++k)
    EXPECT_LT(test::relative_error(device.params[k], ps.all()[k]->value), 1e-10) << ps.all()[k]->name;
}

TEST(DeviceDataParallel, TheNcclEngineNeedsACudaBackendAndSaysSo) {
  if (on_gpu()) GTEST_SKIP() << "a test of the simulated device";
  const std::unique_ptr<dist::Communicator> self = dist::self_communicator();
  const std::string e = test::error_of([&] { dist::nccl_communicator(*self, test::sim_device()); });
  if (dist::nccl_available()) {
    EXPECT_CONTAINS(e, "[nccl] the NCCL engine sums CUDA device memory");
    EXPECT_CONTAINS(e, "host_staged_communicator");
  } else {
    EXPECT_CONTAINS(e, "built without CUDA");
  }
  // Asked for by the trainer on a device that is not CUDA: the same error at the first step.
  const std::string t = test::error_of([&] { train(self.get(), 0, 0.0, DataParallelOptions::DeviceSums::nccl); });
  EXPECT_CONTAINS(t, "[nccl]");
}

TEST(DeviceDataParallel, TheEngineSumsFloatingBuffersOnly) {
  const std::unique_ptr<dist::Communicator> self = dist::self_communicator();
  Backend& d = device();
  const std::unique_ptr<dist::DeviceCommunicator> c =
      on_gpu() ? dist::nccl_communicator(*self, d) : dist::host_staged_communicator(*self, d);
  EXPECT_EQ(c->engine(), on_gpu() ? "nccl" : "host");
  Buffer b(d.memory());
  b.reserve(256);
  const MatView ints{b.data(), 2, 2, DType::i32};
  EXPECT_CONTAINS(test::error_of([&] { c->allreduce_sum({&ints, 1}, "ids"); }),
                  "sums float32 or float64 buffers, got int32");
  EXPECT_FALSE(c->broken()) << "a call refused before any rank moved stays a refusal";
  // One rank: the sums are the values, unchanged.
  const float f[4] = {1.5f, -2.0f, 0.25f, 8.0f};
  const double g[3] = {1e300, -0.5, 3.0};
  d.upload(b.data(), f, sizeof f);
  d.upload(static_cast<char*>(b.data()) + 64, g, sizeof g);
  const MatView views[3] = {{b.data(), 2, 2, DType::f32},
                            {static_cast<char*>(b.data()) + 128, 0, 5, DType::f64},
                            {static_cast<char*>(b.data()) + 64, 3, 1, DType::f64}};
  c->allreduce_sum(views, "mixed");
  float f_back[4] = {};
  double g_back[3] = {};
  d.download(f_back, b.data(), sizeof f_back);
  d.download(g_back, static_cast<char*>(b.data()) + 64, sizeof g_back);
  EXPECT_EQ(std::memcmp(f_back, f, sizeof f), 0);
  EXPECT_EQ(std::memcmp(g_back, g, sizeof g), 0);
  EXPECT_EQ(c->bytes_sent(), 16 + 24);
}

}  // namespace
}  // namespace sylva
