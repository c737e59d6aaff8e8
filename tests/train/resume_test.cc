// Trainer::save_state / load_state: training N steps equals training k,
// saving, resuming in a fresh trainer (differently initialised) and training
// N - k, bit for bit, for every optimiser, with the optimiser on the host
// and on a device (Sylva's simulated one); and what a bad checkpoint says.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "support/test_device.h"
#include "support/test_util.h"
#include "sylva/sylva.h"

namespace sylva {
namespace {

using test::error_of;

// A tree network with an embedding table (row-sparse gradients) and
// dropout (masks keyed by the training step).
struct Model {
  ParameterSet ps;
  test::DropoutTreeNet net;
  std::unique_ptr<Trainer> trainer;
  std::vector<InputGraph> data;

  // `device`: a backend for the trainer (the optimiser then runs there).
  Model(const std::string& optimizer, uint64_t init_seed, Backend* device = nullptr)
      : ps(DType::f64, init_seed), net(ps, 7, 0.3) {
    std::unique_ptr<Optimizer> opt;
    if (optimizer == "adam") opt = std::make_unique<Adam>(AdamOptions{.lr = 0.01});
    else if (optimizer == "adagrad") opt = std::make_unique<Adagrad>(AdagradOptions{.lr = 0.1});
    else opt = std::make_unique<Sgd>(SgdOptions{.lr = 0.1, .momentum = 0.9});
    trainer = std::make_unique<Trainer>(net.program, ps, net.loss, std::move(opt),
                                        TrainerOptions{.executor = {.backend = device, .seed = 5}, .weight_decay = 1e-3});
    EXPECT_EQ(trainer->optimizer_on_device(), device != nullptr);
    std::mt19937_64 rng(17);
    for (int s = 0; s < 24; ++s) {
      InputGraph g = random_tree(rng, 8, 2, false, "tree " + std::to_string(s));
      test::attach_random_ids(rng, g, 7, 3);
      data.push_back(std::move(g));
    }
  }
  void steps(int from, int to) {
    for (int s = from; s < to; ++s) {
      std::vector<const InputGraph*> batch;
      for (int i = 0; i < 4; ++i) batch.push_back(&data[static_cast<size_t>((4 * s + i) % 24)]);
      trainer->step(GraphBatch(batch));
    }
  }
};

std::string temp_path(const std::string& name) { return testing::TempDir() + "sylva_resume_" + name + ".safetensors"; }

class Resume : public testing::TestWithParam<std::string> {};

TEST_P(Resume, KStepsSavedAndResumedEqualNStraight) {
  Model straight(GetParam(), 1);
  straight.steps(0, 5);
  const std::string path = temp_path(GetParam());
  Model first(GetParam(), 1);
  first.steps(0, 2);
  first.trainer->save_state(path, {{"epoch", "3"}, {"data.rng", "12345"}});
  Model resumed(GetParam(), 2);  // other initial values: everything must come from the file
  const std::map<std::string, std::string> meta = resumed.trainer->load_state(path);
  EXPECT_EQ(meta, (std::map<std::string, std::string>{{"data.rng", "12345"}, {"epoch", "3"}}));
  EXPECT_EQ(resumed.trainer->steps(), 2);
  EXPECT_EQ(resumed.trainer->optimizer().steps(), 2);
  resumed.steps(2, 5);
  for (const Parameter* p : straight.ps.all())
    EXPECT_EQ(std::memcmp(p->value.raw(), resumed.ps[p->name].value.raw(), p->value.nbytes()), 0)
        << p->name << " differs (relative " << test::relative_error(p->value, resumed.ps[p->name].value) << ")";
  std::remove(path.c_str());
}

// With the optimiser on the device its state is downloaded into the
// checkpoint and uploaded from it: into a fresh trainer, and into one whose
// device state already exists (it stepped before loading). The saving run
// goes on unchanged.
TEST_P(Resume, OnTheDeviceKStepsSavedAndResumedEqualNStraight) {
  Backend* sim = &test::sim_device();
  Model straight(GetParam(), 1, sim);
  straight.steps(0, 5);
  const std::string path = temp_path(GetParam() + "_device");
  Model first(GetParam(), 1, sim);
  first.steps(0, 2);
  first.trainer->save_state(path);
  first.steps(2, 5);
  Model fresh(GetParam(), 2, sim), stepped(GetParam(), 3, sim);
  stepped.steps(0, 3);  // its own device state, which the file must replace
  for (Model* m : {&fresh, &stepped}) {
    m->trainer->load_state(path);
    m->steps(2, 5);
  }
  for (const Parameter* p : straight.ps.all())
    for (const Model* m : {&first, &fresh, &stepped})
      EXPECT_EQ(std::memcmp(p->value.raw(), m->ps[p->name].value.raw(), p->value.nbytes()), 0)
          << p->name << " differs (relative " << test::relative_error(p->value, m->ps[p->name].value) << ")";
  std::remove(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(Optimizers, Resume, testing::Values(std::string("adam"), std::string("adagrad"),
                                                             std::string("momentum")),
                         [](const auto& p) { return p.param; });

TEST(ResumeErrors, SayWhatIsWrongWithTheFile) {
  const std::string path = temp_path("errors");
  Model adam("adam", 1);
  adam.steps(0, 1);
  adam.trainer->save_state(path);
  Model sgd("momentum", 1);
  EXPECT_CONTAINS(error_of([&] { sgd.trainer->load_state(path); }),
                  "tensors do not match this trainer's parameters and optimiser state; missing from file: []; "
                  "unexpected in file: [opt/E/1, opt/W/1, opt/Ws/1]");
  save_checkpoint(adam.ps, path);  // parameters only
  EXPECT_CONTAINS(error_of([&] { adam.trainer->load_state(path); }), "tensors do not match this trainer's");
  EXPECT_CONTAINS(error_of([&] { adam.trainer->load_state(path + ".missing"); }), "cannot open");
  EXPECT_CONTAINS(error_of([&] { adam.trainer->save_state(path, {{"sylva.mine", "x"}}); }),
                  "metadata key 'sylva.mine' starts with \"sylva.\"");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace sylva
