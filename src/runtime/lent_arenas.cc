// Lent arenas (Optimisation::lend_forward_arenas): some values of F keep
// a row per vertex although nothing reads them once F's task loop is done --
// a product computed before the loop for every row (x·W of a Tree-LSTM,
// read only by its task's fused gate group) is the common case. ∂F runs
// after F, so its values that keep every row can live in those arenas
// instead of arenas of their own: one buffer serves an F value during the
// forward and a ∂F value during the backward. Pairs are fixed once per
// runner; each lender's arena is sized for the larger of the two.
#include <algorithm>

#include "vertex_runner.h"

namespace sylva::detail {

using ir::Node;
using ir::NodeId;
using plan::Home;

// Lenders: F's values with rows for the whole minibatch (materialized, not
// task-local) that ∂F does not read (no forward_value of it) and that are
// not read outside F's loop: not the scatter source (parents' gathers,
// children in place), the push source, the pull or the concat that views
// the children's rows. Borrowers: ∂F's values with rows for the whole
// minibatch, but the gather-gradient block that may view the children's
// message gradients. The widest borrower takes the widest lender, and so on
// down: that pairing lends the most bytes per row.
void VertexRunner::pair_lent_arenas() {
  const plan::GraphPlan &f = plan_->forward, &b = plan_->backward;
  lender_.assign(b.graph->size(), ir::kNoNode);
  if (!options_.on(Optimisation::lend_forward_arenas)) return;
  std::vector<uint8_t> kept(f.graph->size(), 0);
  for (const Node& n : b.graph->nodes())
    if (b.home[static_cast<size_t>(n.id)] == Home::forward) kept[static_cast<size_t>(n.attrs.ref)] = 1;
  // The children blocks' nodes are read in place where a batch allows (batch_children_blocks.cc): never lent.
  const plan::VertexPlan::ChildrenBlock blocks = windows_ && options_.on(Optimisation::children_in_place)
                                                     ? plan_->children_block
                                                     : plan::VertexPlan::ChildrenBlock{};
  for (NodeId id : {plan_->scatter_source, plan_->push_source, plan_->pull, blocks.concat})
    if (id != ir::kNoNode) kept[static_cast<size_t>(id)] = 1;
  const auto whole = [this](const Values& v, size_t i) { return materialized(v, i) && !task_local(v, i); };
  std::vector<NodeId> lenders, borrowers;
  for (const Node& n : f.graph->nodes())
    if (whole(fwd_, static_cast<size_t>(n.id)) && !kept[static_cast<size_t>(n.id)]) lenders.push_back(n.id);
  for (const Node& n : b.graph->nodes())
    if (whole(bwd_, static_cast<size_t>(n.id)) && n.id != blocks.grad) borrowers.push_back(n.id);
  const auto widest_first = [](const Values& v) {
    return [&v](NodeId a, NodeId c) {
      return v.arena[static_cast<size_t>(a)].row_bytes() > v.arena[static_cast<size_t>(c)].row_bytes();
    };
  };
  std::stable_sort(lenders.begin(), lenders.end(), widest_first(fwd_));
  std::stable_sort(borrowers.begin(), borrowers.end(), widest_first(bwd_));
  for (size_t k = 0; k < std::min(lenders.size(), borrowers.size()); ++k)
    lender_[static_cast<size_t>(borrowers[k])] = lenders[k];
}

void VertexRunner::reserve_lent(size_t i, int64_t rows) {
  DynamicTensor& lender = fwd_.arena[static_cast<size_t>(lender_[i])];
  const auto bytes = static_cast<int64_t>(bwd_.arena[i].row_bytes()) * rows;
  const auto lender_row = static_cast<int64_t>(lender.row_bytes());
  lender.reserve_rows((bytes + lender_row - 1) / lender_row);
}

MatView VertexRunner::lent_rows(size_t i, int64_t offset, int64_t bs) {
  DynamicTensor& lender = fwd_.arena[static_cast<size_t>(lender_[i])];
  const DynamicTensor& own = bwd_.arena[i];
  const auto row = static_cast<int64_t>(own.row_bytes());
  SYLVA_ASSERT(static_cast<size_t>((offset + bs) * row) <= lender.arena().capacity(), "∂F node ", i, " rows [",
               offset, ", ", offset + bs, ") past its lender's arena (", lender.arena().capacity(), " bytes)");
  return {static_cast<char*>(lender.row(0)) + offset * row, bs, own.cols(), own.dtype()};
}

}  // namespace sylva::detail
