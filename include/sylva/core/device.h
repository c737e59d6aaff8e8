// Device: where a tensor lives and where kernels run.
#pragma once

#include <string>

namespace sylva {

enum class DeviceKind { cpu, cuda };

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;

  static Device cpu() { return {DeviceKind::cpu, 0}; }
  static Device cuda(int index = 0) { return {DeviceKind::cuda, index}; }
  std::string str() const { return kind == DeviceKind::cpu ? "cpu" : "cuda:" + std::to_string(index); }
  /// "cpu", "cuda" (device 0) or "cuda:N"; sylva::Error otherwise.
  static Device parse(const std::string& text);
  bool operator==(const Device& o) const { return kind == o.kind && index == o.index; }
};

/// CPU cores this process may run on: its affinity mask (what taskset or a
/// container allows), not every core of the machine; at least 1.
int usable_cpu_cores();

/// What to set before running kernels on `threads` CPU threads, or "" if
/// nothing. With threads > 1 and neither OMP_WAIT_POLICY nor
/// GOMP_SPINCOUNT set: advice to start the process with
/// OMP_WAIT_POLICY=active. The GEMMs run on libgomp's threads, which
/// otherwise go to sleep between the small GEMMs of a batched step, and
/// waking them costs more than the GEMM: two threads can then train slower
/// than one (docs/notes/two-cores.md, "Two cores and the OpenMP wait policy").
/// libgomp reads the variable when the process starts, so a library cannot
/// set it for its caller.
std::string cpu_threads_advice(int threads);

/// Bytes of host memory this process can still get: the smaller of the
/// machine's available memory (MemAvailable) and what its address-space
/// limit (RLIMIT_AS, e.g. prlimit --as) leaves above its current size;
/// 0 if neither can be read.
size_t available_memory_bytes();

}  // namespace sylva
