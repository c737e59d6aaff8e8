// OpKind, node attributes and the op registry: one OpDef per op holds its
// name, flags, shape inference and gradient rule (kernels live in backends,
// keyed by OpKind; see docs/adding_an_op.md).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sylva/core/dtype.h"
#include "sylva/core/shape.h"

namespace sylva::ir {

class Graph;
using NodeId = int32_t;
constexpr NodeId kNoNode = -1;

enum class OpKind : uint8_t {
  // Sources.
  Param,       // a named parameter (fixed shape)
  InputIds,    // per-vertex int32 ids from the batch (rowed, 1 column), -1 = none
  // Vertex-function boundary: only inside a VertexFunction.
  Pull,          // this vertex's row of the external input
  Gather,        // child `slot`'s scattered message, zeros if absent
  GatherReduce,  // sum of all children's messages
  Scatter,       // marks the message sent to the parent
  Push,          // marks this vertex's output row
  // Program level.
  Apply,  // runs `body` over every vertex of the batch; input: pull source
  SelectRows,  // the rows of input 0 whose input_ids (input 1) are >= 0, in vertex order
  // Math (user-visible).
  MatMul, Add, Sub, Mul, Tanh, Sigmoid, Relu, Exp, Log, Scale,
  Concat, Slice, Sum, SumRows, Mean, Softmax, LogSoftmax,
  SoftmaxCrossEntropy, Lookup, DropoutMask,
  // Emitted by gradient rules.
  TanhGrad, SigmoidGrad, ReluGrad, LogGrad, SoftmaxGrad, LogSoftmaxGrad,
  SoftmaxCrossEntropyGrad, LookupGrad, Broadcast, Assemble,
  // Gradient-graph boundary (emitted by passes::autodiff).
  ForwardValue,   // the forward value of node `ref`
  Seed,           // runtime gradient of the loss (fixed, 1 element)
  PushGradIn,     // d(pushed row) of this vertex, read from the caller
  ScatterGradIn,  // accumulated d(message) of this vertex from its parents
  GatherGradOut,  // adds its input into child `slot`'s message gradient
  GatherReduceGradOut,  // adds its input into every child's message gradient
  PullGradOut,    // this vertex's d(pull input), returned to the caller
  ParamGradOut,   // accumulates into the gradient of parameter `name`
  ApplyGrad,      // runs ∂(body) over the batch: input d(pushed), output d(pull)
  ScatterRows,    // select_rows' gradient: dy's rows back at the selected rows of ids (input 1), zeros elsewhere
  Count_
};
/// Op kinds at most, built in (below Count_) and registered (register_op).
constexpr size_t kMaxOpKinds = 128;

/// How a loss reduces over rows.
enum class Reduction : uint8_t { sum, mean };

/// The type of a value. A *rowed* value has a dynamic leading dimension
/// (one row per vertex, or per row of a batch) and `shape` is its row
/// shape; a fixed value (parameters, reductions) has a static full shape.
struct ValueType {
  DType dtype = DType::f32;
  bool rowed = false;
  Shape shape;
  int64_t cols() const { return shape.cols(); }
  /// Rows of a fixed value viewed as a matrix (1 for a vector).
  int64_t fixed_rows() const { return shape.rows(); }
  std::string str() const;
};

/// Attributes; each op documents the fields it reads (see ops_table.cc).
struct Attrs {
  std::string name;                 // Param, InputIds, ParamGradOut: what it names
  int64_t slot = 0;                 // Gather, GatherGradOut: child slot
  int64_t begin = 0, end = 0;       // Slice: column range
  double alpha = 1.0;               // Scale factor; DropoutMask drop probability
  bool trans_a = false, trans_b = false;  // MatMul operand layouts
  Reduction reduction = Reduction::sum;   // SoftmaxCrossEntropy
  NodeId ref = kNoNode;             // ForwardValue, ApplyGrad: forward node; DropoutMask: its random
                                    // stream's key when a pass re-emitted it (else its own id)
  std::vector<int64_t> ranges;      // Assemble: [begin, end) per input, flattened
  int64_t width = 0;                // Assemble: output columns; LookupGrad: table rows
  Shape shape;                      // Param: full shape
  std::shared_ptr<const Graph> body;  // Apply, ApplyGrad: the vertex function
  ValueType declared;               // sources typed from outside: Pull, Gather*, *GradIn, ForwardValue, Seed, ApplyGrad
};

enum class OpFlag : uint32_t {
  none = 0,
  elementwise = 1u << 0,  // output[i,j] depends on inputs at [i,j] (vector operands broadcast): fusible
  source = 1u << 1,       // no inputs; value comes from outside the graph
  boundary = 1u << 2,     // moves data between a vertex and its neighbours or the caller
  internal = 1u << 3,     // emitted by passes, not by user code
  random = 1u << 4,       // draws random numbers (DropoutMask)
  side_effect = 1u << 5,  // writes outside its own output (gradient outputs)
  fusible = 1u << 6,      // row-local: may be a step of a fused group (FusedProgram, sylva/ir/fused.h)
  container = 1u << 7,    // runs a vertex function (or its gradient) over the batch: Apply, ApplyGrad
};
constexpr OpFlag operator|(OpFlag a, OpFlag b) {
  return static_cast<OpFlag>(static_cast<uint32_t>(a) | static_cast<uint32_t>(b));
}
constexpr bool has(OpFlag set, OpFlag f) {
  return (static_cast<uint32_t>(set) & static_cast<uint32_t>(f)) != 0;
}

/// How an op's output is zero at every row when some of its inputs are
/// (skipping zero work): never known, when any input is (a product), when
/// all are (a sum, a concat), or when input 0 / input 1 is (ops that map 0
/// to 0; gradient ops whose incoming gradient is input 1). Boundary
/// sources: when the children's messages it reads are absent (gather:
/// its slot; gather_reduce: every child), when the pulled rows are all zero (pull), when the forward value is
/// zero (forward_value), when no row of the task has a pushed gradient
/// (push_grad_in: the program reads its pushed rows only at some vertices).
enum class Zeros : uint8_t {
  never, any, all, input0, input1, absent_message, absent_children, pulled_rows, forward_value, pushed_grad
};

/// When ∂F's node is not needed in a task (skipping zero work): when none
/// of its consumers is (every op but the gradient outputs); a gather's
/// gradient when its slot has no child at any row, or its input is zero;
/// gather_reduce's when no row has a child, or its input is zero; the
/// pull's when every row looked up id -1; a parameter's when its input is
/// zero.
enum class Unneeded : uint8_t { by_consumers, absent_slot, absent_children, unused_pull, zero_input };

/// What kind of work an op does, for profiles (sylva::Profiler).
enum class OpCategory : uint8_t {
  gemm,           ///< MatMul
  elementwise,    ///< ops flagged elementwise (add, mul, activations, their gradients, dropout masks); fused groups
  softmax_loss,   ///< softmax, log-softmax, cross-entropy and their gradients
  data_movement,  ///< pull/gather/scatter/push and their gradients, concat/slice/assemble/broadcast, lookup
  reduction,      ///< sum, sum_rows, mean
  param_grad,     ///< ParamGradOut: accumulation into parameter gradients, or the GEMM folded into it
  other,          ///< sources (parameters, ids, forward values, seeds)
  count_
};

/// Which input of an op holds int32 ids (always input 1) and what bounds
/// them: input 0's rows (a lookup's table) or its columns (a loss's classes).
enum class Ids : uint8_t { none, rows_of_input0, cols_of_input0 };

struct Node;

/// What a gradient rule sees and may do: read the forward node, get its
/// forward inputs/output as nodes of the gradient graph, emit new nodes
/// there, and contribute gradients for inputs. Implemented by passes.
class GradContext {
 public:
  virtual ~GradContext() = default;
  virtual const Node& node() const = 0;  // the forward node
  virtual NodeId dy() = 0;               // gradient of its output (in the grad graph)
  virtual NodeId input(int k) = 0;       // forward value of input k (in the grad graph)
  virtual NodeId output() = 0;           // forward value of the node itself
  virtual bool needs_grad(int k) const = 0;
  virtual NodeId emit(OpKind op, std::vector<NodeId> inputs, Attrs attrs = {}) = 0;
  virtual void add_grad(int k, NodeId grad) = 0;
  virtual ValueType type_of(NodeId grad_node) const = 0;
};

using InferFn = ValueType (*)(const Node& node, std::span<const ValueType> inputs);
/// Floating-point operations of one call of `node` (of `graph`, where its
/// inputs' types are) whose rowed values have `rows` rows.
using FlopFn = int64_t (*)(const Node& node, const Graph& graph, int64_t rows);
using GradFn = void (*)(GradContext& ctx);

struct OpDef {
  std::string_view name;
  OpFlag flags = OpFlag::none;
  int min_inputs = 0;
  int max_inputs = 0;  // -1: variadic
  InferFn infer = nullptr;
  GradFn grad = nullptr;  // nullptr: not differentiable (gradient is an error if needed)
  Zeros zeros = Zeros::never;
  OpCategory category = OpCategory::other;
  Ids ids = Ids::none;
  /// FLOPs per call: GEMMs 2·m·k·n, elementwise ops one per output element
  /// (flops_per_element); nullptr for ops counted as 0 (data movement,
  /// sources, reductions, softmax and losses).
  FlopFn flops = nullptr;
  /// Autodiff: the gradient-graph op that answers this boundary op --
  /// param/pull/gather/gather_reduce -> their *GradOut, push/scatter -> the
  /// incoming gradients (PushGradIn, ScatterGradIn), apply -> ApplyGrad;
  /// Count_ for every other op.
  OpKind dual = OpKind::Count_;
  Unneeded unneeded = Unneeded::by_consumers;
};

/// The registry: the definition of every OpKind.
const OpDef& op_def(OpKind op);
std::string_view op_name(OpKind op);
/// All op kinds, built in and registered (for tests that iterate over the registry).
std::vector<OpKind> all_ops();
/// Adds an op defined outside Sylva's op families (an extension, or a
/// test's): returns its kind, Count_ or above. Its definition is then read
/// like a built-in one's; a backend runs it once a kernel is registered
/// for it (CPU: sylva/backend/cpu_extension.h). sylva::Error for a name in
/// use, no shape inference, or no room left.
OpKind register_op(const OpDef& def);
/// Whether fused programs may contain `op` (OpFlag::fusible).
inline bool fusible(OpKind op) { return has(op_def(op).flags, OpFlag::fusible); }
/// FLOPs of one call of node `n` of `g` over `rows` rows (OpDef::flops; 0 where it is null).
int64_t flops(const Graph& g, const Node& n, int64_t rows);
/// An OpDef::flops for elementwise ops: one per output element.
int64_t flops_per_element(const Node& n, const Graph& g, int64_t rows);
/// Whether node `n`'s output is zero at every row, given which of its
/// inputs are (`zero`, indexed by node id), by its op's Zeros rule.
bool zero_from_inputs(const Node& n, std::span<const uint8_t> zero);

}  // namespace sylva::ir
