// GEMM: float32 through oneDNN's sgemm (JIT kernels for the CPU it runs
// on), float64 through Eigen (vectorised and blocked for the -march of the
// build). At the shapes of batched vertex functions (tens to hundreds of
// rows, hidden sizes 128-1536) oneDNN's sgemm ran 1.2-3.7x faster than
// Eigen's on one core here (docs/benchmarks.md, "Against the real DyNet").
#include <Eigen/Core>
#include <dnnl.h>
#include <omp.h>

#include <algorithm>
#include <type_traits>

#include "cpu_kernels.h"

namespace sylva::cpu {
namespace {

// C = op(A)·op(B) (+ C with accumulate) on row-major dense views. oneDNN
// runs its GEMM on the calling thread's OpenMP team size, which is set
// here to the backend's thread count (Eigen::nbThreads(), what
// Backend::set_threads sets) so that a GEMM issued from the streaming
// worker thread uses the same count as one from the main thread.
//
// With B transposed (C = A·Bᵀ: the input gradients of a vertex function,
// dX = dG·Wᵀ) and more than one thread, the columns of C are split over
// the threads here, each running a one-thread sgemm on its block: oneDNN's
// own threading of that case barely scales at batched shapes (2 threads,
// [34 x 1536]·[1536 x 1024]ᵀ: 1.80 ms against 1.53 ms on one; split by
// columns 0.76 ms; [128 x ...]: 3.18 against 2.16 ms), while its other
// cases already run ~1.9x faster on two (docs/notes/two-cores.md, "Two cores:
// the transposed GEMM and the fused groups").
void sgemm(const MatView& x, const MatView& y, const MatView& out, bool ta, bool tb, int64_t inner, bool accumulate) {
  const int threads = Eigen::nbThreads();
  const auto block = [&](int64_t n0, int64_t n1) {
    const float* yb = y.as<const float>() + (tb ? n0 * y.cols : n0);
    const dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', out.rows, n1 - n0, inner, 1.0f,
                                        x.as<const float>(), x.cols, yb, y.cols, accumulate ? 1.0f : 0.0f,
                                        out.as<float>() + n0, out.cols);
    SYLVA_CHECK(st == dnnl_success, "[cpu] oneDNN sgemm failed (status ", static_cast<int>(st), ") for [",
                out.rows, ", ", inner, "] x [", inner, ", ", n1 - n0, "]");
  };
  constexpr int64_t kColumnsPerThread = 128;  // below this oneDNN's threads were as fast or faster
  if (threads > 1 && tb && out.cols >= threads * kColumnsPerThread && !omp_in_parallel()) {
    const int64_t per = ((out.cols + threads - 1) / threads + 15) & ~int64_t{15};  // whole 16-float vectors
    on_threads(threads, [&](int t) {
      const int64_t n0 = std::min(out.cols, t * per), n1 = std::min(out.cols, n0 + per);
      if (n0 < n1) block(n0, n1);  // inside the team, oneDNN runs on this thread alone
    });
    return;
  }
  if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
  block(0, out.cols);
}

template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using CMap = Eigen::Map<const RowMat<T>>;

template <class T>
struct MatMul {
  static void run(const KernelArgs& a) {
    const MatView &x = a.in[0], &y = a.in[1];
    CMap<T> A(x.as<const T>(), x.rows, x.cols), B(y.as<const T>(), y.rows, y.cols);
    Eigen::Map<RowMat<T>> C(a.out.as<T>(), a.out.rows, a.out.cols);
    if (a.out.numel() == 0) return;
    bool ta = a.node.attrs.trans_a, tb = a.node.attrs.trans_b;
    int64_t inner = ta ? x.rows : x.cols;
    if (inner == 0) {
      if (!a.accumulate) C.setZero();
      return;
    }
    if constexpr (std::is_same_v<T, float>) {
      sgemm(x, y, a.out, ta, tb, inner, a.accumulate);
      return;
    }
    // Eigen's `=` zero-fills C before its GEMM accumulates; `+=` skips that.
    if (a.accumulate) {
      if (!ta && !tb) C.noalias() += A * B;
      else if (ta && !tb) C.noalias() += A.transpose() * B;
      else if (!ta && tb) C.noalias() += A * B.transpose();
      else C.noalias() += A.transpose() * B.transpose();
      return;
    }
    if (!ta && !tb) C.noalias() = A * B;
    else if (ta && !tb) C.noalias() = A.transpose() * B;
    else if (!ta && tb) C.noalias() = A * B.transpose();
    else C.noalias() = A.transpose() * B.transpose();
  }
};

}  // namespace

void register_matmul_kernels(KernelTable& t) { kernel(t, ir::OpKind::MatMul) = typed<MatMul>; }

}  // namespace sylva::cpu
