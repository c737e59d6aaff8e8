// Sylva flushes float denormals to zero while it computes (see
// sylva/core/denormals.h), gives the caller's floating-point mode back
// afterwards, and keeps denormals when asked to.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define SYLVA_TEST_MXCSR 1
#endif

#include "support/test_util.h"
#include "sylva/sylva.h"

namespace sylva {
namespace {

// x·x through an executor (lookup of a one-row table, then an elementwise
// product): for x = 1e-20 the float result 1e-40 is a denormal.
float square_through_executor(float x) {
  ParameterSet ps(DType::f32, 1);
  ps.add("E", {1, 2}, Init::zeros());
  ps["E"].value.set(0, x);
  ps["E"].value.set(1, x);
  Program p(DType::f32);
  Symbol e = lookup(p.param(ps["E"]), p.input_ids("w"));
  Symbol y = e * e;
  std::vector<InputGraph> g{InputGraph::from_children({{}}, "g")};
  g[0].set_ids("w", {0});
  Executor ex(p, ps);
  ex.forward(GraphBatch::of(g), Mode::eval);
  return static_cast<float>(ex.value(y).at(0));
}

TEST(Denormals, FlushedDuringForwardAndTheCallersModeComesBack) {
#ifndef SYLVA_TEST_MXCSR
  GTEST_SKIP() << "denormal flushing is x86-only (MXCSR)";
#else
  ASSERT_TRUE(flush_denormals());  // the default
  const unsigned before = _mm_getcsr();
  EXPECT_EQ(square_through_executor(1e-20f), 0.0f);
  EXPECT_EQ(_mm_getcsr(), before);
  set_flush_denormals(false);
  const float kept = square_through_executor(1e-20f);
  set_flush_denormals(true);
  EXPECT_GT(kept, 0.0f);
  EXPECT_LT(kept, std::numeric_limits<float>::min());  // a denormal, as IEEE arithmetic gives
  EXPECT_EQ(square_through_executor(0.5f), 0.25f);     // normal numbers are untouched
#endif
}

TEST(Denormals, ScopeSetsTheBitsAndRestoresThem) {
#ifndef SYLVA_TEST_MXCSR
  GTEST_SKIP() << "denormal flushing is x86-only (MXCSR)";
#else
  constexpr unsigned kFtzDaz = 0x8040;
  const unsigned before = _mm_getcsr();
  ASSERT_EQ(before & kFtzDaz, 0u) << "the test process starts without FTZ/DAZ";
  {
    DenormalScope s;
    EXPECT_EQ(_mm_getcsr() & kFtzDaz, kFtzDaz);
    {
      DenormalScope nested;  // already on: leaves the bits alone
      EXPECT_EQ(_mm_getcsr() & kFtzDaz, kFtzDaz);
    }
    EXPECT_EQ(_mm_getcsr() & kFtzDaz, kFtzDaz);
  }
  EXPECT_EQ(_mm_getcsr(), before);
  set_flush_denormals(false);
  {
    DenormalScope off;
    EXPECT_EQ(_mm_getcsr(), before);
  }
  set_flush_denormals(true);
#endif
}

}  // namespace
}  // namespace sylva
