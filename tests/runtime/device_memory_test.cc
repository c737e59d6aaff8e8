// The runtime on a device with memory of its own, checked without a GPU on
// the sim device (CPU kernels on memory the host cannot touch): arenas,
// values and parameter copies live in the backend's memory, inputs go up
// and results come down only through upload()/download(), and training
// there gives the CPU's numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "support/test_device.h"
#include "support/test_util.h"
#include "sylva/core/log.h"
#include "sylva/frontend/program.h"
#include "sylva/frontend/vertex_function.h"
#include "sylva/runtime/executor.h"
#include "sylva/train/optimizer.h"
#include "sylva/train/trainer.h"

namespace sylva {
namespace {

constexpr int32_t kVocab = 23, kClasses = 4;

// A tree RNN over embedded words: lookup pull (row-sparse table
// gradients), gather_reduce, dropout, cross-entropy and a fixed-size sum.
struct Net {
  ParameterSet ps{DType::f64, 3};
  Program p{DType::f64};
  Symbol hs, loss;
  explicit Net(int32_t vocab = kVocab) {
    ps.add("E", {vocab, 6}, Init::uniform(-1, 1));
    ps.add("W", {6, 5}, Init::glorot());
    ps.add("U", {5, 5}, Init::glorot());
    ps.add("Wo", {5, kClasses}, Init::glorot());
    VertexFunction f("cell", 5, DType::f64);
    Symbol h = dropout(tanh(matmul(f.pull(6), f.param(ps["W"])) + matmul(f.gather_reduce(), f.param(ps["U"]))), 0.2);
    f.scatter(h);
    f.push(h);
    hs = p.apply(f, lookup(p.param(ps["E"]), p.input_ids("x")));
    loss = softmax_cross_entropy(matmul(hs, p.param(ps["Wo"])), p.input_ids("labels")) + scale(sum(hs * hs), 0.01);
  }
};

std::vector<GraphBatch> batches(std::vector<std::vector<InputGraph>>& keep, int32_t vocab = kVocab) {
  std::mt19937_64 rng(77);
  std::vector<GraphBatch> out;
  for (int b = 0; b < 4; ++b) {
    keep.emplace_back();
    for (int s = 0; s < 3 + b; ++s) {
      keep.back().push_back(test::random_tree(rng, 2 + static_cast<int32_t>(rng() % 12), 3, true, "t"));
      test::attach_random_ids(rng, keep.back().back(), vocab, kClasses);
    }
  }
  for (auto& graphs : keep) out.push_back(GraphBatch::of(graphs));
  return out;
}

// Losses of `steps` SGD steps over `bs` (gradients accumulated over two
// backward calls, so a flush must add, not overwrite).
std::vector<double> train(Net& net, const std::vector<GraphBatch>& bs, ExecutorOptions o) {
  Executor ex(net.p, net.ps, o);
  std::vector<double> losses;
  for (const GraphBatch& b : bs) {
    ex.forward(b, Mode::train);
    losses.push_back(ex.scalar(net.loss));
    net.ps.zero_grad();
    ex.backward(net.loss);
    ex.backward(net.loss, 0.5);
    for (Parameter* prm : net.ps.all())
      for (int64_t i = 0; i < prm->value.numel(); ++i) prm->value.set(i, prm->value.at(i) - 0.1 * prm->grad.at(i));
  }
  return losses;
}

TEST(SimDevice, TheHostCannotTouchItsMemory) {
  Buffer b(test::sim_device().memory());
  b.reserve(64);
  ASSERT_TRUE(test::is_sim_pointer(b.data()));
  EXPECT_DEATH(static_cast<volatile char*>(b.data())[0] = 1, "");
  const char bytes[4] = {1, 2, 3, 4};
  char back[4] = {};
  test::sim_device().upload(b.data(), bytes, 4);
  test::sim_device().download(back, b.data(), 4);
  EXPECT_EQ(std::vector<char>(back, back + 4), std::vector<char>(bytes, bytes + 4));
  EXPECT_CONTAINS(test::error_of([&] { test::sim_device().fill_zero({back, 1, 4, DType::i32}); }),
                  "a host pointer was passed where device memory belongs");
}

// The sim's lanes catch a read that does not wait for the lane that wrote.
TEST(SimDevice, AMissingWaitReadsStaleValues) {
  Backend& sim = test::sim_device(1);  // lane 1 runs late
  Buffer a(sim.memory()), b(sim.memory());
  a.reserve(4 * sizeof(float));
  b.reserve(4 * sizeof(float));
  const MatView va{a.data(), 4, 1, DType::f32}, vb{b.data(), 4, 1, DType::f32};
  const float ones[4] = {1, 1, 1, 1};
  for (bool wait : {false, true}) {
    sim.fill_zero(va);
    sim.fill_zero(vb);
    sim.set_lane(1);
    sim.upload(a.data(), ones, sizeof ones);
    const uint64_t written = sim.record();
    sim.set_lane(0);
    if (wait) sim.wait(written);
    sim.copy_rows(va, {}, vb, {});
    float got[4] = {};
    sim.download(got, b.data(), sizeof got);
    EXPECT_EQ(got[0], wait ? 1.0f : 0.0f) << (wait ? "with" : "without") << " the wait";
  }
}

TEST(SimDevice, TrainingMatchesTheCpu) {
  std::vector<std::vector<InputGraph>> keep;
  const std::vector<GraphBatch> bs = batches(keep);
  for (bool optimised : {false, true}) {
    ExecutorOptions o{.seed = 4};
    if (!optimised)
      o = o.without({Optimisation::skip_zero_work, Optimisation::lazy_param_grads, Optimisation::eager_batching,
                     Optimisation::fusion, Optimisation::streaming, Optimisation::ios});
    Net cpu;
    const std::vector<double> want = train(cpu, bs, o);
    for (int late : {1, 0}) {  // the side lane runs late, then the main one
      Net sim;
      ExecutorOptions on_sim = o;
      on_sim.backend = &test::sim_device(late);
      const std::vector<double> got = train(sim, bs, on_sim);
      const std::string what = std::string(optimised ? "optimised" : "plain") + ", lane " + std::to_string(late) +
                               " late";
      for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(got[k], want[k], 1e-12 * std::abs(want[k])) << what;
      for (const Parameter* prm : cpu.ps.all()) {
        EXPECT_LE(test::relative_error(sim.ps[prm->name].value, prm->value), 1e-12) << prm->name << ", " << what;
        EXPECT_LE(test::relative_error(sim.ps[prm->name].grad, prm->grad), 1e-12) << prm->name << ", " << what;
      }
    }
  }
}

// A backend that cannot build a fused kernel runs the group's ops one by
// one. The members that a working kernel would keep to itself then need
// rows of their own, which a fused run never reserves; the answers must
// still be the CPU's.
TEST(SimDevice, WithoutFusedKernelsTheGroupsRunOpByOne) {
  std::vector<std::vector<InputGraph>> keep;
  const std::vector<GraphBatch> bs = batches(keep);
  Net cpu;
  const std::vector<double> want = train(cpu, bs, ExecutorOptions{.seed = 4}.without(Optimisation::fusion));
  Net sim;
  ExecutorOptions o{.seed = 4};
  o.backend = &test::sim_device_without_fused_kernels();
  size_t probe_groups = 0, hidden = 0;
  {
    Executor probe(sim.p, sim.ps, o);
    const plan::VertexPlan& vp = probe.vertex_plan(sim.hs);
    for (const plan::GraphPlan* gp : {&vp.forward, &vp.backward})
      for (const plan::FusedGroup& g : gp->fused) {
        ++probe_groups;
        hidden += g.members.size() - g.outputs.size();
      }
  }
  ASSERT_GT(hidden, 0u) << "the net has no fused member kept inside its group; the test checks nothing";
  std::vector<std::string> warnings;  // each group says once that it runs op by op; nothing else
  set_log_handler([&](LogLevel, std::string_view msg) { warnings.emplace_back(msg); });
  const std::vector<double> got = train(sim, bs, o);
  set_log_handler(nullptr);
  EXPECT_EQ(warnings.size(), probe_groups);
  for (const std::string& w : warnings) EXPECT_NE(w.find("no fused kernel"), std::string::npos) << w;
  for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(got[k], want[k], 1e-12 * std::abs(want[k])) << "step " << k;
  for (const Parameter* prm : cpu.ps.all()) {
    EXPECT_LE(test::relative_error(sim.ps[prm->name].value, prm->value), 1e-12) << prm->name;
    EXPECT_LE(test::relative_error(sim.ps[prm->name].grad, prm->grad), 1e-12) << prm->name;
  }
}

TEST(SimDevice, ValuesLiveOnTheDeviceAndStopAllocating) {
  std::vector<std::vector<InputGraph>> keep;
  const std::vector<GraphBatch> bs = batches(keep);
  Net net;
  Executor ex(net.p, net.ps, {.backend = &test::sim_device()});
  auto step = [&](const GraphBatch& b) {
    ex.forward(b, Mode::train);
    net.ps.zero_grad(&ex.sparse_grads());
    ex.backward(net.loss);
  };
  for (const GraphBatch& b : bs) step(b);  // warm-up: every size once
  const size_t after_warmup = ex.allocations();
  EXPECT_GT(after_warmup, 0u);
  for (const GraphBatch& b : bs) step(b);
  EXPECT_EQ(ex.allocations(), after_warmup) << "device buffers must be reused across minibatches";
  // Results come back to the host; the embedding table's gradient only has the looked-up rows.
  const Tensor h = ex.value(net.hs);
  EXPECT_EQ(h.shape(), (Shape{bs.back().num_vertices(), 5}));
  EXPECT_FALSE(test::is_sim_pointer(h.raw()));
  ASSERT_EQ(ex.sparse_grads().count("E"), 1u);
  const std::vector<int32_t>& rows = ex.sparse_grads().at("E");
  for (int32_t r = 0; r < kVocab; ++r) {
    double norm = 0;
    for (int64_t c = 0; c < 6; ++c) norm += std::abs(net.ps["E"].grad.at(r * 6 + c));
    if (!std::binary_search(rows.begin(), rows.end(), r)) {
      EXPECT_EQ(norm, 0.0) << "row " << r << " not looked up";
    }
  }
}

// With the optimiser on the host: a Trainer whose optimiser updates only
// the looked-up rows (Adagrad, plain SGD) tells the executor so, and the
// next forward uploads only those rows of the embedding table; momentum
// SGD moves every row, so all of it goes up. Either way training on the sim
// gives the CPU's parameters.
TEST(SimDevice, TheTrainerUploadsOnlyTheRowsItsOptimiserChanged) {
  constexpr int32_t kBigVocab = 2000;
  std::vector<std::vector<InputGraph>> keep;
  const std::vector<GraphBatch> bs = batches(keep, kBigVocab);
  for (int which = 0; which < 3; ++which) {
    const auto optimiser = [&]() -> std::unique_ptr<Optimizer> {
      if (which == 0) return std::make_unique<Adagrad>(AdagradOptions{.lr = 0.1});
      if (which == 1) return std::make_unique<Sgd>(SgdOptions{.lr = 0.1});
      return std::make_unique<Sgd>(SgdOptions{.lr = 0.1, .momentum = 0.9});
    };
    Net cpu(kBigVocab), sim(kBigVocab);
    Trainer on_cpu(cpu.p, cpu.ps, cpu.loss, optimiser(), {.executor = {.seed = 2}});
    Trainer on_sim(sim.p, sim.ps, sim.loss, optimiser(),
                   {.executor = {.backend = &test::sim_device(), .seed = 2}, .optimizer_on_device = false});
    EXPECT_FALSE(on_sim.optimizer_on_device());
    const auto table_bytes = static_cast<uint64_t>(sim.ps["E"].value.nbytes());
    for (size_t k = 0; k < 4; ++k) {  // one batch again and again: a row left stale would be read
      on_cpu.step(bs[0]);
      const uint64_t before = test::sim_uploaded_bytes();
      on_sim.step(bs[0]);
      const uint64_t uploaded = test::sim_uploaded_bytes() - before;
      if (k == 0) continue;  // the first forward uploads everything
      if (which < 2) {
        EXPECT_LT(uploaded, table_bytes / 4) << "step " << k << ", optimiser " << which << ": only changed rows";
      } else {
        EXPECT_GT(uploaded, table_bytes) << "step " << k << ": momentum moves every row";
      }
    }
    for (const Parameter* prm : cpu.ps.all())
      EXPECT_LE(test::relative_error(sim.ps[prm->name].value, prm->value), 1e-12) << prm->name << ", " << which;
  }
}

std::unique_ptr<Optimizer> make_optimiser(int which) {
  switch (which) {
    case 0: return std::make_unique<Sgd>(SgdOptions{.lr = 0.1});
    case 1: return std::make_unique<Sgd>(SgdOptions{.lr = 0.1, .momentum = 0.9});
    case 2: return std::make_unique<Adagrad>(AdagradOptions{.lr = 0.1, .initial_accumulator = 0.1});
    default: return std::make_unique<Adam>(AdamOptions{.lr = 0.01});
  }
}

// With the optimiser on the device, every optimiser, with weight decay
// (on W only) and clipping (which bites), gives the CPU trainer's losses,
// gradient norms and parameters; after the first step nothing but the
// batch's ids and seed goes up (no parameter values).
TEST(SimDevice, TheOptimiserOnTheDeviceGivesTheCpusParameters) {
  constexpr int32_t kBigVocab = 500;
  std::vector<std::vector<InputGraph>> keep;
  const std::vector<GraphBatch> bs = batches(keep, kBigVocab);
  for (int which = 0; which < 4; ++which) {
    Net cpu(kBigVocab), sim(kBigVocab);
    for (Net* n : {&cpu, &sim}) {
      for (Parameter* prm : n->ps.all()) prm->decay = prm->name == "W";
    }
    const TrainerOptions o{.executor = {.seed = 2}, .clip_norm = 0.5, .weight_decay = 0.01};
    TrainerOptions on_sim_options = o;
    on_sim_options.executor.backend = &test::sim_device();
    Trainer on_cpu(cpu.p, cpu.ps, cpu.loss, make_optimiser(which), o);
    Trainer on_sim(sim.p, sim.ps, sim.loss, make_optimiser(which), on_sim_options);
    ASSERT_TRUE(on_sim.optimizer_on_device());
    const auto table_bytes = static_cast<uint64_t>(sim.ps["E"].value.nbytes());
    bool clipped = false;
    for (size_t k = 0; k < 8; ++k) {
      const GraphBatch& b = bs[k % bs.size()];
      const StepResult want = on_cpu.step(b);
      const uint64_t before = test::sim_uploaded_bytes();
      const StepResult got = on_sim.step(b);
      const uint64_t uploaded = test::sim_uploaded_bytes() - before;
      EXPECT_NEAR(got.loss, want.loss, 1e-12 * std::abs(want.loss)) << "optimiser " << which << " step " << k;
      EXPECT_NEAR(got.grad_norm, want.grad_norm, 1e-12 * want.grad_norm) << "optimiser " << which << " step " << k;
      clipped = clipped || want.grad_norm > 0.5;
      if (k > 0) {
        EXPECT_LT(uploaded, table_bytes / 4) << "optimiser " << which << " step " << k;
      }
    }
    EXPECT_TRUE(clipped) << "the clipping threshold never bit";
    for (const Parameter* prm : cpu.ps.all())
      EXPECT_LE(test::relative_error(sim.ps[prm->name].value, prm->value), 1e-12) << prm->name << ", " << which;
  }
}

// A training step with the optimiser on the device waits for the device
// once: the loss comes back with the gradients' sums of squares in one
// download (sync_parameters off, as the examples train), whatever the
// optimiser, with clipping on. The losses are still the CPU trainer's.
TEST(SimDevice, ATrainingStepOnTheDeviceWaitsForTheDeviceOnce) {
  std::vector<std::vector<InputGraph>> keep;
  const std::vector<GraphBatch> bs = batches(keep);
  for (int which = 0; which < 4; ++which) {
    Net cpu, sim;
    Trainer on_cpu(cpu.p, cpu.ps, cpu.loss, make_optimiser(which), {.executor = {.seed = 2}, .clip_norm = 0.5});
    Trainer on_sim(sim.p, sim.ps, sim.loss, make_optimiser(which),
                   {.executor = {.backend = &test::sim_device(), .seed = 2}, .clip_norm = 0.5,
                    .sync_parameters = false});
    ASSERT_TRUE(on_sim.optimizer_on_device());
    for (size_t k = 0; k < 6; ++k) {
      const GraphBatch& b = bs[k % bs.size()];
      const double want = on_cpu.step(b).loss;
      const uint64_t before = test::sim_host_waits();
      const double got = on_sim.step(b).loss;
      EXPECT_EQ(test::sim_host_waits() - before, 1u) << "optimiser " << which << " step " << k;
      EXPECT_NEAR(got, want, 1e-12 * std::abs(want)) << "optimiser " << which << " step " << k;
    }
  }
}

// A non-finite loss on the device is caught in that one download, before
// the update: no parameter moves, the step does not count, and the next
// step (the parameter repaired on the host) starts from zero gradients, as
// a fresh CPU trainer's first step does.
TEST(SimDevice, ANonFiniteLossOnTheDeviceStopsTheStepBeforeTheUpdate) {
  std::vector<std::vector<InputGraph>> keep;
  const std::vector<GraphBatch> bs = batches(keep);
  Net cpu, sim;
  const Tensor w = sim.ps["Wo"].value.clone();
  sim.ps["Wo"].value.set(0, std::numeric_limits<double>::quiet_NaN());
  Trainer on_sim(sim.p, sim.ps, sim.loss, make_optimiser(3),
                 {.executor = {.backend = &test::sim_device(), .seed = 2}, .sync_parameters = false});
  ASSERT_TRUE(on_sim.optimizer_on_device());
  std::string msg;
  try {
    on_sim.step(bs[0]);
  } catch (const Error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("[trainer] the loss is nan at step 0; no parameter was updated"), std::string::npos) << msg;
  EXPECT_EQ(on_sim.steps(), 0);
  on_sim.sync_parameters();
  for (const Parameter* prm : cpu.ps.all()) {
    if (prm->name == "Wo") continue;
    EXPECT_EQ(test::relative_error(sim.ps[prm->name].value, prm->value), 0.0) << prm->name << " moved";
  }
  sim.ps["Wo"].value.copy_from(w);
  on_sim.parameters_changed_on_host();
  Trainer on_cpu(cpu.p, cpu.ps, cpu.loss, make_optimiser(3), {.executor = {.seed = 2}});
  const StepResult want = on_cpu.step(bs[0]), got = on_sim.step(bs[0]);
  EXPECT_NEAR(got.loss, want.loss, 1e-12 * std::abs(want.loss));
  EXPECT_NEAR(got.grad_norm, want.grad_norm, 1e-12 * want.grad_norm) << "gradients left from the failed step";
  on_sim.sync_parameters();
  for (const Parameter* prm : cpu.ps.all())
    EXPECT_LE(test::relative_error(sim.ps[prm->name].value, prm->value), 1e-12) << prm->name;
}

// Without syncing after each step the ParameterSet keeps its old values
// until sync_parameters(); values set on the host reach the device after
// parameters_changed_on_host().
TEST(SimDevice, ParametersOnTheDeviceComeBackWhenAsked) {
  std::vector<std::vector<InputGraph>> keep;
  const std::vector<GraphBatch> bs = batches(keep);
  Net net;
  Trainer t(net.p, net.ps, net.loss, Sgd{{.lr = 0.1}},
            {.executor = {.backend = &test::sim_device(), .seed = 2}, .sync_parameters = false});
  const Tensor before = net.ps["W"].value.clone();
  t.step(bs[0]);
  EXPECT_EQ(test::relative_error(net.ps["W"].value, before), 0.0) << "not synced yet";
  t.sync_parameters();
  EXPECT_GT(test::relative_error(net.ps["W"].value, before), 1e-6) << "the step moved W";
  // Zero every parameter on the host: without the call the device keeps its values.
  const double loss = t.evaluate(bs[1]);
  for (Parameter* p : net.ps.all()) p->value.fill_zero();
  EXPECT_EQ(t.evaluate(bs[1]), loss);
  t.parameters_changed_on_host();
  EXPECT_NE(t.evaluate(bs[1]), loss);
}

// A non-finite gradient on the device is named as on the host (parameter
// and element) and nothing changes; an optimiser's state stays where its
// first step ran.
TEST(SimDevice, ANonFiniteGradientOnTheDeviceIsNamedAndChangesNothing) {
  ParameterSet ps(DType::f64, 1);
  ps.add("A", {2, 3}, Init::uniform(-1, 1));
  ps.add("B", {4, 2}, Init::uniform(-1, 1));
  const Tensor a0 = ps["A"].value.clone(), b0 = ps["B"].value.clone();
  Backend& sim = test::sim_device();
  ParamStore store(ps, sim);
  store.set_update_side(Side::device);
  std::vector<double> ga(6, 1.0), gb(8, 0.5);
  gb[5] = std::numeric_limits<double>::quiet_NaN();
  sim.upload(store.grad("A").data, ga.data(), ga.size() * sizeof(double));
  sim.upload(store.grad("B").data, gb.data(), gb.size() * sizeof(double));
  Buffer sums(sim.memory());
  sums.reserve(2 * sizeof(double));
  sim.sum_squares(store.grad("A"), store.value("A"), 0.0, {}, static_cast<double*>(sums.data()));
  sim.sum_squares(store.grad("B"), store.value("B"), 0.0, {}, static_cast<double*>(sums.data()) + 1);
  std::vector<double> host(2);
  sim.download(host.data(), sums.data(), 2 * sizeof(double));
  EXPECT_DOUBLE_EQ(host[0], 6.0);
  EXPECT_TRUE(std::isnan(host[1]));
  Adam adam;
  EXPECT_CONTAINS(test::error_of([&] { adam.step(store, nullptr, 0.0, 1.0, host); }),
                  "[adam] parameter 'B' has a non-finite gradient (nan at element 5 of [4, 2]); no parameter was "
                  "updated");
  store.make_current(Side::host);
  EXPECT_EQ(test::relative_error(ps["A"].value, a0), 0.0);
  EXPECT_EQ(test::relative_error(ps["B"].value, b0), 0.0);
  host[1] = 2.0;  // B's gradient now finite: the step runs
  gb[5] = 0.5;
  sim.upload(store.grad("B").data, gb.data(), gb.size() * sizeof(double));
  adam.step(store, nullptr, 0.0, 1.0, host);
  store.make_current(Side::host);
  EXPECT_GT(test::relative_error(ps["A"].value, a0), 1e-6);
  EXPECT_CONTAINS(test::error_of([&] { adam.step(ps); }), "state is on sim, but this step runs on the host");
  adam.reset();
  adam.step(ps);
}

// The store owns where each parameter's current value is. With updates on
// the device, a write on one side makes that side's copy the only current
// one; the one transfer point moves what the other side lacks (only the
// rows a writer named) and then both agree. With updates on the host, the
// host may change values without saying, so every value goes up whole.
TEST(SimDevice, TheStoreSaysWhereEachValueIsCurrent) {
  using Current = ParamStore::Current;
  ParameterSet ps(DType::f64, 1);
  ps.add("E", {4, 3}, Init::uniform(-1, 1));
  Backend& sim = test::sim_device();
  ParamStore store(ps, sim);
  const auto on_device = [&] {
    Tensor t(ps["E"].value.shape(), DType::f64);
    sim.download(t.raw(), store.value("E").data, t.nbytes());
    return t;
  };
  Tensor& host = ps["E"].value;
  EXPECT_EQ(store.current("E"), Current::both);
  store.set_update_side(Side::device);
  const double row0 = on_device().at(0);  // first use: uploaded
  host.set(0, 5.0);                        // row 0, not said
  host.set(3, 7.0);                        // row 1, said
  const RowSparsity row1{{"E", {1}}};
  store.wrote(Side::host, &row1);
  EXPECT_EQ(store.current("E"), Current::host);
  store.make_current(Side::device);
  EXPECT_EQ(store.current("E"), Current::both);
  EXPECT_EQ(on_device().at(3), 7.0) << "the row named moved";
  EXPECT_EQ(on_device().at(0), row0) << "the row not named did not";

  const std::vector<double> zeros(12, 0.0);
  sim.upload(store.value("E").data, zeros.data(), zeros.size() * sizeof(double));
  store.wrote(Side::device);
  EXPECT_EQ(store.current("E"), Current::device);
  EXPECT_EQ(host.at(3), 7.0) << "the host is behind until asked";
  store.make_current(Side::host);
  EXPECT_EQ(store.current("E"), Current::both);
  EXPECT_EQ(host.at(3), 0.0);
  store.make_current(Side::host);  // nothing to move
  EXPECT_EQ(store.current("E"), Current::both);

  store.wrote(Side::device);
  EXPECT_CONTAINS(test::error_of([&] { store.wrote(Side::host, &row1); }),
                  "[param_store] rows of 'E' written on the host while only the device holds its current value");
  store.set_update_side(Side::host);  // the host updates from here: it gets the device's values first
  EXPECT_EQ(store.current("E"), Current::both);
  host.set(0, 9.0);  // not said
  store.make_current(Side::device);
  EXPECT_EQ(on_device().at(0), 9.0) << "updates on the host: every value goes up";

  ParamStore on_cpu(ps, backend_for(Device::cpu()));
  EXPECT_CONTAINS(test::error_of([&] { on_cpu.set_update_side(Side::device); }),
                  "[param_store] updates on the device need a device");
}

TEST(SimDevice, BadIdsAreNamedBeforeAnyKernelRuns) {
  Net net;
  std::vector<InputGraph> g{InputGraph::chain(3, "chain")};
  g[0].set_ids("x", {1, kVocab + 5, 2});
  g[0].set_ids("labels", {0, 1, 2});
  Executor ex(net.p, net.ps, {.backend = &test::sim_device()});
  EXPECT_CONTAINS(test::error_of([&] { ex.forward(GraphBatch::of(g), Mode::train); }), "out of range");
}

}  // namespace
}  // namespace sylva
