// Sources and boundary ops: parameters, ids, the vertex-function interface
// (pull / gather / scatter / push), apply, row selection, and the
// gradient-graph boundary.
// Their data movement is done by the runtime, not by backend kernels.
#include "op_defs.h"

namespace sylva::ir::detail {
namespace {

using T = std::span<const ValueType>;

ValueType infer_param(const Node& n, T) {
  SYLVA_CHECK(!n.attrs.name.empty(), "[param] needs a name");
  SYLVA_CHECK(n.attrs.shape.rank() >= 1 && n.attrs.shape.rank() <= 2, "[param] '", n.attrs.name,
              "' must be a vector or a matrix, got shape ", n.attrs.shape.str());
  return {n.attrs.declared.dtype, false, n.attrs.shape};
}

ValueType infer_input_ids(const Node& n, T) {
  SYLVA_CHECK(!n.attrs.name.empty(), "[input_ids] needs a name");
  return {DType::i32, true, Shape{1}};
}

ValueType infer_declared(const Node& n, T) {
  SYLVA_CHECK(n.attrs.declared.shape.rank() >= 1, "[", op_name(n.op), "] declared type missing");
  return n.attrs.declared;
}

ValueType infer_marker(const Node& n, T in) {
  SYLVA_CHECK(in[0].rowed && is_floating(in[0].dtype), "[", op_name(n.op),
              "] expects a per-vertex (rowed) float value, got ", in[0].str());
  return in[0];
}

ValueType infer_gather(const Node& n, T) {
  SYLVA_CHECK(n.attrs.slot >= 0, "[gather] child slot must be >= 0, got ", n.attrs.slot);
  return infer_declared(n, {});
}

void grad_param(GradContext&) {}  // handled by the autodiff pass (ParamGradOut)

ValueType infer_apply(const Node& n, T in) {
  SYLVA_CHECK(n.attrs.body != nullptr, "[apply] has no vertex function");
  const Graph& f = *n.attrs.body;
  auto push = f.find(OpKind::Push);
  auto pull = f.find(OpKind::Pull);
  SYLVA_CHECK(push.size() == 1, "[apply] vertex function '", f.name(), "' must push exactly one output, pushes ",
              push.size());
  if (pull.empty()) {
    SYLVA_CHECK(in.empty(), "[apply] vertex function '", f.name(), "' pulls nothing but an input was given");
  } else {
    SYLVA_CHECK(in.size() == 1, "[apply] vertex function '", f.name(), "' pulls ",
                f.node(pull[0]).type.str(), " per vertex; pass the pull input");
    const ValueType& want = f.node(pull[0]).type;
    SYLVA_CHECK(in[0].rowed && in[0].cols() == want.cols() && in[0].dtype == want.dtype, "[apply] vertex function '",
                f.name(), "' pulls ", want.str(), " but got ", in[0].str());
  }
  return f.node(push[0]).type;
}

ValueType infer_grad_out(const Node& n, T in) {
  require_float(n, in[0], "gradient");
  return in[0];
}

// SelectRows(x, ids): the rows of x whose id is >= 0. The result is rowed
// with its own row count (the batch's labelled rows, say), so only ops over
// those rows may combine with it; the executor checks this at run time.
ValueType infer_select_rows(const Node& n, T in) {
  const ValueType &x = in[0], &ids = in[1];
  SYLVA_CHECK(x.rowed, "[select_rows] input must be per-vertex (rowed), got ", x.str());
  SYLVA_CHECK(ids.rowed && ids.dtype == DType::i32 && ids.cols() == 1,
              "[select_rows] ids must be per-vertex int32 with one column (input_ids), got ", ids.str());
  (void)n;
  return x;
}

void grad_select_rows(GradContext& c) {
  if (c.needs_grad(0)) c.add_grad(0, c.emit(OpKind::ScatterRows, {c.dy(), c.input(1)}));
}

// ScatterRows(dy, ids): a value with ids' rows, dy's rows at the rows whose
// id is >= 0 (in order), zero elsewhere.
ValueType infer_scatter_rows(const Node& n, T in) {
  require_float(n, in[0], "gradient");
  SYLVA_CHECK(in[0].rowed && in[1].rowed && in[1].dtype == DType::i32, "[scatter_rows] needs rowed dy and ids");
  return in[0];
}

}  // namespace

void define_boundary_ops(Table& t) {
  constexpr OpFlag src = OpFlag::source;
  constexpr OpFlag bnd = OpFlag::boundary;
  constexpr OpFlag out = OpFlag::boundary | OpFlag::side_effect | OpFlag::internal;
  entry(t, OpKind::Param) = {"param", src, 0, 0, infer_param, grad_param, Zeros::never, OpCategory::other, Ids::none, nullptr, OpKind::ParamGradOut};
  entry(t, OpKind::InputIds) = {"input_ids", src, 0, 0, infer_input_ids, nullptr};
  entry(t, OpKind::Pull) = {"pull", src | bnd, 0, 0, infer_declared, nullptr, Zeros::pulled_rows, OpCategory::data_movement, Ids::none, nullptr, OpKind::PullGradOut};
  entry(t, OpKind::Gather) = {"gather", src | bnd, 0, 0, infer_gather, nullptr, Zeros::absent_message, OpCategory::data_movement, Ids::none, nullptr, OpKind::GatherGradOut};
  entry(t, OpKind::GatherReduce) = {"gather_reduce", src | bnd, 0, 0, infer_declared, nullptr, Zeros::absent_children, OpCategory::data_movement, Ids::none, nullptr, OpKind::GatherReduceGradOut};
  entry(t, OpKind::Scatter) = {"scatter", bnd, 1, 1, infer_marker, nullptr, Zeros::never, OpCategory::data_movement, Ids::none, nullptr, OpKind::ScatterGradIn};
  entry(t, OpKind::Push) = {"push", bnd, 1, 1, infer_marker, nullptr, Zeros::never, OpCategory::data_movement, Ids::none, nullptr, OpKind::PushGradIn};
  entry(t, OpKind::Apply) = {"apply", bnd | OpFlag::container, 0, 1, infer_apply, nullptr, Zeros::never, OpCategory::data_movement, Ids::none, nullptr, OpKind::ApplyGrad};
  entry(t, OpKind::SelectRows) = {"select_rows", bnd, 2, 2, infer_select_rows, grad_select_rows, Zeros::input0, OpCategory::data_movement};
  entry(t, OpKind::ForwardValue) = {"forward_value", src | OpFlag::internal, 0, 0, infer_declared, nullptr, Zeros::forward_value};
  entry(t, OpKind::Seed) = {"seed", src | OpFlag::internal, 0, 0, infer_declared, nullptr};
  entry(t, OpKind::PushGradIn) = {"push_grad_in", src | bnd | OpFlag::internal, 0, 0, infer_declared, nullptr, Zeros::pushed_grad, OpCategory::data_movement};
  entry(t, OpKind::ScatterGradIn) = {"scatter_grad_in", src | bnd | OpFlag::internal, 0, 0, infer_declared, nullptr, Zeros::never, OpCategory::data_movement};
  entry(t, OpKind::GatherGradOut) = {"gather_grad_out", out, 1, 1, infer_grad_out, nullptr, Zeros::never, OpCategory::data_movement};
  entry(t, OpKind::GatherReduceGradOut) = {"gather_reduce_grad_out", out, 1, 1, infer_grad_out, nullptr, Zeros::never, OpCategory::data_movement};
  entry(t, OpKind::PullGradOut) = {"pull_grad_out", out, 1, 1, infer_grad_out, nullptr, Zeros::never, OpCategory::data_movement};
  entry(t, OpKind::ParamGradOut) = {"param_grad_out", out, 1, 1, infer_grad_out, nullptr, Zeros::never, OpCategory::param_grad};
  entry(t, OpKind::GatherGradOut).unneeded = Unneeded::absent_slot;
  entry(t, OpKind::GatherReduceGradOut).unneeded = Unneeded::absent_children;
  entry(t, OpKind::PullGradOut).unneeded = Unneeded::unused_pull;
  entry(t, OpKind::ParamGradOut).unneeded = Unneeded::zero_input;
  entry(t, OpKind::ApplyGrad) = {"apply_grad", bnd | OpFlag::internal | OpFlag::side_effect | OpFlag::container, 1, 1, infer_declared, nullptr, Zeros::never, OpCategory::data_movement};
  entry(t, OpKind::ScatterRows) = {"scatter_rows", bnd | OpFlag::internal, 2, 2, infer_scatter_rows, nullptr, Zeros::input0, OpCategory::data_movement};
}

}  // namespace sylva::ir::detail
