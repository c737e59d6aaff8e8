// Elementwise ops: one pass over rows x cols; a one-row operand broadcasts.
#include <Eigen/Core>
#include <cmath>

#include "../dropout_key.h"
#include "cpu_kernels.h"

namespace sylva::cpu {
namespace {

using ir::OpKind;

template <class T>
using Arr = Eigen::Array<T, Eigen::Dynamic, 1>;

// Row r of an operand that may be broadcast (one row).
template <class T>
const T* row_of(const MatView& v, int64_t r) {
  return v.as<const T>() + (v.rows == 1 ? 0 : r) * v.cols;
}

template <class T, class F>
void binary_rows(const KernelArgs& a, F f) {
  const int64_t R = a.out.rows, C = a.out.cols;
  T* out = a.out.as<T>();
  for (int64_t r = 0; r < R; ++r) {
    const T* x = row_of<T>(a.in[0], r);
    const T* y = row_of<T>(a.in[1], r);
    T* o = out + r * C;
    for (int64_t c = 0; c < C; ++c) o[c] = f(x[c], y[c]);
  }
}

template <class T>
Eigen::Map<const Arr<T>> in_arr(const KernelArgs& a, int k) {
  return {a.in[k].as<const T>(), a.in[k].numel()};
}
template <class T>
Eigen::Map<Arr<T>> out_arr(const KernelArgs& a) {
  return {a.out.as<T>(), a.out.numel()};
}

template <class T> struct Add { static void run(const KernelArgs& a) { binary_rows<T>(a, [](T x, T y) { return x + y; }); } };
template <class T> struct Sub { static void run(const KernelArgs& a) { binary_rows<T>(a, [](T x, T y) { return x - y; }); } };
template <class T> struct Mul { static void run(const KernelArgs& a) { binary_rows<T>(a, [](T x, T y) { return x * y; }); } };
template <class T> struct TanhGrad {
  static void run(const KernelArgs& a) { binary_rows<T>(a, [](T y, T dy) { return dy * (T(1) - y * y); }); }
};
template <class T> struct SigmoidGrad {
  static void run(const KernelArgs& a) { binary_rows<T>(a, [](T y, T dy) { return dy * y * (T(1) - y); }); }
};
template <class T> struct ReluGrad {
  static void run(const KernelArgs& a) { binary_rows<T>(a, [](T x, T dy) { return x > T(0) ? dy : T(0); }); }
};
template <class T> struct LogGrad {
  static void run(const KernelArgs& a) { binary_rows<T>(a, [](T x, T dy) { return dy / x; }); }
};

template <class T> struct Tanh { static void run(const KernelArgs& a) { out_arr<T>(a) = in_arr<T>(a, 0).tanh(); } };
template <class T> struct Sigmoid { static void run(const KernelArgs& a) { out_arr<T>(a) = in_arr<T>(a, 0).logistic(); } };
template <class T> struct Relu { static void run(const KernelArgs& a) { out_arr<T>(a) = in_arr<T>(a, 0).max(T(0)); } };
template <class T> struct Exp { static void run(const KernelArgs& a) { out_arr<T>(a) = in_arr<T>(a, 0).exp(); } };
template <class T> struct Log { static void run(const KernelArgs& a) { out_arr<T>(a) = in_arr<T>(a, 0).log(); } };
template <class T> struct Scale {
  static void run(const KernelArgs& a) { out_arr<T>(a) = in_arr<T>(a, 0) * static_cast<T>(a.node.attrs.alpha); }
};

template <class T>
struct DropoutMask {
  static void run(const KernelArgs& a) {
    const int64_t R = a.out.rows, C = a.out.cols;
    T* out = a.out.as<T>();
    if (!a.ctx.training) {
      std::fill(out, out + R * C, T(1));
      return;
    }
    const double p = a.node.attrs.alpha;
    const T keep = static_cast<T>(1.0 / (1.0 - p));
    const uint64_t base = dropout_base(a.ctx, a.node);
    for (int64_t r = 0; r < R; ++r) {
      uint64_t row_key = mix(base ^ (dropout_vertex(a.ctx, r) * 0xD6E8FEB86659FD93ull));
      for (int64_t c = 0; c < C; ++c) {
        double u = static_cast<double>(mix(row_key + static_cast<uint64_t>(c)) >> 11) * 0x1.0p-53;
        out[r * C + c] = u < p ? T(0) : keep;
      }
    }
  }
};

}  // namespace

void register_elementwise_kernels(KernelTable& t) {
  kernel(t, OpKind::Add) = typed<Add>;
  kernel(t, OpKind::Sub) = typed<Sub>;
  kernel(t, OpKind::Mul) = typed<Mul>;
  kernel(t, OpKind::Tanh) = typed<Tanh>;
  kernel(t, OpKind::Sigmoid) = typed<Sigmoid>;
  kernel(t, OpKind::Relu) = typed<Relu>;
  kernel(t, OpKind::Exp) = typed<Exp>;
  kernel(t, OpKind::Log) = typed<Log>;
  kernel(t, OpKind::Scale) = typed<Scale>;
  kernel(t, OpKind::DropoutMask) = typed<DropoutMask>;
  kernel(t, OpKind::TanhGrad) = typed<TanhGrad>;
  kernel(t, OpKind::SigmoidGrad) = typed<SigmoidGrad>;
  kernel(t, OpKind::ReluGrad) = typed<ReluGrad>;
  kernel(t, OpKind::LogGrad) = typed<LogGrad>;
}

}  // namespace sylva::cpu
