// Launchers for the CUDA kernels of kernels/cuda/ops.cu: the softmax family,
// cross-entropy, reductions, broadcast, embedding lookup and dropout masks,
// with the semantics of the CPU backend's kernels (src/backend/cpu). Plain
// declarations: `stream` is a cudaStream_t, `f64` selects double over
// float, and each returns the cudaError_t value of its launch (0: ok).
// Kernels that validate ids or labels flag an offending row in `bad_row`
// (two int64 of device memory, the first set to -1 by the caller) instead
// of failing: bad_row[0] = the row, bad_row[1] = the id or label there.
// They skip that row and go on; the caller reads the flag later
// (src/backend/cuda/device_checks.h).
#pragma once

#include <cstdint>

namespace sylva::cuda_kernels {

/// Row-wise softmax (log_form: log-softmax) of rows x cols.
int softmax(const void* x, void* y, int64_t rows, int64_t cols, bool log_form, bool f64, void* stream);
/// Softmax: y * (dy - <dy, y>); log-softmax: dy - exp(y) * sum(dy), per row.
int softmax_grad(const void* y, const void* dy, void* dx, int64_t rows, int64_t cols, bool log_form, bool f64,
                 void* stream);
/// out[0] = sum over labelled rows of logsumexp(x_r) - x_r[label_r]
/// (divided by the labelled rows when mean); labels -1 carry no loss.
/// `scratch` holds 2 doubles.
int cross_entropy(const void* x, const int32_t* labels, void* out, int64_t rows, int64_t cols, bool mean,
                  double* scratch, int64_t* bad_row, bool f64, void* stream);
/// dx = g * softmax(x) - g at the label (g = seed, / labelled rows when
/// mean); zero rows for label -1. `scratch` holds 2 doubles.
int cross_entropy_grad(const void* x, const int32_t* labels, const void* seed, void* dx, int64_t rows, int64_t cols,
                       bool mean, double* scratch, int64_t* bad_row, bool f64, void* stream);
/// out[0] = sum (mean: / numel) of numel elements, accumulated in double.
/// `scratch` holds 1 double.
int sum_all(const void* x, void* out, int64_t numel, bool mean, double* scratch, bool f64, void* stream);
/// out[c] = sum over rows of x[r, c].
int sum_rows(const void* x, void* out, int64_t rows, int64_t cols, bool f64, void* stream);
/// out[r, c] = scale * v[v_numel == 1 ? 0 : c].
int broadcast(const void* v, int64_t v_numel, void* out, int64_t rows, int64_t cols, double scale, bool f64,
              void* stream);
/// out[r] = table[ids[r]] (zero row for id -1); ids >= table_rows flag `bad_row`.
int lookup(const void* table, int64_t table_rows, const int32_t* ids, void* out, int64_t rows, int64_t cols,
           int64_t* bad_row, bool f64, void* stream);
/// out (table_rows x cols) = 0, then out[ids[r]] += dy[r] (atomic).
int lookup_grad(const void* dy, const int32_t* ids, void* out, int64_t rows, int64_t table_rows, int64_t cols,
                int64_t* bad_row, bool f64, void* stream);
/// The dropout mask of the CPU backend: 0 with probability p, else 1/(1-p),
/// a pure function of (base, vertex of the row, column); `row_vertex`
/// nullptr means the row index.
int dropout_mask(void* out, int64_t rows, int64_t cols, uint64_t base, const int32_t* row_vertex, double p,
                 bool f64, void* stream);

}  // namespace sylva::cuda_kernels
