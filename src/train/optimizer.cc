#include "sylva/train/optimizer.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "sylva/core/denormals.h"
#include "sylva/core/error.h"

namespace sylva {
namespace {

void check_finite_option(std::string_view who, const char* what, double v) {
  SYLVA_CHECK(std::isfinite(v), "[", who, "] ", what, " must be finite, got ", v);
}

void check_unit_interval(std::string_view who, const char* what, double v) {
  SYLVA_CHECK(v >= 0.0 && v < 1.0, "[", who, "] ", what, " must be in [0, 1), got ", v);
}

void check_non_negative(std::string_view who, const char* what, double v) {
  check_finite_option(who, what, v);
  SYLVA_CHECK(v >= 0.0, "[", who, "] ", what, " must be >= 0, got ", v);
}

// Throws naming the parameter and its first non-finite element of g (a
// host array of p's dtype, p's gradient as the optimiser takes it).
void throw_non_finite(std::string_view who, const Parameter& p, const void* g, const RowSparsity* sparse) {
  dispatch_floating(p.grad.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* v = static_cast<const T*>(g);
    for_each_grad_range(p, sparse, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i)
        SYLVA_CHECK(std::isfinite(v[i]), "[", who, "] parameter '", p.name, "' has a non-finite gradient (", v[i],
                    " at element ", i, " of ", p.grad.shape().str(), "); no parameter was updated. Lower the "
                    "learning rate, clip gradients (clip_grad_norm) or check the loss for log(0)");
    });
  });
}

// Whether every element of p's gradient (its listed rows, if sparse names
// it) is finite: an OR over the exponent bits, which vectorises, instead
// of a branch per element.
bool all_finite(const Parameter& p, const RowSparsity* sparse) {
  bool finite = true;
  dispatch_floating(p.grad.dtype(), [&](auto zero) {
    using T = decltype(zero);
    using Bits = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
    constexpr Bits kExponent = static_cast<Bits>(sizeof(T) == 4 ? 0x7f800000ull : 0x7ff0000000000000ull);
    const T* g = p.grad.data<T>();
    for_each_grad_range(p, sparse, [&](int64_t b, int64_t e) {
      Bits bad = 0;
      for (int64_t i = b; i < e; ++i) {
        Bits v;
        std::memcpy(&v, g + i, sizeof v);
        bad |= static_cast<Bits>((v & kExponent) == kExponent);
      }
      finite = finite && bad == 0;
    });
  });
  return finite;
}

// A dense update of a row-sparse gradient: g is zero outside its listed rows.
void grad_rows_hint(ParamUpdate& u, const Parameter& p, const RowSparsity* sparse) {
  if (!sparse || !u.rows.empty()) return;
  auto it = sparse->find(p.name);
  if (it == sparse->end()) return;
  u.grad_rows = it->second;
  u.grad_rows_known = true;
}

}  // namespace

Optimizer::Optimizer(double lr, std::string_view who) : lr_(lr) { check_non_negative(who, "learning rate", lr); }

void Optimizer::set_learning_rate(double lr) {
  check_non_negative(name(), "learning rate", lr);
  lr_ = lr;
}

void Optimizer::reset() {
  state_.clear();
  device_state_.clear();
  counts_.clear();
  where_ = Where::none;
  device_ = nullptr;
}

std::vector<std::pair<std::string, Tensor*>> Optimizer::checkpoint_tensors(ParameterSet& params) {
  std::vector<std::pair<std::string, Tensor*>> out;
  for (Parameter* p : params.all()) {
    std::vector<Tensor>& s = host_state(*p);
    auto dev = device_state_.find(p->name);
    if (where_ == Where::device && dev != device_state_.end())
      for (size_t k = 0; k < s.size() && k < dev->second.size(); ++k)
        device_->download(s[k].raw(), dev->second[k].data(), s[k].nbytes());
    for (size_t k = 0; k < s.size(); ++k) out.emplace_back(p->name + "/" + std::to_string(k), &s[k]);
  }
  return out;
}

void Optimizer::host_state_changed() {
  if (where_ != Where::device) return;  // a host step reads state_; a first device step uploads it
  for (auto& [param, host] : state_) {
    std::vector<Buffer>& dev = device_state_[param];
    for (size_t k = 0; k < host.size(); ++k) {
      if (dev.size() <= k) dev.emplace_back(device_->memory());
      dev[k].reserve(std::max<size_t>(host[k].nbytes(), 1));
      device_->upload(dev[k].data(), host[k].raw(), host[k].nbytes());
    }
  }
}

std::map<std::string, std::string> Optimizer::checkpoint_counters() const {
  char lr[32];
  std::snprintf(lr, sizeof lr, "%.17g", lr_);  // round-trips a double exactly
  std::map<std::string, std::string> m{{"sylva.optimizer", std::string(name())},
                                       {"sylva.optimizer.steps", std::to_string(steps_)},
                                       {"sylva.optimizer.lr", lr}};
  for (const auto& [param, count] : counts_) m["sylva.optimizer.count." + param] = std::to_string(count);
  return m;
}

void Optimizer::restore_counters(const std::map<std::string, std::string>& metadata, const std::string& path) {
  auto value = [&](const std::string& key) -> const std::string& {
    auto it = metadata.find(key);
    SYLVA_CHECK(it != metadata.end(), "[", name(), "] checkpoint '", path, "' has no '", key,
                "' (not written by Trainer::save_state?)");
    return it->second;
  };
  SYLVA_CHECK(value("sylva.optimizer") == name(), "[", name(), "] checkpoint '", path, "' holds the state of a ",
              value("sylva.optimizer"), " optimiser, not ", name());
  auto integer = [&](const std::string& key, const std::string& text) {
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    SYLVA_CHECK(!text.empty() && *end == '\0' && errno == 0 && v >= 0, "[", name(), "] checkpoint '", path, "': '",
                key, "' is \"", text, "\", not a step count");
    return static_cast<int64_t>(v);
  };
  const std::string& lr_text = value("sylva.optimizer.lr");
  char* end = nullptr;
  const double lr = std::strtod(lr_text.c_str(), &end);
  SYLVA_CHECK(!lr_text.empty() && *end == '\0' && std::isfinite(lr) && lr >= 0.0, "[", name(), "] checkpoint '", path,
              "': 'sylva.optimizer.lr' is \"", lr_text, "\", not a learning rate");
  const int64_t steps = integer("sylva.optimizer.steps", value("sylva.optimizer.steps"));
  std::map<std::string, int64_t> counts;
  const std::string prefix = "sylva.optimizer.count.";
  for (const auto& [key, text] : metadata)
    if (key.compare(0, prefix.size(), prefix) == 0) counts[key.substr(prefix.size())] = integer(key, text);
  lr_ = lr;
  steps_ = steps;
  counts_ = std::move(counts);
}

void Optimizer::claim(Where w, Backend* device) {
  if (where_ == Where::none) {
    where_ = w;
    device_ = device;
    return;
  }
  SYLVA_CHECK(where_ == w && device_ == device, "[", name(), "] this optimiser's state is ",
              where_ == Where::host ? std::string("on the host") : "on " + device_->name(), ", but this step runs ",
              w == Where::host ? std::string("on the host") : "on " + device->name(),
              "; call reset() before moving it");
}

void Optimizer::check_parameters(const std::vector<Parameter*>& all) const {
  for (const Parameter* p : all) {
    SYLVA_CHECK(std::isfinite(p->lr_scale) && p->lr_scale >= 0.0, "[", name(), "] parameter '", p->name,
                "' has lr_scale ", p->lr_scale, "; expected a finite value >= 0");
    auto it = state_.find(p->name);
    if (it != state_.end())
      for (const Tensor& s : it->second)
        SYLVA_CHECK(s.shape() == p->value.shape() && s.dtype() == p->value.dtype(), "[", name(), "] parameter '",
                    p->name, "' is ", dtype_name(p->value.dtype()), " ", p->value.shape().str(),
                    " but this optimiser's state for it is ", dtype_name(s.dtype()), " ", s.shape().str(),
                    "; call reset() before using the optimiser with another parameter set");
    auto dt = device_state_.find(p->name);
    if (dt != device_state_.end())
      for (const Buffer& b : dt->second)
        SYLVA_CHECK(b.capacity() >= p->value.nbytes(), "[", name(), "] parameter '", p->name, "' is ",
                    p->value.shape().str(), ", larger than this optimiser's state for it; call reset() before "
                    "using the optimiser with another parameter set");
  }
}

const std::vector<int32_t>* Optimizer::rows_of(const Parameter& p, const RowSparsity* sparse) const {
  if (!sparse || !updates_only_sparse_rows()) return nullptr;
  auto it = sparse->find(p.name);
  return it == sparse->end() ? nullptr : &it->second;
}

std::vector<Tensor>& Optimizer::host_state(const Parameter& p) {
  std::vector<Tensor>& s = state_[p.name];
  if (s.empty())
    for (int i = 0; i < state_tensors(); ++i) {
      Tensor t(p.value.shape(), p.value.dtype());
      if (state_init() != 0.0)
        for (int64_t k = 0; k < t.numel(); ++k) t.set(k, state_init());
      s.push_back(std::move(t));
    }
  return s;
}

void Optimizer::step(ParameterSet& params, const RowSparsity* sparse) {
  DenormalScope flush;  // see sylva/core/denormals.h
  std::vector<Parameter*> all = params.all();
  // Validate everything before touching anything, so a failed step is a no-op.
  check_parameters(all);
  for (const Parameter* p : all)
    if (!all_finite(*p, sparse)) throw_non_finite(name(), *p, p->grad.raw(), sparse);
  claim(Where::host, nullptr);
  Backend& cpu = backend_for(Device::cpu());
  for (Parameter* p : all) {
    ParamUpdate u = rule(*p, lr_ * p->lr_scale);
    u.w = mat_view(p->value);
    u.g = mat_view(p->grad);
    if (state_tensors() > 0) {
      std::vector<Tensor>& st = host_state(*p);
      u.s0 = mat_view(st[0]);
      if (st.size() > 1) u.s1 = mat_view(st[1]);
    }
    const std::vector<int32_t>* rows = rows_of(*p, sparse);
    if (rows && rows->empty()) continue;  // a row-sparse gradient with no rows: nothing moves
    if (rows) u.rows = *rows;
    grad_rows_hint(u, *p, sparse);
    cpu.update_parameter(u);
  }
  ++steps_;
}

void Optimizer::step(ParamStore& store, const RowSparsity* sparse, double l2, double scale,
                     std::span<const double> sums) {
  SYLVA_CHECK(store.update_side() == Side::device, "[", name(),
              "] a device step needs the ParamStore's update side to be the device (set_update_side)");
  Backend& device = store.backend();
  std::vector<Parameter*> all = store.parameters().all();
  SYLVA_CHECK(sums.size() == all.size(), "[", name(), "] ", sums.size(), " sums of squares for ", all.size(),
              " parameters");
  check_parameters(all);
  for (size_t k = 0; k < all.size(); ++k) {
    if (std::isfinite(sums[k])) continue;
    // Find the element on the host (an error path): g + l2 · w as the update would take it.
    const Parameter& p = *all[k];
    Tensor g(p.grad.shape(), p.grad.dtype()), w(p.value.shape(), p.value.dtype());
    device.download(g.raw(), store.grad(p.name).data, g.nbytes());
    if (p.decay && l2 != 0.0) {
      device.download(w.raw(), store.value(p.name).data, w.nbytes());
      dispatch_floating(g.dtype(), [&](auto zero) {
        using T = decltype(zero);
        T* gv = g.data<T>();
        const T* wv = w.data<T>();
        for (int64_t i = 0; i < g.numel(); ++i) gv[i] += static_cast<T>(l2) * wv[i];
      });
    }
    throw_non_finite(name(), p, g.raw(), sparse);  // returns if only the sum overflowed
  }
  claim(Where::device, &device);
  for (Parameter* p : all) {
    ParamUpdate u = rule(*p, lr_ * p->lr_scale);
    u.w = store.value(p->name);
    u.g = store.grad(p->name);
    u.decay = p->decay ? l2 : 0.0;
    u.scale = scale;
    if (state_tensors() > 0) {
      std::vector<Buffer>& st = device_state_[p->name];
      if (st.empty()) {  // the host state where there is one (a loaded checkpoint), else the initial value
        auto host = state_.find(p->name);
        Tensor init(p->value.shape(), p->value.dtype());
        for (int64_t i = 0; i < init.numel(); ++i) init.set(i, state_init());
        for (int i = 0; i < state_tensors(); ++i) {
          const Tensor& from = host != state_.end() && static_cast<int>(host->second.size()) > i
                                   ? host->second[static_cast<size_t>(i)] : init;
          Buffer b(device.memory());
          b.reserve(std::max<size_t>(from.nbytes(), 1));
          device.upload(b.data(), from.raw(), from.nbytes());
          st.push_back(std::move(b));
        }
      }
      u.s0 = mat_view(st[0], p->value);
      if (st.size() > 1) u.s1 = mat_view(st[1], p->value);
    }
    const std::vector<int32_t>* rows = rows_of(*p, sparse);
    if (rows && rows->empty()) continue;
    if (rows) u.rows = *rows;
    grad_rows_hint(u, *p, sparse);
    device.update_parameter(u);
  }
  store.wrote(Side::device, updates_only_sparse_rows() ? sparse : nullptr);  // the host's copies are behind now
  ++steps_;
}

Sgd::Sgd(SgdOptions o) : Optimizer(o.lr, "sgd"), o_(o) { check_unit_interval(name(), "momentum", o.momentum); }

ParamUpdate Sgd::rule(const Parameter&, double lr) {
  ParamUpdate u;
  u.rule = o_.momentum == 0.0 ? ParamUpdate::Rule::sgd : ParamUpdate::Rule::momentum;
  u.lr = lr;
  u.a = o_.momentum;
  return u;
}

Adagrad::Adagrad(AdagradOptions o) : Optimizer(o.lr, "adagrad"), o_(o) {
  check_finite_option(name(), "eps", o.eps);
  SYLVA_CHECK(o.eps > 0.0, "[adagrad] eps must be > 0, got ", o.eps);
  check_non_negative(name(), "initial_accumulator", o.initial_accumulator);
}

ParamUpdate Adagrad::rule(const Parameter&, double lr) {
  ParamUpdate u;
  u.rule = ParamUpdate::Rule::adagrad;
  u.lr = lr;
  u.eps = o_.eps;
  return u;
}

Adam::Adam(AdamOptions o) : Optimizer(o.lr, "adam"), o_(o) {
  check_unit_interval(name(), "beta1", o.beta1);
  check_unit_interval(name(), "beta2", o.beta2);
  check_finite_option(name(), "eps", o.eps);
  SYLVA_CHECK(o.eps > 0.0, "[adam] eps must be > 0, got ", o.eps);
}

ParamUpdate Adam::rule(const Parameter& p, double lr) {
  const int64_t t = ++parameter_steps(p);
  ParamUpdate u;
  u.rule = ParamUpdate::Rule::adam;
  u.lr = lr;
  u.a = o_.beta1;
  u.b = o_.beta2;
  u.eps = o_.eps;
  u.c1 = 1.0 / (1.0 - std::pow(o_.beta1, static_cast<double>(t)));
  u.c2 = 1.0 / (1.0 - std::pow(o_.beta2, static_cast<double>(t)));
  return u;
}

namespace {

// Σ g[i]² in double over eight independent partial sums: one chain of
// dependent adds ran at an add's latency (6.5% of a Tree-FC batch-1 step,
// more than Adam's update, under `perf`); eight vectorise.
template <class T>
double sum_of_squares(const T* g, int64_t n) {
  constexpr int64_t kLanes = 8;
  double part[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t k = 0; k < kLanes; ++k) part[k] += static_cast<double>(g[i + k]) * static_cast<double>(g[i + k]);
  double sq = 0.0;
  for (; i < n; ++i) sq += static_cast<double>(g[i]) * static_cast<double>(g[i]);
  for (double x : part) sq += x;
  return sq;
}

}  // namespace

double global_grad_norm(const ParameterSet& params, const RowSparsity* sparse) {
  double sq = 0.0;
  for (const Parameter* p : params.all())
    dispatch_floating(p->grad.dtype(), [&](auto zero) {
      const auto* g = p->grad.data<decltype(zero)>();
      for_each_grad_range(*p, sparse, [&](int64_t b, int64_t e) { sq += sum_of_squares(g + b, e - b); });
    });
  return std::sqrt(sq);
}

double clip_grad_norm(ParameterSet& params, double max_norm, const RowSparsity* sparse) {
  SYLVA_CHECK(std::isfinite(max_norm) && max_norm > 0.0, "[clip_grad_norm] max_norm must be finite and > 0, got ",
              max_norm);
  const double norm = global_grad_norm(params, sparse);
  if (!std::isfinite(norm) || norm <= max_norm) return norm;
  const double factor = max_norm / norm;
  for (Parameter* p : params.all())
    dispatch_floating(p->grad.dtype(), [&](auto zero) {
      using T = decltype(zero);
      T* g = p->grad.data<T>();
      const T f = static_cast<T>(factor);
      for_each_grad_range(*p, sparse, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) g[i] *= f;
      });
    });
  return norm;
}

void add_weight_decay(ParameterSet& params, double l2) {
  check_non_negative("weight_decay", "l2", l2);
  if (l2 == 0.0) return;
  for (Parameter* p : params.all()) {
    if (!p->decay) continue;
    dispatch_floating(p->value.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* w = p->value.data<T>();
      T* g = p->grad.data<T>();
      const T c = static_cast<T>(l2);
      for (int64_t i = 0, n = p->value.numel(); i < n; ++i) g[i] += c * w[i];
    });
  }
}

void queue_gradient_sums(ParamStore& store, const RowSparsity& sparse, double l2, double* device_sums) {
  Backend& device = store.backend();
  const std::vector<Parameter*> all = store.parameters().all();
  for (size_t k = 0; k < all.size(); ++k) {
    const Parameter& p = *all[k];
    auto it = sparse.find(p.name);
    const std::span<const int32_t> rows = it == sparse.end() ? std::span<const int32_t>() : it->second;
    if (it != sparse.end() && rows.empty()) {
      device.fill_zero({device_sums + k, 1, 1, DType::f64});  // no row touched: nothing to add
      continue;
    }
    device.sum_squares(store.grad(p.name), store.value(p.name), p.decay ? l2 : 0.0, rows, device_sums + k);
  }
}

}  // namespace sylva
