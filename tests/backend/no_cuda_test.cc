// Without -DSYLVA_BUILD_CUDA=ON every CUDA entry point says how to get one.
#include <gtest/gtest.h>

#include "support/ios_fixture.h"
#include "support/test_util.h"
#include "sylva/backend/backend.h"
#include "sylva/config.h"
#include "sylva/frontend/program.h"
#if SYLVA_WITH_COSA
#include "sylva/graph/cnn.h"
#endif
#include "sylva/runtime/executor.h"

namespace sylva {
namespace {

using test::error_of;
constexpr const char* kHint = "built without CUDA (configure with -DSYLVA_BUILD_CUDA=ON)";

TEST(NoCuda, EveryBackendCallExplainsHowToGetCuda) {
  Backend& cuda = backend_for(Device::cuda());
  EXPECT_EQ(cuda.name(), "no_cuda");
  EXPECT_CONTAINS(error_of([&] { cuda.supports(ir::OpKind::MatMul); }), kHint);
  EXPECT_CONTAINS(error_of([&] { cuda.fill_zero({}); }), kHint);
  EXPECT_CONTAINS(error_of([&] { cuda.copy_rows({}, {}, {}, {}); }), kHint);
  EXPECT_CONTAINS(error_of([&] { cuda.add_rows({}, {}, {}, {}); }), kHint);
  EXPECT_CONTAINS(error_of([&] { cuda.accumulate({}, {}); }), kHint);
  EXPECT_CONTAINS(error_of([&] { cuda.set_threads(2); }), kHint);
  EXPECT_CONTAINS(error_of([&] { cuda.memory(); }), kHint);
  EXPECT_CONTAINS(error_of([&] { cuda.upload(nullptr, nullptr, 0); }), kHint);
  EXPECT_CONTAINS(error_of([&] { cuda.update_parameter({}); }), kHint);
  EXPECT_CONTAINS(error_of([&] { cuda.sum_squares({}, {}, 0.0, {}, nullptr); }), kHint);
}

TEST(NoCuda, OneCudaDevicePerProcess) {
  backend_for(Device::cuda(0));
  EXPECT_CONTAINS(error_of([&] { backend_for(Device::cuda(1)); }),
                  "cuda:1 asked for, but this process already uses cuda:0 (one CUDA device per process for now)");
}

TEST(NoCuda, AnExecutorOnCudaFailsClearly) {
  ParameterSet ps(DType::f32, 1);
  ps.add("E", {3, 2}, Init::zeros());
  Program p;
  Symbol s = sum(lookup(p.param(ps["E"]), p.input_ids("w")));
  (void)s;
  EXPECT_CONTAINS(error_of([&] { Executor ex(p, ps, {.device = Device::cuda()}); }), kHint);
}

#if SYLVA_WITH_COSA  // the static CNN path is part of the CoSA wing
TEST(NoCuda, TheCnnRunnerOnCudnnFailsClearly) {
  test::TempDir dir;
  const ios::CnnGraph g = ios::read_ios_graph(dir.file("g.json", test::kTinyCnnGraph));
  EXPECT_CONTAINS(error_of([&] { cnn::CnnRunner(g, 1, 1, cnn::Impl::cudnn); }), kHint);
}
#endif

}  // namespace
}  // namespace sylva
