// Kernels of registered ops (sylva/backend/cpu_extension.h).
#include <array>
#include <atomic>
#include <mutex>

#include "cpu_kernels.h"
#include "sylva/backend/cpu_extension.h"

namespace sylva::cpu {
namespace {

struct Extensions {
  std::array<UnaryElementKernel, ir::kMaxOpKinds> unary{};
  std::array<std::atomic<bool>, ir::kMaxOpKinds> set{};
  std::mutex mu;
};

Extensions& extensions() {
  static Extensions e;
  return e;
}

}  // namespace

void register_unary_kernel(ir::OpKind op, UnaryElementKernel kernel) {
  const auto i = static_cast<size_t>(op);
  SYLVA_CHECK(op >= ir::OpKind::Count_ && i < ir::kMaxOpKinds, "[cpu] op kind ", i,
              " is built in: its kernel lives in src/backend/cpu/kernels_*.cc");
  const ir::OpDef& d = ir::op_def(op);
  SYLVA_CHECK(ir::has(d.flags, ir::OpFlag::elementwise) && d.min_inputs == 1 && d.max_inputs == 1, "[cpu] op '",
              d.name, "' is not a unary elementwise op");
  SYLVA_CHECK(kernel.f32 != nullptr && kernel.f64 != nullptr, "[cpu] op '", d.name,
              "': the kernel needs a float and a double function");
  Extensions& e = extensions();
  std::lock_guard<std::mutex> lock(e.mu);
  SYLVA_CHECK(!e.set[i].load(), "[cpu] op '", d.name, "' has a kernel already");
  e.unary[i] = kernel;
  e.set[i].store(true, std::memory_order_release);
}

const UnaryElementKernel* unary_kernel(ir::OpKind op) {
  const auto i = static_cast<size_t>(op);
  if (i >= ir::kMaxOpKinds) return nullptr;
  Extensions& e = extensions();
  return e.set[i].load(std::memory_order_acquire) ? &e.unary[i] : nullptr;
}

void run_unary_extension(const UnaryElementKernel& k, const KernelArgs& a) {
  const MatView& x = a.in[0];
  SYLVA_CHECK(x.numel() == a.out.numel() && x.dtype == a.out.dtype, "[cpu] ", ir::op_name(a.node.op), ": input of ",
              x.numel(), " elements for an output of ", a.out.numel());
  dispatch_floating(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T* in = x.as<const T>();
    T* out = a.out.as<T>();
    for (int64_t i = 0; i < x.numel(); ++i) out[i] = apply(k, in[i]);
  });
}

}  // namespace sylva::cpu
