// Internal: the CUDA backend's bf16 GEMMs (Precision::bf16) through
// cublasGemmEx -- bfloat16 operands, float32 sums and C on tensor cores --
// and its float32 <-> bfloat16 conversion (kernels/cuda/rows.cu, rounded as
// sylva/core/bfloat16.h says, bit for bit).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "device_memory.h"
#include "sylva/backend/backend.h"

namespace sylva::cuda {

/// One lane's scratch for GEMM operands rounded from float32 (A and B).
/// Work on a lane runs in order, so the next GEMM's rounding waits for
/// this one's reads.
class Bf16Operands {
 public:
  /// `v` as bfloat16 in device memory: itself, or rounded into slot (0: A,
  /// 1: B) on `stream`.
  const void* get(const MatView& v, int slot, cudaStream_t stream);

 private:
  std::unique_ptr<void, DeviceDeleter> buf_[2];
  size_t bytes_[2] = {0, 0};
};

/// Whether a MatMul runs in bf16: a float32 output with ExecContext::gemm
/// bf16 or a bfloat16 operand. sylva::Error for bfloat16 operands into
/// another output type.
bool bf16_gemm(const KernelArgs& a);
/// out (=|+=) op(A)·op(B) through cublasGemmEx on `handle` (set to `stream`).
void run_bf16_gemm(cublasHandle_t handle, const KernelArgs& a, Bf16Operands& operands, cudaStream_t stream);
/// dst = src, float32 -> bfloat16 or back, queued on `stream`.
void convert_bf16(MatView src, MatView dst, cudaStream_t stream);
/// Why a GPU of compute capability `major` (`arch`, "sm_90") cannot run
/// GEMMs in `p`, or "": bf16 needs 8.0 (Ampere) or later.
std::string bf16_unsupported(Precision p, int major, const std::string& arch);

}  // namespace sylva::cuda
