// The NCCL engine (CUDA builds): device buffers summed by NCCL on the
// backend's stream. libnccl is opened on first use (backend/cuda/vendor_libs.h).
//
// NCCL has no deadlines of its own: a collective whose peer died waits in
// its kernel for ever. So the communicator is made non-blocking
// (ncclConfig_t::blocking = 0) and every call is waited for here, polling
// the communicator's asynchronous error and an event behind the queued
// kernels until the bootstrap communicator's deadline; past it the NCCL
// communicator is aborted (which ends its kernels) and the call throws.
#include <cuda_runtime.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "../backend/cuda/vendor_libs.h"
#include "device_calls.h"
#include "sylva/core/error.h"
#include "sylva/dist/device_communicator.h"

namespace sylva::dist {
namespace {

using Clock = std::chrono::steady_clock;

std::string nccl_error(ncclResult_t r, ncclComm_t comm) {
  const cuda::NcclApi& api = cuda::nccl_api();
  std::string s = api.error_string(r);
  if (comm != nullptr) {
    const char* last = api.last_error(comm);
    if (last != nullptr && *last != '\0') s += std::string(": ") + last;
  }
  return s;
}

class Nccl final : public DeviceCommunicator {
 public:
  Nccl(Communicator& bootstrap, Backend& device) : host_(bootstrap), device_(device) {
    SYLVA_CHECK(device.device().kind == DeviceKind::cuda, "[nccl] the NCCL engine sums CUDA device memory; backend '",
                device.name(), "' runs on ", device.device().str(), " (use dist::host_staged_communicator)");
    const cuda::NcclApi& api = cuda::nccl_api();  // throws naming libnccl when it cannot be opened
    // Rank 0 makes the id; its status travels with it, so that a failure
    // there is an error on every rank rather than a hang on the others.
    struct {
      ncclUniqueId id;
      int32_t status;
    } hello{};
    if (host_.rank() == 0) hello.status = static_cast<int32_t>(api.get_unique_id(&hello.id));
    host_.broadcast(std::as_writable_bytes(std::span(&hello, 1)), 0, "NCCL unique id");
    SYLVA_CHECK(hello.status == ncclSuccess, "[nccl] rank 0 could not make the NCCL id: ",
                api.error_string(static_cast<ncclResult_t>(hello.status)));
    SYLVA_CHECK(cudaSetDevice(device.device().index) == cudaSuccess, "[nccl] cannot select ", device.device().str());
    SYLVA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming) == cudaSuccess,
                "[nccl] cannot create a CUDA event");
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    const Clock::time_point deadline = Clock::now() + deadline_span();
    const ncclResult_t r = api.init_rank_config(&comm_, host_.size(), hello.id, host_.rank(), &config);
    try {
      SYLVA_CHECK(r == ncclSuccess || r == ncclInProgress, "[nccl] rank ", host_.rank(),
                  ": ncclCommInitRankConfig failed: ", nccl_error(r, comm_));
      settle("setting up the NCCL communicator", deadline);
    } catch (...) {  // no destructor runs: free what was made
      if (comm_ != nullptr) api.abort(comm_);
      cudaEventDestroy(done_);
      throw;
    }
  }

  ~Nccl() override {
    if (comm_ != nullptr) {
      const cuda::NcclApi& api = cuda::nccl_api();
      try {  // flush and free; a peer that is gone makes this an abort after the deadline
        api.finalize(comm_);
        settle("finalising the NCCL communicator", Clock::now() + deadline_span());
        api.destroy(comm_);
      } catch (const Error&) {
        api.abort(comm_);
      }
    }
    if (done_ != nullptr) cudaEventDestroy(done_);
  }

  int rank() const override { return host_.rank(); }
  int size() const override { return host_.size(); }
  std::string_view engine() const override { return "nccl"; }

 private:
  void run_allreduce(std::span<const MatView> buffers, std::string_view what) override {
    if (host_.options().check_calls) check_same_call(host_, buffers, what);
    run(buffers, what, Clock::now() + deadline_span());
  }
  void failed() override {
    if (comm_ != nullptr) cuda::nccl_api().abort(comm_);
    comm_ = nullptr;
  }

  Clock::duration deadline_span() const {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(host_.options().deadline_s));
  }

  void run(std::span<const MatView> buffers, std::string_view what, Clock::time_point deadline) {
    const cuda::NcclApi& api = cuda::nccl_api();
    auto* stream = static_cast<cudaStream_t>(device_.native_stream());
    ncclResult_t r = api.group_start();
    SYLVA_CHECK(r == ncclSuccess, "[nccl] ncclGroupStart failed: ", nccl_error(r, comm_));
    for (const MatView& b : buffers) {
      if (b.numel() == 0) continue;
      r = api.all_reduce(b.data, b.data, static_cast<size_t>(b.numel()), b.dtype == DType::f32 ? ncclFloat32 : ncclFloat64,
                         ncclSum, comm_, stream);
      if (r != ncclSuccess && r != ncclInProgress) {
        api.group_end();
        SYLVA_THROW("[nccl] rank ", host_.rank(), ": ncclAllReduce of '", what, "' failed: ", nccl_error(r, comm_));
      }
      bytes_ += static_cast<int64_t>(b.numel()) * static_cast<int64_t>(dtype_size(b.dtype));
    }
    r = api.group_end();
    SYLVA_CHECK(r == ncclSuccess || r == ncclInProgress, "[nccl] rank ", host_.rank(), ": ncclGroupEnd for '", what,
                "' failed: ", nccl_error(r, comm_));
    const std::string doing = "allreduce_sum of '" + std::string(what) + "' (" + describe_buffers(buffers) + ")";
    settle(doing, deadline);  // enqueued
    SYLVA_CHECK(cudaEventRecord(done_, stream) == cudaSuccess, "[nccl] cannot record an event after ", doing);
    for (;;) {  // finished on the device
      const cudaError_t e = cudaEventQuery(done_);
      if (e == cudaSuccess) return;
      SYLVA_CHECK(e == cudaErrorNotReady, "[nccl] rank ", host_.rank(), ": ", doing,
                  " failed on the device: ", cudaGetErrorString(e));
      poll(doing, deadline);
    }
  }

  // Waits until the communicator has no operation in progress.
  void settle(const std::string& doing, Clock::time_point deadline) {
    for (;;) {
      ncclResult_t state = ncclSuccess;
      const ncclResult_t r = cuda::nccl_api().async_error(comm_, &state);
      SYLVA_CHECK(r == ncclSuccess, "[nccl] ncclCommGetAsyncError failed while ", doing, ": ", nccl_error(r, comm_));
      if (state == ncclSuccess) return;
      SYLVA_CHECK(state == ncclInProgress, "[nccl] rank ", host_.rank(), ": ", doing, " failed: ",
                  nccl_error(state, comm_));
      poll(doing, deadline);
    }
  }

  // One wait while polling: an asynchronous error or the deadline throws.
  void poll(const std::string& doing, Clock::time_point deadline) {
    ncclResult_t state = ncclSuccess;
    if (cuda::nccl_api().async_error(comm_, &state) == ncclSuccess && state != ncclSuccess && state != ncclInProgress)
      SYLVA_THROW("[nccl] rank ", host_.rank(), " of ", host_.size(), ": ", doing, " failed: ", nccl_error(state, comm_));
    SYLVA_CHECK(Clock::now() < deadline, "[nccl] rank ", host_.rank(), " of ", host_.size(), ": ", doing,
                " did not finish within ", host_.options().deadline_s,
                " s (a rank died, stalled or never made the call); the NCCL communicator is aborted");
    if (++polls_ % 1024 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
    else std::this_thread::yield();
  }

  Communicator& host_;
  Backend& device_;
  ncclComm_t comm_ = nullptr;
  cudaEvent_t done_ = nullptr;
  uint64_t polls_ = 0;
};

}  // namespace

bool nccl_available() { return true; }

std::unique_ptr<DeviceCommunicator> nccl_communicator(Communicator& bootstrap, Backend& device) {
  return std::make_unique<Nccl>(bootstrap, device);
}

}  // namespace sylva::dist
