// A dynamic-declaration engine in the style of DyNet, the baseline Sylva is
// measured against. Per minibatch the model code declares an expression
// graph node by node (one node per op per vertex of every sample), then the
// graph is executed either node by node (unbatched) or with DyNet's
// agenda-based operator autobatching (Neubig, Goldberg and Dyer, "On-the-fly
// Operation Batching in Dynamic Computation Graphs", NIPS 2017):
//  - every node has a signature: op, output width, the widths of its inputs
//    and the parameters it reads;
//  - ready nodes (all inputs computed) wait on an agenda, grouped by
//    signature; the engine repeatedly takes the signature whose ready nodes
//    have the lowest average depth and runs all of them as one kernel call;
//  - an input of a batched call is used in place when the inputs of the
//    group's nodes lie in consecutive rows of memory (outputs of one earlier
//    group, in the same order), and copied into a contiguous block otherwise.
// Backward runs the groups in reverse with the same batching. Kernels are
// Sylva's own kernels (Backend::run), so only the strategy differs from
// Sylva's: graph construction per sample, signature analysis and copies at
// run time instead of one vertex function batched by BFS. On a device
// (CUDA) values live in device memory, each group's block starting on a
// row of its width, and non-contiguous inputs are gathered (and their
// gradients scattered back) as whole rows by one kernel per input, as
// DyNet does on a GPU, instead of one memcpy per node; the losses of all
// loss groups come back in one download at the end of forward (one wait).
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include <sylva/sylva.h>

namespace sylva::bench::dd {

using Expr = int32_t;

enum class Op : uint8_t { Lookup, Constant, MatMul, Add, AddBias, Mul, Tanh, Sigmoid, Relu, Concat, Slice, Xent };
const char* op_name(Op op);

/// Counters and timers of one forward (and backward) run.
struct RunStats {
  double loss = 0.0;
  double schedule_s = 0.0;  // agenda: signatures, dependency counts, grouping
  double compute_s = 0.0;   // running the groups (kernels and copies)
  double movement_s = 0.0;  // with time_movement: copies into contiguous blocks, scatters of
                            // gradients back to rows, and lookup/concat/slice/constant groups
  int64_t kernels = 0;      // kernel calls (a group's forward is one call)
  int64_t groups = 0;       // batched groups (= nodes when unbatched)
  int64_t copied_rows = 0;  // rows copied because inputs were not contiguous
};

/// Attributes of one kernel call (internal to Graph).
struct KernelOptions {
  int64_t begin = 0;  // Slice
  bool trans_a = false, trans_b = false;
  bool accumulate = false;
};

/// An expression graph, cleared and declared anew for every minibatch.
/// Values are row blocks [rows, cols]; per-vertex expressions have one row.
/// Every `loss` node's cross-entropy is summed into the objective.
class Graph {
 public:
  /// Values have the parameter set's dtype; kernels run on `backend`, and
  /// values live in its memory (a device's: parameters are uploaded per
  /// forward and gradients flushed per backward, see ParamStore).
  Graph(ParameterSet& params, Backend& backend);

  /// Forgets all nodes (keeps memory for the next minibatch).
  void clear();

  // ---- declaration (shapes are checked here: sylva::Error with the op) ----
  /// Row `id` of `table` (-1: a zero row).
  Expr lookup(Parameter& table, int32_t id);
  /// Rows `ids` of `table`, one per id (-1: zero row).
  Expr lookup(Parameter& table, std::span<const int32_t> ids);
  /// A constant [rows, cols] block (row-major values; empty = zeros).
  Expr constant(int64_t rows, int64_t cols, std::span<const double> values = {});
  /// x·W for a parameter W [in, out].
  Expr matmul(Expr x, Parameter& w);
  Expr add(Expr a, Expr b);
  /// a + b with b a parameter vector broadcast over rows.
  Expr add_bias(Expr a, Parameter& b);
  Expr mul(Expr a, Expr b);
  Expr tanh(Expr x);
  Expr sigmoid(Expr x);
  Expr relu(Expr x);
  Expr concat(std::span<const Expr> xs);
  /// Columns [begin, end).
  Expr slice(Expr x, int64_t begin, int64_t end);
  /// Softmax cross-entropy of each row of `logits` against `labels`
  /// (one per row; -1 = no loss), summed into the objective.
  void loss(Expr logits, std::span<const int32_t> labels);
  void loss(Expr logits, int32_t label) { loss(logits, std::span<const int32_t>(&label, 1)); }

  int64_t size() const { return static_cast<int64_t>(nodes_.size()); }
  int64_t rows(Expr e) const { return nodes_.at(e).rows; }
  int64_t cols(Expr e) const { return nodes_.at(e).cols; }

  // ---- execution ----
  /// Runs the graph: node by node in declaration order, or with agenda
  /// autobatching. Returns the summed loss. `training` keeps what backward()
  /// needs (the gathered input blocks).
  double forward(bool autobatch, bool training, bool time_movement = false);
  /// Adds d(objective)/d(param) into the parameters' gradients (lookup
  /// tables row by row; their touched rows are listed in touched_rows()).
  void backward();
  /// The value of `e` after forward() (a copy, [rows, cols]).
  Tensor value(Expr e) const;
  const RunStats& stats() const { return stats_; }
  /// Rows of each lookup table that received gradient in the last backward().
  const RowSparsity& touched_rows() const { return touched_; }
  /// The parameters as the backend sees them (benchmarks keep them resident on a device).
  ParamStore& param_store() { return store_; }

 private:
  struct Node {
    Op op;
    int32_t nargs = 0;
    int32_t args_first = 0;  // into args_
    Parameter* param = nullptr;
    int32_t ids_first = 0;   // into ids_ (Lookup ids, Xent labels)
    int64_t begin = 0;       // Slice
    int64_t rows = 1, cols = 0;
    int64_t consts_first = -1;  // Constant: into consts_ (-1: zeros)
    int64_t offset = 0;      // value offset in elements (set by forward)
  };
  // A batched kernel call: nodes [first, first+count) of order_; per input,
  // where its block lives in gathered_ (-1: used in place).
  struct Group {
    int32_t first = 0, count = 0;
    int64_t rows = 0;
    int32_t gathered_first = 0;  // into gathered_offsets_, one per arg
  };

  Expr push(Node n, std::initializer_list<Expr> args);
  Expr push(Node n, std::span<const Expr> args);
  void check_expr(Expr e, const char* op) const;
  Expr arg(const Node& n, int k) const { return args_[static_cast<size_t>(n.args_first + k)]; }
  uint64_t signature(const Node& n) const;
  void build_groups_unbatched();
  void build_groups_agenda();
  void run_group(const Group& g);
  // Inputs of g: used in place when consecutive, else copied into gathered_.
  void gather_inputs(const Group& g, std::span<const Expr> members);
  // The op of g's nodes on its inputs, into `out`.
  void forward_op(const Group& g, std::span<const Expr> members, MatView out);
  // Constants' values into their places (zeros where declared without values).
  void upload_constants(std::span<const Expr> members);
  // Ops that only move data (counted whole as movement, like Sylva's profiler does).
  static bool moves_data(Op op);
  void backward_group(const Group& g);
  // Whether input k of g is used in place (not gathered).
  bool input_in_place(const Group& g, int k) const;
  // Runs `op` into a scratch block and adds it into the gradients of input k of g's nodes.
  void grad_kernel(const Group& g, int k, ir::OpKind op, std::span<const MatView> in, KernelOptions o = {});
  // Gradients of a group of lookups into their tables' rows (listed in touched_).
  void backward_lookup(std::span<const Expr> members, MatView dy);
  // dX and dW of a group of matmuls.
  void backward_matmul(const Group& g, MatView dy);
  // dy added into the sliced columns of each input's gradient.
  void backward_slice(const Group& g, MatView dy);
  // The block of input k of group g: in place or gathered.
  MatView input_block(const Group& g, int k);
  MatView value_view(int64_t offset, int64_t rows, int64_t cols);
  MatView grad_view(int64_t offset, int64_t rows, int64_t cols);
  // Adds `d` ([g.rows, cols]) into the gradients of input k of g's nodes.
  void add_input_grad(const Group& g, int k, MatView d, bool in_place);
  MatView scratch(int which, int64_t rows, int64_t cols);
  void kernel(ir::OpKind op, std::span<const MatView> in, MatView out, KernelOptions o = {});
  // The ids of a group's members (lookup ids, labels), in ids_host_ and
  // where the kernels read them.
  MatView group_ids(std::span<const Expr> members);
  // Device: index_ = the rows of input k of every member, in order, in
  // the value (or gradient) buffer seen as rows of that input's width.
  void input_rows(std::span<const Expr> members, int k);
  // Buffer `b` (values_ or grads_) as rows of `cols` elements.
  MatView rows_of(Buffer& b, int64_t cols) const;
  // The sum of the loss groups' slots in losses_ (one download).
  double read_losses();

  ir::Node knode_;  // the node each kernel call describes (op and attributes)
  Backend& backend_;
  ParamStore store_;
  bool host_;  // the backend's memory is the host's
  DType dtype_;
  size_t esize_;
  std::vector<Node> nodes_;
  std::vector<Expr> args_;
  std::vector<int32_t> ids_;
  std::vector<double> consts_;
  int64_t loss_nodes_ = 0;

  // Execution state.
  std::vector<Expr> order_;  // nodes grouped, group by group
  std::vector<Group> groups_;
  std::vector<int64_t> gathered_offsets_;
  Buffer values_, grads_, gathered_, ids_buf_, losses_;  // losses_: one slot per loss group
  std::vector<Buffer> scratch_;
  std::vector<int32_t> ids_host_, index_;  // group ids; row indices of device gathers and scatters
  std::vector<char> loss_host_;
  std::vector<float> const_staging_;
  std::vector<MatView> concat_in_;
  int64_t value_elems_ = 0, gathered_elems_ = 0, loss_groups_ = 0;
  bool forwarded_ = false, training_ = false, time_movement_ = false;
  RunStats stats_;
  RowSparsity touched_;
  // Agenda work arrays (kept to avoid reallocation).
  std::vector<int32_t> pending_, depth_, consumers_first_, consumers_;
};

}  // namespace sylva::bench::dd
