// cuBLAS, NVRTC and NCCL are opened on first use, not linked: a process that
// links Sylva but never creates the CUDA backend (or the NCCL engine) does
// not pay their start-up memory. None needs a GPU to load, so this runs
// wherever CUDA is built.
#include "../../src/backend/cuda/vendor_libs.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace sylva::cuda {
namespace {

// Whether a shared object whose path contains `name` is mapped into this process.
bool mapped(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    if (line.find(name) != std::string::npos) return true;
  }
  return false;
}

TEST(VendorLibs, CublasAndNvrtcAreLoadedOnFirstUseOnly) {
  ASSERT_FALSE(mapped("libcublas.so")) << "cuBLAS is linked into the test: the lazy load is not tested";
  ASSERT_FALSE(mapped("libnvrtc.so")) << "NVRTC is linked into the test: the lazy load is not tested";

  const std::string ok = cublas_api().status_string(CUBLAS_STATUS_SUCCESS);
  EXPECT_FALSE(ok.empty());
  EXPECT_NE(ok, cublas_api().status_string(CUBLAS_STATUS_NOT_INITIALIZED));
  EXPECT_TRUE(mapped("libcublas.so"));
  EXPECT_FALSE(mapped("libnvrtc.so"));

  int major = 0, minor = 0;
  ASSERT_EQ(nvrtc_api().version(&major, &minor), NVRTC_SUCCESS);
  EXPECT_EQ(major, CUDART_VERSION / 1000);
  EXPECT_STREQ(nvrtc_api().error_string(NVRTC_SUCCESS), "NVRTC_SUCCESS");
  EXPECT_TRUE(mapped("libnvrtc.so"));
  EXPECT_EQ(&cublas_api(), &cublas_api());  // loaded once
}

TEST(VendorLibs, NcclIsLoadedOnFirstUseOnly) {
  ASSERT_FALSE(mapped("libnccl.so")) << "NCCL is linked into the test: the lazy load is not tested";
  int version = 0;
  ASSERT_EQ(nccl_api().version(&version), ncclSuccess);
  EXPECT_EQ(version / 10000, NCCL_MAJOR) << "NCCL version code " << version;
  EXPECT_GE(version, NCCL_VERSION(2, 19, 0)) << "the engine needs ncclCommInitRankConfig's non-blocking mode";
  EXPECT_NE(std::string(nccl_api().error_string(ncclSuccess)), nccl_api().error_string(ncclInvalidUsage));
  EXPECT_TRUE(mapped("libnccl.so"));
}

}  // namespace
}  // namespace sylva::cuda
