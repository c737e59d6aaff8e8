// Data-parallel training against the one-process run: every rank also
// trains the same model alone (no communicator) on the same batches and
// compares. Default mode: within 1e-6 relative (float64); deterministic
// mode: the same bits, which, run with 2 and 4 ranks, is the bitwise
// equality of world sizes 1, 2 and 4. The batches include one of a single
// sample and one of three (fewer samples than ranks: idle ranks).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models.h"
#include "mpi_main.h"
#include "support/test_device.h"
#include "support/test_util.h"

namespace sylva::mpi_test {
namespace {

const std::vector<int> kBatchSizes = {13, 1, 3, 9, 7};

struct TrainingRun {
  std::vector<double> losses;
  std::vector<Tensor> params;  // copies, in ps.all() order
  std::vector<StepResult> steps;
};

// `device`: a backend to train on (the optimiser then runs there).
TrainingRun train(const std::string& model, dist::Communicator* comm, DataParallelOptions parallel,
                  Backend* device = nullptr) {
  ModelCase m = make_model(model, 11);
  TrainerOptions o = trainer_options(model);
  o.communicator = comm;
  o.parallel = parallel;
  o.executor.backend = device;
  Trainer trainer(m.program, *m.ps, m.loss, make_optimizer(model), o);
  EXPECT_EQ(trainer.optimizer_on_device(), device != nullptr);
  TrainingRun run;
  size_t next = 0;
  for (int size : kBatchSizes) {
    std::vector<const InputGraph*> samples;
    for (int i = 0; i < size; ++i) samples.push_back(&m.data[next++ % m.data.size()]);
    const StepResult r = trainer.step(GraphBatch(samples));
    run.losses.push_back(r.loss);
    run.steps.push_back(r);
  }
  for (const Parameter* p : m.ps->all()) run.params.push_back(p->value.clone());
  return run;
}

class DataParallel : public testing::TestWithParam<std::string> {};

// The ranks' run is the one-process run to rounding, and the work was
// shared: the ranks' shares add up to each batch, and no rank ran a whole
// batch of more samples than ranks.
void expect_shared_one_process_run(const TrainingRun& ranks, const TrainingRun& alone) {
  for (size_t s = 0; s < alone.losses.size(); ++s)
    EXPECT_NEAR(ranks.losses[s], alone.losses[s], 1e-9 * std::abs(alone.losses[s])) << "step " << s;
  ASSERT_EQ(ranks.params.size(), alone.params.size());
  for (size_t k = 0; k < alone.params.size(); ++k)
    EXPECT_LE(test::relative_error(ranks.params[k], alone.params[k]), 1e-6) << "parameter " << k;
  for (size_t s = 0; s < ranks.steps.size(); ++s) {
    const StepResult& r = ranks.steps[s];
    int64_t share[2] = {r.local_samples, r.local_vertices};
    world().allreduce_sum(std::span<int64_t>(share, 2), "shares");
    EXPECT_EQ(share[0], r.samples) << "step " << s;
    EXPECT_EQ(share[1], r.vertices) << "step " << s;
    if (r.samples >= world().size()) {
      EXPECT_LT(r.local_samples, r.samples) << "step " << s;
    }
    EXPECT_GE(r.imbalance, 1.0);
    EXPECT_GT(r.comm_bytes, 0);
  }
}

TEST_P(DataParallel, DefaultModeMatchesOneProcessToRounding) {
  const TrainingRun alone = train(GetParam(), nullptr, {});
  const TrainingRun ranks = train(GetParam(), &world(), {.bucket_bytes = 256});  // several buckets
  expect_shared_one_process_run(ranks, alone);
}

// With the optimiser on a device (Sylva's simulated one: memory the host
// cannot touch), the gradients, the packed embedding rows and the loss are
// summed where they live (the host-staged engine here; NCCL on a GPU),
// and every rank runs the device update: the one-process device run, to rounding.
TEST_P(DataParallel, OnTheDeviceMatchesOneProcessToRounding) {
  Backend* sim = &test::sim_device();
  const TrainingRun alone = train(GetParam(), nullptr, {}, sim);
  const TrainingRun ranks = train(GetParam(), &world(), {.device_sums = DataParallelOptions::DeviceSums::host}, sim);
  expect_shared_one_process_run(ranks, alone);
}

// Overlap changes when the buckets move, not what they hold: the same bits.
TEST_P(DataParallel, OverlapChangesNoBits) {
  const TrainingRun overlapped = train(GetParam(), &world(), {.bucket_bytes = 256, .overlap = true});
  const TrainingRun after = train(GetParam(), &world(), {.bucket_bytes = 256, .overlap = false});
  EXPECT_EQ(std::memcmp(overlapped.losses.data(), after.losses.data(), after.losses.size() * sizeof(double)), 0);
  for (size_t k = 0; k < after.params.size(); ++k)
    EXPECT_EQ(std::memcmp(overlapped.params[k].raw(), after.params[k].raw(), after.params[k].nbytes()), 0)
        << "parameter " << k;
}

TEST_P(DataParallel, DeterministicModeGivesTheOneProcessBits) {
  const TrainingRun alone = train(GetParam(), nullptr, {.deterministic = true});
  const TrainingRun ranks = train(GetParam(), &world(), {.deterministic = true});
  EXPECT_EQ(std::memcmp(ranks.losses.data(), alone.losses.data(), alone.losses.size() * sizeof(double)), 0);
  ASSERT_EQ(ranks.params.size(), alone.params.size());
  for (size_t k = 0; k < alone.params.size(); ++k) {
    ASSERT_EQ(ranks.params[k].nbytes(), alone.params[k].nbytes());
    EXPECT_EQ(std::memcmp(ranks.params[k].raw(), alone.params[k].raw(), alone.params[k].nbytes()), 0)
        << "parameter " << k << " differs from the one-process deterministic run (relative "
        << test::relative_error(ranks.params[k], alone.params[k]) << ")";
  }
  // And it is a real training run: deterministic mode is close to the default one.
  const TrainingRun plain = train(GetParam(), nullptr, {});
  for (size_t k = 0; k < plain.params.size(); ++k)
    EXPECT_LE(test::relative_error(plain.params[k], alone.params[k]), 1e-6) << "parameter " << k;
}

INSTANTIATE_TEST_SUITE_P(Models, DataParallel, testing::Values(std::string("tree_lstm"), std::string("var_lstm"), std::string("dag")),
                         [](const auto& p) { return p.param; });

// A trainer on its own model, stepped through kBatchSizes[from, to).
struct Session {
  ModelCase m;
  std::unique_ptr<Trainer> trainer;
  Session(const std::string& model, dist::Communicator* comm, DataParallelOptions parallel, uint64_t init_seed)
      : m(make_model(model, 11, 40, init_seed)) {
    TrainerOptions o = trainer_options(model);
    o.communicator = comm;
    o.parallel = parallel;
    trainer = std::make_unique<Trainer>(m.program, *m.ps, m.loss, make_optimizer(model), o);
  }
  void steps(size_t from, size_t to) {
    size_t next = 0;
    for (size_t s = 0; s < from; ++s) next += static_cast<size_t>(kBatchSizes[s]);
    for (size_t s = from; s < to; ++s) {
      std::vector<const InputGraph*> samples;
      for (int i = 0; i < kBatchSizes[s]; ++i) samples.push_back(&m.data[next++ % m.data.size()]);
      trainer->step(GraphBatch(samples));
    }
  }
  bool same_bits(const Session& other) const {
    const auto a = m.ps->all(), b = other.m.ps->all();
    for (size_t k = 0; k < a.size(); ++k)
      if (std::memcmp(a[k]->value.raw(), b[k]->value.raw(), a[k]->value.nbytes()) != 0) return false;
    return true;
  }
};

// A path every rank agrees on (rank 0's choice, broadcast).
std::string shared_path(const std::string& what) {
  std::string path = testing::TempDir() + "sylva_" + what + "_" + std::to_string(::getpid()) + ".safetensors";
  std::vector<std::byte> bytes(256, std::byte{0});
  std::memcpy(bytes.data(), path.data(), std::min<size_t>(path.size(), 255));
  world().broadcast(bytes, 0, "checkpoint path");
  return std::string(reinterpret_cast<const char*>(bytes.data()));
}

// Training N steps equals training k, saving, resuming at another world
// size and training N - k: bitwise, in deterministic mode, 1 -> world and
// world -> 1, the resumed runs starting from differently initialised models.
TEST_P(DataParallel, ResumingAtAnotherWorldSizeGivesTheSameBits) {
  const DataParallelOptions det{.deterministic = true};
  const size_t n = kBatchSizes.size(), k = 2;
  Session straight(GetParam(), nullptr, det, 11);
  straight.steps(0, n);

  const std::string path = shared_path("resume_" + GetParam());
  if (world().rank() == 0) {  // the first k steps in one process
    Session alone(GetParam(), nullptr, det, 11);
    alone.steps(0, k);
    alone.trainer->save_state(path, {{"epoch", "1"}});
  }
  world().barrier("saved by one process");
  Session ranks(GetParam(), &world(), det, 99);
  EXPECT_EQ(ranks.trainer->load_state(path), (std::map<std::string, std::string>{{"epoch", "1"}}));
  EXPECT_EQ(ranks.trainer->steps(), static_cast<int64_t>(k));
  ranks.steps(k, n);
  EXPECT_TRUE(ranks.same_bits(straight)) << "1 process -> " << world().size() << " ranks";

  Session first(GetParam(), &world(), det, 11);  // the first k steps on every rank, saved by rank 0
  first.steps(0, k);
  first.trainer->save_state(path, {{"epoch", "2"}});
  Session alone(GetParam(), nullptr, det, 98);
  EXPECT_EQ(alone.trainer->load_state(path), (std::map<std::string, std::string>{{"epoch", "2"}}));
  alone.steps(k, n);
  EXPECT_TRUE(alone.same_bits(straight)) << world().size() << " ranks -> 1 process";
  world().barrier("read by every rank");
  if (world().rank() == 0) std::remove(path.c_str());
}

TEST(DataParallelOptions, DeterministicModeNeedsAtLeastAsManyGroupsAsRanks) {
  ModelCase m = make_model("dag", 1);
  TrainerOptions o = trainer_options("dag");
  o.communicator = &world();
  o.parallel = {.deterministic = true, .groups = 1};
  EXPECT_CONTAINS(test::error_of([&] { Trainer t(m.program, *m.ps, m.loss, make_optimizer("dag"), o); }),
                  "set groups >= the world size");
}

}  // namespace
}  // namespace sylva::mpi_test
