#include "vendor_libs.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <string>

#include "sylva/core/error.h"

namespace sylva::cuda {

namespace {

// A library opened for good (never dlclose()d: handles and programs made
// from it may outlive any owner we could give it).
class Library {
 public:
  // `user`: who needs it, for the error ("the CUDA backend").
  Library(std::string name, const char* user) : name_(std::move(name)) {
    handle_ = dlopen(name_.c_str(), RTLD_NOW | RTLD_LOCAL);
    SYLVA_CHECK(handle_ != nullptr, "[cuda] cannot load ", name_, " (", dlerror(), "); ", user,
                " needs it: install the CUDA toolkit's library or put its directory on LD_LIBRARY_PATH");
  }
  template <class Fn>
  void resolve(Fn& fn, const char* symbol) const {
    dlerror();
    void* p = dlsym(handle_, symbol);
    SYLVA_CHECK(p != nullptr, "[cuda] ", name_, " has no symbol ", symbol, " (", dlerror(),
                "); Sylva was built against a different version of it");
    fn = reinterpret_cast<Fn>(p);
  }

 private:
  std::string name_;
  void* handle_ = nullptr;
};

CublasApi load_cublas() {
  const Library lib("libcublas.so." + std::to_string(CUBLAS_VER_MAJOR), "the CUDA backend");
  CublasApi api{};
  lib.resolve(api.create, "cublasCreate_v2");
  lib.resolve(api.destroy, "cublasDestroy_v2");
  lib.resolve(api.set_stream, "cublasSetStream_v2");
  lib.resolve(api.sgemm, "cublasSgemm_v2");
  lib.resolve(api.dgemm, "cublasDgemm_v2");
  lib.resolve(api.gemm_ex, "cublasGemmEx");
  lib.resolve(api.status_string, "cublasGetStatusString");
  return api;
}

NvrtcApi load_nvrtc() {
  const Library lib("libnvrtc.so." + std::to_string(CUDART_VERSION / 1000), "the CUDA backend");
  NvrtcApi api{};
  lib.resolve(api.create_program, "nvrtcCreateProgram");
  lib.resolve(api.compile_program, "nvrtcCompileProgram");
  lib.resolve(api.program_log_size, "nvrtcGetProgramLogSize");
  lib.resolve(api.program_log, "nvrtcGetProgramLog");
  lib.resolve(api.cubin_size, "nvrtcGetCUBINSize");
  lib.resolve(api.cubin, "nvrtcGetCUBIN");
  lib.resolve(api.destroy_program, "nvrtcDestroyProgram");
  lib.resolve(api.error_string, "nvrtcGetErrorString");
  lib.resolve(api.version, "nvrtcVersion");
  return api;
}

NcclApi load_nccl() {
  const Library lib("libnccl.so." + std::to_string(NCCL_MAJOR), "the NCCL engine (dist::nccl_communicator)");
  NcclApi api{};
  lib.resolve(api.version, "ncclGetVersion");
  lib.resolve(api.get_unique_id, "ncclGetUniqueId");
  lib.resolve(api.init_rank_config, "ncclCommInitRankConfig");
  lib.resolve(api.async_error, "ncclCommGetAsyncError");
  lib.resolve(api.finalize, "ncclCommFinalize");
  lib.resolve(api.destroy, "ncclCommDestroy");
  lib.resolve(api.abort, "ncclCommAbort");
  lib.resolve(api.group_start, "ncclGroupStart");
  lib.resolve(api.group_end, "ncclGroupEnd");
  lib.resolve(api.all_reduce, "ncclAllReduce");
  lib.resolve(api.error_string, "ncclGetErrorString");
  lib.resolve(api.last_error, "ncclGetLastError");
  return api;
}

}  // namespace

const CublasApi& cublas_api() {
  static const CublasApi api = load_cublas();  // a throw leaves it unset: the next call tries again
  return api;
}

const NvrtcApi& nvrtc_api() {
  static const NvrtcApi api = load_nvrtc();
  return api;
}

const NcclApi& nccl_api() {
  static const NcclApi api = load_nccl();
  return api;
}

}  // namespace sylva::cuda
