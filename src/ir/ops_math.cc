// Shape inference and gradient rules of the arithmetic ops.
#include "op_defs.h"

namespace sylva::ir::detail {
namespace {

using T = std::span<const ValueType>;

// ---- matmul ----------------------------------------------------------------
// C = op(A) op(B). A rowed operand's row count is dynamic: it may be the
// output's rows (A not transposed) or the contracted dimension (A
// transposed and B rowed: Aᵀ·B sums over rows, e.g. dW = Xᵀ·dY).
ValueType infer_matmul(const Node& n, T in) {
  const ValueType &a = in[0], &b = in[1];
  require_float(n, a, "A");
  require_float(n, b, "B");
  SYLVA_CHECK(a.dtype == b.dtype, "[matmul] dtypes differ: ", a.str(), " vs ", b.str());
  SYLVA_CHECK(a.rowed || a.shape.rank() <= 2, "[matmul] A must be a matrix, got ", a.str());
  SYLVA_CHECK(b.rowed || b.shape.rank() <= 2, "[matmul] B must be a matrix, got ", b.str());
  bool ta = n.attrs.trans_a, tb = n.attrs.trans_b;
  int64_t a_rows = matrix_rows(a), b_rows = matrix_rows(b);
  int64_t out_rows = ta ? a.cols() : a_rows;
  int64_t inner_a = ta ? a_rows : a.cols();
  int64_t inner_b = tb ? b.cols() : b_rows;
  int64_t out_cols = tb ? b_rows : b.cols();
  SYLVA_CHECK(out_cols != -1, "[matmul] the output's columns would be a rowed operand's rows (B rowed and "
              "transposed); not supported");
  SYLVA_CHECK(inner_a == inner_b, "[matmul] inner dimensions differ: ", a.str(), (ta ? "ᵀ" : ""), " x ",
              b.str(), (tb ? "ᵀ" : ""), " (", inner_a == -1 ? "rows" : std::to_string(inner_a), " vs ",
              inner_b == -1 ? "rows" : std::to_string(inner_b), ")");
  if (out_rows == -1) return {a.dtype, true, Shape{out_cols}};
  return {a.dtype, false, Shape{out_rows, out_cols}};
}

// 2·m·k·n, a rowed operand's rows being `rows`.
int64_t flops_matmul(const Node& n, const Graph& g, int64_t rows) {
  const auto r = [&](const ValueType& v) { return v.rowed ? rows : v.fixed_rows(); };
  const ValueType &a = g.node(n.inputs[0]).type, &b = g.node(n.inputs[1]).type;
  const int64_t m = n.attrs.trans_a ? a.cols() : r(a);
  const int64_t k = n.attrs.trans_a ? r(a) : a.cols();
  const int64_t cols = n.attrs.trans_b ? r(b) : b.cols();
  return 2 * m * k * cols;
}

void grad_matmul(GradContext& c) {
  const Attrs& at = c.node().attrs;
  bool ta = at.trans_a, tb = at.trans_b;
  NodeId a = c.input(0), b = c.input(1), dy = c.dy();
  auto mm = [&](NodeId x, NodeId y, bool tx, bool ty) {
    Attrs m;
    m.trans_a = tx;
    m.trans_b = ty;
    return c.emit(OpKind::MatMul, {x, y}, m);
  };
  if (c.needs_grad(0)) {
    NodeId da = !ta ? (!tb ? mm(dy, b, false, true) : mm(dy, b, false, false))
                    : (!tb ? mm(b, dy, false, true) : mm(b, dy, true, true));
    c.add_grad(0, da);
  }
  if (c.needs_grad(1)) {
    NodeId db = !tb ? (!ta ? mm(a, dy, true, false) : mm(a, dy, false, false))
                    : (!ta ? mm(dy, a, true, false) : mm(dy, a, true, true));
    c.add_grad(1, db);
  }
}

// ---- elementwise binary -------------------------------------------------------
ValueType infer_binary(const Node& n, T in) { return broadcast_type(n, in[0], in[1]); }

void grad_add(GradContext& c) {
  for (int k = 0; k < 2; ++k)
    if (c.needs_grad(k)) c.add_grad(k, reduce_to(c, c.dy(), c.type_of(c.input(k))));
}

void grad_sub(GradContext& c) {
  if (c.needs_grad(0)) c.add_grad(0, reduce_to(c, c.dy(), c.type_of(c.input(0))));
  if (c.needs_grad(1)) {
    Attrs neg;
    neg.alpha = -1.0;
    c.add_grad(1, reduce_to(c, c.emit(OpKind::Scale, {c.dy()}, neg), c.type_of(c.input(1))));
  }
}

void grad_mul(GradContext& c) {
  if (c.needs_grad(0))
    c.add_grad(0, reduce_to(c, c.emit(OpKind::Mul, {c.dy(), c.input(1)}), c.type_of(c.input(0))));
  if (c.needs_grad(1))
    c.add_grad(1, reduce_to(c, c.emit(OpKind::Mul, {c.dy(), c.input(0)}), c.type_of(c.input(1))));
}

// ---- elementwise unary ---------------------------------------------------------
ValueType infer_unary(const Node& n, T in) {
  require_float(n, in[0], "input");
  return in[0];
}

// y' rules that read the output y (tanh, sigmoid, relu) or the input x
// (log). Relu's reads y = relu(x), positive exactly where x is: ∂F then
// needs only the value F keeps anyway (a cell's output, its message), not
// the pre-activation too (as PyTorch's relu backward reads its result).
template <OpKind G, bool UsesOutput>
void grad_unary(GradContext& c) {
  if (c.needs_grad(0)) c.add_grad(0, c.emit(G, {UsesOutput ? c.output() : c.input(0), c.dy()}));
}

void grad_exp(GradContext& c) {
  if (c.needs_grad(0)) c.add_grad(0, c.emit(OpKind::Mul, {c.dy(), c.output()}));
}

void grad_scale(GradContext& c) {
  if (c.needs_grad(0)) c.add_grad(0, c.emit(OpKind::Scale, {c.dy()}, c.node().attrs));
}

// (value, dy) -> dx helpers emitted by gradient rules.
ValueType infer_grad_pair(const Node& n, T in) { return broadcast_type(n, in[0], in[1]); }

// ---- softmax family ----------------------------------------------------------------
void grad_softmax(GradContext& c) {
  if (c.needs_grad(0)) c.add_grad(0, c.emit(OpKind::SoftmaxGrad, {c.output(), c.dy()}));
}
void grad_log_softmax(GradContext& c) {
  if (c.needs_grad(0)) c.add_grad(0, c.emit(OpKind::LogSoftmaxGrad, {c.output(), c.dy()}));
}

void check_labels(const Node& n, const ValueType& logits, const ValueType& labels) {
  require_float(n, logits, "logits");
  SYLVA_CHECK(labels.dtype == DType::i32 && labels.cols() == 1, "[", op_name(n.op),
              "] labels must be int32 with one column (e.g. input_ids), got ", labels.str());
  SYLVA_CHECK(labels.rowed == logits.rowed && (labels.rowed || labels.shape.rows() == logits.shape.rows()),
              "[", op_name(n.op), "] labels ", labels.str(), " do not match the rows of logits ", logits.str());
}

ValueType infer_xent(const Node& n, T in) {
  check_labels(n, in[0], in[1]);
  return {in[0].dtype, false, Shape{1}};
}

void grad_xent(GradContext& c) {
  if (c.needs_grad(0))
    c.add_grad(0, c.emit(OpKind::SoftmaxCrossEntropyGrad, {c.input(0), c.input(1), c.dy()}, c.node().attrs));
}

ValueType infer_xent_grad(const Node& n, T in) {
  check_labels(n, in[0], in[1]);
  SYLVA_CHECK(!in[2].rowed && in[2].shape.numel() == 1, "[", op_name(n.op), "] dy must be a scalar");
  return in[0];
}

ValueType infer_dropout_mask(const Node& n, T in) {
  require_float(n, in[0], "input");
  SYLVA_CHECK(n.attrs.alpha >= 0.0 && n.attrs.alpha < 1.0, "[dropout] probability must be in [0, 1), got ",
              n.attrs.alpha);
  return in[0];
}

constexpr OpFlag kElem = OpFlag::elementwise | OpFlag::fusible;
constexpr OpFlag kGrad = OpFlag::elementwise | OpFlag::internal | OpFlag::fusible;
constexpr OpCategory kEw = OpCategory::elementwise, kSm = OpCategory::softmax_loss;

}  // namespace

void define_math_ops(Table& t) {
  entry(t, OpKind::MatMul) = {"matmul", OpFlag::none, 2, 2, infer_matmul, grad_matmul, Zeros::any, OpCategory::gemm, Ids::none, flops_matmul};
  entry(t, OpKind::Add) = {"add", kElem, 2, 2, infer_binary, grad_add, Zeros::all, kEw, Ids::none, flops_per_element};
  entry(t, OpKind::Sub) = {"sub", kElem, 2, 2, infer_binary, grad_sub, Zeros::all, kEw, Ids::none, flops_per_element};
  entry(t, OpKind::Mul) = {"mul", kElem, 2, 2, infer_binary, grad_mul, Zeros::any, kEw, Ids::none, flops_per_element};
  entry(t, OpKind::Tanh) = {"tanh", kElem, 1, 1, infer_unary, grad_unary<OpKind::TanhGrad, true>, Zeros::input0, kEw, Ids::none, flops_per_element};
  entry(t, OpKind::Sigmoid) = {"sigmoid", kElem, 1, 1, infer_unary, grad_unary<OpKind::SigmoidGrad, true>, Zeros::never, kEw, Ids::none, flops_per_element};
  entry(t, OpKind::Relu) = {"relu", kElem, 1, 1, infer_unary, grad_unary<OpKind::ReluGrad, true>, Zeros::input0, kEw, Ids::none, flops_per_element};
  entry(t, OpKind::Exp) = {"exp", kElem, 1, 1, infer_unary, grad_exp, Zeros::never, kEw, Ids::none, flops_per_element};
  entry(t, OpKind::Log) = {"log", kElem, 1, 1, infer_unary, grad_unary<OpKind::LogGrad, false>, Zeros::never, kEw, Ids::none, flops_per_element};
  entry(t, OpKind::Scale) = {"scale", kElem, 1, 1, infer_unary, grad_scale, Zeros::input0, kEw, Ids::none, flops_per_element};
  entry(t, OpKind::Softmax) = {"softmax", OpFlag::none, 1, 1, infer_unary, grad_softmax, Zeros::never, kSm};
  entry(t, OpKind::LogSoftmax) = {"log_softmax", OpFlag::none, 1, 1, infer_unary, grad_log_softmax, Zeros::never, kSm};
  entry(t, OpKind::SoftmaxCrossEntropy) = {"softmax_cross_entropy", OpFlag::none, 2, 2, infer_xent, grad_xent, Zeros::never, kSm, Ids::cols_of_input0};
  entry(t, OpKind::DropoutMask) = {"dropout_mask", OpFlag::random, 1, 1, infer_dropout_mask, nullptr, Zeros::never, kEw, Ids::none, flops_per_element};
  entry(t, OpKind::TanhGrad) = {"tanh_grad", kGrad, 2, 2, infer_grad_pair, nullptr, Zeros::input1, kEw, Ids::none, flops_per_element};
  entry(t, OpKind::SigmoidGrad) = {"sigmoid_grad", kGrad, 2, 2, infer_grad_pair, nullptr, Zeros::input1, kEw, Ids::none, flops_per_element};
  entry(t, OpKind::ReluGrad) = {"relu_grad", kGrad, 2, 2, infer_grad_pair, nullptr, Zeros::input1, kEw, Ids::none, flops_per_element};
  entry(t, OpKind::LogGrad) = {"log_grad", kGrad, 2, 2, infer_grad_pair, nullptr, Zeros::never, kEw, Ids::none, flops_per_element};
  entry(t, OpKind::SoftmaxGrad) = {"softmax_grad", OpFlag::internal, 2, 2, infer_grad_pair, nullptr, Zeros::input1, kSm};
  entry(t, OpKind::LogSoftmaxGrad) = {"log_softmax_grad", OpFlag::internal, 2, 2, infer_grad_pair, nullptr, Zeros::input1, kSm};
  entry(t, OpKind::SoftmaxCrossEntropyGrad) = {"softmax_cross_entropy_grad", OpFlag::internal, 3, 3,
                                               infer_xent_grad, nullptr, Zeros::never, kSm};
}

}  // namespace sylva::ir::detail
