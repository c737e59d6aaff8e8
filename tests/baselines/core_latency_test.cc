// The cross-core round trip bench_suite records beside its two-thread runs.
#include <gtest/gtest.h>

#include <sched.h>

#include <cmath>

#include "core_latency.h"

namespace sylva::bench {
namespace {

TEST(CoreLatency, TwoUsableCpusGiveAPositiveRoundTrip) {
  const auto cpus = first_two_cpus();
  if (!cpus) GTEST_SKIP() << "fewer than two CPUs usable by this process";
  EXPECT_LT(cpus->first, cpus->second);
  // Few round trips: under a parallel ctest another process may hold one
  // of the CPUs, and then each trip waits for the scheduler.
  const double ns = cross_core_round_trip_ns(cpus->first, cpus->second, 200, 3);
  EXPECT_TRUE(std::isfinite(ns));
  EXPECT_GT(ns, 0.0);
}

TEST(CoreLatency, ACpuOutsideTheAffinityMaskIsNotMeasured) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  int outside = -1;
  for (int c = CPU_SETSIZE - 1; c >= 0 && outside < 0; --c)
    if (!CPU_ISSET(c, &set)) outside = c;
  if (outside < 0) GTEST_SKIP() << "every CPU id is in the affinity mask";
  int inside = 0;
  while (!CPU_ISSET(inside, &set)) ++inside;
  EXPECT_EQ(cross_core_round_trip_ns(inside, outside, 100, 1), -1.0);
  EXPECT_EQ(cross_core_round_trip_ns(outside, inside, 100, 1), -1.0);
  EXPECT_EQ(cross_core_round_trip_ns(-1, inside, 100, 1), -1.0);
  EXPECT_EQ(cross_core_round_trip_ns(inside, CPU_SETSIZE, 100, 1), -1.0);
}

TEST(CoreLatency, OneCpuHasNoPair) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  int first = 0;
  while (!CPU_ISSET(first, &saved)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  const bool none = !first_two_cpus().has_value();
  const double ns = cross_core_round_trip_ns();
  ASSERT_EQ(sched_setaffinity(0, sizeof saved, &saved), 0);
  EXPECT_TRUE(none);
  EXPECT_EQ(ns, -1.0);
}

}  // namespace
}  // namespace sylva::bench
