// DOT dumps of F, ∂F, a program and a schedule; the per-op observer hook.
#include <gtest/gtest.h>

#include "support/test_util.h"
#include "sylva/frontend/program.h"
#include "sylva/runtime/executor.h"

namespace sylva {
namespace {

struct Tiny {
  ParameterSet ps{DType::f64, 1};
  VertexFunction f{"tiny_cell", 3, DType::f64};
  Program p{DType::f64};
  Symbol out, loss;
  Tiny() {
    ps.add("E", {4, 3}, Init::uniform(-1, 1));
    ps.add("W", {6, 3}, Init::uniform(-1, 1));
    Symbol h = tanh(matmul(concat({f.pull(3), f.gather_reduce()}), f.param(ps["W"])));
    f.scatter(h);
    f.push(h);
    out = p.apply(f, lookup(p.param(ps["E"]), p.input_ids("w")));
    loss = sum(out);
  }
};

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(DebugHooks, DotOfVertexFunctionGradientAndProgram) {
  Tiny t;
  std::string f = t.f.to_dot();
  EXPECT_NE(f.find("digraph \"tiny_cell\""), std::string::npos);
  EXPECT_EQ(count(f, "->"), 7u);  // edges: concat 2, matmul 2, tanh 1, scatter 1, push 1
  EXPECT_NE(f.find("gather_reduce"), std::string::npos);
  std::string prog = t.p.to_dot();
  EXPECT_NE(prog.find("subgraph cluster_0"), std::string::npos);  // F nested in apply
  EXPECT_NE(prog.find("tiny_cell"), std::string::npos);
  std::vector<InputGraph> g{InputGraph::from_children({{}, {0}}, "g")};
  g[0].set_ids("w", {1, 2});
  Executor ex(t.p, t.ps);
  ex.forward(GraphBatch::of(g), Mode::train);
  ex.backward(t.loss);
  std::string df = ir::to_dot(ex.vertex_gradient(t.out));
  for (const char* op : {"scatter_grad_in", "push_grad_in", "gather_reduce_grad_out", "pull_grad_out",
                         "param_grad_out", "tanh_grad"})
    EXPECT_NE(df.find(op), std::string::npos) << op;
  std::string sched = ex.schedule().to_dot(GraphBatch::of(g));
  EXPECT_EQ(count(sched, "subgraph cluster_t"), 2u);
  EXPECT_NE(sched.find("v0 -> v1"), std::string::npos);
}

TEST(DebugHooks, ObserverSeesEveryOpOfEveryTask) {
  Tiny t;
  std::vector<InputGraph> g{InputGraph::chain(3, "c")};
  g[0].set_ids("w", {0, 1, 2});
  Executor ex(t.p, t.ps, {.policy = BatchingPolicy::Bfs});
  std::map<int64_t, int> tanh_per_task;
  int static_ops = 0;
  ex.set_observer([&](const OpEvent& e) {
    if (e.phase == EventPhase::program) ++static_ops;
    EXPECT_EQ(e.task >= 0, e.phase == EventPhase::task_loop);  // a task index only inside the loop
    if (e.node.op == ir::OpKind::Tanh) ++tanh_per_task[e.task];
    EXPECT_GE(e.elapsed.count(), 0);
  });
  ex.forward(GraphBatch::of(g), Mode::eval);
  EXPECT_EQ(tanh_per_task.size(), 3u);  // a chain of 3: three tasks
  for (auto& [task, n] : tanh_per_task) EXPECT_EQ(n, 1) << task;
  EXPECT_EQ(static_ops, static_cast<int>(t.p.graph().size()));
}

}  // namespace
}  // namespace sylva

namespace sylva {
namespace {

TEST(Executor, SymbolsAddedAfterConstructionWorkAfterTheNextForward) {
  Tiny t;
  std::vector<InputGraph> g{InputGraph::chain(2, "c")};
  g[0].set_ids("w", {0, 1});
  Executor ex(t.p, t.ps);
  ex.forward(GraphBatch::of(g), Mode::eval);
  Symbol extra = sum(t.out * t.out);  // defined after the executor
  EXPECT_CONTAINS(test::error_of([&] { ex.value(extra); }), "run forward() again");
  ex.forward(GraphBatch::of(g), Mode::eval);
  Tensor h = ex.value(t.out);
  double want = 0;
  for (int64_t i = 0; i < h.numel(); ++i) want += h.at(i) * h.at(i);
  EXPECT_NEAR(ex.scalar(extra), want, 1e-12);
}

}  // namespace
}  // namespace sylva
