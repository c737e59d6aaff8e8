#include "vertex_boundary.h"

#include <algorithm>

#include "sylva/core/error.h"

namespace sylva::detail {

using ir::Node;
using ir::OpKind;

namespace {
// The whole [rows, cols] matrix that a task window of an arena belongs to.
MatView rebase(MatView window, const Task& t, int64_t rows) {
  return {static_cast<char*>(window.data) - t.offset * window.cols * static_cast<int64_t>(dtype_size(window.dtype)),
          rows, window.cols, window.dtype};
}
}  // namespace

Boundary::Boundary(const plan::VertexPlan& vp, Backend& backend) : backend_(backend) {
  if (vp.scatter_source == ir::kNoNode) return;
  const Node& src = vp.forward.graph->node(vp.scatter_source);
  grads_ = DynamicTensor(src.type.shape, src.type.dtype, backend_.memory());
}

void Boundary::prepare(const BatchPlan& plan, const Schedule& schedule, const DynamicTensor* messages) {
  plan_ = &plan;
  messages_ = messages;
  schedule_ = &schedule;
  minus_ones_.assign(static_cast<size_t>(plan.rows), -1);
  if (messages_) grads_.reserve_rows(plan.rows);
}

void Boundary::start_backward(MatView d_pushed, std::span<const int32_t> d_pushed_rows, MatView d_pull,
                              bool d_pull_table) {
  SYLVA_ASSERT(!d_pull_table || !plan_->pull_rows.empty(), "a pull gradient into a table the pull did not read");
  d_pushed_ = d_pushed;
  d_pushed_rows_ = d_pushed_rows;
  d_pull_ = d_pull;
  d_pull_table_ = d_pull_table;
  if (plan_->write_message_grads) zero_message_grads(plan_->unwritten_rows);
  else if (messages_) backend_.fill_zero(message_grads());
}

bool Boundary::no_pushed_grad(const Task& t) const {
  if (d_pushed_rows_.empty()) return false;
  const auto r = d_pushed_rows_.subspan(static_cast<size_t>(t.offset), static_cast<size_t>(t.bs));
  return std::all_of(r.begin(), r.end(), [](int32_t k) { return k < 0; });
}

MatView Boundary::messages() const { return messages_->rows(0, schedule_->num_rows()); }

MatView Boundary::message_grads() { return grads_.rows(0, schedule_->num_rows()); }

void Boundary::zero_message_grads(std::span<const int32_t> rows) {
  if (!rows.empty()) backend_.copy_rows(message_grads(), {minus_ones_.data(), rows.size()}, message_grads(), rows);
}

void Boundary::read(const Node& n, const Task& t, MatView out) {
  const std::span<const int32_t> vertices = rows(schedule_->vertex_of_row, t);
  switch (n.op) {
    case OpKind::Pull:  // from [V, d] in vertex order, or a table (pull_from_table)
      backend_.copy_rows(pull_, plan_->pull_rows.empty() ? vertices : rows(plan_->pull_rows, t), out, {});
      return;
    case OpKind::PushGradIn:
      backend_.copy_rows(d_pushed_, d_pushed_rows_.empty() ? vertices : d_pushed_rows_.subspan(t.offset, t.bs), out,
                         {});
      return;
    case OpKind::Gather: backend_.copy_rows(messages(), rows(plan_->child_rows[n.attrs.slot], t), out, {}); return;
    case OpKind::GatherReduce: {
      backend_.fill_zero(out);
      const int32_t b = plan_->reduce_offsets[t.offset], e = plan_->reduce_offsets[t.offset + t.bs];
      if (e == b) return;  // an empty index span would mean "all rows"
      backend_.add_rows(messages(), {plan_->reduce_src.data() + b, static_cast<size_t>(e - b)},
                        rebase(out, t, plan_->rows), {plan_->reduce_dst.data() + b, static_cast<size_t>(e - b)});
      return;
    }
    default: break;
  }
  SYLVA_ASSERT(false, "unexpected boundary op ", ir::op_name(n.op));
}

void Boundary::read_windows(const ir::Graph& g, const Node& concat, const Task& t, MatView out) {
  int64_t col = 0;
  for (ir::NodeId in : concat.inputs) {
    const Node& gather = g.node(in);
    const int64_t cols = gather.type.cols();
    backend_.move_row_windows(messages(), rows(plan_->child_rows[gather.attrs.slot], t), out, {}, {0, col, cols},
                              false);
    col += cols;
  }
}

void Boundary::write(const Node& n, const Task& t, MatView value, const ir::Node* slice) {
  switch (n.op) {
    case OpKind::GatherGradOut: {
      const std::span<const int32_t> children = rows(plan_->child_rows[n.attrs.slot], t);
      if (slice)
        backend_.move_row_windows(value, {}, message_grads(), children, {slice->attrs.begin, 0, slice->type.cols()},
                                  !plan_->write_message_grads);
      else if (plan_->write_message_grads) backend_.copy_rows(value, {}, message_grads(), children);
      else backend_.add_rows(value, {}, message_grads(), children);
      return;
    }
    case OpKind::GatherReduceGradOut: {
      const int32_t b = plan_->reduce_offsets[t.offset], e = plan_->reduce_offsets[t.offset + t.bs];
      if (e > b)
        backend_.add_rows(rebase(value, t, plan_->rows), {plan_->reduce_dst.data() + b, static_cast<size_t>(e - b)},
                          message_grads(), {plan_->reduce_src.data() + b, static_cast<size_t>(e - b)});
      return;
    }
    case OpKind::PullGradOut:
      if (!d_pull_.data) return;
      if (d_pull_table_) backend_.add_rows(value, {}, d_pull_, rows(plan_->pull_rows, t));
      else backend_.copy_rows(value, {}, d_pull_, rows(schedule_->vertex_of_row, t));
      return;
    default: break;
  }
  SYLVA_ASSERT(false, "unexpected gradient output ", ir::op_name(n.op));
}

void Boundary::leave_out(const Node& n, const Task& t) {
  if (n.op == OpKind::GatherGradOut && plan_->write_message_grads)
    zero_message_grads(rows(plan_->child_rows[n.attrs.slot], t));
  if (n.op == OpKind::PullGradOut && d_pull_.data && !d_pull_table_)  // a table's rows: ids -1, nothing to add
    backend_.copy_rows(d_pull_, {minus_ones_.data(), static_cast<size_t>(t.bs)}, d_pull_,
                       rows(schedule_->vertex_of_row, t));
}

}  // namespace sylva::detail
