// CoSA on every layer of ResNet-50 (slow: the 3x3 and 7x7 layers take CBC
// seconds each): every layer solves and its mapping is valid in the model.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/test_util.h"
#include "sylva/sched/cosa.h"

namespace sylva::cosa {
namespace {

TEST(CosaSlow, EveryResNet50LayerSolves) {
  const std::string data = test::data_dir();
  const std::string cosa = data + "/cosa";
  if (data.empty() || !std::filesystem::exists(cosa)) GTEST_SKIP() << "no CoSA data: set SYLVA_DATA";
  const Arch a = read_arch(cosa + "/arch/simba.yaml");
  const Mapspace ms = read_mapspace(cosa + "/mapspace/mapspace.yaml", a);
  std::ifstream list(cosa + "/workloads/resnet50/unique_layers.yaml");
  std::string line;
  int solved = 0;
  while (std::getline(list, line)) {
    if (line.rfind("- ", 0) != 0) continue;
    const std::string layer = line.substr(2);
    const Problem p = read_problem(cosa + "/workloads/resnet50/" + layer + ".yaml");
    const Result r = schedule(p, a, ms);
    EXPECT_TRUE(r.evaluation.valid) << layer << ": " << r.evaluation.why;
    std::printf("[cosa] %s: %lld cycles, %.3f s\n", layer.c_str(), static_cast<long long>(r.evaluation.cycles),
                r.solve_seconds);
    ++solved;
  }
  EXPECT_GT(solved, 10);
}

}  // namespace
}  // namespace sylva::cosa
