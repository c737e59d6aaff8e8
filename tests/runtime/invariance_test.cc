// Bfs and Serial batching must compute the same loss and gradients
// (float64, 1e-10 relative) on random trees and DAGs, and Bfs must
// actually batch. Also a finite-difference check of a whole program.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <thread>

#include "support/cell_model.h"
#include "support/test_device.h"
#include "support/test_util.h"
#include "sylva/frontend/program.h"
#include "sylva/runtime/executor.h"
#include "sylva/train/generators.h"

namespace sylva {
namespace {

// The LSTM-like cell over slots or gather_reduce (support/cell_model.h).
using Model = test::CellModel;
constexpr int kVocab = Model::kVocab, kClasses = Model::kClasses;

struct Result {
  double loss;
  std::vector<Tensor> grads;
  size_t tasks;
};

// Every optimisation off: the reference the ablation switches them on against.
ExecutorOptions none(BatchingPolicy policy) {
  ExecutorOptions o = ExecutorOptions::reference();
  o.policy = policy;
  return o;
}

Result run(Model& m, const GraphBatch& b, ExecutorOptions o) {
  o.seed = 5;
  Executor ex(m.p, m.ps, test::on_test_device(o));
  ex.forward(b, Mode::train);
  Result r{ex.scalar(m.loss), {}, ex.schedule().tasks.size()};
  m.ps.zero_grad();
  ex.backward(m.loss);
  for (Parameter* prm : m.ps.all()) r.grads.push_back(prm->grad.clone());
  return r;
}

void expect_same(Model& m, const GraphBatch& b, const std::string& what) {
  Result serial = run(m, b, {.policy = BatchingPolicy::Serial});
  Result bfs = run(m, b, {.policy = BatchingPolicy::Bfs});
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
    Executor ex(m.p, m.ps, test::on_test_device({.policy = BatchingPolicy::Bfs}));
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

// `n` random trees of at most `size` vertices (arity 3) with random ids
// (a GraphBatch refers to its graphs: keep them alive).
std::vector<InputGraph> random_trees(std::mt19937_64& rng, int n, int size, bool holes) {
  std::vector<InputGraph> graphs;
  for (int s = 0; s < n; ++s) {
    graphs.push_back(test::random_tree(rng, size, 3, holes, "t" + std::to_string(s)));
    test::attach_random_ids(rng, graphs.back(), kVocab, kClasses);
  }
  return graphs;
}

// Three complete binary trees of 8 leaves with words on the leaves only.
std::vector<InputGraph> complete_trees_with_leaf_words() {
  std::vector<InputGraph> graphs;
  for (int s = 0; s < 3; ++s) {
    graphs.push_back(complete_binary_tree(8, "tree " + std::to_string(s)));
    InputGraph& g = graphs.back();
    std::vector<int32_t> words(static_cast<size_t>(g.num_vertices())), labels(words.size(), 1);
    for (int32_t v = 0; v < g.num_vertices(); ++v)
      words[static_cast<size_t>(v)] = g.children(v).empty() ? v % kVocab : -1;
    g.set_ids("x", words);
    g.set_ids("labels", labels);
  }
  return graphs;
}

// Each optimisation alone, and all together, changes no result: the same
// loss and gradients as Serial with every optimisation off, under both
// policies, on trees with holes, chains and DAGs (read through
// gather_reduce). Skipping zero work: absent children, all-zero pulled
// blocks, unused pull gradients; lazy and eager batching: work moved out of
// the task loop.
TEST(Optimisations, EachAloneAndAllTogetherChangeNoResult) {
  using O = Optimisation;
  // Every optimisation of the table alone (with what it needs), so a new
  // one is covered without being listed here; then the combinations where
  // one changes what another does, and all of them.
  std::vector<std::pair<std::string, Optimisations>> sets;
  for (const OptimisationInfo& i : optimisation_table())
    sets.emplace_back(std::string(i.name), Optimisations{i.id}.with(i.needs));
  // Fused groups write task-local values out and read them back.
  sets.emplace_back("task_local_values with fusion", Optimisations{O::task_local_values, O::fusion});
  sets.emplace_back("fusion with skip_zero_work", Optimisations{O::fusion, O::skip_zero_work});
  // x·W, before the loop with eager batching, lends its arena to ∂F's gate gradients, kept for lazy batching.
  sets.emplace_back("lend_forward_arenas with eager, lazy",
                    Optimisations{O::lend_forward_arenas, O::eager_batching, O::lazy_param_grads});
  // Streaming moves the work eager and lazy batching take out of the loop.
  sets.emplace_back("streaming with eager, lazy", Optimisations{O::streaming, O::eager_batching, O::lazy_param_grads});
  sets.emplace_back("all", Optimisations::all());
  std::mt19937_64 rng(4321);
  for (const char* family : {"tree", "chain", "dag"}) {
    const bool dag = std::string(family) == "dag";
    Model m(dag ? 0 : std::string(family) == "chain" ? 1 : 3, 0.25);
    for (int trial = 0; trial < 12; ++trial) {
      std::vector<InputGraph> graphs;
      const int n = 1 + static_cast<int>(rng() % 6);
      for (int s = 0; s < n; ++s) {
        const std::string src = std::string(family) + " " + std::to_string(trial) + "." + std::to_string(s);
        const int size = 1 + static_cast<int>(rng() % 25);
        graphs.push_back(dag ? test::random_dag(rng, size, 4, src)
                             : test::random_tree(rng, size, std::string(family) == "chain" ? 1 : 3, !dag, src));
        test::attach_random_ids(rng, graphs.back(), kVocab, kClasses);
      }
      GraphBatch b = GraphBatch::of(graphs);
      const Result ref = run(m, b, none(BatchingPolicy::Serial));
      for (BatchingPolicy policy : {BatchingPolicy::Bfs, BatchingPolicy::Serial}) {
        for (const auto& [name, set] : sets) {
          ExecutorOptions o = none(policy);
          o.optimisations = set;
          const Result opt = run(m, b, o);
          const std::string which = std::string(family) + " trial " + std::to_string(trial) + " " +
                                    policy_name(policy) + " " + name;
          EXPECT_LE(std::abs(ref.loss - opt.loss), 1e-10 * std::max(1.0, std::abs(ref.loss))) << which;
          auto params = m.ps.all();
          for (size_t k = 0; k < params.size(); ++k)
            EXPECT_LE(test::relative_error(ref.grads[k], opt.grads[k]), 1e-10) << which << " " << params[k]->name;
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
  const std::vector<InputGraph> graphs = complete_trees_with_leaf_words();
  GraphBatch b = GraphBatch::of(graphs);
  const auto products = [&](bool skip) {
    // Eager batching off: x·W stays in the task loop, where skipping acts per task.
    Executor ex(m.p, m.ps,
                test::on_test_device(test::toggled(ExecutorOptions{}.without(Optimisation::eager_batching), Optimisation::skip_zero_work, skip)));
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
  const std::vector<InputGraph> graphs = random_trees(rng, 5, 20, false);
  GraphBatch b = GraphBatch::of(graphs);
  Executor ex(m.p, m.ps, test::on_test_device(ExecutorOptions{}.without(Optimisation::skip_zero_work)));
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> grads;  // param -> (task, rows) per event
  std::map<std::string, std::vector<EventPhase>> phases;
  ex.set_observer([&](const OpEvent& e) {
    if (e.graph.kind() == ir::GraphKind::vertex_gradient && e.node.op == ir::OpKind::ParamGradOut) {
      grads[e.node.attrs.name].push_back({e.task, e.rows});
      phases[e.node.attrs.name].push_back(e.phase);
    }
  });
  ex.forward(b, Mode::train);
  m.ps.zero_grad();
  ex.backward(m.loss);
  const auto tasks = static_cast<int64_t>(ex.schedule().tasks.size());
  ASSERT_GT(tasks, 3);
  for (const char* name : {"W", "U"}) {
    ASSERT_EQ(grads[name].size(), 1u) << name;
    EXPECT_EQ(phases[name][0], EventPhase::after_loop) << name << " runs after the task loop";
    EXPECT_EQ(grads[name][0].first, -1) << name << ": no task index outside the loop";
    EXPECT_EQ(grads[name][0].second, b.num_vertices()) << name << " covers every row";
  }
  EXPECT_EQ(static_cast<int64_t>(grads["b"].size()), tasks);  // the bias gradient stays per task
  for (EventPhase p : phases["b"]) EXPECT_EQ(p, EventPhase::task_loop);
}

// Eager batching: x·W reads no child's message, so it runs once over all
// rows before the task loop, and the gradient of its input, dG·Wᵀ, once
// after it; with eager batching off both run once per task.
TEST(EagerBatching, InputProjectionRunsOnceOverAllRows) {
  std::mt19937_64 rng(8);
  Model m(3, 0.0);
  const std::vector<InputGraph> graphs = random_trees(rng, 5, 20, false);
  GraphBatch b = GraphBatch::of(graphs);
  for (bool eager : {true, false}) {
    Executor ex(m.p, m.ps,
                test::on_test_device(
                    test::toggled(ExecutorOptions{}.without(Optimisation::skip_zero_work), Optimisation::eager_batching, eager)));
    std::vector<std::pair<int64_t, int64_t>> xw, dx;  // (task, rows) per event; task -1 before/after the loop
    std::vector<EventPhase> xw_phase, dx_phase;
    ex.set_observer([&](const OpEvent& e) {
      if (e.node.op != ir::OpKind::MatMul) return;
      if (e.graph.kind() == ir::GraphKind::vertex_function) {
        const ir::Node& w = e.graph.node(e.node.inputs[1]);
        if (w.op == ir::OpKind::Param && w.attrs.name == "W") {
          xw.push_back({e.task, e.rows});
          xw_phase.push_back(e.phase);
        }
      } else if (e.graph.kind() == ir::GraphKind::vertex_gradient &&
                 e.node.id == e.graph.node(e.graph.find(ir::OpKind::PullGradOut).at(0)).inputs[0]) {
        dx.push_back({e.task, e.rows});
        dx_phase.push_back(e.phase);
      }
    });
    ex.forward(b, Mode::train);
    m.ps.zero_grad();
    ex.backward(m.loss);
    const auto tasks = static_cast<int64_t>(ex.schedule().tasks.size());
    ASSERT_GT(tasks, 3);
    if (eager) {
      const std::vector<std::pair<int64_t, int64_t>> once = {{-1, b.num_vertices()}};
      EXPECT_EQ(xw, once) << "x·W: one product over every row, before the loop";
      EXPECT_EQ(xw_phase, std::vector<EventPhase>{EventPhase::before_loop});
      EXPECT_EQ(dx, once) << "dG·Wᵀ: one product over every row, after the loop";
      EXPECT_EQ(dx_phase, std::vector<EventPhase>{EventPhase::after_loop});
    } else {
      EXPECT_EQ(static_cast<int64_t>(xw.size()), tasks);
      EXPECT_EQ(static_cast<int64_t>(dx.size()), tasks);
    }
  }
}

// With skipping, eager work runs only over the tasks that need it: on
// complete trees with words on the leaves only, x·W covers the leaf task.
TEST(EagerBatching, SkipsTasksThatPullOnlyZeros) {
  Model m(2, 0.0);
  const std::vector<InputGraph> graphs = complete_trees_with_leaf_words();
  GraphBatch b = GraphBatch::of(graphs);
  Executor ex(m.p, m.ps, test::on_test_device({.policy = BatchingPolicy::Bfs}));
  std::vector<std::pair<int64_t, int64_t>> xw;
  ex.set_observer([&](const OpEvent& e) {
    if (e.node.op == ir::OpKind::MatMul && e.graph.kind() == ir::GraphKind::vertex_function &&
        e.graph.node(e.node.inputs[1]).attrs.name == "W" && e.phase == EventPhase::before_loop)
      xw.push_back({e.task, e.rows});
  });
  ex.forward(b, Mode::train);
  const std::vector<std::pair<int64_t, int64_t>> leaves = {{-1, 3 * 8}};  // before the loop; 8 leaves per tree
  EXPECT_EQ(xw, leaves);
}

// Fusion: the cell's elementwise tail runs as fused groups in F and ∂F
// (their members report one event per task), and not at all when off.
TEST(Fusion, CellTailRunsAsFusedGroups) {
  std::mt19937_64 rng(8);
  Model m(3, 0.0);
  const std::vector<InputGraph> graphs = random_trees(rng, 4, 15, true);
  GraphBatch b = GraphBatch::of(graphs);
  for (bool fusion : {true, false}) {
    Executor ex(m.p, m.ps, test::on_test_device(test::toggled({}, Optimisation::fusion, fusion)));
    std::map<ir::GraphKind, int> fused_events;
    std::set<ir::OpKind> fused_ops;
    int sigmoid_alone = 0;
    ex.set_observer([&](const OpEvent& e) {
      if (!e.fused.empty()) {
        ++fused_events[e.graph.kind()];
        for (ir::NodeId id : e.fused) fused_ops.insert(e.graph.node(id).op);
      }
      sigmoid_alone += e.fused.empty() && e.node.op == ir::OpKind::Sigmoid;
    });
    ex.forward(b, Mode::train);
    m.ps.zero_grad();
    ex.backward(m.loss);
    if (fusion) {
      EXPECT_GT(fused_events[ir::GraphKind::vertex_function], 0);
      EXPECT_GT(fused_events[ir::GraphKind::vertex_gradient], 0);
      for (ir::OpKind op : {ir::OpKind::Sigmoid, ir::OpKind::Tanh, ir::OpKind::Mul, ir::OpKind::Slice,
                            ir::OpKind::SigmoidGrad, ir::OpKind::TanhGrad})
        EXPECT_TRUE(fused_ops.count(op)) << ir::op_name(op) << " is in no fused group";
      EXPECT_EQ(sigmoid_alone, 0);
    } else {
      EXPECT_TRUE(fused_events.empty());
      EXPECT_GT(sigmoid_alone, 0);
    }
  }
}

// Streaming: on a batch large enough for several chunks, the work before
// and after the loop runs chunk by chunk on the worker thread (x·W and dW
// as one product per chunk) and the results equal those without it.
TEST(Streaming, RunsOutsideWorkInChunksWithTheSameResults) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "streaming needs a second core; this machine has one";
  std::mt19937_64 rng(21);
  Model m(1, 0.25);
  std::vector<InputGraph> graphs = chains(random_lengths(rng, 48, 10, 30), "c");
  for (InputGraph& g : graphs) test::attach_random_ids(rng, g, kVocab, kClasses);
  GraphBatch b = GraphBatch::of(graphs);
  ASSERT_GT(b.num_vertices(), 768);  // chunks of >= 256 rows and a quarter of them: 3 or 4
  std::vector<Result> results;
  for (bool streaming : {false, true}) {
    Executor ex(m.p, m.ps, test::on_test_device(test::toggled({.seed = 5}, Optimisation::streaming, streaming)));
    int xw = 0, dw = 0;
    std::thread::id observer_thread;
    bool one_thread = true;
    ex.set_observer([&](const OpEvent& e) {
      if (observer_thread == std::thread::id()) observer_thread = std::this_thread::get_id();
      one_thread = one_thread && observer_thread == std::this_thread::get_id();
      if (e.node.op == ir::OpKind::MatMul && e.graph.kind() == ir::GraphKind::vertex_function &&
          e.graph.node(e.node.inputs[1]).attrs.name == "W")
        ++xw;
      if (e.node.op == ir::OpKind::ParamGradOut && e.node.attrs.name == "W") ++dw;
    });
    ex.forward(b, Mode::train);
    Result r{ex.scalar(m.loss), {}, ex.schedule().tasks.size()};
    m.ps.zero_grad();
    ex.backward(m.loss);
    for (Parameter* prm : m.ps.all()) r.grads.push_back(prm->grad.clone());
    results.push_back(std::move(r));
    EXPECT_TRUE(one_thread) << "observer events are reported on the caller's thread";
    if (streaming) {
      EXPECT_GE(xw, 3) << "x·W runs once per chunk";
      EXPECT_GE(dw, 3) << "dW runs once per chunk";
      EXPECT_LE(xw, 5);
    } else {
      EXPECT_EQ(xw, 1);
      EXPECT_EQ(dw, 1);
    }
  }
  EXPECT_LE(std::abs(results[0].loss - results[1].loss), 1e-10 * std::abs(results[0].loss));
  for (size_t k = 0; k < results[0].grads.size(); ++k)
    EXPECT_LE(test::relative_error(results[0].grads[k], results[1].grads[k]), 1e-10) << k;
}

// A minibatch too small for two chunks is not streamed: its loop would
// wait for the whole of the work before it either way, so that work runs
// on the calling thread before the loop (its events come first; streamed,
// they would be reported after the loop's).
TEST(Streaming, AMinibatchOfOneChunkRunsItsWorkBeforeTheLoopOnTheCallingThread) {
  if (usable_cpu_cores() < 2) GTEST_SKIP() << "streaming needs a second core; this process may use one";
  std::mt19937_64 rng(22);
  Model m(1, 0.25);
  const std::vector<int32_t> lengths{12, 9, 7};
  std::vector<InputGraph> graphs = chains(lengths, "c");
  for (InputGraph& g : graphs) test::attach_random_ids(rng, g, kVocab, kClasses);
  GraphBatch b = GraphBatch::of(graphs);
  ASSERT_LT(b.num_vertices(), 256);  // one chunk
  Executor ex(m.p, m.ps, test::on_test_device({.seed = 5}));
  int events = 0, xw_at = -1, first_loop_at = -1;
  ex.set_observer([&](const OpEvent& e) {
    if (e.node.op == ir::OpKind::MatMul && e.graph.kind() == ir::GraphKind::vertex_function &&
        e.graph.node(e.node.inputs[1]).attrs.name == "W" && xw_at < 0)
      xw_at = events;
    if (e.phase == EventPhase::task_loop && first_loop_at < 0) first_loop_at = events;
    ++events;
  });
  ex.forward(b, Mode::train);
  ASSERT_GE(xw_at, 0) << "x·W ran";
  ASSERT_GE(first_loop_at, 0) << "the task loop ran";
  EXPECT_LT(xw_at, first_loop_at) << "x·W ran before the loop, not streamed";
  EXPECT_EQ(ex.schedule().tasks.size(), 12u);
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
  Executor ex(m.p, m.ps, test::on_test_device({.policy = BatchingPolicy::Bfs}));
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
  Executor ex(m.p, m.ps, test::on_test_device());
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
  Executor ex(m.p, m.ps, test::on_test_device());
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
  Executor ex(m.p, m.ps, test::on_test_device());
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
    Executor ex(p, ps, test::on_test_device({.policy = policy}));
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
