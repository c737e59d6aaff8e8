#include "backend_factories.h"
#include "sylva/core/error.h"

namespace sylva {

Backend& backend_for(Device device) {
  switch (device.kind) {
    case DeviceKind::cpu: {
      static std::unique_ptr<Backend> cpu = make_cpu_backend();
      return *cpu;
    }
    case DeviceKind::cuda: {
      static std::unique_ptr<Backend> cuda = make_cuda_backend(device.index);
      return *cuda;
    }
  }
  SYLVA_THROW("[backend] unknown device ", device.str());
}

}  // namespace sylva
