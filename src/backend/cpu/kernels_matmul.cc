// GEMM: float32 through oneDNN's sgemm (JIT kernels for the CPU it runs
// on), float64 through Eigen (vectorised and blocked for the -march of the
// build). At the shapes of batched vertex functions (tens to hundreds of
// rows, hidden sizes 128-1536) oneDNN's sgemm ran 1.2-3.7x faster than
// Eigen's on one core here (docs/benchmarks.md, "Against the real DyNet").
// Under Precision::bf16, float32 GEMMs run on bfloat16 operands through
// oneDNN's matmul primitive (bf16_gemm below).
#include <Eigen/Core>
#include <dnnl.h>
#include <omp.h>

#include <algorithm>
#include <dnnl.hpp>
#include <map>
#include <tuple>
#include <type_traits>
#include <vector>

#include "cpu_kernels.h"
#include "sylva/core/bfloat16.h"

namespace sylva::cpu {
namespace {

// C = op(A)·op(B) (+ C) with bfloat16 operands, float32 accumulation and a
// float32 C. One oneDNN matmul primitive per thread and (K, N, transposes,
// accumulate), with the row count M left to run time: oneDNN then runs
// its JIT bf16 GEMM ("gemm:jit"), which on one Zen 5 core reached 342-494
// GFLOP/s at the Tree-LSTM's shapes, against 368-484 for a primitive built
// for the exact M (brgemm), whose creation costs about 250 us for a new M
// -- and a batch of trees has a new M at almost every level; kept exact-M
// primitives lost in whole steps (docs/notes/design-bf16.md, "What was
// built").
//
// A single row (m = 1) runs as two equal rows: oneDNN computes one row by
// a GEMV whose sums are ordered otherwise, and a vertex's value must not
// depend on how many vertices share its GEMM (Bfs and Serial give every
// vertex the same bits; tests/runtime/invariance_test.cc). A row's k
// values lie the same in memory transposed or not.
class Bf16Gemm {
 public:
  // a: [m x k] (ta: stored [k x m]); b: [k x n] (tb: stored [n x k]); both bfloat16.
  void run(const uint16_t* a, const uint16_t* b, float* c, int64_t m, int64_t n, int64_t k, bool ta, bool tb,
           bool accumulate) {
    if (m == 1) {
      std::vector<uint16_t>& a2 = scratch_[2];
      a2.assign(a, a + k);
      a2.insert(a2.end(), a, a + k);
      row_pair_.assign(c, c + n);  // with accumulate, both rows start from c's
      row_pair_.insert(row_pair_.end(), c, c + n);
      run_rows(a2.data(), b, row_pair_.data(), 2, n, k, false, tb, accumulate);
      std::copy(row_pair_.begin(), row_pair_.begin() + n, c);
      return;
    }
    run_rows(a, b, c, m, n, k, ta, tb, accumulate);
  }

  /// This thread's: primitives and streams are not shared between threads.
  static Bf16Gemm& mine() {
    thread_local Bf16Gemm g;
    return g;
  }

  /// Scratch for operands converted from float32 (0: A, 1: B).
  std::vector<uint16_t>& scratch(int i) { return scratch_[i]; }

 private:
  void run_rows(const uint16_t* a, const uint16_t* b, float* c, int64_t m, int64_t n, int64_t k, bool ta, bool tb,
                bool accumulate) {
    using dnnl::memory;
    using Tag = memory::format_tag;
    const Key key{k, n, ta, tb, accumulate};
    auto it = prims_.find(key);
    if (it == prims_.end()) {
      const memory::desc a_md({DNNL_RUNTIME_DIM_VAL, k}, memory::data_type::bf16, ta ? Tag::ba : Tag::ab);
      const memory::desc b_md({k, n}, memory::data_type::bf16, tb ? Tag::ba : Tag::ab);
      const memory::desc c_md({DNNL_RUNTIME_DIM_VAL, n}, memory::data_type::f32, Tag::ab);
      dnnl::primitive_attr attr;
      if (accumulate) {
        dnnl::post_ops ops;
        ops.append_sum(1.0f);
        attr.set_post_ops(ops);
      }
      const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), attr, engine_);
      it = prims_.emplace(key, dnnl::matmul(pd)).first;
    }
    const memory A({{m, k}, memory::data_type::bf16, ta ? Tag::ba : Tag::ab}, engine_, const_cast<uint16_t*>(a));
    const memory B({{k, n}, memory::data_type::bf16, tb ? Tag::ba : Tag::ab}, engine_, const_cast<uint16_t*>(b));
    const memory C({{m, n}, memory::data_type::f32, Tag::ab}, engine_, c);
    it->second.execute(stream_, {{DNNL_ARG_SRC, A}, {DNNL_ARG_WEIGHTS, B}, {DNNL_ARG_DST, C}});
    stream_.wait();
  }

  using Key = std::tuple<int64_t, int64_t, bool, bool, bool>;
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
  std::map<Key, dnnl::matmul> prims_;
  std::vector<uint16_t> scratch_[3];  // A and B converted; a single row doubled
  std::vector<float> row_pair_;       // the output of a doubled row
};

// A GEMM operand as bfloat16: itself, or its float32 values rounded into
// this thread's scratch `slot`.
const uint16_t* bf16_operand(const MatView& v, Bf16Gemm& g, int slot) {
  if (v.dtype == DType::bf16) return v.as<const uint16_t>();
  SYLVA_CHECK(v.dtype == DType::f32, "[cpu] a bf16 GEMM reads float32 or bfloat16 operands, got ",
              dtype_name(v.dtype));
  std::vector<uint16_t>& s = g.scratch(slot);
  if (s.size() < static_cast<size_t>(v.numel())) s.resize(static_cast<size_t>(v.numel()));
  to_bf16(v.as<const float>(), s.data(), v.numel());
  return s.data();
}

void bf16_gemm(const MatView& x, const MatView& y, const MatView& out, bool ta, bool tb, int64_t inner,
               bool accumulate) {
  SYLVA_CHECK(out.dtype == DType::f32, "[cpu] a bf16 GEMM writes float32, not ", dtype_name(out.dtype),
              " (bf16 is for float32 programs)");
  const int threads = Eigen::nbThreads();
  if (omp_get_max_threads() != threads && !omp_in_parallel()) omp_set_num_threads(threads);
  Bf16Gemm& g = Bf16Gemm::mine();
  const uint16_t* a = bf16_operand(x, g, 0);
  const uint16_t* b = bf16_operand(y, g, 1);
  try {
    g.run(a, b, out.as<float>(), out.rows, out.cols, inner, ta, tb, accumulate);
  } catch (const dnnl::error& e) {
    SYLVA_THROW("[cpu] oneDNN bf16 matmul failed (", e.what(), ") for [", out.rows, ", ", inner, "] x [", inner,
                ", ", out.cols, "]");
  }
}

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
      if (a.ctx.gemm == Precision::bf16 || x.dtype == DType::bf16 || y.dtype == DType::bf16)
        bf16_gemm(x, y, a.out, ta, tb, inner, a.accumulate);
      else
        sgemm(x, y, a.out, ta, tb, inner, a.accumulate);
      return;
    }
    SYLVA_CHECK(x.dtype == a.out.dtype && y.dtype == a.out.dtype, "[cpu] matmul of ", dtype_name(x.dtype), " and ",
                dtype_name(y.dtype), " into ", dtype_name(a.out.dtype), ": bfloat16 operands need a float32 output");
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

std::string precision_unsupported(Precision p) {
  if (p == Precision::fp32) return "";
  // oneDNN 2.6 emulates bf16 on AVX-512 CPUs without AVX512_BF16, but at
  // about 0.35x of its float32 GEMMs' rate (docs/notes/design-bf16.md,
  // "Emulation"), so bf16 is refused there rather than run slower than fp32.
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  constexpr auto bf16_isa = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  if ((isa & bf16_isa) == bf16_isa) return "";
  return "bf16 GEMMs need a CPU with AVX512_BF16 (AMD Zen 4 or later, Intel Cooper Lake or Sapphire Rapids and "
         "later); oneDNN finds none here (DNNL_MAX_CPU_ISA may also limit it)";
}

void register_matmul_kernels(KernelTable& t) { kernel(t, ir::OpKind::MatMul) = typed<MatMul>; }

}  // namespace sylva::cpu
