// The CUDA backend: cuBLAS GEMMs (bf16 ones in bf16_gemm.cc), the kernels of
// kernels/cuda (row movement, softmax family, cross-entropy, reductions,
// lookup, dropout), and fused groups generated as CUDA source and compiled
// with NVRTC (single elementwise and column ops run as one-step groups). Its
// memory() is device memory: the runtime keeps arenas, parameter copies and
// inputs there. Calls are asynchronous on the backend's stream: host data
// is copied into a ring of pinned memory first, so the caller may reuse it
// at once; download() and synchronize() wait. Ids and labels are checked on
// the device without a wait: a bad one is flagged (device_checks.h) and its
// error, naming the row and value, is thrown at the next download() or
// synchronize(). SYLVA_CUDA_SYNC=1 synchronises and reads the flags after
// every call (errors then surface at the call that caused them).
#include <algorithm>
#include <array>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../backend_factories.h"
#include "../dropout_key.h"
#include "bf16_gemm.h"
#include "cuda/ops.h"
#include "cuda/optim.h"
#include "cuda/rows.h"
#include "cuda_check.h"
#include "device_checks.h"
#include "device_memory.h"
#include "fused_codegen.h"
#include "nvrtc_cache.h"
#include "row_targets.h"
#include "sylva/core/log.h"

namespace sylva {
namespace {

using ir::OpKind;

struct CublasDeleter {
  void operator()(cublasContext* h) const { cuda::cublas_api().destroy(h); }
};
using cuda::device_alloc;

// Ops with a kernel of their own in kernels/cuda/ops.cu (the fusible ones
// run as one-step fused groups, MatMul through cuBLAS).
bool own_kernel(OpKind op) {
  switch (op) {
    case OpKind::Softmax: case OpKind::LogSoftmax: case OpKind::SoftmaxGrad: case OpKind::LogSoftmaxGrad:
    case OpKind::SoftmaxCrossEntropy: case OpKind::SoftmaxCrossEntropyGrad: case OpKind::Sum: case OpKind::Mean:
    case OpKind::SumRows: case OpKind::Broadcast: case OpKind::Lookup: case OpKind::LookupGrad:
    case OpKind::DropoutMask:
      return true;
    default: return false;
  }
}

// Rows a copy_rows / add_rows call moves: as many as its index spans, else
// the source's rows (the CPU backend's rule).
int64_t rows_moved(const MatView& src, std::span<const int32_t> si, std::span<const int32_t> di) {
  return !si.empty() ? static_cast<int64_t>(si.size()) : !di.empty() ? static_cast<int64_t>(di.size()) : src.rows;
}

// Device scalars the reducing kernels use: two doubles and sum_squares'
// per-block partials.
struct Scalars {
  double sums[2];
  double partials[256];
};

// Flags for the validating kernels (device_checks.h): a wait every this
// many checks at most, when the ring is full (a Tree-LSTM step makes a few dozen).
constexpr size_t kFlags = 4096;

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(int index)
      : index_(index), cache_(cuda::NvrtcCache::default_dir()), memory_(index, [this] { return lane_streams(); }) {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    SYLVA_CHECK(err == cudaSuccess && index >= 0 && index < count, "[cuda] no CUDA device ", index, " visible (",
                err == cudaSuccess ? std::to_string(count) + " device(s) found" : cudaGetErrorString(err),
                "); use Device::cpu() or run on a machine with an NVIDIA GPU");
    cuda::use_device(index);
    SYLVA_CUDA_CHECK(cudaFree(nullptr));  // creates the context now, not inside the first kernel call
    cudaDeviceProp prop{};
    SYLVA_CUDA_CHECK(cudaGetDeviceProperties(&prop, index));
    arch_ = "sm_" + std::to_string(prop.major) + std::to_string(prop.minor);
    major_ = prop.major;
    max_shared_ = static_cast<int64_t>(prop.sharedMemPerBlockOptin);
    reserve_lanes(2);
    flags_device_ = device_alloc(kFlags * sizeof(cuda::DeviceFlag));
    SYLVA_CUDA_CHECK(cudaMemsetAsync(flags_device_.get(), 0xff, kFlags * sizeof(cuda::DeviceFlag), stream()));
    cuda::DeviceFlag* host = nullptr;
    SYLVA_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&host), kFlags * sizeof(cuda::DeviceFlag)));
    flags_host_.reset(reinterpret_cast<char*>(host));
    sync();
    const char* sync_env = std::getenv("SYLVA_CUDA_SYNC");
    sync_each_ = sync_env && std::string(sync_env) == "1";
  }

  Device device() const override { return Device::cuda(index_); }
  std::string name() const override { return "cuda"; }
  // Registered ops (ir::register_op) have no CUDA kernels: only the built-in fusible ones.
  bool supports(OpKind op) const override {
    return op == OpKind::MatMul || (op < OpKind::Count_ && ir::fusible(op)) || own_kernel(op);
  }

  void run(const KernelArgs& a) override {
    SYLVA_CHECK(supports(a.node.op), "[cuda] op '", ir::op_name(a.node.op), "' has no CUDA kernel yet");
    if (a.node.op == OpKind::MatMul) return matmul(a);
    SYLVA_CHECK(!a.accumulate, "[cuda] op '", ir::op_name(a.node.op), "' cannot accumulate into its output");
    if (own_kernel(a.node.op)) return run_own(a);
    FusedProgram p;
    std::vector<int32_t> inputs;
    for (size_t i = 0; i < a.in.size(); ++i) inputs.push_back(-1 - static_cast<int32_t>(i));
    FusedStep st = fused_step(a.node.op, std::move(inputs), a.out.cols, 0, a.node.attrs.begin);
    st.alpha = a.node.attrs.alpha;
    if (st.op == OpKind::Assemble)
      for (size_t i = 0; i < a.in.size(); ++i) st.offsets.push_back(a.node.attrs.ranges[2 * i]);
    p.steps.push_back(st);
    p.name = std::string(ir::op_name(a.node.op));
    SYLVA_CHECK(run_fused(p, a.in, std::span<const MatView>(&a.out, 1), a.out.rows), "[cuda] op '", p.name,
                "' could not be generated");
  }

  void copy_rows(MatView src, std::span<const int32_t> src_idx, MatView dst,
                 std::span<const int32_t> dst_idx) override {
    SYLVA_ASSERT(src.cols == dst.cols && src.dtype == dst.dtype, "copy_rows: ", src.cols, " vs ", dst.cols, " cols");
    const int64_t n = rows_moved(src, src_idx, dst_idx);
    const auto [s, d] = upload(src_idx, dst_idx);
    SYLVA_CUDA_CHECK(static_cast<cudaError_t>(cuda_kernels::copy_rows(
        src.data, s, dst.data, d, n, dst.cols, static_cast<int>(dtype_size(dst.dtype)), stream())));
    done();
  }
  void add_rows(MatView src, std::span<const int32_t> src_idx, MatView dst,
                std::span<const int32_t> dst_idx) override {
    SYLVA_ASSERT(src.cols == dst.cols && src.dtype == dst.dtype, "add_rows: ", src.cols, " vs ", dst.cols, " cols");
    const int64_t n = rows_moved(src, src_idx, dst_idx);
    // Distinct targets (a tree's children, the identity) need no atomics.
    const bool atomic = !cuda::distinct_rows(dst_idx, dst.rows, seen_rows_);
    const auto [s, d] = upload(src_idx, dst_idx);
    SYLVA_CUDA_CHECK(static_cast<cudaError_t>(
        cuda_kernels::add_rows(src.data, s, dst.data, d, n, dst.cols, dst.dtype == DType::f64, atomic, stream())));
    done();
  }
  void fill_zero(MatView dst) override {
    SYLVA_CUDA_CHECK(cudaMemsetAsync(dst.data, 0, static_cast<size_t>(dst.numel()) * dtype_size(dst.dtype),
                                     stream()));
    done();
  }
  void convert(MatView src, MatView dst) override { cuda::convert_bf16(src, dst, stream()), done(); }
  std::string precision_unsupported(Precision p) const override { return cuda::bf16_unsupported(p, major_, arch_); }
  void accumulate(MatView src, MatView dst) override {
    SYLVA_CHECK(src.numel() == dst.numel(), "[cuda] accumulate: ", src.numel(), " elements into ", dst.numel());
    SYLVA_CUDA_CHECK(static_cast<cudaError_t>(
        cuda_kernels::accumulate(src.data, dst.data, dst.numel(), dst.dtype == DType::f64, stream())));
    done();
  }

  bool run_fused(const FusedProgram& prog, std::span<const MatView> in, std::span<const MatView> out,
                 int64_t rows) override {
    if (rows == 0) return true;
    const Launch& l = launch_for(prog, out.front().dtype, in);
    if (!l.function) return false;
    // SylvaFusedArgs: eight-byte words only (see kernels/templates/fused_rows.cu).
    words_.clear();
    for (const MatView& v : in) words_.push_back(reinterpret_cast<uint64_t>(v.data));
    for (const MatView& v : in) words_.push_back(static_cast<uint64_t>(v.rows == 1 ? 0 : v.cols));
    for (const MatView& v : out) words_.push_back(reinterpret_cast<uint64_t>(v.data));
    words_.push_back(static_cast<uint64_t>(rows));
    void* params[] = {words_.data()};  // the kernel's one parameter, the struct (copied at launch)
    const int64_t blocks = std::min<int64_t>((rows + l.warps - 1) / l.warps, 65535);
    SYLVA_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(l.function), dim3(static_cast<unsigned>(blocks)),
                                      dim3(static_cast<unsigned>(l.warps * 32)), params,
                                      static_cast<size_t>(l.shared_bytes), stream()));
    done();
    return true;
  }

  void set_threads(int) override {}

  void update_parameter(const ParamUpdate& u) override {
    SYLVA_CHECK(u.w.numel() == u.g.numel() && u.w.dtype == u.g.dtype, "[cuda] update_parameter: value ",
                u.w.numel(), " and gradient ", u.g.numel(), " elements differ");
    const int32_t* rows = upload(u.rows, {}).first;
    const cuda_kernels::UpdateConstants k{static_cast<int>(u.rule), u.lr, u.a, u.b, u.eps, u.c1, u.c2, u.decay,
                                          u.scale};
    check(cuda_kernels::update_parameter(u.w.data, u.g.data, u.s0.data, u.s1.data, u.w.numel(), rows,
                                         static_cast<int64_t>(u.rows.size()), u.w.cols, k, u.w.dtype == DType::f64,
                                         stream()));
    done();
  }
  void sum_squares(MatView g, MatView w, double decay, std::span<const int32_t> rows, double* out) override {
    const int32_t* r = upload(rows, {}).first;
    check(cuda_kernels::sum_squares(g.data, w.data, decay, g.numel(), r, static_cast<int64_t>(rows.size()), g.cols,
                                    scalars()->partials, out, g.dtype == DType::f64, stream()));
    done();
  }
  bool has_optimiser_kernels() const override { return true; }

  Memory& memory() override { return memory_; }
  bool concurrent_calls() const override { return false; }
  void synchronize() override {
    sync();
    read_flags();
  }
  void* native_stream() override { return stream(); }

  // Lanes: one CUDA stream each. An event goes back to the pool once its
  // wait is queued (a wait uses the record made before it), so the pool
  // holds as many events as are ever outstanding at once.
  int lanes() const override { return static_cast<int>(lanes_.size()); }
  int set_lane(int lane) override {
    SYLVA_CHECK(lane >= 0 && lane < lanes(), "[cuda] lane ", lane, " out of range [0, ", lanes(), ")");
    return std::exchange(cur_, lane);
  }
  // Lanes are added, never removed: a stream, a cuBLAS handle and device scalars each.
  int reserve_lanes(int n) override {
    while (lanes() < std::min(n, 64)) {
      Lane lane;
      cudaStream_t s = nullptr;
      SYLVA_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      lane.stream.reset(s);
      cublasHandle_t h = nullptr;
      SYLVA_CUBLAS_CHECK(cuda::cublas_api().create(&h));
      lane.cublas.reset(h);
      SYLVA_CUBLAS_CHECK(cuda::cublas_api().set_stream(h, s));
      lane.scalars_buffer = device_alloc(sizeof(Scalars));
      lane.scalars = static_cast<Scalars*>(lane.scalars_buffer.get());
      lanes_.push_back(std::move(lane));
    }
    return lanes();
  }
  uint64_t record() override {
    if (free_events_.empty()) {
      cudaEvent_t e = nullptr;
      SYLVA_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      events_.emplace_back(e);
      free_events_.push_back(events_.size() - 1);
    }
    const uint64_t id = free_events_.back();
    free_events_.pop_back();
    SYLVA_CUDA_CHECK(cudaEventRecord(events_[id].get(), stream()));
    return id;
  }
  void wait(uint64_t event) override {
    SYLVA_ASSERT(event < events_.size(), "event ", event, " was not recorded");
    SYLVA_CUDA_CHECK(cudaStreamWaitEvent(stream(), events_[event].get(), 0));
    free_events_.push_back(event);
  }

  // Through the pinned ring: the caller may reuse `src` at once, and the
  // copy runs in stream order without stopping the host.
  void upload(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0) return;
    const size_t at = reserve_ring(bytes);
    std::memcpy(ring_host_.get() + at, src, bytes);
    SYLVA_CUDA_CHECK(
        cudaMemcpyAsync(dst, ring_host_.get() + at, bytes, cudaMemcpyHostToDevice, stream()));
    done();
  }
  // Waits for everything queued before (on every lane), then for the copy,
  // which brings the pending id/label flags along.
  void download(void* dst, const void* src, size_t bytes) override {
    if (bytes == 0) return;
    sync();
    SYLVA_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream()));
    queue_flag_copy();
    sync();
    settle_flags();
  }

 private:
  std::vector<cudaStream_t> lane_streams() const {
    std::vector<cudaStream_t> s;
    for (const Lane& lane : lanes_) s.push_back(lane.stream.get());
    return s;
  }
  // Every call that issues work goes through here: it sets this thread's device first.
  cudaStream_t stream() const {
    cuda::use_device(index_);
    return lanes_[static_cast<size_t>(cur_)].stream.get();
  }
  cublasHandle_t cublas() const { return lanes_[static_cast<size_t>(cur_)].cublas.get(); }
  Scalars* scalars() const { return lanes_[static_cast<size_t>(cur_)].scalars; }
  // Waits for every lane.
  void sync() {
    for (const Lane& lane : lanes_) SYLVA_CUDA_CHECK(cudaStreamSynchronize(lane.stream.get()));
  }
  // After a call's work is queued.
  void done() {
    if (!sync_each_) return;
    sync();
    read_flags();
  }

  // Deferred id/label checks (device_checks.h). The flag of the next
  // validating kernel; a full ring is read back (a wait) and started over.
  int64_t* claim_flag(cuda::DeviceChecks::Describe describe) {
    if (!checks_.room()) {
      sync();
      read_flags();
      sync();  // the resets of the flags read are done before their slots come round
      checks_.restart();
    }
    return &flags()[checks_.claim(std::move(describe))].row;
  }
  cuda::DeviceFlag* flags() const { return static_cast<cuda::DeviceFlag*>(flags_device_.get()); }
  cuda::DeviceFlag* host_flags() const { return reinterpret_cast<cuda::DeviceFlag*>(flags_host_.get()); }
  // Queues the copy of the pending flags to the host, after a sync() (the
  // kernels that write them, on any lane, are done); the caller waits next.
  void queue_flag_copy() {
    if (checks_.count() == 0) return;
    const size_t first = checks_.first(), n = checks_.count();
    SYLVA_CUDA_CHECK(cudaMemcpyAsync(host_flags() + first, flags() + first, n * sizeof(cuda::DeviceFlag),
                                     cudaMemcpyDeviceToHost, stream()));
  }
  // After that wait: resets the flags on the device, in stream order, and
  // throws the earliest flagged call's error.
  void settle_flags() {
    if (checks_.count() == 0) return;
    const size_t first = checks_.first(), n = checks_.count();
    SYLVA_CUDA_CHECK(cudaMemsetAsync(flags() + first, 0xff, n * sizeof(cuda::DeviceFlag), stream()));
    checks_.settle({host_flags() + first, n});
  }
  // Both, after a sync(): the pending flags, read and settled.
  void read_flags() {
    if (checks_.count() == 0) return;
    queue_flag_copy();
    sync();
    settle_flags();
  }

  // Room for `bytes` in the pinned ring; returns its offset. The device
  // ring mirrors the host ring's offsets, so index tables copied there stay
  // put until the ring wraps, which first waits for the stream (copies and
  // kernels in flight still read their part).
  size_t reserve_ring(size_t bytes) {
    constexpr size_t kMin = size_t{1} << 20;
    if (ring_used_ + bytes > ring_bytes_) {
      sync();
      ring_used_ = 0;
      if (bytes > ring_bytes_) {
        const size_t want = std::max({bytes, 2 * ring_bytes_, kMin});
        char* h = nullptr;
        SYLVA_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&h), want));
        ring_host_.reset(h);
        ring_device_ = device_alloc(want);
        ring_bytes_ = want;
      }
    }
    const size_t at = ring_used_;
    ring_used_ = std::min(ring_bytes_, align(at + bytes));
    return at;
  }
  static size_t align(size_t bytes) { return (bytes + 255) / 256 * 256; }

  void check(int launched) { SYLVA_CUDA_CHECK(static_cast<cudaError_t>(launched)); }


  void run_own(const KernelArgs& a) {
    const bool f64 = a.out.dtype == DType::f64;
    void* s = stream();
    const MatView& x = a.in[0];
    Scalars* const sc = scalars();
    switch (a.node.op) {
      case OpKind::Softmax:
      case OpKind::LogSoftmax:
        check(cuda_kernels::softmax(x.data, a.out.data, a.out.rows, a.out.cols, a.node.op == OpKind::LogSoftmax, f64,
                                    s));
        break;
      case OpKind::SoftmaxGrad:
      case OpKind::LogSoftmaxGrad:
        check(cuda_kernels::softmax_grad(x.data, a.in[1].data, a.out.data, a.out.rows, a.out.cols,
                                         a.node.op == OpKind::LogSoftmaxGrad, f64, s));
        break;
      case OpKind::SoftmaxCrossEntropy:
      case OpKind::SoftmaxCrossEntropyGrad: {
        const bool mean = a.node.attrs.reduction == ir::Reduction::mean;
        const auto* labels = a.in[1].as<const int32_t>();
        int64_t* const flag = claim_flag([cols = x.cols](int64_t row, int64_t label) {
          return detail::concat("[softmax_cross_entropy] label ", label, " at row ", row, " out of range [0, ", cols,
                                ") (use -1 for no loss)");
        });
        if (a.node.op == OpKind::SoftmaxCrossEntropy)
          check(cuda_kernels::cross_entropy(x.data, labels, a.out.data, x.rows, x.cols, mean, sc->sums, flag, f64,
                                            s));
        else
          check(cuda_kernels::cross_entropy_grad(x.data, labels, a.in[2].data, a.out.data, x.rows, x.cols, mean,
                                                 sc->sums, flag, f64, s));
        break;
      }
      case OpKind::Sum:
      case OpKind::Mean:
        check(cuda_kernels::sum_all(x.data, a.out.data, x.numel(), a.node.op == OpKind::Mean, sc->sums, f64,
                                    s));
        break;
      case OpKind::SumRows: check(cuda_kernels::sum_rows(x.data, a.out.data, x.rows, x.cols, f64, s)); break;
      case OpKind::Broadcast: {
        const int64_t n = a.out.rows * a.out.cols;
        const double scale = a.node.attrs.reduction == ir::Reduction::mean && n > 0 ? 1.0 / static_cast<double>(n)
                                                                                   : 1.0;
        check(cuda_kernels::broadcast(x.data, x.numel(), a.out.data, a.out.rows, a.out.cols, scale, f64, s));
        break;
      }
      case OpKind::Lookup:
      case OpKind::LookupGrad: {
        const auto* ids = a.in[1].as<const int32_t>();
        const bool fwd = a.node.op == OpKind::Lookup;
        const int64_t table_rows = fwd ? x.rows : a.out.rows;
        int64_t* const flag = claim_flag([table_rows](int64_t row, int64_t id) {
          return detail::concat("[lookup] id ", id, " at row ", row, " is out of range [0, ", table_rows,
                                ") of the table");
        });
        if (fwd)
          check(cuda_kernels::lookup(x.data, table_rows, ids, a.out.data, a.out.rows, a.out.cols, flag, f64, s));
        else
          check(cuda_kernels::lookup_grad(x.data, ids, a.out.data, x.rows, table_rows, a.out.cols, flag, f64, s));
        break;
      }
      case OpKind::DropoutMask: {
        const double p = a.ctx.training ? a.node.attrs.alpha : 0.0;  // p = 0: every mask value is 1
        const int32_t* vertices = nullptr;
        if (a.ctx.training && a.ctx.vertex_key) {  // each row's key, composed here
          std::vector<int32_t> keys(static_cast<size_t>(a.out.rows));
          for (int64_t r = 0; r < a.out.rows; ++r) keys[static_cast<size_t>(r)] = static_cast<int32_t>(dropout_vertex(a.ctx, r));
          vertices = upload(std::span<const int32_t>(keys), {}).first;
        } else if (a.ctx.training && a.ctx.row_vertex) {
          vertices = upload(std::span<const int32_t>(a.ctx.row_vertex, static_cast<size_t>(a.out.rows)), {}).first;
        }
        const uint64_t base = a.ctx.training ? dropout_base(a.ctx, a.node) : 0;
        check(cuda_kernels::dropout_mask(a.out.data, a.out.rows, a.out.cols, base, vertices, p, f64, s));
        break;
      }
      default: SYLVA_THROW("[cuda] op '", ir::op_name(a.node.op), "' has no CUDA kernel yet");
    }
    done();
  }

  void matmul(const KernelArgs& a) {
    const MatView &x = a.in[0], &y = a.in[1];
    const bool ta = a.node.attrs.trans_a, tb = a.node.attrs.trans_b;
    const int m = static_cast<int>(a.out.rows), n = static_cast<int>(a.out.cols);
    const int k = static_cast<int>(ta ? x.rows : x.cols);
    if (a.out.numel() == 0) return;
    if (k == 0) {
      if (!a.accumulate) fill_zero(a.out);
      return;
    }
    if (cuda::bf16_gemm(a)) return cuda::run_bf16_gemm(cublas(), a, lanes_[static_cast<size_t>(cur_)].bf16, stream()),
                                   done();
    // Row-major C = op(A) op(B) is column-major Cᵀ = op(B)ᵀ op(A)ᵀ.
    const cublasOperation_t ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N, oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (a.out.dtype == DType::f64) {
      const double one = 1, beta = a.accumulate ? 1 : 0;
      SYLVA_CUBLAS_CHECK(cuda::cublas_api().dgemm(cublas(), ob, oa, n, m, k, &one, y.as<const double>(),
                                     static_cast<int>(y.cols), x.as<const double>(), static_cast<int>(x.cols), &beta,
                                     a.out.as<double>(), n));
    } else {
      const float one = 1, beta = a.accumulate ? 1 : 0;
      SYLVA_CUBLAS_CHECK(cuda::cublas_api().sgemm(cublas(), ob, oa, n, m, k, &one, y.as<const float>(),
                                     static_cast<int>(y.cols), x.as<const float>(), static_cast<int>(x.cols), &beta,
                                     a.out.as<float>(), n));
    }
    done();
  }

  // Index tables to the device ring, both in one copy (nullptr for an
  // empty span: the identity).
  std::pair<const int32_t*, const int32_t*> upload(std::span<const int32_t> a, std::span<const int32_t> b) {
    const size_t b_at = align(a.size_bytes()), bytes = b_at + b.size_bytes();
    if (a.empty() && b.empty()) return {nullptr, nullptr};
    const size_t at = reserve_ring(bytes);
    char* host = ring_host_.get() + at;
    char* dev = static_cast<char*>(ring_device_.get()) + at;
    if (!a.empty()) std::memcpy(host, a.data(), a.size_bytes());
    if (!b.empty()) std::memcpy(host + b_at, b.data(), b.size_bytes());
    SYLVA_CUDA_CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, stream()));
    return {a.empty() ? nullptr : reinterpret_cast<const int32_t*>(dev),
            b.empty() ? nullptr : reinterpret_cast<const int32_t*>(dev + b_at)};
  }

  // A group's kernel and block shape, by a compact key of what its source
  // depends on (the steps, the input widths, the dtype): a group's source is
  // generated, compiled and loaded once, and each later launch costs a
  // hash lookup. A group that cannot be generated is remembered too
  // (function null), after one warning.
  struct Launch {
    cudaKernel_t function = nullptr;
    int warps = 0;
    int64_t shared_bytes = 0;
  };
  const Launch& launch_for(const FusedProgram& prog, DType dtype, std::span<const MatView> in) {
    key_.clear();
    const auto put = [&](int64_t v) { key_.append(reinterpret_cast<const char*>(&v), sizeof v); };
    put(static_cast<int64_t>(dtype));
    for (const MatView& v : in) put(v.cols);
    for (const FusedStep& st : prog.steps) {
      put(static_cast<int64_t>(st.op));
      put(static_cast<int64_t>(st.args.size()));
      for (int32_t a : st.args) put(a);
      put(st.cols);
      put(st.begin);
      put(static_cast<int64_t>(st.offsets.size()));
      for (int64_t o : st.offsets) put(o);
      put(std::bit_cast<int64_t>(st.alpha));
      put(st.output);
    }
    auto it = launches_.find(key_);
    if (it != launches_.end()) return it->second;
    std::vector<int64_t> cols;
    for (const MatView& v : in) cols.push_back(v.cols);
    cuda::FusedKernel k;
    try {
      k = cuda::fused_kernel_source(prog, dtype, cols, max_shared_);
    } catch (const Error& e) {  // refused (e.g. too much scratch): the caller runs the ops one by one
      warn_once(prog.name, e.what());
      return launches_.emplace(key_, Launch{}).first->second;
    }
    const cudaKernel_t f = kernel(k);
    if (k.shared_bytes > 48 * 1024)  // above the default: opt in (sm_70 and later)
      SYLVA_CUDA_CHECK(cudaKernelSetAttributeForDevice(f, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                       static_cast<int>(k.shared_bytes), index_));
    return launches_.emplace(key_, Launch{f, k.warps, k.shared_bytes}).first->second;
  }

  // The kernel of a generated source, compiled (or found in the cache) and
  // loaded once; the runtime API's libraries need no link to libcuda.
  cudaKernel_t kernel(const cuda::FusedKernel& k) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = modules_.find(k.source);
    if (it == modules_.end()) {
      const std::shared_ptr<const std::string> cubin = cache_.compile(k.source, arch_);
      cudaLibrary_t lib = nullptr;
      SYLVA_CUDA_CHECK(cudaLibraryLoadData(&lib, cubin->data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
      std::unique_ptr<CUlib_st, cuda::LibraryDeleter> owned(lib);
      cudaKernel_t f = nullptr;
      SYLVA_CUDA_CHECK(cudaLibraryGetKernel(&f, lib, k.kernel.c_str()));
      it = modules_.emplace(k.source, Loaded{std::move(owned), f}).first;
    }
    return it->second.function;
  }

  void warn_once(const std::string& program, const std::string& why) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (warned_.insert(program).second)
      log(LogLevel::warning, "[cuda] fused group '" + program + "' runs unfused: " + why);
  }

  struct Loaded {
    std::unique_ptr<CUlib_st, cuda::LibraryDeleter> library;
    cudaKernel_t function;
  };

  int index_;
  std::string arch_;
  int64_t max_shared_ = 48 * 1024;  // dynamic shared memory a block may opt in to
  int major_ = 0;                    // compute capability
  cuda::NvrtcCache cache_;
  struct Lane {
    std::unique_ptr<CUstream_st, cuda::StreamDeleter> stream;
    std::unique_ptr<cublasContext, CublasDeleter> cublas;
    std::unique_ptr<void, cuda::DeviceDeleter> scalars_buffer;
    Scalars* scalars = nullptr;
    cuda::Bf16Operands bf16;  // bf16 GEMMs' rounded operands
  };
  std::vector<Lane> lanes_;
  int cur_ = 0;
  std::vector<std::unique_ptr<CUevent_st, cuda::EventDeleter>> events_;
  std::vector<uint64_t> free_events_;
  cuda::DeviceMemory memory_;
  bool sync_each_ = false;
  cuda::DeviceChecks checks_{kFlags};                   // claim_flag(): the validating kernels' flags
  std::unique_ptr<void, cuda::DeviceDeleter> flags_device_;
  std::unique_ptr<char, cuda::PinnedDeleter> flags_host_;
  // The staging ring (reserve_ring()): pinned host memory and its device mirror.
  std::unique_ptr<char, cuda::PinnedDeleter> ring_host_;
  std::unique_ptr<void, cuda::DeviceDeleter> ring_device_;
  size_t ring_bytes_ = 0, ring_used_ = 0;
  std::mutex mutex_;
  std::map<std::string, Loaded> modules_;
  std::unordered_map<std::string, Launch> launches_;  // launch_for()
  std::string key_;                                   // launch_for()'s scratch
  std::vector<uint64_t> words_;                       // run_fused()'s kernel argument
  std::vector<uint64_t> seen_rows_;                   // add_rows()'s distinct_rows() scratch (all zero)
  std::set<std::string> warned_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(int index) { return std::make_unique<CudaBackend>(index); }

}  // namespace sylva
