// cuda_gpu_facts in a build without CUDA: it says how to get it.
#include "sylva/core/error.h"
#include "sylva/sched/cosa_gpu.h"

namespace sylva::cosa {

GpuFacts cuda_gpu_facts(int device) {
  SYLVA_THROW("[cosa] no CUDA device ", device, ": built without CUDA (configure with -DSYLVA_BUILD_CUDA=ON)");
}

}  // namespace sylva::cosa
