// How long a cache line takes to go from one core to another and back:
// what a fork and join of two threads, or a value one core writes and the
// other reads, costs at the least. On a virtual machine it can change while
// a benchmark runs: on the VM of docs/notes/two-cores.md ("The second core:
// where the VM puts it") it was 70-140 ns at times and 340-810 ns at others
// (presumably the host placing the two vCPUs on cores with and without a
// shared L3), switching within seconds to minutes, and Sylva's two-thread
// runs at batch 1 halved in the slow state while two one-thread processes,
// one per vCPU, kept their speed. bench_suite records it beside every
// configuration it runs on two threads or more.
#pragma once

#include <optional>
#include <utility>

namespace sylva::bench {

/// The first two CPUs this thread may run on; nullopt with fewer than two.
std::optional<std::pair<int, int>> first_two_cpus();

/// Median over `rounds` rounds of `trips` round trips each of one cache
/// line between a thread pinned to `cpu_a` and one pinned to `cpu_b`, in
/// nanoseconds per round trip; -1 when either thread cannot be pinned
/// there (a CPU outside this process's affinity mask or out of range).
double cross_core_round_trip_ns(int cpu_a, int cpu_b, int trips = 20000, int rounds = 3);

/// cross_core_round_trip_ns over first_two_cpus(); -1 with fewer than two.
double cross_core_round_trip_ns();

}  // namespace sylva::bench
