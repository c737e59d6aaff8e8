// Test entry point: any warning or error logged through sylva::log during a
// test fails that test (a warning means something silently degraded).
#include <gtest/gtest.h>

#include <string>

#include "sylva/core/log.h"

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

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  testing::UnitTest::GetInstance()->listeners().Append(new FailOnWarnings);
  return RUN_ALL_TESTS();
}
