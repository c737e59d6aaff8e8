// Data-parallel training with the optimiser on a device (the Trainer's
// TrainerOptions::optimizer_on_device with a communicator of more than one
// rank): gradients that live in device memory are summed over the ranks
// where they are, so a step moves none of them through the host.
//
// Two engines behind one interface:
//  - NCCL (`nccl_communicator`, CUDA builds): the sums run as NCCL kernels
//    on the backend's stream, after the work queued before them. The NCCL
//    communicator is set up over a host Communicator (usually MPI's), which
//    hands every rank the NCCL id; every collective is checked against the
//    other ranks' first (over that host communicator) and waited for under
//    its deadline: a rank that died or stalled aborts the NCCL communicator
//    and ends the call with a sylva::Error naming the collective, instead
//    of a kernel that never finishes.
//  - host (`host_staged_communicator`): downloads the buffers, sums them
//    with the host Communicator, uploads the sums. Any backend: devices
//    without NCCL, and Sylva's simulated device in tests.
//
// @code
// std::unique_ptr<dist::Communicator> mpi = dist::mpi_communicator();
// std::unique_ptr<dist::DeviceCommunicator> nccl = dist::nccl_communicator(*mpi, backend);
// MatView g = store.grad("W");                 // device memory
// nccl->allreduce_sum({&g, 1}, "W");            // every rank now holds the sum
// @endcode
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "sylva/backend/backend.h"
#include "sylva/core/mat_view.h"
#include "sylva/dist/communicator.h"

namespace sylva::dist {

/// One rank's view of a group of devices, one per process. Every rank must
/// make the same calls in the same order, with buffers of the same sizes
/// and element types (checked: a mismatch is a sylva::Error on every rank).
/// Not thread-safe. A call that threw leaves it broken, as Communicator.
class DeviceCommunicator {
 public:
  virtual ~DeviceCommunicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// "nccl" or "host".
  virtual std::string_view engine() const = 0;

  /// Element-wise sums over ranks of each of `buffers` (memory of the
  /// backend the communicator was made for; f32 or f64; any may be empty),
  /// in place, as one collective named `what`. Ordered after the work
  /// queued on the backend's current lane before the call; returns once
  /// the sums are there.
  void allreduce_sum(std::span<const MatView> buffers, std::string_view what);

  /// Seconds spent in collectives (waiting for the others included) and
  /// the bytes this rank contributed, since construction.
  double seconds() const { return seconds_; }
  int64_t bytes_sent() const { return bytes_; }
  bool broken() const { return broken_; }

 protected:
  /// The engine's half of allreduce_sum (the buffers checked): the call
  /// check and the sums; a throw breaks the communicator.
  virtual void run_allreduce(std::span<const MatView> buffers, std::string_view what) = 0;
  /// After run_allreduce threw (NCCL: abort the communicator).
  virtual void failed() {}
  int64_t bytes_ = 0;

 private:
  double seconds_ = 0.0;
  bool broken_ = false;
};

/// The host engine: sums through `host` (which must outlive it), staging
/// the buffers through host memory with `device`'s download and upload.
std::unique_ptr<DeviceCommunicator> host_staged_communicator(Communicator& host, Backend& device);

/// Whether this build has the NCCL engine (a CUDA build: NCCL comes with
/// the toolkit). The library itself is opened on first use.
bool nccl_available();
/// The NCCL engine for `device` (a CUDA backend; its device, one per rank),
/// over the ranks of `bootstrap` (which must outlive it; its deadline is
/// every NCCL call's). A collective call: every rank of `bootstrap` makes
/// it. sylva::Error when the build has no NCCL, libnccl cannot be opened,
/// `device` is not a CUDA backend, or NCCL fails to set up in time.
std::unique_ptr<DeviceCommunicator> nccl_communicator(Communicator& bootstrap, Backend& device);

}  // namespace sylva::dist
