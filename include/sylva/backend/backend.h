// Backend: where kernels run. One interface, a registry keyed by device.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sylva/core/buffer.h"
#include "sylva/core/device.h"
#include "sylva/core/dtype.h"
#include "sylva/core/mat_view.h"
#include "sylva/ir/fused.h"
#include "sylva/ir/graph.h"

namespace sylva {

/// Per-call state kernels may read.
struct ExecContext {
  bool training = false;
  uint64_t seed = 0;
  uint64_t step = 0;
  /// Global vertex id of each output row (random ops key on it so every
  /// batching policy draws the same numbers); nullptr: the row index.
  const int32_t* row_vertex = nullptr;
  /// Per global vertex, the id random ops key on instead of the vertex id
  /// (GraphBatch::vertex_keys(): a share of a larger batch keys on the
  /// larger batch's ids, so data-parallel ranks draw what one process
  /// would); nullptr: the vertex id itself.
  const int32_t* vertex_key = nullptr;
  /// The precision GEMMs (ops of OpCategory::gemm) compute in: bf16 rounds
  /// float32 operands to bfloat16 and accumulates in float32. An operand
  /// already in bfloat16 (a parameter's copy) is read as it is.
  Precision gemm = Precision::fp32;
};

struct KernelArgs {
  const ir::Node& node;
  std::span<const MatView> in;
  MatView out;
  const ExecContext& ctx;
  /// out += result instead of out = result. Only for ops where
  /// accumulates_into_output(op) is true (MatMul): parameter gradients such
  /// as dW += Xᵀ·dY are written straight into the gradient.
  bool accumulate = false;
};

using ir::FusedProgram;
using ir::FusedStep;
using ir::fused_step;

/// Whether run() accepts KernelArgs::accumulate for `op`.
constexpr bool accumulates_into_output(ir::OpKind op) { return op == ir::OpKind::MatMul; }

/// One optimiser step of one parameter, on views in a backend's memory
/// (Backend::update_parameter). With the gradient taken as
///   g' = scale · (g + decay · w)        (decay 0: g' = scale · g),
/// computed in the parameter's dtype, by `rule`:
///   sgd:      w -= lr · g'
///   momentum: s0 = a · s0 + g';  w -= lr · s0
///   adagrad:  s0 += g'²;  w -= lr · g' / (sqrt(s0) + eps)
///   adam:     s0 = a · s0 + (1 - a) · g';  s1 = b · s1 + (1 - b) · g'²;
///             w -= lr · (s0 · c1) / (sqrt(s1 · c2) + eps)
/// over every element of w, or, when `rows` is not empty, only over those
/// rows (distinct; rows of w.cols elements). g is not changed.
struct ParamUpdate {
  enum class Rule : uint8_t { sgd, momentum, adagrad, adam };
  Rule rule = Rule::sgd;
  MatView w, g, s0, s1;
  double lr = 0.0, a = 0.0, b = 0.0, eps = 0.0, c1 = 1.0, c2 = 1.0;
  double decay = 0.0, scale = 1.0;
  std::span<const int32_t> rows;
  /// A hint for a dense update (`rows` empty) of a row-sparse gradient:
  /// when grad_rows_known, g is zero outside `grad_rows` (sorted), so a
  /// backend may skip reading it there. The result must be the same bits.
  std::span<const int32_t> grad_rows;
  bool grad_rows_known = false;
};

/// Columns [src_col, src_col + cols) of a source row moved to columns
/// [dst_col, dst_col + cols) of a destination row (Backend::move_row_windows).
struct ColumnWindow {
  int64_t src_col = 0, dst_col = 0, cols = 0;
};

/// The operations a device must provide. The runtime calls run() for
/// every math node and the row-movement primitives at F's boundary.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual Device device() const = 0;
  virtual std::string name() const = 0;
  /// Whether run() has a kernel for `op`.
  virtual bool supports(ir::OpKind op) const = 0;
  /// out = op(in). Throws sylva::Error on bad data (e.g. an id out of range).
  virtual void run(const KernelArgs& args) = 0;

  /// dst[dst_idx[k]] = src[src_idx[k]] for every k; src_idx[k] < 0 writes a
  /// zero row. An empty index span means the identity (0, 1, 2, ...).
  virtual void copy_rows(MatView src, std::span<const int32_t> src_idx, MatView dst,
                         std::span<const int32_t> dst_idx) = 0;
  /// dst[dst_idx[k]] += src[src_idx[k]]; negative indices are skipped.
  virtual void add_rows(MatView src, std::span<const int32_t> src_idx, MatView dst,
                        std::span<const int32_t> dst_idx) = 0;
  /// copy_rows / add_rows (`add`) of one column window: for every k,
  /// dst[dst_idx[k], w.dst_col + c] = (or +=) src[src_idx[k], w.src_col + c]
  /// for c < w.cols; a negative src_idx[k] writes zeros (copy) or is skipped
  /// (add). Index spans as in copy_rows. Only called where
  /// has_row_windows() (the runtime then moves rows straight into and out
  /// of a concat's or a slice's columns instead of through whole values).
  virtual void move_row_windows(MatView src, std::span<const int32_t> src_idx, MatView dst,
                                std::span<const int32_t> dst_idx, ColumnWindow w, bool add);
  virtual bool has_row_windows() const { return false; }
  virtual void fill_zero(MatView dst) = 0;
  /// dst = src converted to dst.dtype (same rows and cols): float32 to
  /// bfloat16 (rounded as sylva/core/bfloat16.h says) or back. The default
  /// throws (a backend without bfloat16).
  virtual void convert(MatView src, MatView dst);
  /// Why run() cannot compute GEMMs in `p` here (the missing CPU feature,
  /// or that the backend has no such kernels), or "" when it can. Every
  /// backend has fp32; the Executor refuses other precisions with this text.
  virtual std::string precision_unsupported(Precision p) const;
  /// dst += src, element by element (same numel).
  virtual void accumulate(MatView src, MatView dst) = 0;
  /// Runs `prog` over `rows` rows: in are its external inputs, out its
  /// outputs. Returns false if this backend has no fused kernels (the
  /// caller then runs the ops one by one).
  virtual bool run_fused(const FusedProgram& prog, std::span<const MatView> in, std::span<const MatView> out,
                         int64_t rows) {
    (void)prog, (void)in, (void)out, (void)rows;
    return false;
  }
  /// Threads used by kernels (GEMMs); 0 keeps the current setting.
  virtual void set_threads(int threads) = 0;

  /// The memory that run() and the row primitives read and write: host
  /// memory for the CPU, device memory for CUDA. The runtime keeps its
  /// arenas, parameter copies and inputs in it.
  virtual Memory& memory() { return host_memory(); }
  /// Copies `bytes` from host memory into memory() (upload) or back
  /// (download); both return when the copy is done.
  virtual void upload(void* dst, const void* src, size_t bytes);
  virtual void download(void* dst, const void* src, size_t bytes);
  /// Whether run() and the row primitives may be called from two threads
  /// at once (the streaming optimisation's worker thread).
  virtual bool concurrent_calls() const { return true; }
  /// Waits until the work of earlier calls is done: a device queues it
  /// (download() waits by itself); the CPU's calls return when done.
  virtual void synchronize() {}
  /// The queue this backend's work goes to (CUDA: the current lane's
  /// cudaStream_t), for running your own kernels in order with it; nullptr
  /// for the CPU.
  virtual void* native_stream() { return nullptr; }

  /// Lanes: in-order queues of work that may run concurrently with each
  /// other (CUDA streams; the CPU has one). Later calls queue their work on
  /// lane `lane` (0, the default, .. lanes() - 1); returns the previous
  /// lane. The streaming optimisation runs its side work on lane 1 of a
  /// backend that takes calls from one thread (concurrent_calls() false).
  virtual int lanes() const { return 1; }
  virtual int set_lane(int lane);
  /// Asks for at least `n` lanes and returns lanes() (which may stay below
  /// n): a device whose queues are cheap to add (CUDA: streams) creates the
  /// missing ones; the default adds none. The IOS CNN runner
  /// (sylva/graph/cnn.h) gives each group of a concurrent stage a lane.
  virtual int reserve_lanes(int n) {
    (void)n;
    return lanes();
  }
  /// An event marking the work queued so far on the current lane, to be
  /// waited for once: wait(e) makes work queued later on the current lane
  /// start after it.
  virtual uint64_t record() { return 0; }
  virtual void wait(uint64_t event) { (void)event; }

  /// Optimisers on the device: one ParamUpdate. The default throws (a
  /// backend without optimiser kernels; the Trainer then keeps the
  /// optimiser on the host).
  virtual void update_parameter(const ParamUpdate& u);
  /// *out = the sum of squares, accumulated in double, of g + decay · w
  /// (each term computed in g's dtype; decay 0: of g) over every element,
  /// or only over `rows` when not empty. `out` is one double in memory();
  /// NaN or infinity when some term is not finite.
  virtual void sum_squares(MatView g, MatView w, double decay, std::span<const int32_t> rows, double* out);
  /// Whether update_parameter() and sum_squares() are implemented.
  virtual bool has_optimiser_kernels() const { return false; }
};

/// The backend for `device`. CPU always exists; CUDA is the no_cuda stub
/// unless built with -DSYLVA_BUILD_CUDA=ON.
Backend& backend_for(Device device);

}  // namespace sylva
