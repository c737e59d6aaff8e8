// The dynamic-declaration engine's backward pass: the groups in reverse,
// with the batching of the forward pass.
#include <algorithm>

#include "dynamic_decl.h"
#include "dynamic_decl_internal.h"

namespace sylva::bench::dd {

void Graph::backward() {
  SYLVA_CHECK(forwarded_, "[dynamic_decl] backward() needs a forward() of the current graph");
  SYLVA_CHECK(training_, "[dynamic_decl] backward() after a forward() without training=true");
  auto t0 = Clock::now();
  grads_.reserve(static_cast<size_t>(std::max<int64_t>(value_elems_, 1)) * esize_);
  backend_.fill_zero({grads_.data(), value_elems_, 1, dtype_});
  touched_.clear();
  for (size_t i = groups_.size(); i-- > 0;) backward_group(groups_[i]);
  for (auto& [name, rows] : touched_) {
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  }
  store_.flush_grads(touched_);  // a device's gradients into the ParameterSet
  stats_.compute_s += seconds_since(t0);
}

void Graph::backward_group(const Group& g) {
  using ir::OpKind;
  const std::span<const Expr> members(order_.data() + g.first, static_cast<size_t>(g.count));
  const Node& first = nodes_[static_cast<size_t>(members[0])];
  const Clock::time_point start = time_movement_ && moves_data(first.op) ? Clock::now() : Clock::time_point{};
  const MatView dy = grad_view(first.offset, g.rows, first.cols);
  const MatView y = value_view(first.offset, g.rows, first.cols);

  switch (first.op) {
    case Op::Constant: break;
    case Op::Lookup:
      backward_lookup(members, dy);
      break;
    case Op::MatMul:
      backward_matmul(g, dy);
      break;
    case Op::AddBias: {
      add_input_grad(g, 0, dy, input_in_place(g, 0));
      Parameter& b = *first.param;
      MatView s = scratch(2, 1, first.cols);
      MatView in[1] = {dy};
      kernel(OpKind::SumRows, in, s);
      backend_.accumulate(s, store_.grad(b.name));
      break;
    }
    case Op::Add:
      add_input_grad(g, 0, dy, input_in_place(g, 0));
      add_input_grad(g, 1, dy, input_in_place(g, 1));
      break;
    case Op::Mul: {
      MatView a = input_block(g, 0), b = input_block(g, 1);
      MatView in0[2] = {dy, b};
      grad_kernel(g, 0, OpKind::Mul, in0);
      MatView in1[2] = {dy, a};
      grad_kernel(g, 1, OpKind::Mul, in1);
      break;
    }
    case Op::Tanh: case Op::Sigmoid: {
      MatView in[2] = {y, dy};
      grad_kernel(g, 0, first.op == Op::Tanh ? OpKind::TanhGrad : OpKind::SigmoidGrad, in);
      break;
    }
    case Op::Relu: {
      MatView in[2] = {input_block(g, 0), dy};
      grad_kernel(g, 0, OpKind::ReluGrad, in);
      break;
    }
    case Op::Concat: {
      int64_t col = 0;
      for (int k = 0; k < first.nargs; ++k) {
        MatView in[1] = {dy};
        grad_kernel(g, k, OpKind::Slice, in, {.begin = col});
        col += cols(arg(first, k));
      }
      break;
    }
    case Op::Slice:
      backward_slice(g, dy);
      break;
    case Op::Xent: {
      MatView seed = scratch(2, 1, 1);
      const double one = 1.0;
      const float one_f = 1.0f;
      backend_.upload(seed.data, dtype_ == DType::f64 ? static_cast<const void*>(&one) : &one_f, esize_);
      MatView in[3] = {input_block(g, 0), group_ids(members), seed};
      grad_kernel(g, 0, OpKind::SoftmaxCrossEntropyGrad, in);
      break;
    }
  }
  if (time_movement_ && moves_data(first.op)) stats_.movement_s += seconds_since(start);
}

bool Graph::input_in_place(const Group& g, int k) const {
  return gathered_offsets_[static_cast<size_t>(g.gathered_first + k)] < 0;
}

void Graph::grad_kernel(const Group& g, int k, ir::OpKind op, std::span<const MatView> in, KernelOptions o) {
  const Node& first = nodes_[static_cast<size_t>(order_[static_cast<size_t>(g.first)])];
  const Node& a0 = nodes_[static_cast<size_t>(arg(first, k))];
  MatView d = scratch(1, g.rows, a0.cols);
  kernel(op, in, d, o);
  add_input_grad(g, k, d, input_in_place(g, k));
}

void Graph::backward_lookup(std::span<const Expr> members, MatView dy) {
  Parameter& table = *nodes_[static_cast<size_t>(members[0])].param;
  group_ids(members);
  const std::span<const int32_t> rows = ids_host_;
  backend_.add_rows(dy, {}, store_.grad(table.name), rows);
  auto& touched = touched_[table.name];
  for (int32_t r : rows)
    if (r >= 0) touched.push_back(r);
}

void Graph::backward_matmul(const Group& g, MatView dy) {
  using ir::OpKind;
  const Node& first = nodes_[static_cast<size_t>(order_[static_cast<size_t>(g.first)])];
  Parameter& w = *first.param;
  MatView x = input_block(g, 0);
  MatView wv = store_.value(w.name);
  MatView dx_in[2] = {dy, wv};
  if (input_in_place(g, 0)) {  // dX += dY·Wᵀ straight into the input's gradient
    const Node& a0 = nodes_[static_cast<size_t>(arg(first, 0))];
    kernel(OpKind::MatMul, dx_in, grad_view(a0.offset, g.rows, a0.cols), {.trans_b = true, .accumulate = true});
  } else {
    grad_kernel(g, 0, OpKind::MatMul, dx_in, {.trans_b = true});
  }
  MatView dw_in[2] = {x, dy};  // dW += Xᵀ·dY
  kernel(OpKind::MatMul, dw_in, store_.grad(w.name), {.trans_a = true, .accumulate = true});
}

void Graph::backward_slice(const Group& g, MatView dy) {
  const Node& first = nodes_[static_cast<size_t>(order_[static_cast<size_t>(g.first)])];
  if (!host_) {  // dy placed in the sliced columns of zero rows, then those rows added in
    MatView in[1] = {dy};
    grad_kernel(g, 0, ir::OpKind::Assemble, in, {.begin = first.begin});
    return;
  }
  // d(input)[:, begin:end] += dy, row by row into each input's gradient.
  const std::span<const Expr> members(order_.data() + g.first, static_cast<size_t>(g.count));
  int64_t row = 0;
  for (Expr e : members) {
    const Node& a = nodes_[static_cast<size_t>(arg(nodes_[static_cast<size_t>(e)], 0))];
    for (int64_t r = 0; r < a.rows; ++r, ++row)
      backend_.accumulate(dy.block(row, 1), grad_view(a.offset + r * a.cols + first.begin, 1, first.cols));
  }
}

void Graph::add_input_grad(const Group& g, int k, MatView d, bool in_place) {
  const std::span<const Expr> members(order_.data() + g.first, static_cast<size_t>(g.count));
  const Node& first = nodes_[static_cast<size_t>(members[0])];
  if (in_place) {
    const Node& a0 = nodes_[static_cast<size_t>(arg(first, k))];
    backend_.accumulate(d, grad_view(a0.offset, g.rows, a0.cols));
    return;
  }
  // Scattered back row block by row block: data movement.
  const Clock::time_point start = time_movement_ && !moves_data(first.op) ? Clock::now() : Clock::time_point{};
  if (host_) {
    int64_t row = 0;
    for (Expr e : members) {
      const Node& a = nodes_[static_cast<size_t>(arg(nodes_[static_cast<size_t>(e)], k))];
      backend_.accumulate(d.block(row, a.rows), grad_view(a.offset, a.rows, a.cols));
      row += a.rows;
    }
  } else {  // one kernel adding every row to its place
    const Node& a0 = nodes_[static_cast<size_t>(arg(first, k))];
    input_rows(members, k);
    backend_.add_rows(d, {}, rows_of(grads_, a0.cols), index_);
  }
  if (time_movement_ && !moves_data(first.op)) stats_.movement_s += seconds_since(start);
}

}  // namespace sylva::bench::dd
