// Pulls from the table (Optimisation::pull_from_table): a lookup that
// only a vertex function's pull reads is never laid out in vertex order;
// the pull copies the table's rows, and where the table's gradient is the
// lookup's alone, ∂F adds its pull gradient straight into the table's
// gradient rows. Against the option off, under both policies, over batches
// that grow and shrink: the same losses, the same bits for every other
// gradient, the table's gradient to rounding (its rows are summed in row
// order, not vertex order) and against central differences, the same
// sparse rows; the plans mark what they should; value() of the lookup
// still works; it holds less; a bad id is still named.
#include <gtest/gtest.h>

#include "support/test_device.h"
#include "support/test_util.h"
#include "sylva/plan/program_plan.h"
#include "sylva/sylva.h"

namespace sylva {
namespace {

constexpr int32_t kVocab = 7, kClasses = 3;  // few words: rows repeat within a batch
constexpr int64_t kH = 4;

// test::Family: trees, chains, DAGs and gated trees (tasks that pulled only
// id -1 rows skip their gather gradients, and their pull gradient is unused).
using test::Family;
// Who reads the lookup and the table: the pull alone; the pull and a sum
// of the lookup (not in place); the pull alone but the table also read
// densely (pulled in place, its gradient laid out as before).
enum class Readers { pull, pull_and_sum, dense_table };

struct Net {
  Program p{DType::f64};
  Symbol looked_up, hidden, loss;
  Net(ParameterSet& ps, Family family, Readers readers) {
    ps.add("E", {kVocab, kH}, Init::uniform(-1, 1));
    ps.add("Ws", {kH, kClasses}, Init::glorot());
    const VertexFunction f = test::family_cell(ps, family, kH);  // adds W
    const Symbol E = p.param(ps["E"]);
    looked_up = lookup(E, p.input_ids("x"));
    hidden = p.apply(f, looked_up);
    loss = softmax_cross_entropy(matmul(hidden, p.param(ps["Ws"])), p.input_ids("labels"));
    if (readers == Readers::pull_and_sum) loss = loss + scale(sum(looked_up * looked_up), 0.1);
    if (readers == Readers::dense_table) loss = loss + scale(sum(E * E), 0.01);
  }
};

// Ids -1 too, and few words: rows repeat within a batch.
std::vector<std::vector<InputGraph>> batches(Family family, uint64_t seed) {
  return test::growing_batches(family, seed, kVocab, kClasses);
}

// shown: value() of the lookup after the last backward; central differences with the option on.
test::StepRecord run(Family family, Readers readers, BatchingPolicy policy, bool on) {
  ParameterSet ps{DType::f64, 3};
  Net m(ps, family, readers);
  Executor ex(m.p, ps, test::on_test_device(test::toggled({.policy = policy}, Optimisation::pull_from_table, on)));
  return test::step_through(ex, ps, m.loss, m.looked_up, batches(family, 17), on);
}

TEST(PullFromTable, SameResultsAsLayingTheLookupOutFirst) {
  for (Family family : {Family::tree, Family::chain, Family::dag, Family::gated_tree})
    for (Readers readers : {Readers::pull, Readers::pull_and_sum, Readers::dense_table})
      for (BatchingPolicy policy : {BatchingPolicy::Bfs, BatchingPolicy::Serial}) {
        SCOPED_TRACE(test::case_name(family, static_cast<int>(readers), policy));
        const test::StepRecord on = run(family, readers, policy, true), off = run(family, readers, policy, false);
        ASSERT_EQ(on.losses.size(), off.losses.size());
        for (size_t k = 0; k < on.losses.size(); ++k) EXPECT_EQ(on.losses[k], off.losses[k]) << "step " << k;
        EXPECT_EQ(on.sparse_rows, off.sparse_rows);
        ASSERT_EQ(on.grads.size(), 3u);
        EXPECT_LT(test::relative_error(on.grads[0], off.grads[0]), 1e-13) << "E: summed in another order";
        for (size_t k = 1; k < on.grads.size(); ++k)
          EXPECT_EQ(test::relative_error(on.grads[k], off.grads[k]), 0.0) << "parameter " << k;
        EXPECT_EQ(test::relative_error(on.shown, off.shown), 0.0) << "value() of the lookup";
        EXPECT_LT(on.fd_error, 1e-6);
      }
}

TEST(PullFromTable, PlansMarkOnlyLookupsThePullAloneReads) {
  for (Readers readers : {Readers::pull, Readers::pull_and_sum, Readers::dense_table}) {
    SCOPED_TRACE("readers " + std::to_string(static_cast<int>(readers)));
    ParameterSet ps{DType::f64, 3};
    Net m(ps, Family::tree, readers);
    const ir::Graph& g = m.p.graph();
    const auto id = static_cast<size_t>(m.looked_up.id());
    const plan::ProgramPlan on = plan::plan_program(g, {});
    const bool in_place = readers != Readers::pull_and_sum;
    EXPECT_EQ(on.pulled_in_place[id], in_place ? 1 : 0);
    EXPECT_EQ(on.to_text(g).find("pulled in place") != std::string::npos, in_place);
    EXPECT_EQ(plan::plan_program(g, {.pull_from_table = false}).pulled_in_place[id], 0);
    // The pull gradient goes into the table only where the table's
    // gradient is the lookup's alone (a dense reader of E: laid out).
    for (bool option : {true, false}) {
      const plan::ProgramGradPlan gp = plan::plan_program_gradient(g, m.loss.id(), {.pull_from_table = option});
      int marked = 0;
      for (const ir::Node& n : gp.graph->nodes())
        if (gp.pull_grad_in_place[static_cast<size_t>(n.id)]) {
          EXPECT_EQ(n.op, ir::OpKind::ApplyGrad);
          ++marked;
        }
      EXPECT_EQ(marked, option && readers == Readers::pull ? 1 : 0) << "option " << option;
    }
  }
}

TEST(PullFromTable, HoldsLessThanLayingTheLookupOutFirst) {
  size_t held[2] = {0, 0};
  const std::vector<InputGraph> graphs = batches(Family::tree, 5)[1];
  const GraphBatch b = GraphBatch::of(graphs);
  for (bool on : {true, false}) {
    ParameterSet ps{DType::f64, 3};
    Net m(ps, Family::tree, Readers::pull);
    Executor ex(m.p, ps, test::on_test_device(test::toggled({}, Optimisation::pull_from_table, on)));
    ex.forward(b, Mode::train);
    ex.backward(m.loss);
    held[on] = ex.held_bytes();
  }
  // The looked-up rows [V, d] and their gradient [V, d] in vertex order are never made.
  EXPECT_LE(held[1] + 2 * static_cast<size_t>(b.num_vertices() * kH) * sizeof(double), held[0]);
}

TEST(PullFromTable, AnIdOutOfRangeIsStillNamed) {
  ParameterSet ps{DType::f64, 3};
  Net m(ps, Family::tree, Readers::pull);
  Executor ex(m.p, ps, test::on_test_device({}));
  std::vector<InputGraph> graphs = batches(Family::tree, 5)[0];
  std::vector<int32_t> ids = graphs[1].ids("x");
  ids.back() = kVocab;
  graphs[1].set_ids("x", ids);
  const GraphBatch b = GraphBatch::of(graphs);
  const std::string what = test::error_of([&] { ex.forward(b, Mode::train); });
  EXPECT_CONTAINS(what, "out of range");
  EXPECT_CONTAINS(what, graphs[1].source());
}

}  // namespace
}  // namespace sylva
