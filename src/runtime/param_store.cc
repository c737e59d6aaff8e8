#include "sylva/runtime/param_store.h"

#include <cstring>

#include "sylva/core/error.h"

namespace sylva {

ParamStore::Copy& ParamStore::copy_of(const std::string& name) {
  auto it = copies_.find(name);
  if (it != copies_.end()) return it->second;
  Parameter& p = params_[name];  // throws naming a missing parameter
  Copy c{&p, Buffer(backend_.memory()), Buffer(backend_.memory())};
  c.value.reserve(std::max<size_t>(p.value.nbytes(), 1));
  backend_.upload(c.value.data(), p.value.raw(), p.value.nbytes());
  return copies_.emplace(name, std::move(c)).first->second;
}

MatView ParamStore::value(const std::string& name) {
  if (host_) return mat_view(params_[name].value);
  std::lock_guard<std::mutex> lock(mutex_);
  Copy& c = copy_of(name);
  return mat_view(c.value, c.param->value);
}

MatView ParamStore::grad(const std::string& name) {
  if (host_) return mat_view(params_[name].grad);
  std::lock_guard<std::mutex> lock(mutex_);
  Copy& c = copy_of(name);
  const Tensor& g = c.param->grad;
  if (!c.grad_ready) {
    c.grad.reserve(std::max<size_t>(g.nbytes(), 1));
    backend_.fill_zero(mat_view(c.grad, g));
    c.grad_ready = true;
  }
  c.grad_dirty = true;
  return mat_view(c.grad, g);
}

void ParamStore::upload_values() {
  if (host_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [name, c] : copies_) {
    const Tensor& v = c.param->value;
    if (resident_) {
      if (c.stale) backend_.upload(c.value.data(), v.raw(), v.nbytes());
      c.stale = false;
      continue;
    }
    auto it = changed_rows_.find(name);
    if (it == changed_rows_.end() || v.nbytes() > c.value.capacity()) {
      c.value.reserve(std::max<size_t>(v.nbytes(), 1));
      backend_.upload(c.value.data(), v.raw(), v.nbytes());
      continue;
    }
    // Just the changed rows: packed on the host, one upload, scattered on the device.
    const std::vector<int32_t>& rows = it->second;
    if (rows.empty()) continue;
    const MatView device = mat_view(c.value, v);
    const size_t row_bytes = static_cast<size_t>(device.cols) * dtype_size(device.dtype);
    const size_t bytes = rows.size() * row_bytes;
    staging_.reserve(bytes);
    gathered_.reserve(bytes);
    for (size_t k = 0; k < rows.size(); ++k)
      std::memcpy(static_cast<char*>(staging_.data()) + k * row_bytes,
                  static_cast<const char*>(v.raw()) + static_cast<size_t>(rows[k]) * row_bytes, row_bytes);
    backend_.upload(gathered_.data(), staging_.data(), bytes);
    backend_.copy_rows({gathered_.data(), static_cast<int64_t>(rows.size()), device.cols, device.dtype}, {}, device,
                       rows);
  }
  changed_rows_.clear();
}

void ParamStore::only_rows_changed(const RowSparsity& rows) {
  if (host_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  changed_rows_ = rows;
}

void ParamStore::set_resident(bool resident) {
  SYLVA_CHECK(!resident || !host_, "[param_store] resident mode is for a device; on the CPU the store is the "
              "ParameterSet itself");
  std::lock_guard<std::mutex> lock(mutex_);
  if (resident_ && !resident) {  // back to the host as the truth: it must hold the device's values
    for (auto& [name, c] : copies_) {
      Tensor& v = c.param->value;
      backend_.download(v.raw(), c.value.data(), v.nbytes());
    }
  }
  resident_ = resident;
}

void ParamStore::host_changed() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [name, c] : copies_) c.stale = true;
}

void ParamStore::download_values() {
  if (host_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [name, c] : copies_) {
    Tensor& v = c.param->value;
    backend_.download(v.raw(), c.value.data(), v.nbytes());
  }
}

void ParamStore::zero_grad(const std::string& name, Copy& c, const RowSparsity& sparse) {
  const MatView device = mat_view(c.grad, c.param->grad);
  auto it = sparse.find(name);
  if (it == sparse.end()) {
    backend_.fill_zero(device);
  } else if (!it->second.empty()) {
    minus_ones_.assign(it->second.size(), -1);
    backend_.copy_rows(device, minus_ones_, device, it->second);  // zero rows
  }
  c.grad_dirty = false;
}

void ParamStore::zero_grads(const RowSparsity& sparse) {
  if (host_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [name, c] : copies_)
    if (c.grad_dirty) zero_grad(name, c, sparse);
}

void ParamStore::flush_grads(const RowSparsity& sparse) {
  if (host_ || resident_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [name, c] : copies_) {
    if (!c.grad_dirty) continue;
    Tensor& g = c.param->grad;
    const MatView device = mat_view(c.grad, g);
    const size_t row_bytes = static_cast<size_t>(device.cols) * dtype_size(device.dtype);
    auto it = sparse.find(name);
    if (it == sparse.end()) {  // dense: the whole gradient, then zero it for the next backward
      staging_.reserve(std::max<size_t>(g.nbytes(), 1));
      backend_.download(staging_.data(), device.data, g.nbytes());
      dispatch_floating(g.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T* s = static_cast<const T*>(staging_.data());
        T* d = g.data<T>();
        for (int64_t i = 0; i < g.numel(); ++i) d[i] += s[i];
      });
    } else if (const std::vector<int32_t>& rows = it->second; !rows.empty()) {
      const size_t bytes = rows.size() * row_bytes;
      gathered_.reserve(bytes);
      staging_.reserve(bytes);
      const MatView packed{gathered_.data(), static_cast<int64_t>(rows.size()), device.cols, device.dtype};
      backend_.copy_rows(device, rows, packed, {});
      backend_.download(staging_.data(), packed.data, bytes);
      dispatch_floating(g.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T* s = static_cast<const T*>(staging_.data());
        T* d = g.data<T>();
        for (size_t k = 0; k < rows.size(); ++k)
          for (int64_t col = 0; col < device.cols; ++col)
            d[rows[k] * device.cols + col] += s[static_cast<int64_t>(k) * device.cols + col];
      });
    }
    zero_grad(name, c, sparse);
  }
}

size_t ParamStore::allocations() const {
  size_t n = gathered_.allocations() + staging_.allocations();
  for (const auto& [name, c] : copies_) n += c.value.allocations() + c.grad.allocations();
  return n;
}

}  // namespace sylva
