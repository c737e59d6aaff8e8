// Internal: the CPU kernel table, filled by one file per op family.
#pragma once

#include <array>
#include <exception>
#include <string>

#include "sylva/backend/backend.h"
#include "sylva/backend/cpu_extension.h"
#include "sylva/core/error.h"

namespace sylva::cpu {

using Kernel = void (*)(const KernelArgs&);
using KernelTable = std::array<Kernel, ir::kMaxOpKinds>;

void register_matmul_kernels(KernelTable& t);
void register_elementwise_kernels(KernelTable& t);
void register_structure_kernels(KernelTable& t);
void register_loss_kernels(KernelTable& t);
/// Why this CPU cannot run GEMMs in `p`, or "" (kernels_matmul.cc).
std::string precision_unsupported(Precision p);
/// Runs a fused program (kernels_fused.cc).
void run_fused(const FusedProgram& p, std::span<const MatView> in, std::span<const MatView> out, int64_t rows,
               DType dtype);

/// ParamUpdate and the gradients' sum of squares (kernels_optim.cc). With
/// threads > 1 (the backend's GEMM threads), a large update is split over
/// that many OpenMP threads; the result is the same for any count.
void update_parameter(const ParamUpdate& u, int threads = 1);
double sum_squares(MatView g, MatView w, double decay, std::span<const int32_t> rows);

/// Runs fn(t) for every t in [0, threads), each on its own thread of an
/// OpenMP team; an exception from any is rethrown here, after the team.
template <class Fn>
void on_threads(int threads, Fn&& fn) {
  std::exception_ptr failed;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int t = 0; t < threads; ++t) {
    try {
      fn(t);
    } catch (...) {
#pragma omp critical
      if (!failed) failed = std::current_exception();
    }
  }
  if (failed) std::rethrow_exception(failed);
}

inline Kernel& kernel(KernelTable& t, ir::OpKind k) { return t[static_cast<size_t>(k)]; }

/// A registered unary kernel at one element (kernels_extension.cc).
inline float apply(const UnaryElementKernel& k, float x) { return k.f32(x); }
inline double apply(const UnaryElementKernel& k, double x) { return k.f64(x); }
/// Runs a registered unary kernel over a whole value.
void run_unary_extension(const UnaryElementKernel& k, const KernelArgs& a);

/// Instantiates `Impl<T>::run(args)` for the dtype of the output.
template <template <class> class Impl>
void typed(const KernelArgs& a) {
  dispatch_floating(a.out.dtype, [&](auto tag) { Impl<decltype(tag)>::run(a); });
}

}  // namespace sylva::cpu
