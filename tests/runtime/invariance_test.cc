// Bfs and Serial batching must compute the same loss and gradients
// (float64, 1e-10 relative) on random trees and DAGs, and Bfs must
// actually batch. Also a finite-difference check of a whole program.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "support/test_util.h"
#include "sylva/frontend/program.h"
#include "sylva/runtime/executor.h"

namespace sylva {
namespace {

constexpr int kVocab = 17, kClasses = 3, kD = 5, kH = 4;

struct Model {
  ParameterSet ps{DType::f64, 11};
  Program p{DType::f64};
  Symbol loss, hs;

  // slots > 0: an LSTM-like cell reading `slots` children by slot; slots == 0:
  // the same cell over gather_reduce (any arity, for DAGs).
  Model(int slots, double dropout_p) {
    ps.add("E", {kVocab, kD}, Init::uniform(-1, 1));
    ps.add("W", {kD, 4 * kH}, Init::uniform(-0.5, 0.5));
    ps.add("U", {std::max(slots, 1) * kH, 4 * kH}, Init::uniform(-0.5, 0.5));
    ps.add("b", {4 * kH}, Init::uniform(-0.5, 0.5));
    ps.add("Wo", {kH, kClasses}, Init::uniform(-1, 1));
    VertexFunction f("cell", 2 * kH, DType::f64);
    Symbol x = f.pull(kD);
    std::vector<Symbol> hs_in, cs_in;
    if (slots > 0) {
      for (int s = 0; s < slots; ++s) {
        auto [h, c] = split<2>(f.gather(s));
        hs_in.push_back(h);
        cs_in.push_back(c);
      }
    } else {
      auto [h, c] = split<2>(f.gather_reduce());
      hs_in.push_back(h);
      cs_in.push_back(c);
    }
    Symbol g = matmul(x, f.param(ps["W"])) + matmul(concat(hs_in), f.param(ps["U"])) + f.param(ps["b"]);
    auto [i, fg, o, u] = split<4>(g);
    Symbol csum = cs_in[0];
    for (size_t k = 1; k < cs_in.size(); ++k) csum = csum + cs_in[k];
    Symbol c = sigmoid(i) * tanh(u) + sigmoid(fg) * csum;
    Symbol h = dropout(sigmoid(o) * tanh(c), dropout_p);
    f.scatter(concat({h, c}));
    f.push(h);
    Symbol words = p.input_ids("x");
    hs = p.apply(f, lookup(p.param(ps["E"]), words));
    Symbol logits = matmul(hs, p.param(ps["Wo"]));
    loss = softmax_cross_entropy(logits, p.input_ids("labels")) + scale(sum(hs * hs), 0.1);
  }
};

struct Run {
  double loss;
  std::vector<Tensor> grads;
  size_t tasks;
};

Run run(Model& m, const GraphBatch& b, BatchingPolicy policy, bool skip_zero_work = true, bool lazy = true) {
  Executor ex(m.p, m.ps, {.policy = policy, .seed = 5, .skip_zero_work = skip_zero_work, .lazy_param_grads = lazy});
  ex.forward(b, Mode::train);
  Run r{ex.scalar(m.loss), {}, ex.schedule().tasks.size()};
  m.ps.zero_grad();
  ex.backward(m.loss);
  for (Parameter* prm : m.ps.all()) r.grads.push_back(prm->grad.clone());
  return r;
}

void expect_same(Model& m, const GraphBatch& b, const std::string& what) {
  Run serial = run(m, b, BatchingPolicy::Serial);
  Run bfs = run(m, b, BatchingPolicy::Bfs);
  EXPECT_LE(std::abs(serial.loss - bfs.loss), 1e-10 * std::max(1.0, std::abs(serial.loss))) << what;
  auto params = m.ps.all();
  for (size_t k = 0; k < params.size(); ++k)
    EXPECT_LE(test::relative_error(serial.grads[k], bfs.grads[k]), 1e-10) << what << " param " << params[k]->name;
  EXPECT_EQ(serial.tasks, static_cast<size_t>(b.num_vertices())) << what;
  EXPECT_LE(bfs.tasks, serial.tasks) << what;
}

TEST(Invariance, RandomTreesBfsEqualsSerial) {
  std::mt19937_64 rng(1234);
  Model m(3, 0.25);
  int batched = 0;
  for (int trial = 0; trial < 60; ++trial) {
    std::vector<InputGraph> graphs;
    int n = 1 + static_cast<int>(rng() % 8);
    for (int s = 0; s < n; ++s) {
      graphs.push_back(test::random_tree(rng, 1 + static_cast<int>(rng() % 30), 3, true,
                                         "tree " + std::to_string(trial) + "." + std::to_string(s)));
      test::attach_random_ids(rng, graphs.back(), kVocab, kClasses);
    }
    GraphBatch b = GraphBatch::of(graphs);
    expect_same(m, b, "trial " + std::to_string(trial));
    Executor ex(m.p, m.ps, {.policy = BatchingPolicy::Bfs});
    ex.forward(b, Mode::eval);
    batched += ex.schedule().tasks.size() < static_cast<size_t>(b.num_vertices());
  }
  EXPECT_GT(batched, 50);  // BFS really grouped vertices in almost every batch
}

TEST(Invariance, RandomDagsBfsEqualsSerial) {
  std::mt19937_64 rng(99);
  Model m(0, 0.25);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<InputGraph> graphs;
    int n = 1 + static_cast<int>(rng() % 6);
    for (int s = 0; s < n; ++s) {
      graphs.push_back(test::random_dag(rng, 1 + static_cast<int>(rng() % 25), 4,
                                        "dag " + std::to_string(trial) + "." + std::to_string(s)));
      test::attach_random_ids(rng, graphs.back(), kVocab, kClasses);
    }
    expect_same(m, GraphBatch::of(graphs), "dag trial " + std::to_string(trial));
  }
}

// Skipping zero work (absent children, all-zero pulled blocks, unused pull
// gradients) changes no result, under both policies, on trees with holes
// and on DAGs read through gather_reduce.
TEST(SkipZeroWork, SameLossAndGradientsAsRunningEverything) {
  std::mt19937_64 rng(4321);
  for (int slots : {3, 0}) {
    Model m(slots, 0.25);
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<InputGraph> graphs;
      const int n = 1 + static_cast<int>(rng() % 6);
      for (int s = 0; s < n; ++s) {
        const std::string src = "graph " + std::to_string(trial) + "." + std::to_string(s);
        graphs.push_back(slots ? test::random_tree(rng, 1 + static_cast<int>(rng() % 25), 3, true, src)
                               : test::random_dag(rng, 1 + static_cast<int>(rng() % 25), 4, src));
        test::attach_random_ids(rng, graphs.back(), kVocab, kClasses);
      }
      GraphBatch b = GraphBatch::of(graphs);
      for (BatchingPolicy policy : {BatchingPolicy::Bfs, BatchingPolicy::Serial}) {
        const std::string what = std::string(slots ? "tree" : "dag") + " trial " + std::to_string(trial) + " " +
                                 policy_name(policy);
        // Reference: no optimisation; then each alone and both together.
        const auto all = run(m, b, policy, false, false);
        for (auto [skip, lazy] : {std::pair{true, false}, std::pair{false, true}, std::pair{true, true}}) {
          const auto opt = run(m, b, policy, skip, lazy);
          const std::string which = what + (skip ? " skip" : "") + (lazy ? " lazy" : "");
          EXPECT_LE(std::abs(all.loss - opt.loss), 1e-12 * std::max(1.0, std::abs(all.loss))) << which;
          auto params = m.ps.all();
          for (size_t k = 0; k < params.size(); ++k)
            EXPECT_LE(test::relative_error(all.grads[k], opt.grads[k]), 1e-12) << which << " " << params[k]->name;
        }
      }
    }
  }
}

// Complete binary trees with words on the leaves only: under Bfs the leaf
// task has no children (the [h_l; h_r]·U product is zero) and the other
// tasks pull only zero rows (x·W is zero, and the gradient of those rows is
// unused since they are lookups of id -1). So every task runs exactly one
// of F's two products, and ∂F skips the matching ones.
TEST(SkipZeroWork, EachTaskRunsOnlyTheProductItNeeds) {
  Model m(2, 0.0);
  std::vector<InputGraph> graphs;
  for (int s = 0; s < 3; ++s) {
    graphs.push_back(complete_binary_tree(8, "tree " + std::to_string(s)));
    InputGraph& g = graphs.back();
    std::vector<int32_t> words(static_cast<size_t>(g.num_vertices())), labels(words.size(), 1);
    for (int32_t v = 0; v < g.num_vertices(); ++v) words[static_cast<size_t>(v)] = g.children(v).empty() ? v % kVocab : -1;
    g.set_ids("x", words);
    g.set_ids("labels", labels);
  }
  GraphBatch b = GraphBatch::of(graphs);
  const auto products = [&](bool skip) {
    Executor ex(m.p, m.ps, {.policy = BatchingPolicy::Bfs, .skip_zero_work = skip});
    std::map<std::pair<ir::GraphKind, int64_t>, int> count;  // (F or ∂F, task) -> matmuls run
    ex.set_observer([&](const OpEvent& e) {
      if (e.task >= 0 && (e.node.op == ir::OpKind::MatMul || e.node.op == ir::OpKind::ParamGradOut))
        ++count[{e.graph.kind(), e.task}];
    });
    ex.forward(b, Mode::train);
    m.ps.zero_grad();
    ex.backward(m.loss);
    return std::make_pair(count, ex.schedule().tasks.size());
  };
  auto [all, tasks] = products(false);
  auto [skipped, tasks2] = products(true);
  ASSERT_EQ(tasks, 4u);  // leaves, then three levels of internal vertices
  for (int64_t t = 0; t < 4; ++t) {
    EXPECT_EQ((all[{ir::GraphKind::vertex_function, t}]), 2) << "task " << t;
    EXPECT_EQ((skipped[{ir::GraphKind::vertex_function, t}]), 1) << "task " << t;
    EXPECT_LT((skipped[{ir::GraphKind::vertex_gradient, t}]), (all[{ir::GraphKind::vertex_gradient, t}]))
        << "task " << t;
  }
}

// Lazy batching: each parameter gradient of F that is a product of two
// per-vertex values (dW, dU) runs once per minibatch, after the task loop,
// over all rows; per-task ones (the bias's row sums) stay in the loop.
TEST(LazyParamGrads, OneGemmPerParameterPerMinibatch) {
  std::mt19937_64 rng(8);
  Model m(3, 0.0);
  std::vector<InputGraph> graphs;
  for (int s = 0; s < 5; ++s) {
    graphs.push_back(test::random_tree(rng, 20, 3, false, "t" + std::to_string(s)));
    test::attach_random_ids(rng, graphs.back(), kVocab, kClasses);
  }
  GraphBatch b = GraphBatch::of(graphs);
  Executor ex(m.p, m.ps, {.policy = BatchingPolicy::Bfs, .skip_zero_work = false});
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> grads;  // param -> (task, rows) per event
  ex.set_observer([&](const OpEvent& e) {
    if (e.graph.kind() == ir::GraphKind::vertex_gradient && e.node.op == ir::OpKind::ParamGradOut)
      grads[e.node.attrs.name].push_back({e.task, e.rows});
  });
  ex.forward(b, Mode::train);
  m.ps.zero_grad();
  ex.backward(m.loss);
  const auto tasks = static_cast<int64_t>(ex.schedule().tasks.size());
  ASSERT_GT(tasks, 3);
  for (const char* name : {"W", "U"}) {
    ASSERT_EQ(grads[name].size(), 1u) << name;
    EXPECT_EQ(grads[name][0].first, tasks) << name << " runs after the task loop";
    EXPECT_EQ(grads[name][0].second, b.num_vertices()) << name << " covers every row";
  }
  EXPECT_EQ(static_cast<int64_t>(grads["b"].size()), tasks);  // the bias gradient stays per task
}

TEST(Invariance, BfsTasksFollowLevels) {
  // Two chains of length 3 and 1: BFS gives tasks of sizes 2, 1, 1.
  std::vector<InputGraph> g{InputGraph::chain(3, "a"), InputGraph::chain(1, "b")};
  GraphBatch b = GraphBatch::of(g);
  Schedule s = Schedule::build(b, BatchingPolicy::Bfs);
  ASSERT_EQ(s.tasks.size(), 3u);
  EXPECT_EQ(s.tasks[0].bs, 2);
  EXPECT_EQ(s.tasks[1].bs, 1);
  EXPECT_EQ(s.tasks[2].bs, 1);
  for (int32_t v = 0; v < b.num_vertices(); ++v) EXPECT_EQ(s.vertex_of_row[s.row_of_vertex[v]], v);
}

TEST(Invariance, WholeProgramGradientMatchesFiniteDifferences) {
  std::mt19937_64 rng(7);
  Model m(2, 0.0);
  std::vector<InputGraph> graphs;
  for (int s = 0; s < 3; ++s) {
    graphs.push_back(test::random_tree(rng, 9, 2, true, "fd" + std::to_string(s)));
    test::attach_random_ids(rng, graphs.back(), kVocab, kClasses);
  }
  GraphBatch b = GraphBatch::of(graphs);
  Executor ex(m.p, m.ps, {.policy = BatchingPolicy::Bfs});
  ex.forward(b, Mode::train);
  m.ps.zero_grad();
  ex.backward(m.loss);
  for (Parameter* prm : m.ps.all())
    EXPECT_LE(test::finite_difference_error(ex, b, m.loss, *prm, 25), 1e-6)
        << prm->name << " (error relative to the largest gradient entry)";
}

TEST(Invariance, TooManyChildrenIsAnError) {
  Model m(2, 0.0);
  std::vector<InputGraph> g{InputGraph::from_children({{}, {}, {}, {0, 1, 2}}, "wide.txt:3")};
  std::mt19937_64 rng(1);
  test::attach_random_ids(rng, g[0], kVocab, kClasses);
  Executor ex(m.p, m.ps);
  try {
    ex.forward(GraphBatch::of(g), Mode::eval);
    FAIL() << "expected sylva::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("wide.txt:3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("reads at most 2"), std::string::npos) << e.what();
  }
}

TEST(Invariance, MissingIdsAreAnError) {
  Model m(2, 0.0);
  std::vector<InputGraph> g{InputGraph::chain(3, "plain")};
  Executor ex(m.p, m.ps);
  EXPECT_THROW(ex.forward(GraphBatch::of(g), Mode::eval), Error);
}

TEST(Invariance, ArenasDoNotGrowInSteadyState) {
  std::mt19937_64 rng(3);
  Model m(3, 0.1);
  std::vector<InputGraph> graphs;
  for (int s = 0; s < 4; ++s) {
    graphs.push_back(test::random_tree(rng, 20, 3, false, "s"));
    test::attach_random_ids(rng, graphs.back(), kVocab, kClasses);
  }
  GraphBatch b = GraphBatch::of(graphs);
  Executor ex(m.p, m.ps);
  ex.forward(b, Mode::train);
  ex.backward(m.loss);
  size_t after_first = ex.allocations();
  for (int i = 0; i < 3; ++i) {
    ex.forward(b, Mode::train);
    ex.backward(m.loss);
  }
  EXPECT_EQ(ex.allocations(), after_first);
}

}  // namespace
}  // namespace sylva

namespace sylva {
namespace {

// F reading its first child by slot and all children summed, over DAGs.
TEST(Invariance, GatherAndGatherReduceTogether) {
  ParameterSet ps(DType::f64, 3);
  ps.add("E", {kVocab, 3}, Init::uniform(-1, 1));
  ps.add("W", {9, 3}, Init::uniform(-1, 1));
  VertexFunction f("mixed", 3, DType::f64);
  Symbol h = tanh(matmul(concat({f.pull(3), f.gather(0), f.gather_reduce()}), f.param(ps["W"])));
  f.scatter(h);
  f.push(h);
  Program p(DType::f64);
  Symbol loss = sum(p.apply(f, lookup(p.param(ps["E"]), p.input_ids("x"))));
  std::mt19937_64 rng(5);
  std::vector<InputGraph> graphs;
  for (int s = 0; s < 5; ++s) {
    graphs.push_back(test::random_dag(rng, 12, 3, "mixed" + std::to_string(s)));
    test::attach_random_ids(rng, graphs.back(), kVocab, kClasses);
  }
  GraphBatch b = GraphBatch::of(graphs);
  std::vector<double> losses;
  std::vector<Tensor> grads;
  for (BatchingPolicy policy : {BatchingPolicy::Serial, BatchingPolicy::Bfs}) {
    Executor ex(p, ps, {.policy = policy});
    ex.forward(b, Mode::train);
    losses.push_back(ex.scalar(loss));
    ps.zero_grad();
    ex.backward(loss);
    grads.push_back(ps["W"].grad.clone());
  }
  EXPECT_NEAR(losses[0], losses[1], 1e-10 * std::abs(losses[0]));
  EXPECT_LE(test::relative_error(grads[0], grads[1]), 1e-10);
}

}  // namespace
}  // namespace sylva
