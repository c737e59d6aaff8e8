// run_gpu_conv where Sylva was built without CUDA.
#include "sylva/core/error.h"
#include "sylva/graph/cosa_gpu_run.h"

namespace sylva::cosa {

GpuRun run_gpu_conv(const GpuConvPlan& plan, const float*, const float*, float*, int) {
  SYLVA_THROW("[cosa] run_gpu_conv '", plan.problem.name,
              "': Sylva was built without CUDA; configure with -DSYLVA_BUILD_CUDA=ON to run GPU kernels");
}

}  // namespace sylva::cosa
