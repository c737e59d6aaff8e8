// GEMM operands in the runner's precision. Under bf16 a GEMM reads a
// parameter through the ParamStore's bfloat16 copy (refreshed once per
// forward) and a fixed value (computed from parameters once per minibatch,
// e.g. the IOS pass's concatenated gate weights) through a bfloat16 copy
// made when the value is written, so that the GEMMs of every task read
// operands converted once; values with a row per vertex are converted by
// the kernel as it reads them.
#include "vertex_runner.h"

namespace sylva::detail {

using ir::Node;
using ir::NodeId;
using plan::Home;

void VertexRunner::mark_gemm_operands() {
  fwd_.gemm_reads.assign(fwd_.fixed.size(), 0);
  bwd_.gemm_reads.assign(bwd_.fixed.size(), 0);
  if (options_.precision == Precision::fp32) return;
  for (Values* v : {&fwd_, &bwd_})
    for (const Node& n : v->plan->graph->nodes()) {
      if (ir::op_def(n.op).category != ir::OpCategory::gemm) continue;
      for (NodeId in : n.inputs) {
        Values* at = v;
        NodeId id = in;
        if (at->plan->home[static_cast<size_t>(id)] == Home::forward)  // ∂F reads F's value
          at = &fwd_, id = v->plan->graph->node(in).attrs.ref;
        if (at->plan->home[static_cast<size_t>(id)] == Home::fixed) at->gemm_reads[static_cast<size_t>(id)] = 1;
      }
    }
  for (Values* v : {&fwd_, &bwd_}) v->low = make_value_buffers(v->fixed.size(), backend_.memory());
}

MatView VertexRunner::operand(Values& v, const Node& n, NodeId in, const Task& t) {
  if (options_.precision == Precision::fp32 || ir::op_def(n.op).category != ir::OpCategory::gemm) return view(v, in, t);
  Values* at = &v;
  NodeId id = in;
  if (at->plan->home[static_cast<size_t>(id)] == Home::forward) at = &fwd_, id = v.plan->graph->node(in).attrs.ref;
  switch (at->plan->home[static_cast<size_t>(id)]) {
    case Home::param: return params_.gemm_value(at->plan->graph->node(id).attrs.name, options_.precision);
    case Home::fixed:  // its copy, unless it was never written (then the kernel converts it)
      if (const MatView low = at->low[static_cast<size_t>(id)].view; low.data) return low;
      return view(v, in, t);
    default: return view(v, in, t);
  }
}

void VertexRunner::wrote_fixed(Values& v, NodeId id) {
  if (!v.gemm_reads[static_cast<size_t>(id)]) return;
  const MatView value = v.fixed[static_cast<size_t>(id)].view;
  backend_.convert(value, v.low[static_cast<size_t>(id)].shape(value.rows, value.cols, DType::bf16));
}

}  // namespace sylva::detail
