// ParamStore: parameters where a backend's kernels can use them.
#pragma once

#include <map>
#include <mutex>
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

/// On a backend whose memory is the host's (CPU), views of the
/// ParameterSet's own tensors. On a device (CUDA), copies in the
/// backend's memory. By default the host is the truth: values are
/// uploaded by upload_values() before each forward (an optimiser on the
/// host updates them), and gradients are accumulated on the device and
/// added into the ParameterSet by flush_grads() after each backward --
/// only the listed rows of parameters with row-sparse gradients
/// (embedding tables). In resident mode (set_resident; the Trainer's
/// default with its optimiser on the device) the device copies are the
/// truth and nothing moves unless asked. The Executor keeps one; so do
/// engines of your own that run on a Backend.
///
/// @code
/// ParamStore store(params, backend_for(Device::cuda()));
/// store.upload_values();                      // before a forward pass
/// MatView w = store.value("W");               // device memory
/// backend.run({node, {x, w}, y, ctx});
/// backend.add_rows(dy, {}, store.grad("E"), ids);
/// store.flush_grads({{"E", touched_rows}});   // after the backward pass
/// @endcode
class ParamStore {
 public:
  ParamStore(ParameterSet& params, Backend& backend) : params_(params), backend_(backend) {}
  ParamStore(const ParamStore&) = delete;
  ParamStore& operator=(const ParamStore&) = delete;

  /// The parameter on the host; throws naming a missing one.
  Parameter& host(const std::string& name) { return params_[name]; }
  /// Its value / gradient where the backend's kernels can use them.
  MatView value(const std::string& name);
  MatView grad(const std::string& name);

  /// Device only: copies every value used so far to the device -- in full,
  /// or after only_rows_changed() just the rows it listed.
  void upload_values();
  /// For the next upload_values(): of the parameters named in `rows`, only
  /// the listed rows changed on the host since the last upload.
  void only_rows_changed(const RowSparsity& rows);
  /// Device only: adds the device gradients into the ParameterSet and
  /// zeroes them. Parameters named in `sparse` move only their rows. In
  /// resident mode, does nothing: the gradients stay on the device.
  void flush_grads(const RowSparsity& sparse);
  bool on_host() const { return host_; }

  /// Resident mode (device only; the Trainer turns it on when it runs the
  /// optimiser on the device): the device copies are the parameters' truth.
  /// upload_values() then uploads only what host_changed() marked, and
  /// gradients stay on the device for the optimiser (zero_grads() clears
  /// them); download_values() brings the values back to the ParameterSet.
  void set_resident(bool resident);
  bool resident() const { return resident_; }
  /// Resident mode: the host values of every parameter changed (e.g. a
  /// checkpoint was loaded); the next upload_values() sends them all.
  void host_changed();
  /// Device only: copies every device value into the ParameterSet.
  void download_values();
  /// Device only: zeroes the device gradients (of the parameters in
  /// `sparse` only the listed rows; all of the others).
  void zero_grads(const RowSparsity& sparse);
  /// The ParameterSet this store mirrors.
  ParameterSet& parameters() { return params_; }
  Backend& backend() { return backend_; }
  size_t allocations() const;

 private:
  struct Copy {
    Parameter* param;  // in params_ (a deque: stays put)
    Buffer value, grad;
    bool grad_ready = false;  // grad allocated and zeroed
    bool grad_dirty = false;  // grad may be nonzero
    bool stale = false;       // resident mode: the host value changed since the upload
  };
  // Zeroes c's device gradient: the rows of it listed in `sparse`, or all of it.
  void zero_grad(const std::string& name, Copy& c, const RowSparsity& sparse);
  Copy& copy_of(const std::string& name);

  ParameterSet& params_;
  Backend& backend_;
  const bool host_ = backend_.memory().host_visible();
  std::map<std::string, Copy> copies_;
  RowSparsity changed_rows_;  // only_rows_changed(), until the next upload
  bool resident_ = false;
  std::mutex mutex_;  // copies_ and their flags: the streaming worker calls in too
  // flush_grads' staging: rows gathered on the device, and their host copy.
  Buffer gathered_{backend_.memory()};
  Buffer staging_;
  std::vector<int32_t> minus_ones_;
};

}  // namespace sylva
