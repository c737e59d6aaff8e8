// Internal: checked vendor calls for the CUDA backend. Each macro throws
// sylva::Error naming the failing expression, the file and line, and the
// vendor's error string.
#pragma once

#include <cublas_v2.h>
#include <cudnn.h>
#include <cuda_runtime.h>
#include <nvrtc.h>

#include "sylva/core/error.h"
#include "vendor_libs.h"

#define SYLVA_CUDA_CHECK(expr)                                                                                     \
  do {                                                                                                             \
    const cudaError_t sylva_err_ = (expr);                                                                         \
    SYLVA_CHECK(sylva_err_ == cudaSuccess, "[cuda] ", #expr, " failed at ", __FILE__, ":", __LINE__, ": ",         \
                cudaGetErrorString(sylva_err_));                                                                   \
  } while (0)

#define SYLVA_CUBLAS_CHECK(expr)                                                                                   \
  do {                                                                                                             \
    const cublasStatus_t sylva_err_ = (expr);                                                                      \
    SYLVA_CHECK(sylva_err_ == CUBLAS_STATUS_SUCCESS, "[cublas] ", #expr, " failed at ", __FILE__, ":", __LINE__,   \
                ": ", sylva::cuda::cublas_api().status_string(sylva_err_));                                                          \
  } while (0)

#define SYLVA_NVRTC_CHECK(expr)                                                                                    \
  do {                                                                                                             \
    const nvrtcResult sylva_err_ = (expr);                                                                         \
    SYLVA_CHECK(sylva_err_ == NVRTC_SUCCESS, "[nvrtc] ", #expr, " failed at ", __FILE__, ":", __LINE__, ": ",      \
                sylva::cuda::nvrtc_api().error_string(sylva_err_));                                                                  \
  } while (0)

#define SYLVA_CUDNN_CHECK(expr)                                                                                    \
  do {                                                                                                             \
    const cudnnStatus_t sylva_err_ = (expr);                                                                       \
    SYLVA_CHECK(sylva_err_ == CUDNN_STATUS_SUCCESS, "[cudnn] ", #expr, " failed at ", __FILE__, ":", __LINE__,     \
                ": ", cudnnGetErrorString(sylva_err_));                                                            \
  } while (0)
