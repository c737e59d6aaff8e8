#include "sylva/runtime/param_store.h"

#include <cstring>

#include "sylva/core/error.h"

namespace sylva {

ParamStore::Copy& ParamStore::copy_of(const std::string& name) {
  auto it = copies_.find(name);
  if (it != copies_.end()) return it->second;
  Parameter& p = params_[name];  // throws naming a missing parameter
  Copy c{&p, Buffer(backend_.memory()), Buffer(backend_.memory()), Current::both, std::nullopt, Grad::none};
  c.value.reserve(std::max<size_t>(p.value.nbytes(), 1));
  backend_.upload(c.value.data(), p.value.raw(), p.value.nbytes());  // current on both from here
  return copies_.emplace(name, std::move(c)).first->second;
}

MatView ParamStore::value(const std::string& name) {
  if (host_) return mat_view(params_[name].value);
  std::lock_guard<std::mutex> lock(mutex_);
  return value_locked(name);
}

MatView ParamStore::value_locked(const std::string& name) {
  if (host_) return mat_view(params_[name].value);
  Copy& c = copy_of(name);
  return mat_view(c.value, c.param->value);
}

MatView ParamStore::gemm_value(const std::string& name, Precision precision) {
  if (precision == Precision::fp32) return value(name);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = bf16_.find(name);
  if (it != bf16_.end()) {
    const Tensor& v = params_[name].value;
    return {it->second.data(), v.shape().rows(), v.shape().cols(), DType::bf16};
  }
  const MatView master = value_locked(name);
  SYLVA_CHECK(master.dtype == DType::f32, "[param_store] parameter '", name, "' is ", dtype_name(master.dtype),
              "; bf16 GEMMs read float32 parameters only");
  Buffer& b = bf16_.emplace(name, Buffer(backend_.memory())).first->second;
  b.reserve(std::max<size_t>(static_cast<size_t>(master.numel()) * dtype_size(DType::bf16), 1));
  const MatView copy{b.data(), master.rows, master.cols, DType::bf16};
  backend_.convert(master, copy);
  return copy;
}

MatView ParamStore::grad(const std::string& name) {
  if (host_) return mat_view(params_[name].grad);
  std::lock_guard<std::mutex> lock(mutex_);
  Copy& c = copy_of(name);
  const Tensor& g = c.param->grad;
  if (c.grad_state == Grad::none) {
    c.grad.reserve(std::max<size_t>(g.nbytes(), 1));
    backend_.fill_zero(mat_view(c.grad, g));
  }
  c.grad_state = Grad::accumulating;  // the caller adds into it
  return mat_view(c.grad, g);
}

void ParamStore::wrote(Side side, const RowSparsity* rows) {
  if (host_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const Current mine = side == Side::host ? Current::host : Current::device;
  for (auto& [name, c] : copies_) {
    const auto listed = rows ? rows->find(name) : RowSparsity::const_iterator{};
    const bool some = rows && listed != rows->end();
    if (c.current == Current::both) {
      c.current = mine;
      c.changed = some ? std::optional(listed->second) : std::nullopt;
    } else if (c.current == mine) {
      if (some && c.changed) c.changed->insert(c.changed->end(), listed->second.begin(), listed->second.end());
      else c.changed.reset();  // now the whole value
    } else {
      SYLVA_CHECK(!some, "[param_store] rows of '", name, "' written on the ",
                  side == Side::host ? "host" : "device", " while only the ",
                  side == Side::host ? "device" : "host",
                  " holds its current value; make_current() that side first");
      c.current = mine;  // the whole value overwritten: what the other side had is gone
      c.changed.reset();
    }
  }
}

void ParamStore::transfer(Copy& c, Side side) {
  Tensor& v = c.param->value;
  if (!c.changed || v.nbytes() > c.value.capacity()) {
    if (side == Side::device) {
      c.value.reserve(std::max<size_t>(v.nbytes(), 1));
      backend_.upload(c.value.data(), v.raw(), v.nbytes());
    } else {
      backend_.download(v.raw(), c.value.data(), v.nbytes());
    }
    return;
  }
  // Just the changed rows: packed on one side, one copy across, scattered on the other.
  const std::vector<int32_t>& rows = *c.changed;
  if (rows.empty()) return;
  const MatView device = mat_view(c.value, v);
  const size_t row_bytes = static_cast<size_t>(device.cols) * dtype_size(device.dtype);
  const size_t bytes = rows.size() * row_bytes;
  staging_.reserve(bytes);
  gathered_.reserve(bytes);
  const MatView packed{gathered_.data(), static_cast<int64_t>(rows.size()), device.cols, device.dtype};
  auto* host_rows = static_cast<char*>(v.raw());
  auto* stage = static_cast<char*>(staging_.data());
  if (side == Side::device) {
    for (size_t k = 0; k < rows.size(); ++k)
      std::memcpy(stage + k * row_bytes, host_rows + static_cast<size_t>(rows[k]) * row_bytes, row_bytes);
    backend_.upload(gathered_.data(), staging_.data(), bytes);
    backend_.copy_rows(packed, {}, device, rows);
  } else {
    backend_.copy_rows(device, rows, packed, {});
    backend_.download(staging_.data(), gathered_.data(), bytes);
    for (size_t k = 0; k < rows.size(); ++k)
      std::memcpy(host_rows + static_cast<size_t>(rows[k]) * row_bytes, stage + k * row_bytes, row_bytes);
  }
}

void ParamStore::make_current(Side side) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!host_) transfer_to(side);
  if (side == Side::device)  // the kernels' side: their bfloat16 copies follow the master values
    for (auto& [name, b] : bf16_) {
      const MatView master = value_locked(name);
      backend_.convert(master, {b.data(), master.rows, master.cols, DType::bf16});
    }
}

void ParamStore::transfer_to(Side side) {
  const Current other = side == Side::host ? Current::device : Current::host;
  // Updates on the host: the host owns the values and may change them
  // without saying (an optimiser, a loop of the caller's), so the device's
  // copies are refreshed whole unless a writer named the rows it changed.
  const bool owner_host = update_side_ == Side::host && side == Side::device;
  for (auto& [name, c] : copies_) {
    if (c.current != other && !(owner_host && c.current == Current::both)) continue;
    transfer(c, side);
    c.current = Current::both;
    c.changed.reset();
  }
}

ParamStore::Current ParamStore::current(const std::string& name) const {
  if (host_) return Current::both;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = copies_.find(name);
  return it == copies_.end() ? Current::both : it->second.current;
}

void ParamStore::set_update_side(Side side) {
  SYLVA_CHECK(side == Side::host || !host_, "[param_store] updates on the device need a device; on the CPU the "
              "store is the ParameterSet itself");
  if (update_side_ == Side::device && side == Side::host) make_current(Side::host);  // the host updates from here
  update_side_ = side;
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
  c.grad_state = Grad::zero;
}

void ParamStore::zero_grads(const RowSparsity& sparse) {
  if (host_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [name, c] : copies_)
    if (c.grad_state == Grad::accumulating) zero_grad(name, c, sparse);
}

void ParamStore::flush_grads(const RowSparsity& sparse) {
  if (host_ || update_side_ == Side::device) return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [name, c] : copies_) {
    if (c.grad_state != Grad::accumulating) continue;
    Tensor& g = c.param->grad;
    const MatView device = mat_view(c.grad, g);
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
      const size_t bytes = rows.size() * static_cast<size_t>(device.cols) * dtype_size(device.dtype);
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
