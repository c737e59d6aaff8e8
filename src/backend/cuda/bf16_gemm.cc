#include "bf16_gemm.h"

#include "cuda/rows.h"
#include "cuda_check.h"
#include "vendor_libs.h"

namespace sylva::cuda {

const void* Bf16Operands::get(const MatView& v, int slot, cudaStream_t stream) {
  if (v.dtype == DType::bf16) return v.data;
  SYLVA_CHECK(v.dtype == DType::f32, "[cuda] a bf16 GEMM reads float32 or bfloat16 operands, got ", dtype_name(v.dtype));
  const size_t bytes = static_cast<size_t>(v.numel()) * dtype_size(DType::bf16);
  if (bytes > bytes_[slot]) {
    if (buf_[slot]) SYLVA_CUDA_CHECK(cudaStreamSynchronize(stream));  // its last reader is done
    buf_[slot] = device_alloc(bytes);
    bytes_[slot] = bytes;
  }
  SYLVA_CUDA_CHECK(static_cast<cudaError_t>(cuda_kernels::convert_bf16(v.data, buf_[slot].get(), v.numel(), true, stream)));
  return buf_[slot].get();
}

bool bf16_gemm(const KernelArgs& a) {
  const bool bf16_operand = a.in[0].dtype == DType::bf16 || a.in[1].dtype == DType::bf16;
  SYLVA_CHECK(!bf16_operand || a.out.dtype == DType::f32, "[cuda] matmul of ", dtype_name(a.in[0].dtype), " and ",
              dtype_name(a.in[1].dtype), " into ", dtype_name(a.out.dtype), ": bfloat16 operands need a float32 output");
  return a.out.dtype == DType::f32 && (bf16_operand || a.ctx.gemm == Precision::bf16);
}

void run_bf16_gemm(cublasHandle_t handle, const KernelArgs& a, Bf16Operands& operands, cudaStream_t stream) {
  const MatView &x = a.in[0], &y = a.in[1];
  const bool ta = a.node.attrs.trans_a, tb = a.node.attrs.trans_b;
  const int m = static_cast<int>(a.out.rows), n = static_cast<int>(a.out.cols);
  const int k = static_cast<int>(ta ? x.rows : x.cols);
  const float one = 1, beta = a.accumulate ? 1 : 0;
  const void* yb = operands.get(y, 1, stream);
  const void* xb = operands.get(x, 0, stream);
  // Row-major C = op(A) op(B) is column-major Cᵀ = op(B)ᵀ op(A)ᵀ.
  SYLVA_CUBLAS_CHECK(cublas_api().gemm_ex(handle, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m,
                                          k, &one, yb, CUDA_R_16BF, static_cast<int>(y.cols), xb, CUDA_R_16BF,
                                          static_cast<int>(x.cols), &beta, a.out.data, CUDA_R_32F, n,
                                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

void convert_bf16(MatView src, MatView dst, cudaStream_t stream) {
  SYLVA_CHECK(src.rows == dst.rows && src.cols == dst.cols, "[cuda] convert [", src.rows, ", ", src.cols, "] into [",
              dst.rows, ", ", dst.cols, "]");
  const bool to = src.dtype == DType::f32 && dst.dtype == DType::bf16;
  SYLVA_CHECK(to || (src.dtype == DType::bf16 && dst.dtype == DType::f32), "[cuda] cannot convert ",
              dtype_name(src.dtype), " to ", dtype_name(dst.dtype), " (float32 and bfloat16 only)");
  SYLVA_CUDA_CHECK(static_cast<cudaError_t>(cuda_kernels::convert_bf16(src.data, dst.data, src.numel(), to, stream)));
}

std::string bf16_unsupported(Precision p, int major, const std::string& arch) {
  if (p == Precision::fp32 || major >= 8) return "";
  return "bf16 GEMMs need a GPU of compute capability 8.0 or later (Ampere); this one is " + arch;
}

}  // namespace sylva::cuda
