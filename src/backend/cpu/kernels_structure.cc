// Column concat/slice/assemble, reductions, broadcast and embedding lookup.
#include <cstring>

#include "cpu_kernels.h"

namespace sylva::cpu {
namespace {

using ir::OpKind;

template <class T>
struct Concat {
  static void run(const KernelArgs& a) {
    const int64_t R = a.out.rows, C = a.out.cols;
    int64_t col = 0;
    for (const MatView& in : a.in) {
      for (int64_t r = 0; r < R; ++r)
        std::memcpy(a.out.as<T>() + r * C + col, in.as<const T>() + r * in.cols, in.cols * sizeof(T));
      col += in.cols;
    }
  }
};

template <class T>
struct Slice {
  static void run(const KernelArgs& a) {
    const MatView& in = a.in[0];
    const int64_t b = a.node.attrs.begin, w = a.out.cols;
    for (int64_t r = 0; r < a.out.rows; ++r)
      std::memcpy(a.out.as<T>() + r * w, in.as<const T>() + r * in.cols + b, w * sizeof(T));
  }
};

template <class T>
struct Assemble {
  static void run(const KernelArgs& a) {
    const int64_t R = a.out.rows, C = a.out.cols;
    T* out = a.out.as<T>();
    std::fill(out, out + R * C, T(0));
    const auto& ranges = a.node.attrs.ranges;
    for (size_t k = 0; k < a.in.size(); ++k) {
      const int64_t b = ranges[2 * k], w = a.in[k].cols;
      const T* in = a.in[k].as<const T>();
      for (int64_t r = 0; r < R; ++r)
        for (int64_t c = 0; c < w; ++c) out[r * C + b + c] += in[r * w + c];
    }
  }
};

template <class T>
struct Sum {
  static void run(const KernelArgs& a) {
    const T* in = a.in[0].as<const T>();
    double s = 0;  // accumulate in double: sums over a whole minibatch
    for (int64_t i = 0; i < a.in[0].numel(); ++i) s += in[i];
    if (a.node.op == OpKind::Mean && a.in[0].numel() > 0) s /= static_cast<double>(a.in[0].numel());
    a.out.as<T>()[0] = static_cast<T>(s);
  }
};

template <class T>
struct SumRows {
  static void run(const KernelArgs& a) {
    const MatView& in = a.in[0];
    T* out = a.out.as<T>();
    std::fill(out, out + in.cols, T(0));
    for (int64_t r = 0; r < in.rows; ++r)
      for (int64_t c = 0; c < in.cols; ++c) out[c] += in.as<const T>()[r * in.cols + c];
  }
};

template <class T>
struct Broadcast {
  static void run(const KernelArgs& a) {
    const MatView& v = a.in[0];
    const int64_t R = a.out.rows, C = a.out.cols;
    T scale = T(1);
    if (a.node.attrs.reduction == ir::Reduction::mean && R * C > 0) scale = T(1) / static_cast<T>(R * C);
    T* out = a.out.as<T>();
    for (int64_t r = 0; r < R; ++r)
      for (int64_t c = 0; c < C; ++c) out[r * C + c] = scale * v.as<const T>()[v.numel() == 1 ? 0 : c];
  }
};

template <class T>
struct Lookup {
  static void run(const KernelArgs& a) {
    const MatView &table = a.in[0], &ids = a.in[1];
    const int64_t C = a.out.cols;
    for (int64_t r = 0; r < a.out.rows; ++r) {
      int32_t id = ids.as<const int32_t>()[r];
      T* o = a.out.as<T>() + r * C;
      if (id < 0) {
        std::fill(o, o + C, T(0));
        continue;
      }
      SYLVA_CHECK(id < table.rows, "[lookup] id ", id, " at row ", r, " is out of range [0, ", table.rows,
                  ") of the table");
      std::memcpy(o, table.as<const T>() + id * C, C * sizeof(T));
    }
  }
};

template <class T>
struct LookupGrad {
  static void run(const KernelArgs& a) {
    const MatView &dy = a.in[0], &ids = a.in[1];
    const int64_t C = a.out.cols;
    T* out = a.out.as<T>();
    std::fill(out, out + a.out.numel(), T(0));
    for (int64_t r = 0; r < dy.rows; ++r) {
      int32_t id = ids.as<const int32_t>()[r];
      if (id < 0) continue;
      SYLVA_CHECK(id < a.out.rows, "[lookup] id ", id, " at row ", r, " out of range [0, ", a.out.rows, ")");
      for (int64_t c = 0; c < C; ++c) out[id * C + c] += dy.as<const T>()[r * C + c];
    }
  }
};

}  // namespace

void register_structure_kernels(KernelTable& t) {
  kernel(t, OpKind::Concat) = typed<Concat>;
  kernel(t, OpKind::Slice) = typed<Slice>;
  kernel(t, OpKind::Assemble) = typed<Assemble>;
  kernel(t, OpKind::Sum) = typed<Sum>;
  kernel(t, OpKind::Mean) = typed<Sum>;
  kernel(t, OpKind::SumRows) = typed<SumRows>;
  kernel(t, OpKind::Broadcast) = typed<Broadcast>;
  kernel(t, OpKind::Lookup) = typed<Lookup>;
  kernel(t, OpKind::LookupGrad) = typed<LookupGrad>;
}

}  // namespace sylva::cpu
