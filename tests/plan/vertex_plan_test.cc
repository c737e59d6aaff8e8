// The plan as a value: built once per (F, options), immutable, printable;
// options change what is planned, not what is computed.
#include "sylva/plan/vertex_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

#include "sylva/core/error.h"
#include "sylva/frontend/parameter_set.h"
#include "sylva/frontend/program.h"
#include "sylva/frontend/vertex_function.h"
#include "sylva/plan/program_plan.h"

namespace sylva {
namespace {

using ir::OpKind;
using plan::Phase;

// A binary Tree-LSTM-like cell: an input projection (needs no child), a
// recurrent product (needs the children) and an elementwise tail.
struct Cell {
  ParameterSet ps{DType::f64, 3};
  VertexFunction f{"cell", 4, DType::f64};
  Symbol xw, children, r, h;
  Cell() {
    ps.add("W", {3, 8}, Init::uniform(-0.5, 0.5));
    ps.add("U", {8, 8}, Init::uniform(-0.5, 0.5));
    xw = matmul(f.pull(3), f.param(ps["W"]));
    children = concat({f.gather(0), f.gather(1)});
    r = matmul(children, f.param(ps["U"]));
    auto [a, b] = split<2>(xw + r);
    h = tanh(a) * sigmoid(b);
    f.scatter(h);
    f.push(h);
  }
};

int count_phase(const plan::GraphPlan& p, Phase ph) {
  return static_cast<int>(std::count(p.phase.begin(), p.phase.end(), ph));
}

TEST(VertexPlan, EagerBatchingPutsTheInputProjectionBeforeTheLoop) {
  Cell c;
  auto p = plan::build_vertex_plan(c.f.shared_graph(), {});
  EXPECT_EQ(p->forward.phase[static_cast<size_t>(c.xw.id())], Phase::pre);
  EXPECT_EQ(p->forward.phase[static_cast<size_t>(c.h.id())], Phase::loop);
  EXPECT_NE(std::find(p->forward.pre.begin(), p->forward.pre.end(), c.xw.id()), p->forward.pre.end());
  EXPECT_FALSE(p->backward.post.empty()) << "dW and dx run after ∂F's loop";
  EXPECT_NE(p->pull, ir::kNoNode);
  EXPECT_EQ(p->push_source, c.h.id());
  EXPECT_EQ(p->gather_slots, 2);
  EXPECT_FALSE(p->gathers_all);

  auto off = plan::build_vertex_plan(c.f.shared_graph(), {.eager_batching = false, .lazy_param_grads = false});
  EXPECT_EQ(off->forward.phase[static_cast<size_t>(c.xw.id())], Phase::loop);
  EXPECT_TRUE(off->forward.pre.empty() || std::none_of(off->forward.pre.begin(), off->forward.pre.end(),
                                                       [&](ir::NodeId id) { return off->forward.runs(id); }));
  EXPECT_TRUE(off->backward.post.empty());
  EXPECT_EQ(count_phase(off->backward, Phase::post), 0);
}

TEST(VertexPlan, FusionGroupsTheTailAndWritesOutWhatTheGradientReads) {
  Cell c;
  auto fused = plan::build_vertex_plan(c.f.shared_graph(), {});
  ASSERT_FALSE(fused->forward.fused.empty());
  const plan::FusedGroup& g = fused->forward.fused[0];
  EXPECT_EQ(g.program.steps.size(), g.members.size());
  // ∂F reads tanh(a) and sigmoid(b) (the product's operands): written out.
  int read_by_df = 0;
  for (const ir::Node& n : fused->backward.graph->nodes())
    if (n.op == OpKind::ForwardValue &&
        std::find(g.members.begin(), g.members.end(), n.attrs.ref) != g.members.end()) {
      ++read_by_df;
      EXPECT_NE(std::find(g.outputs.begin(), g.outputs.end(), n.attrs.ref), g.outputs.end()) << n.attrs.ref;
    }
  EXPECT_GT(read_by_df, 0);
  // The loop runs the group as one unit.
  EXPECT_NE(std::find(fused->forward.order.begin(), fused->forward.order.end(), -1), fused->forward.order.end());

  auto plain = plan::build_vertex_plan(c.f.shared_graph(), {.fusion = false});
  EXPECT_TRUE(plain->forward.fused.empty());
  EXPECT_TRUE(plain->backward.fused.empty());
  EXPECT_TRUE(std::all_of(plain->forward.order.begin(), plain->forward.order.end(), [](int32_t u) { return u >= 0; }));
}

// Row windows: the cell's concat of gathers fills its columns from the
// children's rows, and each gather gradient adds its slice of d[concat];
// a gather read by anything else keeps its own value.
TEST(VertexPlan, RowWindowsReadGathersAndSlicesInPlace) {
  const auto marked = [](const plan::GraphPlan& p, OpKind op, const std::vector<uint8_t>& marks) {
    int n = 0, all = 0;
    for (const ir::Node& node : p.graph->nodes())
      if (node.op == op) ++all, n += marks[static_cast<size_t>(node.id)];
    return std::make_pair(n, all);
  };
  Cell c;
  auto p = plan::build_vertex_plan(c.f.shared_graph(), {});
  EXPECT_EQ(marked(p->forward, OpKind::Concat, p->forward.window), std::make_pair(1, 1));
  EXPECT_EQ(marked(p->forward, OpKind::Gather, p->forward.in_window), std::make_pair(2, 2));
  EXPECT_EQ(marked(p->backward, OpKind::GatherGradOut, p->backward.window), std::make_pair(2, 2));
  EXPECT_EQ(marked(p->backward, OpKind::Slice, p->backward.in_window).first, 2);
  for (const ir::Node& n : p->backward.graph->nodes())
    if (p->backward.window[static_cast<size_t>(n.id)]) {
      EXPECT_TRUE(p->backward.in_window[static_cast<size_t>(n.inputs[0])]) << "gather_grad_out %" << n.id;
    }
  EXPECT_NE(p->to_text().find(" in-window"), std::string::npos);

  ParameterSet ps{DType::f64, 3};
  ps.add("U", {8, 4}, Init::uniform(-0.5, 0.5));
  VertexFunction f{"reads_a_child_twice", 4, DType::f64};
  Symbol left = f.gather(0);
  Symbol h = tanh(matmul(concat({left, f.gather(1)}), f.param(ps["U"]))) + left;
  f.scatter(h);
  f.push(h);
  auto q = plan::build_vertex_plan(f.shared_graph(), {});
  EXPECT_EQ(marked(q->forward, OpKind::Concat, q->forward.window).first, 0) << "gather(0) is also added to h";
  EXPECT_EQ(marked(q->forward, OpKind::Gather, q->forward.in_window).first, 0);
}

// Task-local values: the recurrent product, read only by the tail of its
// own task, needs one task's rows at a time; the concat (∂F reads it for
// dU), h (scattered and pushed) and x·W (made before the loop) keep a row
// per vertex, as does whatever ∂F's work after the loop reads.
TEST(VertexPlan, TaskLocalValuesAreReadOnlyInsideTheirOwnTask) {
  Cell c;
  auto p = plan::build_vertex_plan(c.f.shared_graph(), {});
  const plan::GraphPlan& f = p->forward;
  const auto local = [](const plan::GraphPlan& g, Symbol s) { return g.task_local[static_cast<size_t>(s.id())] != 0; };
  EXPECT_TRUE(local(f, c.r));
  EXPECT_FALSE(local(f, c.children)) << "read by ∂F";
  EXPECT_FALSE(local(f, c.h)) << "scattered to the parent and pushed";
  EXPECT_FALSE(local(f, c.xw)) << "made before the loop";
  for (const ir::Node& n : p->backward.graph->nodes())
    if (n.op == OpKind::ForwardValue) {
      EXPECT_FALSE(f.task_local[static_cast<size_t>(n.attrs.ref)]) << "∂F reads %" << n.attrs.ref;
    }
  int in_df = 0;
  for (const plan::GraphPlan* g : {&p->forward, &p->backward})
    for (const ir::Node& n : g->graph->nodes()) {
      if (!g->task_local[static_cast<size_t>(n.id)]) continue;
      in_df += g == &p->backward;
      EXPECT_EQ(g->home[static_cast<size_t>(n.id)], plan::Home::arena) << "%" << n.id;
      for (ir::NodeId u : g->consumers[static_cast<size_t>(n.id)])
        EXPECT_EQ(g->phase[static_cast<size_t>(u)], Phase::loop) << "%" << u << " reads %" << n.id;
    }
  EXPECT_GT(in_df, 0) << "∂F's d[concat] is read only by its task's gather gradients";
  EXPECT_NE(p->to_text().find(" task-local"), std::string::npos);

  // Without eager batching x·W runs in the loop, read only by the add.
  auto loop = plan::build_vertex_plan(c.f.shared_graph(), {.eager_batching = false});
  EXPECT_TRUE(local(loop->forward, c.xw));
}

// ∂F's pushed gradient: copied in task by task into a task-sized block
// where only the loop reads it (the cell's tail needs the children's
// gradient too), before the loop where work before the loop reads it (a
// function without children: its whole gradient runs there, once).
TEST(VertexPlan, ThePushedGradientIsCopiedInTaskByTaskWhereOnlyTheLoopReadsIt) {
  const auto push_grad = [](const plan::GraphPlan& b) {
    for (const ir::Node& n : b.graph->nodes())
      if (n.op == OpKind::PushGradIn) return static_cast<size_t>(n.id);
    ADD_FAILURE() << "∂F has no push_grad_in";
    return size_t{0};
  };
  Cell c;
  auto p = plan::build_vertex_plan(c.f.shared_graph(), {});
  const size_t i = push_grad(p->backward);
  EXPECT_EQ(p->backward.phase[i], Phase::loop);
  EXPECT_TRUE(p->backward.task_local[i]);

  ParameterSet ps{DType::f64, 3};
  ps.add("W", {3, 4}, Init::uniform(-0.5, 0.5));
  VertexFunction leaf("leaf", 4, DType::f64);
  leaf.push(tanh(matmul(leaf.pull(3), leaf.param(ps["W"]))));
  auto q = plan::build_vertex_plan(leaf.shared_graph(), {});
  const size_t k = push_grad(q->backward);
  EXPECT_EQ(q->backward.phase[k], Phase::pre);
  EXPECT_FALSE(q->backward.task_local[k]);
}

// F scatters [h; c] and pushes h: h is the message's first columns. Kept
// on its own only where ∂F reads it or the option is off.
TEST(VertexPlan, APushedBlockOfTheMessageIsReadFromTheMessage) {
  const auto plan_of = [](bool dF_reads_h, bool option) {
    auto f = std::make_shared<VertexFunction>("message", 8, DType::f64);
    ParameterSet ps(DType::f64, 1);
    ps.add("U", {16, 8}, Init::uniform(-0.5, 0.5));
    auto [a, o] = split<2>(matmul(concat({f->gather(0), f->gather(1)}), f->param(ps["U"])));
    Symbol c = tanh(a);
    Symbol h = dF_reads_h ? tanh(o) : sigmoid(o) * c;  // tanh's gradient reads its output
    f->scatter(concat({h, c}));
    f->push(h);
    auto p = plan::build_vertex_plan(f->shared_graph(), {.push_from_message = option});
    return std::make_pair(p, h.id());
  };
  const auto [p, h] = plan_of(false, true);
  EXPECT_EQ(p->push_source, h);
  EXPECT_EQ(p->push_col, 0);
  EXPECT_TRUE(p->forward.task_local[static_cast<size_t>(h)]) << "no copy of h beside [h; c]";
  for (const plan::FusedGroup& g : p->forward.fused)
    EXPECT_EQ(std::find(g.outputs.begin(), g.outputs.end(), h), g.outputs.end()) << "h is not written out";
  const auto [off, h_off] = plan_of(false, false);
  EXPECT_EQ(off->push_col, -1);
  EXPECT_FALSE(off->forward.task_local[static_cast<size_t>(h_off)]);
  const auto [read, h_read] = plan_of(true, true);
  EXPECT_EQ(read->push_col, -1) << "∂F reads h";
  EXPECT_FALSE(read->forward.task_local[static_cast<size_t>(h_read)]);
}

TEST(VertexPlan, FoldsParameterGradientMatmulsOfTheGradientOnly) {
  Cell c;
  auto p = plan::build_vertex_plan(c.f.shared_graph(), {});
  EXPECT_TRUE(std::none_of(p->forward.folded.begin(), p->forward.folded.end(), [](uint8_t f) { return f != 0; }));
  int folded = 0;
  for (const ir::Node& n : p->backward.graph->nodes())
    if (p->backward.folded[static_cast<size_t>(n.id)]) {
      ++folded;
      EXPECT_EQ(n.op, OpKind::MatMul);
      ASSERT_EQ(p->backward.consumers[static_cast<size_t>(n.id)].size(), 1u);
      const ir::Node& out = p->backward.graph->node(p->backward.consumers[static_cast<size_t>(n.id)][0]);
      EXPECT_EQ(out.op, OpKind::ParamGradOut);
      EXPECT_EQ(p->backward.phase[static_cast<size_t>(n.id)], p->backward.phase[static_cast<size_t>(out.id)]);
    }
  EXPECT_EQ(folded, 2) << "dW and dU";
}

TEST(VertexPlan, TheCacheBuildsOnePlanPerFunctionAndOptions) {
  Cell c, d;
  plan::PlanCache cache;
  auto a = cache.get(c.f.shared_graph(), {});
  EXPECT_EQ(cache.get(c.f.shared_graph(), {}), a) << "same F, same options: the same plan";
  auto b = cache.get(c.f.shared_graph(), {.fusion = false});
  EXPECT_NE(b, a);
  EXPECT_FALSE(b->options.fusion);
  EXPECT_TRUE(a->options.fusion);
  EXPECT_NE(cache.get(d.f.shared_graph(), {}), a) << "another F";
  auto ios = cache.get(c.f.shared_graph(), {.ios = ios::Options{.variant = ios::Variant::both, .r = 3, .s = 8}});
  EXPECT_NE(ios, a);
  EXPECT_EQ(cache.size(), 4u);
}

TEST(VertexPlan, PrintsEveryNodeWithItsPhase) {
  Cell c;
  auto p = plan::build_vertex_plan(c.f.shared_graph(), {});
  const std::string text = p->to_text();
  EXPECT_NE(text.find("F 'cell'"), std::string::npos) << text;
  EXPECT_NE(text.find("phase=pre"), std::string::npos);
  EXPECT_NE(text.find("phase=post"), std::string::npos);
  EXPECT_NE(text.find("fused=0"), std::string::npos);
  EXPECT_NE(text.find("folded"), std::string::npos);
  const std::string dot = p->to_dot();
  EXPECT_EQ(dot.rfind("digraph plan {", 0), 0u);
  EXPECT_NE(dot.find("cluster_F_g0"), std::string::npos);
  // A header per graph, a line per node, and the children block this cell has (concat of gather(0), gather(1)).
  ASSERT_NE(p->children_block.grad, ir::kNoNode);
  EXPECT_NE(text.find("children block: F's concat %"), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'),
            static_cast<long>(3 + p->forward.graph->size() + p->backward.graph->size()));
}

TEST(VertexPlan, RejectsFunctionsTheRuntimeCannotRun) {
  VertexFunction gathers_only("g", 4, DType::f64);
  gathers_only.push(gathers_only.gather(0));
  try {
    plan::build_vertex_plan(gathers_only.shared_graph(), {});
    FAIL() << "a function that gathers but never scatters was planned";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("never scatters"), std::string::npos) << e.what();
  }
  EXPECT_THROW(plan::build_vertex_plan(nullptr, {}), Error);
}

TEST(ProgramPlan, OrdersEveryNodeOnceAndFoldsLookupGradientsIntoSparseRows) {
  Program prog(DType::f64);
  ParameterSet ps(DType::f64, 1);
  ps.add("E", {10, 4}, Init::uniform(-0.1, 0.1));
  ps.add("Wo", {4, 2}, Init::uniform(-0.1, 0.1));
  Symbol x = lookup(prog.param(ps["E"]), prog.input_ids("w"));
  Symbol loss = softmax_cross_entropy(matmul(x, prog.param(ps["Wo"])), prog.input_ids("y"));
  for (bool with_ios : {false, true}) {
    plan::PlanOptions o;
    if (with_ios) o.ios = ios::Options{.variant = ios::Variant::both, .r = 3, .s = 8};
    plan::ProgramPlan fwd = plan::plan_program(prog.graph(), o);
    std::vector<ir::NodeId> sorted = fwd.order;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_EQ(sorted.size(), prog.graph().size());
    for (size_t i = 0; i < sorted.size(); ++i) EXPECT_EQ(sorted[i], static_cast<ir::NodeId>(i));
    plan::ProgramGradPlan bwd = plan::plan_program_gradient(prog.graph(), loss.id(), o);
    EXPECT_EQ(bwd.sparse_params, std::set<std::string>{"E"});
    EXPECT_EQ(bwd.order.size(), bwd.graph->size());
    int folded = 0;
    for (uint8_t f : bwd.folded) folded += f;
    EXPECT_EQ(folded, 2) << "the lookup gradient and dWo";
    const std::string text = fwd.to_text(prog.graph()), grad_text = bwd.to_text();
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), static_cast<long>(1 + prog.graph().size())) << text;
    EXPECT_NE(text.find("softmax_cross_entropy"), std::string::npos);
    size_t marked = 0;
    for (size_t at = grad_text.find(" folded"); at != std::string::npos; at = grad_text.find(" folded", at + 1)) ++marked;
    EXPECT_EQ(marked, 2u) << grad_text;
  }
}

}  // namespace
}  // namespace sylva
