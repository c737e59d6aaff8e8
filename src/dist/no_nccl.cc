// Built without CUDA (SYLVA_BUILD_CUDA off): no NCCL engine; the message
// says how to get it.
#include "sylva/core/error.h"
#include "sylva/dist/device_communicator.h"

namespace sylva::dist {

bool nccl_available() { return false; }

std::unique_ptr<DeviceCommunicator> nccl_communicator(Communicator&, Backend&) {
  SYLVA_THROW("[nccl] this Sylva was built without CUDA, so without the NCCL engine: configure with "
              "-DSYLVA_BUILD_CUDA=ON (NCCL comes with the CUDA toolkit), or sum device gradients through the host "
              "(dist::host_staged_communicator)");
}

}  // namespace sylva::dist
