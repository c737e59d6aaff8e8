// Test entry point: any warning or error logged through sylva::log during a
// test fails that test (a warning means something silently degraded).
#include <gtest/gtest.h>

#include <string>

#include "sylva/backend/backend.h"
#include "sylva/core/error.h"
#include "sylva/core/log.h"
#include "test_device.h"

namespace {

class FailOnWarnings : public testing::EmptyTestEventListener {
 public:
  void OnTestStart(const testing::TestInfo&) override {
    sylva::set_log_handler([](sylva::LogLevel level, std::string_view msg) {
      if (level >= sylva::LogLevel::warning)
        ADD_FAILURE() << "sylva logged a warning: " << std::string(msg);
    });
  }
  void OnTestEnd(const testing::TestInfo&) override { sylva::set_log_handler(nullptr); }
};

// SYLVA_TEST_DEVICE=cuda on a machine without a GPU: every test skips,
// saying why; an unknown device fails every test.
class TestDevice : public testing::Environment {
 public:
  void SetUp() override {
    std::string device;
    try {
      device = sylva::test::test_device();
      if (device == "cuda") sylva::backend_for(sylva::Device::cuda()).memory();
    } catch (const sylva::Error& e) {
      if (device == "cuda") GTEST_SKIP() << "SYLVA_TEST_DEVICE=cuda, but no GPU to run on: " << e.what();
      FAIL() << e.what();
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  testing::UnitTest::GetInstance()->listeners().Append(new FailOnWarnings);
  testing::AddGlobalTestEnvironment(new TestDevice);
  return RUN_ALL_TESTS();
}
