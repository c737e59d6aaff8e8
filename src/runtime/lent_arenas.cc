// Lent arenas (Optimisation::lend_forward_arenas): some values of F keep
// a row per vertex although nothing reads them once F's task loop is done --
// a product computed before the loop for every row (x·W of a Tree-LSTM,
// read only by its task's fused gate group) is the common case. ∂F runs
// after F, so its values that keep every row can live in those arenas
// instead of arenas of their own: one buffer serves an F value during the
// forward and a ∂F value during the backward. The pairs are a run fact
// (RunFacts::lender, run_facts.cc); here the runner reads them, and sizes
// each lender's arena for the larger of the two.
#include <algorithm>

#include "vertex_runner.h"

namespace sylva::detail {

using ir::Node;
using ir::NodeId;
using plan::Home;

void VertexRunner::reserve_lent(size_t i, int64_t rows) {
  DynamicTensor& lender = fwd_.arena[static_cast<size_t>(facts_.lender[i])];
  const auto bytes = static_cast<int64_t>(bwd_.arena[i].row_bytes()) * rows;
  const auto lender_row = static_cast<int64_t>(lender.row_bytes());
  lender.reserve_rows((bytes + lender_row - 1) / lender_row);
}

MatView VertexRunner::lent_rows(size_t i, int64_t offset, int64_t bs) {
  DynamicTensor& lender = fwd_.arena[static_cast<size_t>(facts_.lender[i])];
  const DynamicTensor& own = bwd_.arena[i];
  const auto row = static_cast<int64_t>(own.row_bytes());
  SYLVA_ASSERT(static_cast<size_t>((offset + bs) * row) <= lender.arena().capacity(), "∂F node ", i, " rows [",
               offset, ", ", offset + bs, ") past its lender's arena (", lender.arena().capacity(), " bytes)");
  return {static_cast<char*>(lender.row(0)) + offset * row, bs, own.cols(), own.dtype()};
}

}  // namespace sylva::detail
