// Internal: cuBLAS, NVRTC and NCCL, opened the first time the CUDA backend needs
// them rather than linked. A linked library is loaded, relocated and
// initialised in every process that links Sylva, whether it uses the GPU or
// not: cuBLAS (with cuBLASLt) costs about 150 MB of resident memory and
// NVRTC about 30 MB at start-up -- more than a CPU training run's values.
// dlopen() searches as the dynamic linker would (LD_LIBRARY_PATH, the
// program's RUNPATH, the ld.so cache); a missing library is a sylva::Error
// naming it when the CUDA backend is created, not a failure to start.
#pragma once

#include <cublas_v2.h>
#include <nccl.h>
#include <nvrtc.h>

namespace sylva::cuda {

/// The cuBLAS entry points the backend calls.
struct CublasApi {
  decltype(&::cublasCreate_v2) create;
  decltype(&::cublasDestroy_v2) destroy;
  decltype(&::cublasSetStream_v2) set_stream;
  decltype(&::cublasSgemm_v2) sgemm;
  decltype(&::cublasDgemm_v2) dgemm;
  // cublasGemmEx (C++ overloads it, so its C signature is spelled out): bf16 operands, float32 sums.
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                            const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                            cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
  decltype(&::cublasGetStatusString) status_string;
};

/// The NVRTC entry points the fused-kernel cache calls.
struct NvrtcApi {
  decltype(&::nvrtcCreateProgram) create_program;
  decltype(&::nvrtcCompileProgram) compile_program;
  decltype(&::nvrtcGetProgramLogSize) program_log_size;
  decltype(&::nvrtcGetProgramLog) program_log;
  decltype(&::nvrtcGetCUBINSize) cubin_size;
  decltype(&::nvrtcGetCUBIN) cubin;
  decltype(&::nvrtcDestroyProgram) destroy_program;
  decltype(&::nvrtcGetErrorString) error_string;
  decltype(&::nvrtcVersion) version;
};

/// The NCCL entry points dist's NCCL engine calls (src/dist/nccl_communicator.cc).
struct NcclApi {
  decltype(&::ncclGetVersion) version;
  decltype(&::ncclGetUniqueId) get_unique_id;
  decltype(&::ncclCommInitRankConfig) init_rank_config;
  decltype(&::ncclCommGetAsyncError) async_error;
  decltype(&::ncclCommFinalize) finalize;
  decltype(&::ncclCommDestroy) destroy;
  decltype(&::ncclCommAbort) abort;
  decltype(&::ncclGroupStart) group_start;
  decltype(&::ncclGroupEnd) group_end;
  decltype(&::ncclAllReduce) all_reduce;
  decltype(&::ncclGetErrorString) error_string;
  decltype(&::ncclGetLastError) last_error;
};

/// Opens libcublas.so.<CUBLAS_VER_MAJOR> on the first call (thread-safe)
/// and resolves every entry point; sylva::Error naming the library (or the
/// missing symbol) and dlerror()'s reason when that fails. The library stays
/// loaded for the life of the process.
const CublasApi& cublas_api();
/// The same for libnvrtc.so.<CUDA runtime major version>.
const NvrtcApi& nvrtc_api();
/// The same for libnccl.so.<NCCL_MAJOR> (the toolkit's, or the nvidia-nccl
/// Python wheel's when its lib directory is on LD_LIBRARY_PATH).
const NcclApi& nccl_api();

}  // namespace sylva::cuda
