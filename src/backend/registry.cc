#include <cstring>
#include <mutex>

#include "backend_factories.h"
#include "sylva/core/error.h"

namespace sylva {

void Backend::upload(void* dst, const void* src, size_t bytes) {
  SYLVA_ASSERT(memory().host_visible(), name(), " has memory of its own but no upload()");
  if (bytes) std::memcpy(dst, src, bytes);
}

void Backend::download(void* dst, const void* src, size_t bytes) {
  SYLVA_ASSERT(memory().host_visible(), name(), " has memory of its own but no download()");
  if (bytes) std::memcpy(dst, src, bytes);
}

int Backend::set_lane(int lane) {
  SYLVA_CHECK(lane >= 0 && lane < lanes(), "[", name(), "] lane ", lane, " out of range [0, ", lanes(), ")");
  return 0;
}

void Backend::move_row_windows(MatView, std::span<const int32_t>, MatView, std::span<const int32_t>, ColumnWindow,
                               bool) {
  SYLVA_THROW("[", name(), "] has no row windows (has_row_windows() is false)");
}

void Backend::convert(MatView src, MatView dst) {
  SYLVA_THROW("[", name(), "] cannot convert ", dtype_name(src.dtype), " to ", dtype_name(dst.dtype),
              " (this backend has no bfloat16 support)");
}

std::string Backend::precision_unsupported(Precision p) const {
  if (p == Precision::fp32) return "";
  return detail::concat("the ", name(), " backend has no ", precision_name(p), " GEMMs");
}

void Backend::update_parameter(const ParamUpdate&) {
  SYLVA_THROW("[", name(), "] has no optimiser kernels (has_optimiser_kernels() is false)");
}

void Backend::sum_squares(MatView, MatView, double, std::span<const int32_t>, double*) {
  SYLVA_THROW("[", name(), "] has no optimiser kernels (has_optimiser_kernels() is false)");
}

Backend& backend_for(Device device) {
  switch (device.kind) {
    case DeviceKind::cpu: {
      static std::unique_ptr<Backend> cpu = make_cpu_backend();
      return *cpu;
    }
    case DeviceKind::cuda: {
      // One device per process for now: the CUDA backend sets its device
      // once, when it is made. It is never destroyed: a static's destructor
      // would run after the CUDA runtime's own teardown (registered at the
      // first CUDA call, after this static), and cuBLAS handles, streams
      // and device memory freed then fail; the driver reclaims them at exit.
      static std::mutex mutex;
      static Backend* cuda = nullptr;
      std::lock_guard<std::mutex> lock(mutex);
      if (!cuda) cuda = make_cuda_backend(device.index).release();
      SYLVA_CHECK(cuda->device() == device, "[cuda] ", device.str(), " asked for, but this process already uses ",
                  cuda->device().str(), " (one CUDA device per process for now)");
      return *cuda;
    }
  }
  SYLVA_THROW("[backend] unknown device ", device.str());
}

}  // namespace sylva
