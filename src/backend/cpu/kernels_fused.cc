// Fused row-local groups: one pass over the rows; each step's row lives in
// a small scratch buffer (L1-resident) unless the step is an output, and a
// slice that is not an output is a pointer into its input's row.
#include <Eigen/Core>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "cpu_kernels.h"

namespace sylva {

namespace cpu {
namespace {

using ir::OpKind;

template <class T>
using Row = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using CRow = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

template <class T, class F>
void binary(T* d, const T* a, const T* b, int64_t n, F f) {
  for (int64_t c = 0; c < n; ++c) d[c] = f(a[c], b[c]);
}

// One step of a fused program for one row, into d; arg(st, k) is the
// row of its k-th argument and arg_cols(st, k) that argument's width.
template <class T, class Arg, class Cols>
void run_step(const FusedStep& st, T* d, const Arg& arg, const Cols& arg_cols) {
  const int64_t n = st.cols;
  switch (st.op) {
    case OpKind::Slice: std::memcpy(d, arg(st, 0) + st.begin, static_cast<size_t>(n) * sizeof(T)); break;
    case OpKind::Concat: {
      int64_t col = 0;
      for (size_t k = 0; k < st.args.size(); ++k) {
        const int64_t w = arg_cols(st, k);
        std::memcpy(d + col, arg(st, k), static_cast<size_t>(w) * sizeof(T));
        col += w;
      }
      break;
    }
    case OpKind::Assemble: {
      std::fill(d, d + n, T(0));
      for (size_t k = 0; k < st.args.size(); ++k) {
        const T* a = arg(st, k);
        T* o = d + st.offsets[k];
        for (int64_t c = 0, w = arg_cols(st, k); c < w; ++c) o[c] += a[c];
      }
      break;
    }
    case OpKind::Add: binary(d, arg(st, 0), arg(st, 1), n, [](T x, T y) { return x + y; }); break;
    case OpKind::Sub: binary(d, arg(st, 0), arg(st, 1), n, [](T x, T y) { return x - y; }); break;
    case OpKind::Mul: binary(d, arg(st, 0), arg(st, 1), n, [](T x, T y) { return x * y; }); break;
    case OpKind::TanhGrad:
      binary(d, arg(st, 0), arg(st, 1), n, [](T y, T dy) { return dy * (T(1) - y * y); });
      break;
    case OpKind::SigmoidGrad:
      binary(d, arg(st, 0), arg(st, 1), n, [](T y, T dy) { return dy * y * (T(1) - y); });
      break;
    case OpKind::ReluGrad:
      binary(d, arg(st, 0), arg(st, 1), n, [](T x, T dy) { return x > T(0) ? dy : T(0); });
      break;
    case OpKind::LogGrad: binary(d, arg(st, 0), arg(st, 1), n, [](T x, T dy) { return dy / x; }); break;
    case OpKind::Tanh: Row<T>(d, n) = CRow<T>(arg(st, 0), n).tanh(); break;
    case OpKind::Sigmoid: Row<T>(d, n) = CRow<T>(arg(st, 0), n).logistic(); break;
    case OpKind::Relu: Row<T>(d, n) = CRow<T>(arg(st, 0), n).max(T(0)); break;
    case OpKind::Exp: Row<T>(d, n) = CRow<T>(arg(st, 0), n).exp(); break;
    case OpKind::Log: Row<T>(d, n) = CRow<T>(arg(st, 0), n).log(); break;
    case OpKind::Scale: Row<T>(d, n) = CRow<T>(arg(st, 0), n) * static_cast<T>(st.alpha); break;
    default: {
      const UnaryElementKernel* ext = unary_kernel(st.op);  // a registered op
      SYLVA_CHECK(ext != nullptr, "[cpu] op '", ir::op_name(st.op), "' cannot be fused");
      const T* x = arg(st, 0);
      for (int64_t c = 0; c < n; ++c) d[c] = apply(*ext, x[c]);
    }
  }
}

// Rows [begin, end) of a group, on the calling thread (its own scratch).
template <class T>
void run_rows(const FusedProgram& p, std::span<const MatView> in, std::span<const MatView> out, int64_t begin,
              int64_t end) {
  const size_t S = p.steps.size();
  // Scratch offsets of the steps that are not outputs (slices need none).
  thread_local std::vector<int64_t> offset;
  thread_local std::vector<const T*> ptr;
  thread_local std::vector<int64_t> width;
  thread_local std::vector<T> scratch;
  offset.assign(S, -1);
  ptr.assign(S, nullptr);
  width.assign(S, 0);
  int64_t total = 0;
  for (size_t s = 0; s < S; ++s) {
    const FusedStep& st = p.steps[s];
    width[s] = st.cols;
    if (st.output < 0 && st.op != OpKind::Slice) {
      offset[s] = total;
      total += (st.cols + 15) / 16 * 16;  // keep rows 64-byte aligned for the vector loops
    }
  }
  if (scratch.size() < static_cast<size_t>(total)) scratch.resize(static_cast<size_t>(total));
  for (int64_t r = begin; r < end; ++r) {
    const auto arg = [&](const FusedStep& st, size_t k) -> const T* {
      const int32_t a = st.args[k];
      if (a >= 0) return ptr[static_cast<size_t>(a)];
      const MatView& v = in[static_cast<size_t>(-1 - a)];
      return v.as<const T>() + (v.rows == 1 ? 0 : r) * v.cols;
    };
    const auto arg_cols = [&](const FusedStep& st, size_t k) {
      const int32_t a = st.args[k];
      return a >= 0 ? width[static_cast<size_t>(a)] : in[static_cast<size_t>(-1 - a)].cols;
    };
    for (size_t s = 0; s < S; ++s) {
      const FusedStep& st = p.steps[s];
      const int64_t n = st.cols;
      if (st.op == OpKind::Slice && st.output < 0) {
        ptr[s] = arg(st, 0) + st.begin;
        continue;
      }
      T* d = st.output >= 0 ? out[static_cast<size_t>(st.output)].as<T>() + r * n : scratch.data() + offset[s];
      run_step<T>(st, d, arg, arg_cols);
      ptr[s] = d;
    }
  }
}

// Below this many elements (rows x the steps' widths) a group runs on the
// calling thread: the fork and join cost more than the work.
constexpr int64_t kFusedParallelElements = int64_t{1} << 15;

// The rows split over the backend's threads (Eigen::nbThreads(), what
// Backend::set_threads sets), each running whole rows: every row is
// computed by one thread with the same arithmetic, so the result does not
// depend on the thread count. Before, the groups ran on one thread
// whatever the backend's count: Tree-LSTM dynet cell h 512, batch 16, two
// threads, `--profile`: 0.65 s of a 5.2 s epoch, 0.38 s split
// (docs/notes/two-cores.md, "Two cores: the transposed GEMM and the fused groups").
template <class T>
void run_typed(const FusedProgram& p, std::span<const MatView> in, std::span<const MatView> out, int64_t rows) {
  int64_t width = 0;
  for (const FusedStep& st : p.steps) width += st.cols;
  const int threads = Eigen::nbThreads();
  if (threads <= 1 || rows < 2 || rows * width < kFusedParallelElements || omp_in_parallel())
    return run_rows<T>(p, in, out, 0, rows);
  const int64_t share = (rows + threads - 1) / threads;
  on_threads(threads, [&](int t) {
    const int64_t begin = std::min(rows, t * share), end = std::min(rows, begin + share);
    if (begin < end) run_rows<T>(p, in, out, begin, end);
  });
}

}  // namespace

void run_fused(const FusedProgram& p, std::span<const MatView> in, std::span<const MatView> out, int64_t rows,
               DType dtype) {
  dispatch_floating(dtype, [&](auto tag) { run_typed<decltype(tag)>(p, in, out, rows); });
}

}  // namespace cpu
}  // namespace sylva
