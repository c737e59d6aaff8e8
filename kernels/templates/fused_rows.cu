// A fused row-local group of Sylva ops, generated from a FusedProgram and
// compiled with NVRTC. One warp per row (grid-stride over rows); each step
// is a lane-strided loop over its columns; values that are not outputs
// live in the warp's slice of shared memory. Placeholders, each a word
// between at-signs: NAME (the ops), T (float or double), NIN / NOUT (inputs
// / outputs), WARPS (warps per block), SCRATCH (scratch elements per warp),
// KERNEL (the entry point), BODY (the steps).
// The host passes SylvaFusedArgs by value; its layout is eight-byte words
// only: in pointers, in row strides (0: a one-row input broadcast), out
// pointers, rows.
typedef @T@ T;

struct SylvaFusedArgs {
  const T* in[@NIN@];
  long long in_stride[@NIN@];
  T* out[@NOUT@];
  long long rows;
};

__device__ __forceinline__ float sylva_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double sylva_tanh(double x) { return tanh(x); }
__device__ __forceinline__ float sylva_exp(float x) { return expf(x); }
__device__ __forceinline__ double sylva_exp(double x) { return exp(x); }
__device__ __forceinline__ float sylva_log(float x) { return logf(x); }
__device__ __forceinline__ double sylva_log(double x) { return log(x); }
__device__ __forceinline__ T sylva_sigmoid(T x) { return T(1) / (T(1) + sylva_exp(-x)); }

// @NAME@
extern "C" __global__ void __launch_bounds__(@WARPS@ * 32) @KERNEL@(SylvaFusedArgs args) {
  // @WARPS@ * @SCRATCH@ elements, sized at launch (dynamic: above 48 KiB where the GPU allows it).
  extern __shared__ double sylva_shared_words[];
  T* shared_scratch = reinterpret_cast<T*>(sylva_shared_words);
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  T* scratch = shared_scratch + warp * @SCRATCH@;
  (void)scratch;
  for (long long r = (long long)blockIdx.x * @WARPS@ + warp; r < args.rows; r += (long long)gridDim.x * @WARPS@) {
@BODY@
  }
}
