// Shape, Buffer, Tensor, DynamicTensor and the error macros.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/test_util.h"
#include "sylva/core/device.h"
#include "sylva/core/dynamic_tensor.h"
#include "sylva/core/tensor.h"

namespace sylva {
namespace {

using test::error_of;

TEST(Shape, ExtentsRowsAndCols) {
  Shape s{3, 4};
  EXPECT_EQ(s.numel(), 12);
  EXPECT_EQ(s.rows(), 3);
  EXPECT_EQ(s.cols(), 4);
  EXPECT_EQ(s.str(), "[3, 4]");
  EXPECT_EQ(Shape{}.numel(), 1);
  EXPECT_EQ(Shape{5}.rows(), 1);
  EXPECT_CONTAINS(error_of([] { Shape bad{2, -1}; }), "negative extent");
}

TEST(Buffer, GrowsOnlyAndIsAligned) {
  Buffer b;
  EXPECT_TRUE(b.reserve(100));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u);
  size_t cap = b.capacity();
  EXPECT_FALSE(b.reserve(50));
  EXPECT_EQ(b.capacity(), cap);
  static_cast<char*>(b.data())[7] = 42;
  EXPECT_TRUE(b.reserve(cap + 1, /*keep=*/true));
  EXPECT_EQ(static_cast<char*>(b.data())[7], 42);
  EXPECT_EQ(b.allocations(), 2u);
}

TEST(Tensor, ZeroFilledTypedAccessCloneAndReshape) {
  Tensor t(Shape{2, 3}, DType::f64);
  for (int64_t i = 0; i < t.numel(); ++i) EXPECT_EQ(t.at(i), 0.0);
  t.data<double>()[4] = 2.5;
  Tensor c = t.clone();
  t.set(4, 1.0);
  EXPECT_EQ(c.at(4), 2.5);
  Tensor r = t.reshape(Shape{3, 2});
  EXPECT_EQ(r.at(4), 1.0);  // shares storage
  EXPECT_CONTAINS(error_of([&] { t.data<float>(); }), "requested float32 data of a float64 tensor");
  EXPECT_CONTAINS(error_of([&] { t.reshape(Shape{5}); }), "cannot reshape");
  EXPECT_CONTAINS(error_of([&] { t.at(6); }), "out of range");
  Tensor f(Shape{2, 3}, DType::f32);
  EXPECT_CONTAINS(error_of([&] { f.copy_from(t); }), "copy_from");
}

TEST(Tensor, WrapSharesMemoryAndKeepsItsOwnerAliveUntilTheLastCopy) {
  auto memory = std::make_shared<std::vector<double>>(std::vector<double>{1, 2, 3, 4, 5, 6});
  std::weak_ptr<std::vector<double>> watch = memory;
  Tensor t = Tensor::wrap(memory->data(), Shape{2, 3}, DType::f64, memory);
  memory.reset();
  EXPECT_FALSE(watch.expired());  // the tensor holds it
  EXPECT_EQ(t.at(5), 6.0);
  Tensor r = t.reshape(Shape{3, 2});
  t = Tensor();
  EXPECT_FALSE(watch.expired());  // a copy still holds it
  r.set(0, -1.0);
  EXPECT_EQ((*watch.lock())[0], -1.0);
  EXPECT_EQ(r.clone().at(0), -1.0);
  r = Tensor();
  EXPECT_TRUE(watch.expired());
  EXPECT_CONTAINS(error_of([] { Tensor::wrap(nullptr, Shape{2}, DType::f32, nullptr); }), "null data");
}

TEST(DynamicTensor, WindowsOverAGrowOnlyArena) {
  DynamicTensor d(Shape{4}, DType::f32);
  EXPECT_EQ(d.cols(), 4);
  EXPECT_TRUE(d.reserve_rows(10));
  EXPECT_GE(d.capacity_rows(), 10);
  EXPECT_FALSE(d.reserve_rows(5));
  d.set_window(3, 2);
  EXPECT_EQ(d.offset(), 3);
  EXPECT_EQ(d.bs(), 2);
  EXPECT_EQ(d.window<float>(), static_cast<float*>(d.row(3)));
  EXPECT_CONTAINS(error_of([&] { d.set_window(9, 5); }), "exceeds arena");
}

TEST(Errors, AssertThrowsAndNamesTheBug) {
  std::string msg = error_of([] { SYLVA_ASSERT(1 + 1 == 3, "arithmetic"); });
  EXPECT_CONTAINS(msg, "[internal]");
  EXPECT_CONTAINS(msg, "1 + 1 == 3");
  EXPECT_CONTAINS(msg, "arithmetic");
  EXPECT_CONTAINS(error_of([] { SYLVA_CHECK(false, "[tag] value ", 3, " bad"); }), "[tag] value 3 bad");
}

// Sets (or, with nullopt, unsets) an environment variable for a scope.
class EnvScope {
 public:
  EnvScope(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) setenv(name, value->c_str(), 1);
    else unsetenv(name);
  }
  ~EnvScope() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }
  EnvScope(const EnvScope&) = delete;
  EnvScope& operator=(const EnvScope&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(CpuThreadsAdvice, NamesTheWaitPolicyOnlyForSeveralThreadsWithItUnset) {
  {
    EnvScope unset("OMP_WAIT_POLICY", std::nullopt), unset_spins("GOMP_SPINCOUNT", std::nullopt);
    EXPECT_EQ(cpu_threads_advice(1), "");
    EXPECT_EQ(cpu_threads_advice(0), "");
    const std::string advice = cpu_threads_advice(2);
    EXPECT_CONTAINS(advice, "OMP_WAIT_POLICY=active");
    EXPECT_CONTAINS(advice, "2 OpenMP threads");
  }
  for (const char* policy : {"active", "passive"}) {
    EnvScope set("OMP_WAIT_POLICY", std::string(policy));
    EXPECT_EQ(cpu_threads_advice(2), "") << policy;
  }
  EnvScope unset("OMP_WAIT_POLICY", std::nullopt), spins("GOMP_SPINCOUNT", std::string("infinite"));
  EXPECT_EQ(cpu_threads_advice(2), "");
}

}  // namespace
}  // namespace sylva
