#include "core_latency.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace sylva::bench {
namespace {

bool pin_to(int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

// One round: `trips` times, a writes an odd number and waits for b to
// answer with the next even one. -1 if a thread could not be pinned.
double one_round_ns(int cpu_a, int cpu_b, int trips) {
  alignas(64) std::atomic<int> turn{0};
  std::atomic<int> pinned{0};  // 1 when b is pinned, -1 when it cannot be
  std::thread b([&] {
    if (!pin_to(cpu_b)) {
      pinned.store(-1);
      return;
    }
    pinned.store(1);
    for (int i = 0; i < trips; ++i) {
      int want = 2 * i + 1, got;
      while ((got = turn.load(std::memory_order_acquire)) != want)
        if (got < 0) return;  // a could not be pinned
      turn.store(want + 1, std::memory_order_release);
    }
  });
  int state;
  while ((state = pinned.load()) == 0) std::this_thread::yield();
  double ns = -1;
  if (state > 0 && pin_to(cpu_a)) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < trips; ++i) {
      turn.store(2 * i + 1, std::memory_order_release);
      while (turn.load(std::memory_order_acquire) != 2 * i + 2) {
      }
    }
    ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / trips;
  } else if (state > 0) {
    turn.store(-1, std::memory_order_release);
  }
  b.join();
  return ns;
}

}  // namespace

std::optional<std::pair<int, int>> first_two_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return std::nullopt;
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  if (cpus.size() < 2) return std::nullopt;
  return std::pair{cpus[0], cpus[1]};
}

double cross_core_round_trip_ns(int cpu_a, int cpu_b, int trips, int rounds) {
  // The measuring thread is a new one, so the caller's affinity is untouched.
  double result = -1;
  std::thread measure([&] {
    std::vector<double> ns;
    for (int r = 0; r < std::max(1, rounds); ++r) {
      const double x = one_round_ns(cpu_a, cpu_b, std::max(1, trips));
      if (x < 0) return;
      ns.push_back(x);
    }
    std::nth_element(ns.begin(), ns.begin() + static_cast<std::ptrdiff_t>(ns.size() / 2), ns.end());
    result = ns[ns.size() / 2];
  });
  measure.join();
  return result;
}

double cross_core_round_trip_ns() {
  const std::optional<std::pair<int, int>> cpus = first_two_cpus();
  return cpus ? cross_core_round_trip_ns(cpus->first, cpus->second) : -1.0;
}

}  // namespace sylva::bench
