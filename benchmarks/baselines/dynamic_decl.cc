// The dynamic-declaration engine: declaration, grouping and the forward
// pass (the backward pass is in dynamic_decl_backward.cc).
#include "dynamic_decl.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "dynamic_decl_internal.h"

namespace sylva::bench::dd {

const char* op_name(Op op) {
  switch (op) {
    case Op::Lookup: return "lookup";
    case Op::Constant: return "constant";
    case Op::MatMul: return "matmul";
    case Op::Add: return "add";
    case Op::AddBias: return "add_bias";
    case Op::Mul: return "mul";
    case Op::Tanh: return "tanh";
    case Op::Sigmoid: return "sigmoid";
    case Op::Relu: return "relu";
    case Op::Concat: return "concat";
    case Op::Slice: return "slice";
    case Op::Xent: return "loss";
  }
  return "?";
}

Graph::Graph(ParameterSet& params, Backend& backend)
    : backend_(backend),
      store_(params, backend),
      host_(backend.memory().host_visible()),
      dtype_(params.dtype()),
      esize_(dtype_size(params.dtype())),
      values_(backend.memory()),
      grads_(backend.memory()),
      gathered_(backend.memory()),
      ids_buf_(backend.memory()),
      losses_(backend.memory()) {
  for (int i = 0; i < 3; ++i) scratch_.emplace_back(backend.memory());
}

void Graph::clear() {
  nodes_.clear();
  args_.clear();
  ids_.clear();
  consts_.clear();
  loss_nodes_ = 0;
  forwarded_ = false;
}

void Graph::check_expr(Expr e, const char* op) const {
  SYLVA_CHECK(e >= 0 && e < size(), "[dynamic_decl] ", op, ": expression ", e, " is not in this graph (", size(),
              " nodes)");
  SYLVA_CHECK(nodes_[static_cast<size_t>(e)].op != Op::Xent, "[dynamic_decl] ", op,
              ": a loss has no value to read");
}

Expr Graph::push(Node n, std::initializer_list<Expr> args) {
  return push(n, std::span<const Expr>(args.begin(), args.size()));
}

Expr Graph::push(Node n, std::span<const Expr> args) {
  for (Expr a : args) check_expr(a, op_name(n.op));
  n.args_first = static_cast<int32_t>(args_.size());
  n.nargs = static_cast<int32_t>(args.size());
  args_.insert(args_.end(), args.begin(), args.end());
  nodes_.push_back(n);
  forwarded_ = false;
  return static_cast<Expr>(nodes_.size() - 1);
}

Expr Graph::lookup(Parameter& table, int32_t id) { return lookup(table, std::span<const int32_t>(&id, 1)); }

Expr Graph::lookup(Parameter& table, std::span<const int32_t> ids) {
  SYLVA_CHECK(table.value.shape().rank() == 2, "[dynamic_decl] lookup: table '", table.name, "' is not a matrix");
  for (int32_t id : ids)
    SYLVA_CHECK(id >= -1 && id < table.value.shape().rows(), "[dynamic_decl] lookup: id ", id,
                " out of range [0, ", table.value.shape().rows(), ") of table '", table.name, "'");
  Node n{.op = Op::Lookup};
  n.param = &table;
  n.ids_first = static_cast<int32_t>(ids_.size());
  ids_.insert(ids_.end(), ids.begin(), ids.end());
  n.rows = static_cast<int64_t>(ids.size());
  n.cols = table.value.shape().cols();
  return push(n, {});
}

Expr Graph::constant(int64_t rows, int64_t cols, std::span<const double> values) {
  SYLVA_CHECK(rows > 0 && cols > 0, "[dynamic_decl] constant: shape [", rows, ", ", cols, "] is empty");
  SYLVA_CHECK(values.empty() || static_cast<int64_t>(values.size()) == rows * cols, "[dynamic_decl] constant: ",
              values.size(), " values for shape [", rows, ", ", cols, "]");
  Node n{.op = Op::Constant};
  n.rows = rows;
  n.cols = cols;
  if (!values.empty()) {
    n.consts_first = static_cast<int64_t>(consts_.size());
    consts_.insert(consts_.end(), values.begin(), values.end());
  }
  return push(n, {});
}

Expr Graph::matmul(Expr x, Parameter& w) {
  check_expr(x, "matmul");
  const Shape& s = w.value.shape();
  SYLVA_CHECK(s.rank() == 2 && s.rows() == cols(x), "[dynamic_decl] matmul: x has ", cols(x), " columns but '",
              w.name, "' is ", s.str());
  Node n{.op = Op::MatMul};
  n.param = &w;
  n.rows = rows(x);
  n.cols = s.cols();
  return push(n, {x});
}

Expr Graph::add(Expr a, Expr b) {
  check_expr(a, "add");
  check_expr(b, "add");
  SYLVA_CHECK(rows(a) == rows(b) && cols(a) == cols(b), "[dynamic_decl] add: [", rows(a), ", ", cols(a), "] + [",
              rows(b), ", ", cols(b), "]");
  Node n{.op = Op::Add};
  n.rows = rows(a);
  n.cols = cols(a);
  return push(n, {a, b});
}

Expr Graph::add_bias(Expr a, Parameter& b) {
  check_expr(a, "add_bias");
  SYLVA_CHECK(b.value.shape().rank() == 1 && b.value.shape().cols() == cols(a), "[dynamic_decl] add_bias: '",
              b.name, "' is ", b.value.shape().str(), " for ", cols(a), " columns");
  Node n{.op = Op::AddBias};
  n.param = &b;
  n.rows = rows(a);
  n.cols = cols(a);
  return push(n, {a});
}

Expr Graph::mul(Expr a, Expr b) {
  check_expr(a, "mul");
  check_expr(b, "mul");
  SYLVA_CHECK(rows(a) == rows(b) && cols(a) == cols(b), "[dynamic_decl] mul: [", rows(a), ", ", cols(a), "] * [",
              rows(b), ", ", cols(b), "]");
  Node n{.op = Op::Mul};
  n.rows = rows(a);
  n.cols = cols(a);
  return push(n, {a, b});
}

Expr Graph::tanh(Expr x) {
  check_expr(x, "tanh");
  return push(Node{.op = Op::Tanh, .rows = rows(x), .cols = cols(x)}, {x});
}
Expr Graph::sigmoid(Expr x) {
  check_expr(x, "sigmoid");
  return push(Node{.op = Op::Sigmoid, .rows = rows(x), .cols = cols(x)}, {x});
}
Expr Graph::relu(Expr x) {
  check_expr(x, "relu");
  return push(Node{.op = Op::Relu, .rows = rows(x), .cols = cols(x)}, {x});
}

Expr Graph::concat(std::span<const Expr> xs) {
  SYLVA_CHECK(!xs.empty(), "[dynamic_decl] concat of nothing");
  int64_t c = 0;
  for (Expr x : xs) {
    check_expr(x, "concat");
    SYLVA_CHECK(rows(x) == rows(xs[0]), "[dynamic_decl] concat: ", rows(x), " rows vs ", rows(xs[0]));
    c += cols(x);
  }
  return push(Node{.op = Op::Concat, .rows = rows(xs[0]), .cols = c}, xs);
}

Expr Graph::slice(Expr x, int64_t begin, int64_t end) {
  check_expr(x, "slice");
  SYLVA_CHECK(0 <= begin && begin < end && end <= cols(x), "[dynamic_decl] slice [", begin, ", ", end,
              ") of ", cols(x), " columns");
  Node n{.op = Op::Slice};
  n.begin = begin;
  n.rows = rows(x);
  n.cols = end - begin;
  return push(n, {x});
}

void Graph::loss(Expr logits, std::span<const int32_t> labels) {
  check_expr(logits, "loss");
  SYLVA_CHECK(static_cast<int64_t>(labels.size()) == rows(logits), "[dynamic_decl] loss: ", labels.size(),
              " labels for ", rows(logits), " rows");
  for (int32_t l : labels)
    SYLVA_CHECK(l >= -1 && l < cols(logits), "[dynamic_decl] loss: label ", l, " out of range [0, ", cols(logits),
                ")");
  Node n{.op = Op::Xent};
  n.ids_first = static_cast<int32_t>(ids_.size());
  ids_.insert(ids_.end(), labels.begin(), labels.end());
  n.rows = rows(logits);
  n.cols = 0;  // no value
  push(n, {logits});
  ++loss_nodes_;
}

// ---------------------------------------------------------------------------
// Grouping

uint64_t Graph::signature(const Node& n) const {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto mix = [&h](uint64_t v) { h = (h ^ v) * 0x100000001b3ull; };
  mix(static_cast<uint64_t>(n.op));
  mix(static_cast<uint64_t>(n.cols));
  mix(reinterpret_cast<uintptr_t>(n.param));
  mix(static_cast<uint64_t>(n.begin));
  mix(static_cast<uint64_t>(n.nargs));
  for (int k = 0; k < n.nargs; ++k) mix(static_cast<uint64_t>(cols(arg(n, k))));
  return h;
}

void Graph::build_groups_unbatched() {
  order_.resize(nodes_.size());
  groups_.clear();
  int32_t gathered = 0;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    order_[i] = static_cast<Expr>(i);
    groups_.push_back({static_cast<int32_t>(i), 1, nodes_[i].rows, gathered});
    gathered += nodes_[i].nargs;
  }
}

// DyNet's agenda: ready nodes wait grouped by signature; the signature whose
// ready nodes have the lowest average depth runs next, all of them at once.
void Graph::build_groups_agenda() {
  const size_t n = nodes_.size();
  pending_.assign(n, 0);
  depth_.assign(n, 0);
  consumers_first_.assign(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    const Node& nd = nodes_[i];
    pending_[i] = nd.nargs;
    for (int k = 0; k < nd.nargs; ++k) {
      Expr a = arg(nd, k);
      depth_[i] = std::max(depth_[i], depth_[static_cast<size_t>(a)] + 1);
      ++consumers_first_[static_cast<size_t>(a) + 1];
    }
  }
  for (size_t i = 0; i < n; ++i) consumers_first_[i + 1] += consumers_first_[i];
  consumers_.resize(static_cast<size_t>(consumers_first_[n]));
  {
    std::vector<int32_t> fill(consumers_first_.begin(), consumers_first_.end() - 1);
    for (size_t i = 0; i < n; ++i)
      for (int k = 0; k < nodes_[i].nargs; ++k)
        consumers_[static_cast<size_t>(fill[static_cast<size_t>(arg(nodes_[i], k))]++)] = static_cast<int32_t>(i);
  }
  std::unordered_map<uint64_t, int32_t> sig_index;
  std::vector<int32_t> sig(n);
  std::vector<std::vector<Expr>> ready;
  std::vector<int64_t> depth_sum;
  for (size_t i = 0; i < n; ++i) {
    auto [it, fresh] = sig_index.try_emplace(signature(nodes_[i]), static_cast<int32_t>(ready.size()));
    if (fresh) {
      ready.emplace_back();
      depth_sum.push_back(0);
    }
    sig[i] = it->second;
  }
  const auto make_ready = [&](size_t i) {
    ready[static_cast<size_t>(sig[i])].push_back(static_cast<Expr>(i));
    depth_sum[static_cast<size_t>(sig[i])] += depth_[i];
  };
  for (size_t i = 0; i < n; ++i)
    if (pending_[i] == 0) make_ready(i);

  order_.clear();
  groups_.clear();
  int32_t gathered = 0;
  for (;;) {
    int32_t best = -1;
    double best_depth = std::numeric_limits<double>::infinity();
    for (size_t s = 0; s < ready.size(); ++s) {
      if (ready[s].empty()) continue;
      double avg = static_cast<double>(depth_sum[s]) / static_cast<double>(ready[s].size());
      if (avg < best_depth) {
        best_depth = avg;
        best = static_cast<int32_t>(s);
      }
    }
    if (best < 0) break;
    std::vector<Expr> batch;
    batch.swap(ready[static_cast<size_t>(best)]);
    depth_sum[static_cast<size_t>(best)] = 0;
    Group g{static_cast<int32_t>(order_.size()), static_cast<int32_t>(batch.size()), 0, gathered};
    for (Expr e : batch) {
      order_.push_back(e);
      g.rows += nodes_[static_cast<size_t>(e)].rows;
      for (int32_t c = consumers_first_[static_cast<size_t>(e)]; c < consumers_first_[static_cast<size_t>(e) + 1]; ++c) {
        size_t consumer = static_cast<size_t>(consumers_[static_cast<size_t>(c)]);
        if (--pending_[consumer] == 0) make_ready(consumer);
      }
    }
    gathered += nodes_[static_cast<size_t>(batch[0])].nargs;
    groups_.push_back(g);
  }
  SYLVA_ASSERT(order_.size() == n, "agenda scheduled ", order_.size(), " of ", n, " nodes");
}

// ---------------------------------------------------------------------------
// Execution

MatView Graph::value_view(int64_t offset, int64_t rows, int64_t cols) {
  return {static_cast<char*>(values_.data()) + offset * static_cast<int64_t>(esize_), rows, cols, dtype_};
}
MatView Graph::grad_view(int64_t offset, int64_t rows, int64_t cols) {
  return {static_cast<char*>(grads_.data()) + offset * static_cast<int64_t>(esize_), rows, cols, dtype_};
}

MatView Graph::scratch(int which, int64_t rows, int64_t cols) {
  Buffer& b = scratch_[static_cast<size_t>(which)];
  b.reserve(static_cast<size_t>(std::max<int64_t>(rows * cols, 1)) * esize_);
  return {b.data(), rows, cols, dtype_};
}

void Graph::kernel(ir::OpKind op, std::span<const MatView> in, MatView out, KernelOptions o) {
  knode_.op = op;
  knode_.attrs.begin = o.begin;
  knode_.attrs.end = o.begin + out.cols;
  knode_.attrs.trans_a = o.trans_a;
  knode_.attrs.trans_b = o.trans_b;
  if (op == ir::OpKind::Assemble) {  // in[0] into columns [begin, begin + its width) of out
    knode_.attrs.ranges.assign({o.begin, o.begin + in[0].cols});
    knode_.attrs.width = out.cols;
  } else {
    knode_.attrs.ranges.clear();
  }
  const ExecContext ctx;
  backend_.run({knode_, in, out, ctx, o.accumulate});
  ++stats_.kernels;
}

MatView Graph::input_block(const Group& g, int k) {
  const Node& first = nodes_[static_cast<size_t>(order_[static_cast<size_t>(g.first)])];
  const Node& a0 = nodes_[static_cast<size_t>(arg(first, k))];
  int64_t off = gathered_offsets_[static_cast<size_t>(g.gathered_first + k)];
  if (off < 0) return value_view(a0.offset, g.rows, a0.cols);
  return {static_cast<char*>(gathered_.data()) + off * static_cast<int64_t>(esize_), g.rows, a0.cols, dtype_};
}

double Graph::forward(bool autobatch, bool training, bool time_movement) {
  stats_ = {};
  auto t0 = Clock::now();
  if (autobatch) build_groups_agenda();
  else build_groups_unbatched();
  // Sizes: every value, and (an upper bound) every gathered input block.
  value_elems_ = 0;
  int64_t gathered_bound = 0;
  for (const Node& n : nodes_) {
    value_elems_ += n.rows * n.cols;
    for (int k = 0; k < n.nargs; ++k) gathered_bound += rows(arg(n, k)) * cols(arg(n, k));
  }
  loss_groups_ = 0;
  for (const Group& g : groups_) {
    const Node& first = nodes_[static_cast<size_t>(order_[static_cast<size_t>(g.first)])];
    value_elems_ += first.cols;  // room to start each group on a row of its width (see run_group)
    if (first.op == Op::Xent) ++loss_groups_;
  }
  values_.reserve(static_cast<size_t>(std::max<int64_t>(value_elems_, 1)) * esize_);
  losses_.reserve(static_cast<size_t>(std::max<int64_t>(loss_groups_, 1)) * esize_);
  gathered_.reserve(static_cast<size_t>(std::max<int64_t>(gathered_bound, 1)) * esize_);
  int64_t max_args = 0;
  for (const Group& g : groups_)
    max_args = std::max<int64_t>(max_args, g.gathered_first + nodes_[static_cast<size_t>(order_[static_cast<size_t>(g.first)])].nargs);
  gathered_offsets_.assign(static_cast<size_t>(max_args), -1);
  stats_.groups = static_cast<int64_t>(groups_.size());
  stats_.schedule_s = seconds_since(t0);

  auto t1 = Clock::now();
  store_.make_current(Side::device);  // a device: the values the host changed
  value_elems_ = 0;
  gathered_elems_ = 0;
  training_ = training;
  time_movement_ = time_movement;
  loss_groups_ = 0;
  for (const Group& g : groups_) run_group(g);
  stats_.loss = read_losses();
  stats_.compute_s = seconds_since(t1);
  forwarded_ = true;
  return stats_.loss;
}

bool Graph::moves_data(Op op) { return op == Op::Lookup || op == Op::Constant || op == Op::Concat || op == Op::Slice; }

void Graph::run_group(const Group& g) {
  const Clock::time_point start = time_movement_ ? Clock::now() : Clock::time_point{};
  const std::span<const Expr> members(order_.data() + g.first, static_cast<size_t>(g.count));
  Node& first = nodes_[static_cast<size_t>(members[0])];
  // Outputs: consecutive rows, in group order. On a device the block starts
  // at a multiple of its width, so that every value is a whole row of the
  // value buffer seen as rows of that width: gathers and scatters then move
  // rows (copy_rows / add_rows over row indices), as DyNet's GPU gathers do.
  if (!host_ && first.cols > 0) value_elems_ = (value_elems_ + first.cols - 1) / first.cols * first.cols;
  const int64_t out_offset = value_elems_;
  for (Expr e : members) {
    Node& n = nodes_[static_cast<size_t>(e)];
    n.offset = value_elems_;
    value_elems_ += n.rows * n.cols;
  }
  const MatView out = value_view(out_offset, g.rows, first.cols);
  gather_inputs(g, members);
  const double copied = time_movement_ && !moves_data(first.op) ? seconds_since(start) : 0.0;
  forward_op(g, members, out);
  if (time_movement_) stats_.movement_s += moves_data(first.op) ? seconds_since(start) : copied;
}

void Graph::gather_inputs(const Group& g, std::span<const Expr> members) {
  const Node& first = nodes_[static_cast<size_t>(members[0])];
  for (int k = 0; k < first.nargs; ++k) {
    const Node& a0 = nodes_[static_cast<size_t>(arg(first, k))];
    bool contiguous = true;
    int64_t expect = a0.offset;
    for (Expr e : members) {
      const Node& a = nodes_[static_cast<size_t>(arg(nodes_[static_cast<size_t>(e)], k))];
      if (a.offset != expect) {
        contiguous = false;
        break;
      }
      expect += a.rows * a.cols;
    }
    int64_t& slot = gathered_offsets_[static_cast<size_t>(g.gathered_first + k)];
    if (contiguous) {
      slot = -1;
      continue;
    }
    slot = gathered_elems_;
    if (host_) {  // one memcpy per member
      char* dst = static_cast<char*>(gathered_.data()) + gathered_elems_ * static_cast<int64_t>(esize_);
      for (Expr e : members) {
        const Node& a = nodes_[static_cast<size_t>(arg(nodes_[static_cast<size_t>(e)], k))];
        const size_t bytes = static_cast<size_t>(a.rows * a.cols) * esize_;
        std::memcpy(dst, static_cast<const char*>(values_.data()) + a.offset * static_cast<int64_t>(esize_), bytes);
        dst += bytes;
      }
    } else {  // a device gathers the rows in one kernel (DyNet's GPU gather)
      input_rows(members, k);
      const MatView dst{static_cast<char*>(gathered_.data()) + gathered_elems_ * static_cast<int64_t>(esize_), g.rows,
                        a0.cols, dtype_};
      backend_.copy_rows(rows_of(values_, a0.cols), index_, dst, {});
    }
    for (Expr e : members) {
      const Node& a = nodes_[static_cast<size_t>(arg(nodes_[static_cast<size_t>(e)], k))];
      gathered_elems_ += a.rows * a.cols;
      stats_.copied_rows += a.rows;
    }
  }
}

void Graph::forward_op(const Group& g, std::span<const Expr> members, MatView out) {
  const Node& first = nodes_[static_cast<size_t>(members[0])];
  using ir::OpKind;
  switch (first.op) {
    case Op::Lookup: {
      MatView in[2] = {store_.value(first.param->name), group_ids(members)};
      kernel(OpKind::Lookup, in, out);
      break;
    }
    case Op::Constant:
      upload_constants(members);
      break;
    case Op::MatMul: {
      MatView in[2] = {input_block(g, 0), store_.value(first.param->name)};
      kernel(OpKind::MatMul, in, out);
      break;
    }
    case Op::AddBias: {
      MatView b = store_.value(first.param->name);
      MatView in[2] = {input_block(g, 0), {b.data, 1, b.numel(), b.dtype}};
      kernel(OpKind::Add, in, out);
      break;
    }
    case Op::Add: case Op::Mul: {
      MatView in[2] = {input_block(g, 0), input_block(g, 1)};
      kernel(first.op == Op::Add ? OpKind::Add : OpKind::Mul, in, out);
      break;
    }
    case Op::Tanh: case Op::Sigmoid: case Op::Relu: {
      MatView in[1] = {input_block(g, 0)};
      kernel(first.op == Op::Tanh ? OpKind::Tanh : first.op == Op::Sigmoid ? OpKind::Sigmoid : OpKind::Relu, in, out);
      break;
    }
    case Op::Concat: {
      concat_in_.clear();  // reused: no allocation per group
      for (int k = 0; k < first.nargs; ++k) concat_in_.push_back(input_block(g, k));
      kernel(OpKind::Concat, concat_in_, out);
      break;
    }
    case Op::Slice: {
      MatView in[1] = {input_block(g, 0)};
      kernel(OpKind::Slice, in, out, {.begin = first.begin});
      break;
    }
    case Op::Xent: {
      // Each loss group's sum into a slot of its own, read in one download
      // at the end of forward (read_losses): no wait per loss group.
      MatView in[2] = {input_block(g, 0), group_ids(members)};
      const MatView l{static_cast<char*>(losses_.data()) + loss_groups_++ * static_cast<int64_t>(esize_), 1, 1, dtype_};
      kernel(OpKind::SoftmaxCrossEntropy, in, l);
      break;
    }
  }
}

void Graph::upload_constants(std::span<const Expr> members) {
  for (Expr e : members) {
    const Node& n = nodes_[static_cast<size_t>(e)];
    MatView v = value_view(n.offset, n.rows, n.cols);
    if (n.consts_first < 0) {
      backend_.fill_zero(v);
      continue;
    }
    const double* c = consts_.data() + n.consts_first;
    if (dtype_ == DType::f64) {
      backend_.upload(v.data, c, static_cast<size_t>(n.rows * n.cols) * sizeof(double));
    } else {
      const_staging_.assign(c, c + n.rows * n.cols);
      backend_.upload(v.data, const_staging_.data(), const_staging_.size() * sizeof(float));
    }
  }
}

Tensor Graph::value(Expr e) const {
  SYLVA_CHECK(forwarded_, "[dynamic_decl] value() before forward()");
  const Node& n = nodes_.at(static_cast<size_t>(e));
  SYLVA_CHECK(n.op != Op::Xent, "[dynamic_decl] a loss node has no value");
  Tensor t(Shape{n.rows, n.cols}, dtype_);
  backend_.download(t.raw(), static_cast<const char*>(values_.data()) + n.offset * static_cast<int64_t>(esize_),
                    t.nbytes());
  return t;
}

MatView Graph::group_ids(std::span<const Expr> members) {
  ids_host_.clear();
  for (Expr e : members) {
    const Node& n = nodes_[static_cast<size_t>(e)];
    ids_host_.insert(ids_host_.end(), ids_.begin() + n.ids_first, ids_.begin() + n.ids_first + n.rows);
  }
  const auto rows = static_cast<int64_t>(ids_host_.size());
  if (host_) return {ids_host_.data(), rows, 1, DType::i32};
  ids_buf_.reserve(std::max<size_t>(ids_host_.size(), 1) * sizeof(int32_t));
  backend_.upload(ids_buf_.data(), ids_host_.data(), ids_host_.size() * sizeof(int32_t));
  return {ids_buf_.data(), rows, 1, DType::i32};
}

void Graph::input_rows(std::span<const Expr> members, int k) {
  index_.clear();
  for (Expr e : members) {
    const Node& a = nodes_[static_cast<size_t>(arg(nodes_[static_cast<size_t>(e)], k))];
    SYLVA_ASSERT(a.offset % a.cols == 0, "a device value starts on a row of its width");
    for (int64_t r = 0; r < a.rows; ++r) index_.push_back(static_cast<int32_t>(a.offset / a.cols + r));
  }
}

MatView Graph::rows_of(Buffer& b, int64_t cols) const { return {b.data(), value_elems_ / cols, cols, dtype_}; }

double Graph::read_losses() {
  const auto n = static_cast<size_t>(loss_groups_);
  if (n == 0) return 0.0;
  loss_host_.resize(n * esize_);
  backend_.download(loss_host_.data(), losses_.data(), loss_host_.size());  // the forward's one wait
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    if (dtype_ == DType::f64) {
      double x = 0;
      std::memcpy(&x, loss_host_.data() + i * esize_, sizeof x);
      sum += x;
    } else {
      float x = 0;
      std::memcpy(&x, loss_host_.data() + i * esize_, sizeof x);
      sum += static_cast<double>(x);
    }
  }
  return sum;
}

}  // namespace sylva::bench::dd
