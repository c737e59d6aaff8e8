// The CUDA backend's deferred id and label checks (src/backend/cuda/device_checks.h)
// on a fake flag array: nothing is thrown while no kernel flagged a row;
// the earliest flagged call's error names its row and value, however many
// calls were checked in between; every settled flag is forgotten, thrown
// or not; the ring hands out each flag once until it is restarted.
#include "../../src/backend/cuda/device_checks.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/test_util.h"

namespace sylva::cuda {
namespace {

using test::error_of;

// The device's array: flags reset to -1, kernels write the first bad row.
struct FakeFlags {
  std::vector<DeviceFlag> device;
  explicit FakeFlags(size_t n) : device(n, DeviceFlag{-1, -1}) {}
  // What the backend does where it waits: copy the pending range back, reset it, settle.
  void settle(DeviceChecks& checks) {
    const std::vector<DeviceFlag> host(device.begin() + static_cast<std::ptrdiff_t>(checks.first()),
                                       device.begin() + static_cast<std::ptrdiff_t>(checks.first() + checks.count()));
    for (size_t k = checks.first(); k < checks.first() + checks.count(); ++k) device[k] = {-1, -1};
    checks.settle(host);
  }
};

DeviceChecks::Describe lookup(int64_t table_rows) {
  return [table_rows](int64_t row, int64_t id) {
    return "[lookup] id " + std::to_string(id) + " at row " + std::to_string(row) + " is out of range [0, " +
           std::to_string(table_rows) + ")";
  };
}

TEST(DeviceChecks, NothingIsThrownWhileNoKernelFlaggedARow) {
  DeviceChecks checks(8);
  FakeFlags flags(8);
  for (int k = 0; k < 3; ++k) checks.claim(lookup(10));
  EXPECT_EQ(checks.first(), 0u);
  EXPECT_EQ(checks.count(), 3u);
  EXPECT_EQ(error_of([&] { flags.settle(checks); }), "<no error>");
  EXPECT_EQ(checks.count(), 0u);
  EXPECT_EQ(checks.first(), 3u) << "settled flags are not handed out again before restart()";
  EXPECT_EQ(error_of([&] { flags.settle(checks); }), "<no error>") << "settling nothing is fine";
}

TEST(DeviceChecks, TheEarliestFlaggedCallIsNamedWithItsRowAndValue) {
  DeviceChecks checks(16);
  FakeFlags flags(16);
  checks.claim(lookup(10));
  const size_t second = checks.claim(lookup(50));
  checks.claim(lookup(10));
  const size_t fourth = checks.claim([](int64_t row, int64_t label) {
    return "[softmax_cross_entropy] label " + std::to_string(label) + " at row " + std::to_string(row);
  });
  const size_t fifth = checks.claim(lookup(7));
  flags.device[fifth] = {0, 9};
  flags.device[fourth] = {4, 5};
  flags.device[second] = {3, 57};
  const std::string msg = error_of([&] { flags.settle(checks); });
  EXPECT_NE(msg.find("[lookup] id 57 at row 3 is out of range [0, 50) (2 later calls flagged too)"), std::string::npos)
      << msg;
  EXPECT_EQ(checks.count(), 0u) << "a thrown settle forgets its flags too";
  // The next check starts clean: the flags were reset, the earlier error is not thrown again.
  const size_t next = checks.claim(lookup(10));
  EXPECT_EQ(next, 5u);
  EXPECT_EQ(error_of([&] { flags.settle(checks); }), "<no error>");
  const size_t last = checks.claim(lookup(10));
  flags.device[last] = {12, -4};
  EXPECT_NE(error_of([&] { flags.settle(checks); }).find("id -4 at row 12 is out of range [0, 10)"),
            std::string::npos);
}

TEST(DeviceChecks, TheRingHandsOutEachFlagOnceUntilRestarted) {
  DeviceChecks checks(3);
  FakeFlags flags(3);
  EXPECT_EQ(checks.claim(lookup(1)), 0u);
  EXPECT_EQ(checks.claim(lookup(1)), 1u);
  flags.settle(checks);
  EXPECT_TRUE(checks.room());
  EXPECT_EQ(checks.claim(lookup(1)), 2u);
  EXPECT_FALSE(checks.room());
  EXPECT_NE(error_of([&] { checks.claim(lookup(1)); }).find("full ring"), std::string::npos);
  EXPECT_NE(error_of([&] { checks.restart(); }).find("not settled"), std::string::npos);
  flags.settle(checks);
  checks.restart();
  EXPECT_TRUE(checks.room());
  EXPECT_EQ(checks.first(), 0u);
  const size_t again = checks.claim(lookup(4));
  EXPECT_EQ(again, 0u);
  flags.device[again] = {1, 4};
  EXPECT_NE(error_of([&] { flags.settle(checks); }).find("id 4 at row 1"), std::string::npos);
  checks.claim(lookup(4));
  EXPECT_NE(error_of([&] { checks.settle({}); }).find("pending flags"), std::string::npos)
      << "settle() takes exactly the pending flags";
  EXPECT_NE(error_of([] { DeviceChecks none(0); }).find("at least one flag"), std::string::npos);
}

}  // namespace
}  // namespace sylva::cuda
