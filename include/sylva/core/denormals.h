// Float denormals flushed to zero during Sylva's CPU work.
//
// On x86 a float or double below the smallest normal number (about 1.2e-38
// in float32) makes SSE/AVX arithmetic take a microcode assist: a GEMM with
// such inputs ran 180 times slower on this project's Intel machine (Eigen
// and oneDNN alike). They arise in training, e.g. the gradient of a
// saturated sigmoid, and slowed Tree-LSTM training with Adagrad (lr 0.05)
// five-fold. Sylva therefore sets the FTZ and DAZ bits of the MXCSR while
// it computes (Executor::forward/backward, Optimizer::step, its worker
// threads), and restores the caller's bits afterwards. Threads it starts
// meanwhile (OpenMP GEMM threads, the streaming worker) inherit them.
// Results change only for values below that threshold, which become 0 (as
// DyNet's -ffast-math build, TensorFlow's CPU kernels and most GPU kernels
// do). Elsewhere than x86 this does nothing.
#pragma once

namespace sylva {

/// Whether Sylva flushes denormals during its work (default: true). Set it
/// before computing; it is read when each piece of work starts.
void set_flush_denormals(bool on);
bool flush_denormals();

/// While alive, this thread flushes float denormals to zero (if
/// flush_denormals()); the previous mode comes back on destruction.
class DenormalScope {
 public:
  DenormalScope();
  ~DenormalScope();
  DenormalScope(const DenormalScope&) = delete;
  DenormalScope& operator=(const DenormalScope&) = delete;

 private:
  unsigned saved_ = 0;
  bool active_ = false;
};

}  // namespace sylva
