// Row-wise and whole-tensor kernels: one block per row for the softmax
// family (block reductions for the max and the sums), grid-stride loops
// elsewhere; sums over a minibatch accumulate in double, as on the CPU.
#include <cuda_runtime.h>

#include "ops.h"

namespace sylva::cuda_kernels {

namespace {

constexpr int kThreads = 256;

unsigned grid_for(int64_t work) {
  const int64_t b = (work + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b < 65535 ? b : 65535));
}
unsigned rows_grid(int64_t rows) { return static_cast<unsigned>(rows < 1 ? 1 : (rows < 65535 ? rows : 65535)); }

__device__ __forceinline__ float ex(float x) { return expf(x); }
__device__ __forceinline__ double ex(double x) { return exp(x); }
__device__ __forceinline__ float lg(float x) { return logf(x); }
__device__ __forceinline__ double lg(double x) { return log(x); }

// Block-wide max and sum (kThreads threads, shared scratch of kThreads).
template <class T>
__device__ T block_max(T v, T* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s && shared[threadIdx.x + s] > shared[threadIdx.x]) shared[threadIdx.x] = shared[threadIdx.x + s];
    __syncthreads();
  }
  const T r = shared[0];
  __syncthreads();
  return r;
}
template <class T>
__device__ T block_sum(T v, T* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) shared[threadIdx.x] += shared[threadIdx.x + s];
    __syncthreads();
  }
  const T r = shared[0];
  __syncthreads();
  return r;
}

template <class T>
__device__ T row_log_sum_exp(const T* x, int64_t cols, T* shared) {
  T m = -INFINITY;
  for (int64_t c = threadIdx.x; c < cols; c += kThreads) m = x[c] > m ? x[c] : m;
  m = block_max(m, shared);
  T s = 0;
  for (int64_t c = threadIdx.x; c < cols; c += kThreads) s += ex(x[c] - m);
  return m + lg(block_sum(s, shared));
}

template <class T>
__global__ void softmax_kernel(const T* x, T* y, int64_t rows, int64_t cols, bool log_form) {
  __shared__ T shared[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    const T lse = row_log_sum_exp(xr, cols, shared);
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) yr[c] = log_form ? xr[c] - lse : ex(xr[c] - lse);
  }
}

template <class T>
__global__ void softmax_grad_kernel(const T* y, const T* dy, T* dx, int64_t rows, int64_t cols, bool log_form) {
  __shared__ T shared[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T *yr = y + r * cols, *dyr = dy + r * cols;
    T* dxr = dx + r * cols;
    T s = 0;
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) s += log_form ? dyr[c] : dyr[c] * yr[c];
    s = block_sum(s, shared);
    for (int64_t c = threadIdx.x; c < cols; c += kThreads)
      dxr[c] = log_form ? dyr[c] - ex(yr[c]) * s : yr[c] * (dyr[c] - s);
  }
}

// A bad row: flag[0] = the row (the first block to get here wins),
// flag[1] = the id or label found there. The host reads both after a wait.
__device__ inline void flag_row(int64_t* flag, int64_t row, int32_t value) {
  if (atomicCAS(reinterpret_cast<unsigned long long*>(flag), ~0ull, static_cast<unsigned long long>(row)) == ~0ull)
    flag[1] = value;
}

// scratch[0] += loss of the block's rows, scratch[1] += labelled rows.
template <class T>
__global__ void cross_entropy_kernel(const T* x, const int32_t* labels, int64_t rows, int64_t cols, double* scratch,
                                     int64_t* bad_row) {
  __shared__ T shared[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int32_t l = labels[r];
    if (l < -1 || l >= cols) {
      if (threadIdx.x == 0) flag_row(bad_row, r, l);
      continue;
    }
    if (l < 0) continue;
    const T lse = row_log_sum_exp(x + r * cols, cols, shared);
    if (threadIdx.x == 0) {
      atomicAdd(scratch, static_cast<double>(lse - x[r * cols + l]));
      atomicAdd(scratch + 1, 1.0);
    }
  }
}

template <class T>
__global__ void finish_cross_entropy(const double* scratch, T* out, bool mean) {
  const double n = scratch[1];
  out[0] = static_cast<T>(mean ? (n > 0 ? scratch[0] / n : 0.0) : scratch[0]);
}

__global__ void count_labelled(const int32_t* labels, int64_t rows, double* scratch) {
  double n = 0;
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; r < rows;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x)
    n += labels[r] >= 0;
  if (n > 0) atomicAdd(scratch + 1, n);
}

template <class T>
__global__ void cross_entropy_grad_kernel(const T* x, const int32_t* labels, const T* seed, T* dx, int64_t rows,
                                          int64_t cols, bool mean, const double* scratch, int64_t* bad_row) {
  __shared__ T shared[kThreads];
  T g = seed[0];
  if (mean) g = scratch[1] > 0 ? static_cast<T>(g / scratch[1]) : T(0);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int32_t l = labels[r];
    T* d = dx + r * cols;
    if (l < -1 || l >= cols) {
      if (threadIdx.x == 0) flag_row(bad_row, r, l);
      continue;
    }
    if (l < 0) {
      for (int64_t c = threadIdx.x; c < cols; c += kThreads) d[c] = T(0);
      continue;
    }
    const T* xr = x + r * cols;
    const T lse = row_log_sum_exp(xr, cols, shared);
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) d[c] = g * ex(xr[c] - lse) - (c == l ? g : T(0));
  }
}

template <class T>
__global__ void sum_kernel(const T* x, int64_t numel, double* scratch) {
  __shared__ double shared[kThreads];
  double s = 0;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x; i < numel;
       i += static_cast<int64_t>(gridDim.x) * kThreads)
    s += static_cast<double>(x[i]);
  s = block_sum(s, shared);
  if (threadIdx.x == 0) atomicAdd(scratch, s);
}

template <class T>
__global__ void finish_sum(const double* scratch, T* out, int64_t numel, bool mean) {
  out[0] = static_cast<T>(mean && numel > 0 ? scratch[0] / static_cast<double>(numel) : scratch[0]);
}

template <class T>
__global__ void sum_rows_kernel(const T* x, T* out, int64_t rows, int64_t cols) {
  for (int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; c < cols;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    T s = 0;
    for (int64_t r = 0; r < rows; ++r) s += x[r * cols + c];
    out[c] = s;
  }
}

template <class T>
__global__ void broadcast_kernel(const T* v, int64_t v_numel, T* out, int64_t rows, int64_t cols, T scale) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < rows * cols;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    out[i] = scale * v[v_numel == 1 ? 0 : i % cols];
}

template <class T>
__global__ void lookup_kernel(const T* table, int64_t table_rows, const int32_t* ids, T* out, int64_t rows,
                              int64_t cols, int64_t* bad_row) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int32_t id = ids[r];
    T* o = out + r * cols;
    if (id >= table_rows || id < -1) {
      if (threadIdx.x == 0) flag_row(bad_row, r, id);
      continue;
    }
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) o[c] = id < 0 ? T(0) : table[id * cols + c];
  }
}

template <class T>
__global__ void lookup_grad_kernel(const T* dy, const int32_t* ids, T* out, int64_t rows, int64_t table_rows,
                                   int64_t cols, int64_t* bad_row) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int32_t id = ids[r];
    if (id >= table_rows || id < -1) {
      if (threadIdx.x == 0) flag_row(bad_row, r, id);
      continue;
    }
    if (id < 0) continue;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) atomicAdd(out + id * cols + c, dy[r * cols + c]);
  }
}

__device__ __forceinline__ uint64_t mix(uint64_t x) {  // the CPU backend's mix (kernels_elementwise.cc)
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

template <class T>
__global__ void dropout_kernel(T* out, int64_t rows, int64_t cols, uint64_t base, const int32_t* row_vertex,
                               double p) {
  const T keep = static_cast<T>(1.0 / (1.0 - p));
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const uint64_t v = static_cast<uint64_t>(static_cast<int64_t>(row_vertex ? row_vertex[r] : r));
    const uint64_t row_key = mix(base ^ (v * 0xD6E8FEB86659FD93ull));
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const double u = static_cast<double>(mix(row_key + static_cast<uint64_t>(c)) >> 11) * 0x1.0p-53;
      out[r * cols + c] = u < p ? T(0) : keep;
    }
  }
}

template <class T>
const T* in(const void* p) {
  return static_cast<const T*>(p);
}
template <class T>
T* out_(void* p) {
  return static_cast<T*>(p);
}

}  // namespace

#define SYLVA_DISPATCH(F64, ...) \
  do {                           \
    if (F64) {                   \
      using T = double;          \
      __VA_ARGS__;               \
    } else {                     \
      using T = float;           \
      __VA_ARGS__;               \
    }                            \
  } while (0)

int softmax(const void* x, void* y, int64_t rows, int64_t cols, bool log_form, bool f64, void* stream) {
  if (rows == 0) return 0;
  const auto s = static_cast<cudaStream_t>(stream);
  SYLVA_DISPATCH(f64, (softmax_kernel<T><<<rows_grid(rows), kThreads, 0, s>>>(in<T>(x), out_<T>(y), rows, cols,
                                                                               log_form)));
  return static_cast<int>(cudaGetLastError());
}

int softmax_grad(const void* y, const void* dy, void* dx, int64_t rows, int64_t cols, bool log_form, bool f64,
                 void* stream) {
  if (rows == 0) return 0;
  const auto s = static_cast<cudaStream_t>(stream);
  SYLVA_DISPATCH(f64, (softmax_grad_kernel<T><<<rows_grid(rows), kThreads, 0, s>>>(in<T>(y), in<T>(dy), out_<T>(dx),
                                                                                    rows, cols, log_form)));
  return static_cast<int>(cudaGetLastError());
}

int cross_entropy(const void* x, const int32_t* labels, void* out, int64_t rows, int64_t cols, bool mean,
                  double* scratch, int64_t* bad_row, bool f64, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  cudaMemsetAsync(scratch, 0, 2 * sizeof(double), s);
  if (rows > 0)
    SYLVA_DISPATCH(f64, (cross_entropy_kernel<T><<<rows_grid(rows), kThreads, 0, s>>>(in<T>(x), labels, rows, cols,
                                                                                       scratch, bad_row)));
  SYLVA_DISPATCH(f64, (finish_cross_entropy<T><<<1, 1, 0, s>>>(scratch, out_<T>(out), mean)));
  return static_cast<int>(cudaGetLastError());
}

int cross_entropy_grad(const void* x, const int32_t* labels, const void* seed, void* dx, int64_t rows, int64_t cols,
                       bool mean, double* scratch, int64_t* bad_row, bool f64, void* stream) {
  if (rows == 0) return 0;
  const auto s = static_cast<cudaStream_t>(stream);
  cudaMemsetAsync(scratch, 0, 2 * sizeof(double), s);
  if (mean) count_labelled<<<grid_for(rows), kThreads, 0, s>>>(labels, rows, scratch);
  SYLVA_DISPATCH(f64, (cross_entropy_grad_kernel<T><<<rows_grid(rows), kThreads, 0, s>>>(
                          in<T>(x), labels, in<T>(seed), out_<T>(dx), rows, cols, mean, scratch, bad_row)));
  return static_cast<int>(cudaGetLastError());
}

int sum_all(const void* x, void* out, int64_t numel, bool mean, double* scratch, bool f64, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  cudaMemsetAsync(scratch, 0, sizeof(double), s);
  if (numel > 0) SYLVA_DISPATCH(f64, (sum_kernel<T><<<grid_for(numel), kThreads, 0, s>>>(in<T>(x), numel, scratch)));
  SYLVA_DISPATCH(f64, (finish_sum<T><<<1, 1, 0, s>>>(scratch, out_<T>(out), numel, mean)));
  return static_cast<int>(cudaGetLastError());
}

int sum_rows(const void* x, void* out, int64_t rows, int64_t cols, bool f64, void* stream) {
  if (cols == 0) return 0;
  const auto s = static_cast<cudaStream_t>(stream);
  SYLVA_DISPATCH(f64, (sum_rows_kernel<T><<<grid_for(cols), kThreads, 0, s>>>(in<T>(x), out_<T>(out), rows, cols)));
  return static_cast<int>(cudaGetLastError());
}

int broadcast(const void* v, int64_t v_numel, void* out, int64_t rows, int64_t cols, double scale, bool f64,
              void* stream) {
  if (rows * cols == 0) return 0;
  const auto s = static_cast<cudaStream_t>(stream);
  SYLVA_DISPATCH(f64, (broadcast_kernel<T><<<grid_for(rows * cols), kThreads, 0, s>>>(
                          in<T>(v), v_numel, out_<T>(out), rows, cols, static_cast<T>(scale))));
  return static_cast<int>(cudaGetLastError());
}

int lookup(const void* table, int64_t table_rows, const int32_t* ids, void* out, int64_t rows, int64_t cols,
           int64_t* bad_row, bool f64, void* stream) {
  if (rows == 0) return 0;
  const auto s = static_cast<cudaStream_t>(stream);
  SYLVA_DISPATCH(f64, (lookup_kernel<T><<<rows_grid(rows), 128, 0, s>>>(in<T>(table), table_rows, ids, out_<T>(out),
                                                                         rows, cols, bad_row)));
  return static_cast<int>(cudaGetLastError());
}

int lookup_grad(const void* dy, const int32_t* ids, void* out, int64_t rows, int64_t table_rows, int64_t cols,
                int64_t* bad_row, bool f64, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  cudaMemsetAsync(out, 0, static_cast<size_t>(table_rows * cols) * (f64 ? 8 : 4), s);
  if (rows == 0) return static_cast<int>(cudaGetLastError());
  SYLVA_DISPATCH(f64, (lookup_grad_kernel<T><<<rows_grid(rows), 128, 0, s>>>(in<T>(dy), ids, out_<T>(out), rows,
                                                                              table_rows, cols, bad_row)));
  return static_cast<int>(cudaGetLastError());
}

int dropout_mask(void* out, int64_t rows, int64_t cols, uint64_t base, const int32_t* row_vertex, double p,
                 bool f64, void* stream) {
  if (rows == 0) return 0;
  const auto s = static_cast<cudaStream_t>(stream);
  SYLVA_DISPATCH(f64, (dropout_kernel<T><<<rows_grid(rows), 128, 0, s>>>(out_<T>(out), rows, cols, base, row_vertex,
                                                                          p)));
  return static_cast<int>(cudaGetLastError());
}

}  // namespace sylva::cuda_kernels
