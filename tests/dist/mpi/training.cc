// Data-parallel training against the one-process run: every rank also
// trains the same model alone (no communicator) on the same batches and
// compares. Default mode: within 1e-6 relative (float64); deterministic
// mode: the same bits, which, run with 2 and 4 ranks, is the bitwise
// equality of world sizes 1, 2 and 4. The batches include one of a single
// sample and one of three (fewer samples than ranks: idle ranks).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "models.h"
#include "mpi_main.h"
#include "support/test_util.h"

namespace sylva::mpi_test {
namespace {

const std::vector<int> kBatchSizes = {13, 1, 3, 9, 7};

struct TrainingRun {
  std::vector<double> losses;
  std::vector<Tensor> params;  // copies, in ps.all() order
  std::vector<StepResult> steps;
};

TrainingRun train(const std::string& model, dist::Communicator* comm, DataParallelOptions parallel) {
  ModelCase m = make_model(model, 11);
  TrainerOptions o = trainer_options(model);
  o.communicator = comm;
  o.parallel = parallel;
  Trainer trainer(m.program, *m.ps, m.loss, make_optimizer(model), o);
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

TEST_P(DataParallel, DefaultModeMatchesOneProcessToRounding) {
  const TrainingRun alone = train(GetParam(), nullptr, {});
  const TrainingRun ranks = train(GetParam(), &world(), {.bucket_bytes = 256});  // several buckets
  for (size_t s = 0; s < alone.losses.size(); ++s)
    EXPECT_NEAR(ranks.losses[s], alone.losses[s], 1e-9 * std::abs(alone.losses[s])) << "step " << s;
  ASSERT_EQ(ranks.params.size(), alone.params.size());
  for (size_t k = 0; k < alone.params.size(); ++k)
    EXPECT_LE(test::relative_error(ranks.params[k], alone.params[k]), 1e-6) << "parameter " << k;
  // The work was shared: the ranks' shares add up to each batch, and no
  // rank ran a whole batch of more samples than ranks.
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
