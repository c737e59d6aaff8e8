// The plan of a minibatch as a value: each pass takes a batch plan and
// returns one with its facts added (row tables, absences, message writes,
// children blocks), checked here against what the batch says, printed with
// to_text(), and shown by the Executor for the last minibatch.
#include "sylva/runtime/batch_plan.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "support/test_util.h"
#include "sylva/sylva.h"

namespace sylva {
namespace {

constexpr int64_t kH = 3;

// A binary cell whose concat of gather(0), gather(1) children_in_place reads
// as a view; `pull` makes it read a pulled row too.
struct Cell {
  ParameterSet ps{DType::f64, 1};
  Program p{DType::f64};
  Symbol apply;
  std::shared_ptr<const plan::VertexPlan> vp;
  Cell() {
    ps.add("W", {2 * kH, kH}, Init::glorot());
    ps.add("E", {5, kH}, Init::uniform(-1, 1));
    VertexFunction f("cell", kH, DType::f64);
    const Symbol h = tanh(matmul(concat({f.gather(0), f.gather(1)}), f.param(ps["W"])) + f.pull(kH));
    f.scatter(h);
    f.push(h);
    apply = p.apply(f, lookup(p.param(ps["E"]), p.input_ids("x")));
    vp = plan::build_vertex_plan(f.shared_graph(), {});
  }
};

std::vector<InputGraph> with_ids(std::vector<InputGraph> gs) {
  for (InputGraph& g : gs) {
    std::vector<int32_t> x(static_cast<size_t>(g.num_vertices()), 1);
    for (int32_t v = 0; v < g.num_vertices(); ++v)
      if (!g.children(v).empty()) x[static_cast<size_t>(v)] = -1;  // words on the leaves only
    g.set_ids("x", std::move(x));
  }
  return gs;
}

// Graphs with words on their leaves, their batch, its Bfs schedule and the
// words' ids in vertex order. Tests take it apart: auto& [graphs, b, s, ids] = mb.
struct Minibatch {
  std::vector<InputGraph> graphs;
  GraphBatch batch;
  Schedule schedule;
  std::vector<int32_t> ids;
  explicit Minibatch(std::vector<InputGraph> gs)
      : graphs(with_ids(std::move(gs))), batch(GraphBatch::of(graphs)),
        schedule(Schedule::build(batch, BatchingPolicy::Bfs)), ids(batch.ids("x")) {}
  Minibatch(const Minibatch&) = delete;
  Minibatch& operator=(const Minibatch&) = delete;
};

TEST(BatchPlan, RowTablesFollowTheSchedule) {
  Cell c;
  const Minibatch mb({InputGraph::from_children({{}, {}, {0, 1}}, "a")});
  const auto& [graphs, b, s, ids] = mb;
  const BatchPlan p = plan_rows(*c.vp, b, s, {}, false);
  EXPECT_EQ(p.rows, 3);
  EXPECT_EQ(p.task_rows, 2);
  ASSERT_EQ(p.child_rows.size(), 2u);
  const int32_t root_row = s.row_of_vertex[2];
  EXPECT_EQ(p.child_rows[0][static_cast<size_t>(root_row)], s.row_of_vertex[0]);
  EXPECT_EQ(p.child_rows[1][static_cast<size_t>(root_row)], s.row_of_vertex[1]);
  EXPECT_EQ(p.child_rows[0][static_cast<size_t>(s.row_of_vertex[0])], -1);
  EXPECT_TRUE(p.pull_rows.empty());
  EXPECT_TRUE(p.absence.empty()) << "no pass has run";
  const BatchPlan t = plan_rows(*c.vp, b, s, ids, true);
  for (int64_t r = 0; r < t.rows; ++r)
    EXPECT_EQ(t.pull_rows[static_cast<size_t>(r)], ids[static_cast<size_t>(s.vertex_of_row[static_cast<size_t>(r)])]);
}

TEST(BatchPlan, AVertexWithMoreChildrenThanFReadsIsAClearError) {
  Cell c;
  const Minibatch mb({InputGraph::from_children({{}, {}, {}, {0, 1, 2}}, "wide tree")});
  const auto& [graphs, b, s, ids] = mb;
  EXPECT_CONTAINS(test::error_of([&] { plan_rows(*c.vp, b, s, {}, false); }), "has 3 children but vertex function");
}

TEST(BatchPlan, AbsencesSayWhatEachTaskLacks) {
  Cell c;
  const Minibatch mb({complete_binary_tree(4, "t")});
  const auto& [graphs, b, s, ids] = mb;
  const BatchPlan p = plan_absences(plan_rows(*c.vp, b, s, ids, false), s, ids);
  ASSERT_EQ(p.absence.size(), 3u);  // leaves, their parents, the root
  EXPECT_EQ(p.absence[0].slots, 0b11u) << "the leaves have no child in either slot";
  EXPECT_FALSE(p.absence[0].pull_grad_unused) << "the leaves have words";
  for (size_t ti : {1, 2}) {
    EXPECT_EQ(p.absence[ti].slots, 0u) << ti;
    EXPECT_TRUE(p.absence[ti].pull_grad_unused) << "inner vertices look up id -1";
  }
  EXPECT_NE(p.to_text().find("task 0: rows [0, 4); absent: slot 0, slot 1"), std::string::npos) << p.to_text();
  EXPECT_NE(p.to_text().find("task 1: rows [4, 6); absent: pulled rows (id -1)"), std::string::npos) << p.to_text();
}

TEST(BatchPlan, MessageGradientsAreWrittenWhereEachRowHasOneWriter) {
  Cell c;
  const std::vector<InputGraph> trees = with_ids({complete_binary_tree(4, "t"), complete_binary_tree(2, "u")});
  const GraphBatch b = GraphBatch::of(trees);
  const Schedule s = Schedule::build(b, BatchingPolicy::Bfs);
  const BatchPlan p = plan_message_writes(plan_rows(*c.vp, b, s, {}, false), *c.vp);
  EXPECT_TRUE(p.write_message_grads);
  ASSERT_EQ(p.unwritten_rows.size(), 2u) << "the two roots";
  for (int32_t r : p.unwritten_rows)
    for (const std::vector<int32_t>& slot : p.child_rows)
      EXPECT_EQ(std::count(slot.begin(), slot.end(), r), 0) << "row " << r << " is somebody's child";
  // A DAG: vertex 0 is a child of both 2 and 3.
  const std::vector<InputGraph> dag = with_ids({InputGraph::from_children({{}, {}, {0, 1}, {0, 1}, {2, 3}}, "dag")});
  const GraphBatch bd = GraphBatch::of(dag);
  const Schedule sd = Schedule::build(bd, BatchingPolicy::Bfs);
  const BatchPlan pd = plan_message_writes(plan_rows(*c.vp, bd, sd, {}, false), *c.vp);
  EXPECT_FALSE(pd.write_message_grads);
  EXPECT_NE(pd.to_text().find("message gradients: added into zeros"), std::string::npos) << pd.to_text();
}

TEST(BatchPlan, ChildrenBlocksOnlyWhereEveryTaskHasItsChildrenInOrder) {
  Cell c;
  const plan::VertexPlan::ChildrenBlock nodes = c.vp->children_block;
  ASSERT_NE(nodes.concat, ir::kNoNode);
  ASSERT_NE(nodes.grad, ir::kNoNode);
  EXPECT_NE(c.vp->to_text().find("children block: F's concat %" + std::to_string(nodes.concat)), std::string::npos);
  EXPECT_EQ(c.vp->gather_grad_slots.size(), 2u) << "∂F sends a gradient to each slot";
  const auto plan_of = [&](const std::vector<InputGraph>& gs) {
    const GraphBatch b = GraphBatch::of(gs);
    const Schedule s = Schedule::build(b, BatchingPolicy::Bfs);
    return plan_children_blocks(plan_message_writes(plan_rows(*c.vp, b, s, {}, false), *c.vp), *c.vp);
  };
  const BatchPlan complete = plan_of(with_ids({complete_binary_tree(4, "a"), complete_binary_tree(4, "b")}));
  ASSERT_TRUE(complete.children.in_place) << complete.to_text();
  EXPECT_EQ(complete.children.nodes.concat, nodes.concat);
  EXPECT_EQ(complete.children.blocked.back(), 6) << "every inner vertex reads its children in place";
  EXPECT_EQ(complete.children.concat_rows, 8) << "the concat keeps the leaves' task only";
  for (int64_t r = 0; r < complete.rows; ++r) {
    const int32_t first = complete.children.first_child[static_cast<size_t>(r)];
    EXPECT_EQ(first, complete.child_rows[0][static_cast<size_t>(r)]) << r;
    if (first >= 0) {
      EXPECT_EQ(complete.child_rows[1][static_cast<size_t>(r)], first + 1) << r;
    }
  }
  // Complete trees of different sizes still have every task's children in order.
  EXPECT_TRUE(plan_of(with_ids({complete_binary_tree(4, "a"), complete_binary_tree(2, "b")})).children.in_place);
  // A root whose children are an inner vertex and a leaf: its children's rows are not in slot order.
  const BatchPlan lopsided = plan_of(with_ids({InputGraph::from_children({{}, {}, {}, {0, 1}, {3, 2}}, "l")}));
  EXPECT_FALSE(lopsided.children.in_place) << lopsided.to_text();
  EXPECT_NE(lopsided.to_text().find("children in place: no"), std::string::npos);
}

// At the leaves (the largest task) what comes from the children is known
// zero and not written: the task-local values computed from them need only
// the largest inner task's rows.
TEST(BatchPlan, TaskLocalValuesGetTheRowsOfTheLargestTaskThatWritesThem) {
  Cell c;
  const Minibatch mb({complete_binary_tree(8, "t")});
  const auto& [graphs, b, s, ids] = mb;
  const RunFacts facts = run_facts(*c.vp, Optimisations::all(), /*row_windows=*/true);
  const BatchPlan p = build_batch_plan(*c.vp, {.batch = b, .schedule = s, .pull_ids = ids, .facts = &facts},
                                       Optimisations::all());
  ASSERT_EQ(p.task_rows, 8);
  int below = 0, task_local = 0;
  for (size_t i = 0; i < p.task_local_rows_f.size(); ++i) {
    if (!facts.forward.task_local[i]) {
      EXPECT_EQ(p.task_local_rows_f[i], 0) << "F %" << i << " is not task-local";
      continue;
    }
    ++task_local;
    EXPECT_LE(p.task_local_rows_f[i], p.task_rows);
    below += p.task_local_rows_f[i] > 0 && p.task_local_rows_f[i] < p.task_rows;
  }
  ASSERT_GT(task_local, 0) << c.vp->to_text();
  EXPECT_GT(below, 0) << "a value computed from the children needs only the inner tasks' 4 rows\n" << p.to_text();
  EXPECT_NE(p.to_text().find("task-local rows (largest task that writes each):"), std::string::npos);
  // Without skipping zero work every task writes: the largest task's rows.
  const Optimisations no_skip = ExecutorOptions{}.without(Optimisation::skip_zero_work).optimisations;
  const RunFacts all_write = run_facts(*c.vp, no_skip, true);
  const BatchPlan q = build_batch_plan(*c.vp, {.batch = b, .schedule = s, .pull_ids = ids, .facts = &all_write}, no_skip);
  for (size_t i = 0; i < q.task_local_rows_f.size(); ++i)
    EXPECT_EQ(q.task_local_rows_f[i], all_write.forward.task_local[i] ? q.task_rows : 0) << i;
}

// A plan built in an earlier plan's memory (the executor hands each
// runner's last plan back as storage) equals one built afresh, whichever of
// the two minibatches is larger: nothing of the earlier plan is kept.
TEST(BatchPlan, AnEarlierPlansMemoryChangesNothing) {
  Cell c;
  const Minibatch big({complete_binary_tree(8, "a"), complete_binary_tree(4, "b")});
  const Minibatch lopsided({InputGraph::from_children({{}, {}, {}, {0, 1}, {3, 2}}, "l")});
  const RunFacts facts = run_facts(*c.vp, Optimisations::all(), /*row_windows=*/true);
  const auto build = [&](const Minibatch& mb, BatchPlan storage) {
    return build_batch_plan(*c.vp,
                            {.batch = mb.batch, .schedule = mb.schedule, .pull_ids = mb.ids, .pull_from_table = true,
                             .row_windows = true, .facts = &facts},
                            Optimisations::all(), std::move(storage));
  };
  for (const auto& [first, second] : {std::pair{&big, &lopsided}, std::pair{&lopsided, &big}}) {
    const BatchPlan fresh = build(*second, {});
    const BatchPlan reused = build(*second, build(*first, {}));
    EXPECT_EQ(reused.to_text(), fresh.to_text());
    EXPECT_TRUE(reused == fresh) << "a table or fact differs beyond what to_text() shows";
  }
  EXPECT_TRUE(build(big, {}).children.in_place);
  EXPECT_FALSE(build(lopsided, {}).children.in_place) << "the two minibatches differ where it matters";
}

TEST(BatchPlan, TheExecutorShowsTheLastMinibatchsPlan) {
  Cell c;
  Executor ex(c.p, c.ps);
  EXPECT_CONTAINS(test::error_of([&] { ex.batch_plan(c.apply); }), "no batch plan yet");
  const std::vector<InputGraph> gs = with_ids({complete_binary_tree(4, "a"), complete_binary_tree(4, "b")});
  const GraphBatch b = GraphBatch::of(gs);
  ex.forward(b, Mode::eval);
  const BatchPlan& p = ex.batch_plan(c.apply);
  EXPECT_EQ(p.rows, b.num_vertices());
  EXPECT_FALSE(p.pull_rows.empty()) << "the lookup is read straight from the table (pull_from_table)";
  EXPECT_TRUE(p.children.in_place);
  const RunFacts facts = run_facts(ex.vertex_plan(c.apply), Optimisations::all(), /*row_windows=*/true);
  EXPECT_EQ(p.to_text(), build_batch_plan(ex.vertex_plan(c.apply),
                                          {.batch = b, .schedule = ex.schedule(), .pull_ids = b.ids("x"),
                                           .pull_from_table = true, .row_windows = true, .facts = &facts},
                                          Optimisations::all())
                             .to_text());
  // Without children_in_place no pass adds the blocks.
  Executor off(c.p, c.ps, ExecutorOptions{}.without(Optimisation::children_in_place));
  off.forward(b, Mode::eval);
  EXPECT_FALSE(off.batch_plan(c.apply).children.in_place);
}

}  // namespace
}  // namespace sylva
