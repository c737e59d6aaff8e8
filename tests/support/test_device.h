// The device the op harness and invariance tests run the executor on.
#pragma once

#include <string>

#include "sylva/backend/backend.h"
#include "sylva/runtime/executor.h"

namespace sylva::test {

/// A backend for checking device plumbing without a GPU: the CPU kernels,
/// run on memory the host cannot touch, in two lanes that run out of step.
/// Its memory() hands out pointers with bit 55 set (non-canonical: any
/// host load or store through them faults), which every call translates
/// back before running the CPU kernel. Calls on lane `deferred_lane` are
/// queued and run only when a wait() (or synchronize, download, memory
/// release) needs them; calls on the other lane run at once. A runtime
/// that passes device memory only to the backend, moves data only by
/// upload()/download() and orders its lanes with record()/wait() runs on it
/// exactly as on the CPU; one that reads a device value on the host
/// crashes, and one that misses a wait reads stale values.
Backend& sim_device(int deferred_lane = 1);
/// sim_device(1) without fused kernels: run_fused() returns false, as on a
/// device whose compiler cannot build a group's kernel.
Backend& sim_device_without_fused_kernels();
/// Bytes sim_device(deferred_lane) has uploaded so far.
uint64_t sim_uploaded_bytes(int deferred_lane = 1);
/// How often the host has waited for sim_device(deferred_lane) so far:
/// synchronize() and download() calls (a download waits for the device).
uint64_t sim_host_waits(int deferred_lane = 1);
/// copy_rows() and add_rows() calls sim_device(deferred_lane) has had so
/// far, and how many of them moved rows of one column.
struct SimRowMoves {
  uint64_t calls = 0, one_column_calls = 0;
};
SimRowMoves sim_row_moves(int deferred_lane = 1);
/// Whether p is a sim_device() pointer (tag set).
bool is_sim_pointer(const void* p);

/// SYLVA_TEST_DEVICE: "cpu" (unset), "sim" (sim_device(1): the side lane
/// late), "sim-late-main" (sim_device(0): the main lane late) or "cuda".
/// Anything else is an error.
std::string test_device();
/// `o` with its device (and backend) set to test_device()'s.
ExecutorOptions on_test_device(ExecutorOptions o = {});
/// Why the test device cannot run GEMMs in `p` ("" when it can):
/// Backend::precision_unsupported of on_test_device()'s backend.
std::string precision_unsupported(Precision p);
/// `o` as it is when `on`, else without `x` (and what needs it).
inline ExecutorOptions toggled(ExecutorOptions o, Optimisation x, bool on) { return on ? o : o.without(x); }

}  // namespace sylva::test
