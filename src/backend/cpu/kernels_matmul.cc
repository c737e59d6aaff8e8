// GEMM through Eigen (vectorised and blocked for the -march of the build).
#include <Eigen/Core>

#include "cpu_kernels.h"

namespace sylva::cpu {
namespace {

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

void register_matmul_kernels(KernelTable& t) { slot(t, ir::OpKind::MatMul) = typed<MatMul>; }

}  // namespace sylva::cpu
