// The dynamic-declaration engine (unbatched and agenda-autobatched) and
// padded batching compute Sylva's loss and gradients, on random trees and
// chains in float64; and the autobatching and copies actually happen.
#include <gtest/gtest.h>

#include <random>

#include "dd_models.h"
#include "dynamic_decl.h"
#include "strategy.h"
#include "support/test_device.h"
#include "support/test_util.h"

namespace sylva::bench {
namespace {

using test::relative_error;

std::vector<InputGraph> samples_for(Workload w, std::mt19937_64& rng, int n, const ModelConfig& cfg) {
  std::vector<InputGraph> out;
  std::uniform_int_distribution<int32_t> word(0, static_cast<int32_t>(cfg.vocab) - 1);
  std::uniform_int_distribution<int32_t> label(-1, static_cast<int32_t>(cfg.classes) - 1);
  std::uniform_int_distribution<int32_t> length(1, 9);
  for (int i = 0; i < n; ++i) {
    InputGraph g;
    const std::string src = "sample " + std::to_string(i);
    if (w == Workload::var_lstm || w == Workload::fixed_lstm) g = InputGraph::chain(length(rng), src);
    else if (i % 2 == 0) g = random_binary_tree(rng, 1 + length(rng), src);
    else g = random_tree(rng, 12, 2, /*allow_holes=*/true, src);  // unary vertices, absent slots
    std::vector<int32_t> words(static_cast<size_t>(g.num_vertices())), labels(words.size());
    for (int32_t v = 0; v < g.num_vertices(); ++v) {
      const bool leaf = g.children(v).empty();
      // Trees: words on leaves only (as SST); chains: every vertex.
      words[static_cast<size_t>(v)] = w == Workload::var_lstm || leaf ? word(rng) : -1;
      labels[static_cast<size_t>(v)] = label(rng);
    }
    g.set_ids("words", std::move(words));
    g.set_ids("labels", std::move(labels));
    out.push_back(std::move(g));
  }
  return out;
}

ModelConfig small_config(Workload w) {
  ModelConfig c{.workload = w, .vocab = 13, .embed = 4, .hidden = 3, .classes = 4, .layers = 2, .dtype = DType::f64};
  if (w == Workload::var_lstm) c.classes = c.vocab;  // labels are next words
  return c;
}

struct Result {
  double loss;
  std::vector<Tensor> grads;
};

// One training step of `name` on `batch`; every gradient copied out.
Result run(const std::string& name, const ModelConfig& cfg, ParameterSet& ps, std::span<const InputGraph> batch) {
  auto s = make_builtin_strategy(name, cfg, ps, {.executor = {.threads = 1}, .measure_movement = true});
  StepStats st = s->step(batch, /*train=*/true);
  Result r{st.loss, {}};
  for (const Parameter* p : ps.all()) r.grads.push_back(p->grad.clone());
  EXPECT_GE(st.build_s, 0.0);
  EXPECT_GT(st.compute_s, 0.0);
  EXPECT_GE(st.movement_s, 0.0) << name;
  return r;
}

void expect_same(const Result& want, const Result& got, const ParameterSet& ps, const std::string& name) {
  EXPECT_NEAR(got.loss, want.loss, 1e-10 * std::abs(want.loss)) << name;
  auto params = ps.all();
  for (size_t i = 0; i < want.grads.size(); ++i)
    EXPECT_LE(relative_error(want.grads[i], got.grads[i]), 1e-10) << name << ": d/d" << params[i]->name;
}

class SameAsSylva : public ::testing::TestWithParam<Workload> {};

TEST_P(SameAsSylva, LossAndGradients) {
  const Workload w = GetParam();
  const ModelConfig cfg = small_config(w);
  ParameterSet ps(DType::f64, /*seed=*/3);
  add_params(ps, cfg);
  std::mt19937_64 rng(7);
  const std::vector<InputGraph> batch = samples_for(w, rng, 6, cfg);
  const Result want = run("sylva-serial", cfg, ps, batch);
  ASSERT_GT(want.loss, 0.0);
  for (const std::string& name : builtin_strategy_names(w)) {
    if (name == "sylva-serial") continue;
    expect_same(want, run(name, cfg, ps, batch), ps, name);
  }
}

// The same strategy object over two different minibatches: the second
// step's gradients must not keep rows of the first (sparse zeroing).
TEST_P(SameAsSylva, SecondStepStartsFromZeroGradients) {
  const Workload w = GetParam();
  const ModelConfig cfg = small_config(w);
  ParameterSet ps(DType::f64, 5);
  add_params(ps, cfg);
  std::mt19937_64 rng(11);
  const std::vector<InputGraph> a = samples_for(w, rng, 4, cfg), b = samples_for(w, rng, 3, cfg);
  const Result want = run("sylva-serial", cfg, ps, b);
  for (const std::string& name : builtin_strategy_names(w)) {
    auto s = make_builtin_strategy(name, cfg, ps, {});
    s->step(a, true);
    Result got{s->step(b, true).loss, {}};
    for (const Parameter* p : ps.all()) got.grads.push_back(p->grad.clone());
    expect_same(want, got, ps, name + " (second step)");
  }
}

TEST_P(SameAsSylva, InferenceLoss) {
  const Workload w = GetParam();
  const ModelConfig cfg = small_config(w);
  ParameterSet ps(DType::f64, 9);
  add_params(ps, cfg);
  std::mt19937_64 rng(13);
  const std::vector<InputGraph> batch = samples_for(w, rng, 5, cfg);
  const double want = make_builtin_strategy("sylva", cfg, ps, {})->step(batch, false).loss;
  for (const std::string& name : builtin_strategy_names(w))
    EXPECT_NEAR(make_builtin_strategy(name, cfg, ps, {})->step(batch, false).loss, want, 1e-10 * want) << name;
}

INSTANTIATE_TEST_SUITE_P(Workloads, SameAsSylva,
                         ::testing::Values(Workload::tree_lstm, Workload::tree_fc, Workload::var_lstm),
                         [](const auto& p) {
                           std::string n = workload_name(p.param);
                           for (char& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

// The DyNet benchmarks' Tree-LSTM cell: every built-in strategy computes
// Sylva's loss and gradients.
TEST(DynetCell, EveryStrategyComputesSylvasLossAndGradients) {
  ModelConfig cfg = small_config(Workload::tree_lstm);
  cfg.cell = examples::TreeLstmCell::dynet;
  ParameterSet ps(DType::f64, 4);
  add_params(ps, cfg);
  std::mt19937_64 rng(17);
  const std::vector<InputGraph> batch = samples_for(Workload::tree_lstm, rng, 6, cfg);
  const Result want = run("sylva-serial", cfg, ps, batch);
  ASSERT_GT(want.loss, 0.0);
  for (const std::string& name : builtin_strategy_names(Workload::tree_lstm))
    if (name != "sylva-serial") expect_same(want, run(name, cfg, ps, batch), ps, name);
}

// update() applies StrategyOptions::optimizer: each strategy trains its own
// copy of the same parameters, and after three steps with updates all the
// copies are equal (to rounding) and differ from the start.
TEST(Update, EveryStrategyTakesTheSameOptimiserSteps) {
  const ModelConfig cfg = small_config(Workload::tree_lstm);
  std::mt19937_64 rng(19);
  const std::vector<InputGraph> batch = samples_for(Workload::tree_lstm, rng, 5, cfg);
  for (const std::string opt : {"adam", "adagrad"}) {
    SCOPED_TRACE(opt);
    ParameterSet start(DType::f64, 6);
    add_params(start, cfg);
    std::vector<Tensor> want;
    for (const std::string& name : builtin_strategy_names(Workload::tree_lstm)) {
      ParameterSet ps(DType::f64, 6);
      add_params(ps, cfg);
      auto s = make_builtin_strategy(name, cfg, ps, {.optimizer = opt, .lr = 0.05});
      for (int step = 0; step < 3; ++step) {
        s->step(batch, true);
        s->update();
      }
      const std::vector<Parameter*> all = ps.all();
      for (size_t k = 0; k < all.size(); ++k) {
        if (want.size() < all.size()) {
          want.push_back(all[k]->value.clone());
          EXPECT_GT(relative_error(all[k]->value, start.all()[k]->value), 1e-6) << all[k]->name << " did not move";
        } else {
          EXPECT_LE(relative_error(all[k]->value, want[k]), 1e-10) << name << ": " << all[k]->name;
        }
      }
    }
  }
  ParameterSet ps(DType::f64, 6);
  add_params(ps, cfg);
  EXPECT_CONTAINS(test::error_of([&] { make_builtin_strategy("sylva", cfg, ps, {})->update(); }),
                  "without an optimizer");
  EXPECT_CONTAINS(test::error_of([&] { make_builtin_strategy("sylva", cfg, ps, {.optimizer = "lbfgs"}); }),
                  "unknown optimizer 'lbfgs'");
}

// Autobatching groups the per-vertex nodes: far fewer kernel calls than
// nodes, some inputs copied into contiguous blocks, and the same loss.
TEST(Autobatch, GroupsNodesAndCopiesOnlyWhatIsScattered) {
  const ModelConfig cfg = small_config(Workload::tree_lstm);
  ParameterSet ps(DType::f64, 1);
  add_params(ps, cfg);
  std::mt19937_64 rng(17);
  const std::vector<InputGraph> batch = samples_for(Workload::tree_lstm, rng, 8, cfg);
  dd::Graph g(ps, backend_for(Device::cpu()));
  dd::ModelDeclarer model(cfg, ps);
  for (const InputGraph& s : batch) model.declare(g, s);
  const double unbatched = g.forward(false, false);
  const dd::RunStats one = g.stats();
  EXPECT_EQ(one.groups, g.size());
  EXPECT_EQ(one.copied_rows, 0);
  const double batched = g.forward(true, false);
  const dd::RunStats many = g.stats();
  EXPECT_NEAR(batched, unbatched, 1e-12 * unbatched);
  EXPECT_LT(many.groups * 4, g.size()) << "8 trees should batch at least 4 nodes per group on average";
  EXPECT_GT(many.copied_rows, 0) << "children's states of different trees are not contiguous";
}

// A chain batch where every sample is the same length: the agenda runs each
// time step of all chains together, and the consecutive outputs of one
// group feed the next group in place for the elementwise ops.
TEST(Autobatch, ChainsOfEqualLengthBatchPerStep) {
  const ModelConfig cfg = small_config(Workload::var_lstm);
  ParameterSet ps(DType::f64, 1);
  add_params(ps, cfg);
  std::vector<InputGraph> batch;
  std::mt19937_64 rng(19);
  for (int i = 0; i < 5; ++i) {
    InputGraph c = InputGraph::chain(6, "chain " + std::to_string(i));
    std::vector<int32_t> words(6), labels(6);
    for (int t = 0; t < 6; ++t) {
      words[static_cast<size_t>(t)] = static_cast<int32_t>(rng() % 13);
      labels[static_cast<size_t>(t)] = static_cast<int32_t>(rng() % 13);
    }
    c.set_ids("words", words);
    c.set_ids("labels", labels);
    batch.push_back(std::move(c));
  }
  dd::Graph g(ps, backend_for(Device::cpu()));
  dd::ModelDeclarer model(cfg, ps);
  for (const InputGraph& s : batch) model.declare(g, s);
  g.forward(true, true);
  // Per sample each step declares the same ops: five chains batch 5-wide.
  EXPECT_LE(g.stats().groups * 5, g.size());
}

// On a device with memory of its own (the sim device: CPU kernels on
// memory the host cannot touch) the engine computes the CPU's loss and
// gradients, batched or not: values, gathers, scatters and parameter
// copies all stay in the backend's memory.
TEST(DynamicDecl, RunsOnADeviceWithTheCpusNumbers) {
  for (Workload w : {Workload::tree_lstm, Workload::tree_fc, Workload::var_lstm}) {
    const ModelConfig cfg = small_config(w);
    ParameterSet ps(DType::f64, 2);
    add_params(ps, cfg);
    std::mt19937_64 rng(23);
    const std::vector<InputGraph> batch = samples_for(w, rng, 6, cfg);
    for (bool autobatch : {false, true}) {
      Result want{}, got{};
      for (Backend* b : {&backend_for(Device::cpu()), &test::sim_device()}) {
        dd::Graph g(ps, *b);
        dd::ModelDeclarer model(cfg, ps);
        for (const InputGraph& sample : batch) model.declare(g, sample);
        ps.zero_grad();
        const bool sim = b == &test::sim_device();
        Result& r = sim ? got : want;
        const uint64_t waits = test::sim_host_waits();
        const test::SimRowMoves moved = test::sim_row_moves();
        r.loss = g.forward(autobatch, true);
        if (sim) {  // every loss group's sum comes back in one download
          EXPECT_EQ(test::sim_host_waits() - waits, 1u) << workload_name(w);
        }
        g.backward();
        if (sim && autobatch) {  // gathers and scatters move whole rows, not elements
          const test::SimRowMoves now = test::sim_row_moves();
          EXPECT_GT(now.calls, moved.calls) << workload_name(w);
          EXPECT_EQ(now.one_column_calls, moved.one_column_calls) << workload_name(w);
        }
        for (const Parameter* p : ps.all()) r.grads.push_back(p->grad.clone());
        if (autobatch) {
          EXPECT_GT(g.stats().copied_rows, 0) << workload_name(w);
        }
      }
      expect_same(want, got, ps, workload_name(w) + (autobatch ? " autobatched on sim" : " on sim"));
    }
  }
}

// On a device the strategies keep their parameters there and update() runs
// the device's optimiser kernels: three steps with Adam on the sim device
// leave the parameters the CPU's three steps do, and the benchmark's
// synchronize() leaves nothing queued.
TEST(Update, OnADeviceTheOptimiserRunsThereWithTheCpusResult) {
  const ModelConfig cfg = small_config(Workload::tree_lstm);
  std::mt19937_64 rng(29);
  const std::vector<InputGraph> batch = samples_for(Workload::tree_lstm, rng, 5, cfg);
  for (const std::string name : {"sylva", "dynamic-decl-autobatch", "dynamic-decl"}) {
    std::vector<Tensor> want;
    for (Backend* b : {&backend_for(Device::cpu()), &test::sim_device()}) {
      ParameterSet ps(DType::f64, 6);
      add_params(ps, cfg);
      StrategyOptions o{.optimizer = "adam", .lr = 0.05};
      o.executor.backend = b;
      auto s = make_builtin_strategy(name, cfg, ps, o);
      for (int step = 0; step < 3; ++step) {
        s->step(batch, true);
        s->update();
        s->synchronize();
      }
      s->download_parameters();
      const std::vector<Parameter*> all = ps.all();
      for (size_t k = 0; k < all.size(); ++k) {
        if (b == &backend_for(Device::cpu())) want.push_back(all[k]->value.clone());
        else EXPECT_LE(relative_error(all[k]->value, want[k]), 1e-10) << name << " on sim: " << all[k]->name;
      }
    }
  }
}

TEST(DynamicDecl, ShapeErrorsNameTheOp) {
  ParameterSet ps(DType::f32, 1);
  ps.add("W", {3, 4}, Init::zeros());
  ps.add("E", {5, 3}, Init::zeros());
  dd::Graph g(ps, backend_for(Device::cpu()));
  const dd::Expr x = g.lookup(ps["E"], 2);
  const dd::Expr y = g.matmul(x, ps["W"]);
  EXPECT_CONTAINS(test::error_of([&] { g.matmul(y, ps["W"]); }), "[dynamic_decl] matmul: x has 4 columns");
  EXPECT_CONTAINS(test::error_of([&] { g.add(x, y); }), "[dynamic_decl] add: [1, 3] + [1, 4]");
  EXPECT_CONTAINS(test::error_of([&] { g.lookup(ps["E"], 5); }), "id 5 out of range [0, 5) of table 'E'");
  EXPECT_CONTAINS(test::error_of([&] { g.slice(x, 2, 7); }), "slice [2, 7) of 3 columns");
  EXPECT_CONTAINS(test::error_of([&] { g.loss(y, 4); }), "label 4 out of range [0, 4)");
  EXPECT_CONTAINS(test::error_of([&] { g.tanh(99); }), "expression 99 is not in this graph");
  EXPECT_CONTAINS(test::error_of([&] { g.backward(); }), "backward() needs a forward()");
}

TEST(Padded, RejectsGraphsThatAreNotChains) {
  const ModelConfig cfg = small_config(Workload::var_lstm);
  ParameterSet ps(DType::f64, 1);
  add_params(ps, cfg);
  std::mt19937_64 rng(1);
  std::vector<InputGraph> trees = samples_for(Workload::tree_lstm, rng, 2, small_config(Workload::tree_lstm));
  auto padded = make_builtin_strategy("padded", cfg, ps, {});
  EXPECT_CONTAINS(test::error_of([&] { padded->step(trees, true); }), "padding needs chains in vertex order");
  EXPECT_CONTAINS(test::error_of([&] { make_builtin_strategy("padded", small_config(Workload::tree_fc), ps, {}); }),
                  "the padded strategy runs the LSTM workloads only");
  EXPECT_CONTAINS(test::error_of([&] { make_builtin_strategy("dynet", cfg, ps, {}); }), "unknown strategy 'dynet'");
}

}  // namespace
}  // namespace sylva::bench
