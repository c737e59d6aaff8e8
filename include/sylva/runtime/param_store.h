// ParamStore: parameters where a backend's kernels can use them.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "sylva/backend/backend.h"
#include "sylva/frontend/parameter_set.h"

namespace sylva {

/// A tensor as a kernel's [rows, cols] view (host memory).
inline MatView mat_view(Tensor& t) { return {t.raw(), t.shape().rows(), t.shape().cols(), t.dtype()}; }
/// A buffer in a backend's memory viewed with `like`'s shape and dtype.
inline MatView mat_view(Buffer& b, const Tensor& like) {
  return {b.data(), like.shape().rows(), like.shape().cols(), like.dtype()};
}

/// A side of the host/device split: the ParameterSet's tensors, or the
/// copies in a device backend's memory.
enum class Side : uint8_t { host, device };

/// On a backend whose memory is the host's (CPU), views of the
/// ParameterSet's own tensors: one copy, nothing to track. On a device
/// (CUDA), each parameter has a host copy (the ParameterSet) and a device
/// copy, and the store is the one owner of where its current value lives:
/// `Current::both`, or only the side last written. Writers say what they
/// wrote (wrote()); the one transfer point, make_current(), copies what
/// the side that needs it lacks -- the whole value, or only the rows a
/// writer named. The Executor makes the device current before each
/// forward; sync to the host (Trainer::sync_parameters, a checkpoint) is
/// make_current(Side::host), and does nothing when the host is current.
/// Who owns the values is where they are updated (update_side): the host
/// by default, which may change them without saying (an optimiser, the
/// caller's own loop), so there make_current(Side::device) refreshes every
/// value whole except those a writer said it changed only rows of; the
/// device (a device optimiser, which says what it wrote), where only what
/// was written elsewhere moves.
///
/// Gradients accumulate where the optimiser reads them (`update_side`):
/// on the host (the default), the Executor adds the device gradients into
/// the ParameterSet after each backward (flush_grads); on the device (the
/// Trainer's default where the backend has optimiser kernels) they stay
/// there for the device optimiser, which records its writes itself.
///
/// @code
/// ParamStore store(params, backend_for(Device::cuda()));
/// store.make_current(Side::device);           // before a forward pass
/// MatView w = store.value("W");               // device memory
/// backend.run({node, {x, w}, y, ctx});
/// backend.add_rows(dy, {}, store.grad("E"), ids);
/// store.flush_grads({{"E", touched_rows}});   // after the backward pass
/// sgd.step(params, &sparse);                  // an update on the host ...
/// store.wrote(Side::host, &sparse);           // ... reaches the device at the next make_current
/// @endcode
class ParamStore {
 public:
  /// Which copies of a parameter's value hold its current value.
  enum class Current : uint8_t { both, host, device };

  ParamStore(ParameterSet& params, Backend& backend) : params_(params), backend_(backend) {}
  ParamStore(const ParamStore&) = delete;
  ParamStore& operator=(const ParamStore&) = delete;

  /// The parameter on the host; throws naming a missing one.
  Parameter& host(const std::string& name) { return params_[name]; }
  /// Its value / gradient where the backend's kernels can use them.
  MatView value(const std::string& name);
  MatView grad(const std::string& name);
  /// Its value as GEMMs read it in `precision`: value() for fp32; for bf16
  /// a bfloat16 copy in the backend's memory, made on first use and then
  /// refreshed from the current value by every make_current(Side::device)
  /// (the Executor's, before each forward): once per training step, while
  /// the float32 value stays the master the optimiser updates.
  MatView gemm_value(const std::string& name, Precision precision);

  /// The values at `side` changed -- of the parameters named in `rows`,
  /// only the listed rows; of the others, all of them (every parameter
  /// used so far). What the other side had is no longer current.
  void wrote(Side side, const RowSparsity* rows = nullptr);
  /// The one transfer point: copies to `side` every value whose current
  /// copy is only on the other side (whole, or the rows wrote() named) --
  /// with updates on the host, to the device every value -- and they are
  /// then current on both. On the CPU, nothing to do. To Side::device (the
  /// kernels' side) it also refreshes the bfloat16 copies gemm_value() made.
  void make_current(Side side);
  /// Where parameter `name`'s current value is (Current::both on the CPU
  /// and before its first use).
  Current current(const std::string& name) const;
  bool on_host() const { return host_; }

  /// Where the optimiser reads gradients and writes values (Side::host by
  /// default). Side::device needs a device; switching back to the host
  /// first makes the host current.
  void set_update_side(Side side);
  Side update_side() const { return update_side_; }
  /// Updates on the host: adds the device gradients into the ParameterSet
  /// and zeroes them (parameters named in `sparse` move only their rows).
  /// Updates on the device, or the CPU: nothing to do.
  void flush_grads(const RowSparsity& sparse);
  /// Device only: zeroes the device gradients that may be nonzero (of the
  /// parameters in `sparse` only the listed rows; all of the others).
  void zero_grads(const RowSparsity& sparse);
  /// The ParameterSet this store mirrors.
  ParameterSet& parameters() { return params_; }
  Backend& backend() { return backend_; }
  size_t allocations() const;

 private:
  // A device gradient: not allocated yet, all zero, or possibly nonzero.
  enum class Grad : uint8_t { none, zero, accumulating };
  struct Copy {
    Parameter* param;  // in params_ (a deque: stays put)
    Buffer value, grad;
    Current current = Current::both;
    // What changed on the current side: only these rows (wrote() named
    // them), or (nullopt) the whole value.
    std::optional<std::vector<int32_t>> changed;
    Grad grad_state = Grad::none;
  };
  // Zeroes c's device gradient: the rows of it listed in `sparse`, or all of it.
  void zero_grad(const std::string& name, Copy& c, const RowSparsity& sparse);
  Copy& copy_of(const std::string& name);
  // Copies c's value to `side`: the whole value, or the rows c.changed lists.
  void transfer(Copy& c, Side side);
  // make_current()'s transfers, with mutex_ held (a device only).
  void transfer_to(Side side);
  // value() with mutex_ held.
  MatView value_locked(const std::string& name);

  ParameterSet& params_;
  Backend& backend_;
  const bool host_ = backend_.memory().host_visible();
  std::map<std::string, Copy> copies_;
  std::map<std::string, Buffer> bf16_;  // gemm_value()'s copies, in the backend's memory
  Side update_side_ = Side::host;
  mutable std::mutex mutex_;  // copies_: the streaming worker calls in too
  // Row transfers' staging: rows gathered on the device, and their host copy.
  Buffer gathered_{backend_.memory()};
  Buffer staging_;
  std::vector<int32_t> minus_ones_;
};

}  // namespace sylva
