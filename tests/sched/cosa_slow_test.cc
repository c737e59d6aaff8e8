// CoSA on AlexNet and VGG16 on both archs (slow: 48 layers x 2 archs, about
// 12 s in Release and minutes under the sanitizers): every layer solves and
// its mapping fits.
#include <gtest/gtest.h>

#include <filesystem>

#include "support/test_util.h"
#include "sylva/sched/cosa.h"

namespace sylva::cosa {
namespace {

// AlexNet (11x11 kernels, 13x13 maps) and VGG16 on Simba and on the 4x
// larger simba_large: every layer solves and its mapping fits.
TEST(CosaSlow, AlexNetAndVgg16GetValidMappingsOnBothArchs) {
  const std::string data = test::data_dir();
  const std::string cosa = data + "/cosa";
  if (data.empty() || !std::filesystem::exists(cosa)) GTEST_SKIP() << "no CoSA data: set SYLVA_DATA";
  for (const char* arch : {"simba", "simba_large"}) {
    const Arch a = read_arch(cosa + "/arch/" + arch + ".yaml");
    const Mapspace ms = read_mapspace(cosa + "/mapspace/mapspace.yaml", a);
    for (const char* net : {"alexnet", "vgg16"})
      for (const std::string& layer : read_layer_list(cosa + "/workloads/" + net + "/layers.yaml")) {
        const Problem p = read_problem(layer);
        const Result r = schedule(p, a, ms);
        EXPECT_TRUE(r.evaluation.valid) << arch << " " << layer << ": " << r.evaluation.why;
        EXPECT_NO_THROW(check_mapping(r.mapping, p, a));
        EXPECT_GT(r.evaluation.utilization, 0.0);
      }
  }
}

}  // namespace
}  // namespace sylva::cosa
