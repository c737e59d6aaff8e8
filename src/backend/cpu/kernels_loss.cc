// Row-wise softmax family and softmax cross-entropy with integer labels.
#include <Eigen/Core>
#include <cmath>

#include "cpu_kernels.h"

namespace sylva::cpu {
namespace {

using ir::OpKind;

template <class T>
using ConstRow = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using MutRow = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;

// Vectorised through Eigen's packet exp: the 10k-way softmax of a language
// model evaluates C exponentials per row, which dominate a scalar loop.
template <class T>
T log_sum_exp(const T* x, int64_t C) {
  ConstRow<T> r(x, C);
  T m = r.maxCoeff();
  return m + std::log((r - m).exp().sum());
}

template <class T>
struct Softmax {
  static void run(const KernelArgs& a) {
    const int64_t C = a.out.cols;
    for (int64_t r = 0; r < a.out.rows; ++r) {
      ConstRow<T> x(a.in[0].as<const T>() + r * C, C);
      MutRow<T> y(a.out.as<T>() + r * C, C);
      T lse = log_sum_exp(x.data(), C);
      if (a.node.op == OpKind::LogSoftmax)
        y = x - lse;
      else
        y = (x - lse).exp();
    }
  }
};

template <class T>
struct SoftmaxGrad {  // (y, dy) -> y * (dy - <dy, y>) ; log-softmax: dy - exp(y) * sum(dy)
  static void run(const KernelArgs& a) {
    const int64_t C = a.out.cols;
    const bool log_form = a.node.op == OpKind::LogSoftmaxGrad;
    for (int64_t r = 0; r < a.out.rows; ++r) {
      ConstRow<T> y(a.in[0].as<const T>() + r * C, C);
      ConstRow<T> dy(a.in[1].as<const T>() + r * C, C);
      MutRow<T> dx(a.out.as<T>() + r * C, C);
      if (log_form)
        dx = dy - y.exp() * dy.sum();
      else
        dx = y * (dy - (dy * y).sum());
    }
  }
};

int32_t checked_label(const MatView& labels, int64_t r, int64_t classes) {
  int32_t l = labels.as<const int32_t>()[r];
  SYLVA_CHECK(l >= -1 && l < classes, "[softmax_cross_entropy] label ", l, " at row ", r, " out of range [0, ",
              classes, ") (use -1 for no loss)");
  return l;
}

int64_t labelled_rows(const MatView& labels, int64_t rows) {
  int64_t n = 0;
  for (int64_t r = 0; r < rows; ++r) n += labels.as<const int32_t>()[r] >= 0;
  return n;
}

template <class T>
struct Xent {
  static void run(const KernelArgs& a) {
    const MatView &logits = a.in[0], &labels = a.in[1];
    const int64_t C = logits.cols;
    double loss = 0;
    for (int64_t r = 0; r < logits.rows; ++r) {
      int32_t l = checked_label(labels, r, C);
      if (l < 0) continue;
      const T* x = logits.as<const T>() + r * C;
      loss += static_cast<double>(log_sum_exp(x, C) - x[l]);
    }
    int64_t n = labelled_rows(labels, logits.rows);
    if (a.node.attrs.reduction == ir::Reduction::mean) loss = n ? loss / static_cast<double>(n) : 0.0;
    a.out.as<T>()[0] = static_cast<T>(loss);
  }
};

template <class T>
struct XentGrad {
  static void run(const KernelArgs& a) {
    const MatView &logits = a.in[0], &labels = a.in[1];
    const int64_t C = logits.cols;
    T g = a.in[2].as<const T>()[0];
    if (a.node.attrs.reduction == ir::Reduction::mean) {
      int64_t n = labelled_rows(labels, logits.rows);
      g = n ? g / static_cast<T>(n) : T(0);
    }
    for (int64_t r = 0; r < logits.rows; ++r) {
      int32_t l = checked_label(labels, r, C);
      T* dx = a.out.as<T>() + r * C;
      if (l < 0) {
        std::fill(dx, dx + C, T(0));
        continue;
      }
      const T* x = logits.as<const T>() + r * C;
      T lse = log_sum_exp(x, C);
      MutRow<T>(dx, C) = g * (ConstRow<T>(x, C) - lse).exp();
      dx[l] -= g;
    }
  }
};

}  // namespace

void register_loss_kernels(KernelTable& t) {
  kernel(t, OpKind::Softmax) = typed<Softmax>;
  kernel(t, OpKind::LogSoftmax) = typed<Softmax>;
  kernel(t, OpKind::SoftmaxGrad) = typed<SoftmaxGrad>;
  kernel(t, OpKind::LogSoftmaxGrad) = typed<SoftmaxGrad>;
  kernel(t, OpKind::SoftmaxCrossEntropy) = typed<Xent>;
  kernel(t, OpKind::SoftmaxCrossEntropyGrad) = typed<XentGrad>;
}

}  // namespace sylva::cpu
