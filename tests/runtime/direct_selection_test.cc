// Direct row selection (Optimisation::direct_row_selection): an apply
// whose output only select_rows reads is never laid out in vertex order;
// the selections copy their rows straight from F's rows, and a selection's
// gradient read only by ∂F goes straight into ∂F's rows. The same bits with
// the option off, under both policies, over batches that grow and shrink;
// the plans mark what they should; value() of the output still works.
//
// The same batches check message gradients written by their one parent
// (trees and chains: no zero fill, no add; DAGs keep both) against central
// differences, after batches that leave other rows behind in the arenas.
#include <gtest/gtest.h>

#include "support/test_device.h"
#include "support/test_util.h"
#include "sylva/plan/program_plan.h"
#include "sylva/sylva.h"

namespace sylva {
namespace {

constexpr int32_t kVocab = 9, kClasses = 3;
constexpr int64_t kH = 5;

// test::Family: trees, chains, DAGs and gated trees (their skipped gather
// gradients' rows must still come out zero).
using test::Family;
// Who reads the apply's output: one select_rows; two; a select_rows and a sum of all of it.
enum class Readers { select, two_selects, select_and_sum };

// F: test::family_cell; the classifier reads only the labelled rows.
struct Net {
  Program p{DType::f64};
  Symbol hidden, loss;
  Net(ParameterSet& ps, Family family, Readers readers) {
    ps.add("E", {kVocab, kH}, Init::uniform(-1, 1));
    ps.add("Ws", {kH, kClasses}, Init::glorot());
    const VertexFunction f = test::family_cell(ps, family, kH);
    const Symbol ids = p.input_ids("x"), labels = p.input_ids("labels");
    hidden = p.apply(f, lookup(p.param(ps["E"]), ids));
    loss = softmax_cross_entropy(matmul(select_rows(hidden, labels), p.param(ps["Ws"])), select_rows(labels, labels));
    if (readers == Readers::two_selects) {
      const Symbol worded = select_rows(hidden, ids);
      loss = loss + scale(sum(worded * worded), 0.1);
    } else if (readers == Readers::select_and_sum) {
      loss = loss + scale(sum(hidden * hidden), 0.1);
    }
  }
};

// Batches of graphs (a GraphBatch refers to its graphs: build it where they live).
std::vector<std::vector<InputGraph>> batches(Family family, uint64_t seed) {
  return test::growing_batches(family, seed, kVocab, kClasses);
}

// shown: the apply's output after the last backward; central differences with the option on.
test::StepRecord run(Family family, Readers readers, BatchingPolicy policy, bool direct) {
  ParameterSet ps{DType::f64, 3};
  Net m(ps, family, readers);
  Executor ex(m.p, ps, test::on_test_device(test::toggled({.policy = policy}, Optimisation::direct_row_selection, direct)));
  return test::step_through(ex, ps, m.loss, m.hidden, batches(family, 11), direct);
}

TEST(DirectRowSelection, SameBitsAsLayingTheOutputOutFirst) {
  for (Family family : {Family::tree, Family::chain, Family::dag, Family::gated_tree})
    for (Readers readers : {Readers::select, Readers::two_selects, Readers::select_and_sum})
      for (BatchingPolicy policy : {BatchingPolicy::Bfs, BatchingPolicy::Serial}) {
        SCOPED_TRACE(test::case_name(family, static_cast<int>(readers), policy));
        const test::StepRecord on = run(family, readers, policy, true), off = run(family, readers, policy, false);
        ASSERT_EQ(on.losses.size(), off.losses.size());
        for (size_t k = 0; k < on.losses.size(); ++k) EXPECT_EQ(on.losses[k], off.losses[k]) << "step " << k;
        for (size_t k = 0; k < on.grads.size(); ++k)
          EXPECT_EQ(test::relative_error(on.grads[k], off.grads[k]), 0.0) << "parameter " << k;
        EXPECT_EQ(test::relative_error(on.shown, off.shown), 0.0) << "value() of the apply";
        // Message gradients (written by one parent in trees and chains,
        // added in DAGs) are right, not just the same both ways.
        EXPECT_LT(on.fd_error, 1e-6);
      }
}

TEST(DirectRowSelection, PlansMarkOnlyAppliesReadBySelectionsAlone) {
  for (Readers readers : {Readers::select, Readers::two_selects, Readers::select_and_sum}) {
    ParameterSet ps{DType::f64, 3};
    Net m(ps, Family::tree, readers);
    const ir::Graph& g = m.p.graph();
    const auto id = static_cast<size_t>(m.hidden.id());
    const plan::ProgramPlan on = plan::plan_program(g, {});
    EXPECT_EQ(on.selected_in_place[id], readers == Readers::select_and_sum ? 0 : 1);
    EXPECT_EQ(on.to_text(g).find("rows selected in place") != std::string::npos, readers != Readers::select_and_sum);
    EXPECT_EQ(plan::plan_program(g, {.direct_row_selection = false}).selected_in_place[id], 0);
    // The selection's gradient folds into ∂F only where it alone is the
    // output's gradient (two selections: their sum is).
    for (bool direct : {true, false}) {
      const plan::ProgramGradPlan gp = plan::plan_program_gradient(g, m.loss.id(), {.direct_row_selection = direct});
      int folded = 0;
      for (const ir::Node& n : gp.graph->nodes())
        if (n.op == ir::OpKind::ScatterRows && gp.folded[static_cast<size_t>(n.id)]) ++folded;
      EXPECT_EQ(folded, direct && readers == Readers::select ? 1 : 0) << "readers " << static_cast<int>(readers);
    }
  }
}

TEST(DirectRowSelection, HoldsLessThanLayingTheOutputOutFirst) {
  size_t held[2] = {0, 0};
  const std::vector<InputGraph> graphs = batches(Family::tree, 5)[1];
  const GraphBatch b = GraphBatch::of(graphs);
  for (bool direct : {true, false}) {
    ParameterSet ps{DType::f64, 3};
    Net m(ps, Family::tree, Readers::select);
    Executor ex(m.p, ps, test::on_test_device(test::toggled({}, Optimisation::direct_row_selection, direct)));
    ex.forward(b, Mode::train);
    ex.backward(m.loss);
    held[direct] = ex.held_bytes();
  }
  // The output [V, h] and its gradient [V, h] in vertex order are never made.
  const int64_t rows = b.num_vertices();
  EXPECT_LE(held[1] + 2 * static_cast<size_t>(rows * kH) * sizeof(double), held[0]);
}

}  // namespace
}  // namespace sylva
