// Launchers for the optimiser kernels of kernels/cuda/optim.cu: the
// update rules of sylva::ParamUpdate and the gradients' sum of squares.
// Plain declarations: the host passes its cudaStream_t as `stream` and
// checks the returned cudaError_t value (0: launched).
#pragma once

#include <cstdint>

namespace sylva::cuda_kernels {

/// The constants of one update (see sylva::ParamUpdate); rule: 0 sgd,
/// 1 momentum, 2 adagrad, 3 adam.
struct UpdateConstants {
  int rule;
  double lr, a, b, eps, c1, c2, decay, scale;
};
/// Updates w (and the state s0, s1) from g over `n` elements, or, with
/// `rows` (device memory, `n_rows` of them), over those rows of `cols`.
int update_parameter(void* w, const void* g, void* s0, void* s1, int64_t n, const int32_t* rows, int64_t n_rows,
                     int64_t cols, const UpdateConstants& k, bool f64, void* stream);
/// *out = sum over the covered elements of (g + decay · w)², in double;
/// `partials` is device scratch of at least 256 doubles.
int sum_squares(const void* g, const void* w, double decay, int64_t n, const int32_t* rows, int64_t n_rows,
                int64_t cols, double* partials, double* out, bool f64, void* stream);

}  // namespace sylva::cuda_kernels
