#include "sylva/train/optimizer.h"

#include <cmath>

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

// Throws naming the parameter and the first bad element.
void check_finite_grad(std::string_view who, const Parameter& p, const RowSparsity* sparse) {
  dispatch_floating(p.grad.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* g = p.grad.data<T>();
    for_each_grad_range(p, sparse, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      SYLVA_CHECK(std::isfinite(g[i]), "[", who, "] parameter '", p.name, "' has a non-finite gradient (", g[i],
                  " at element ", i, " of ", p.grad.shape().str(), "); no parameter was updated. Lower the "
                  "learning rate, clip gradients (clip_grad_norm) or check the loss for log(0)");
    });
  });
}

}  // namespace

Optimizer::Optimizer(double lr, std::string_view who) : lr_(lr) { check_non_negative(who, "learning rate", lr); }

void Optimizer::set_learning_rate(double lr) {
  check_non_negative(name(), "learning rate", lr);
  lr_ = lr;
}

void Optimizer::reset() {
  state_.clear();
  counts_.clear();
}

void Optimizer::step(ParameterSet& params, const RowSparsity* sparse) {
  std::vector<Parameter*> all = params.all();
  // Validate everything before touching anything, so a failed step is a no-op.
  for (const Parameter* p : all) {
    SYLVA_CHECK(std::isfinite(p->lr_scale) && p->lr_scale >= 0.0, "[", name(), "] parameter '", p->name,
                "' has lr_scale ", p->lr_scale, "; expected a finite value >= 0");
    check_finite_grad(name(), *p, sparse);
    auto it = state_.find(p->name);
    if (it == state_.end()) continue;
    for (const Tensor& s : it->second)
      SYLVA_CHECK(s.shape() == p->value.shape() && s.dtype() == p->value.dtype(), "[", name(), "] parameter '",
                  p->name, "' is ", dtype_name(p->value.dtype()), " ", p->value.shape().str(),
                  " but this optimiser's state for it is ", dtype_name(s.dtype()), " ", s.shape().str(),
                  "; call reset() before using the optimiser with another parameter set");
  }
  for (Parameter* p : all) update(*p, lr_ * p->lr_scale, sparse);
  ++steps_;
}

std::vector<Tensor>& Optimizer::state(const Parameter& p, size_t n, double init) {
  std::vector<Tensor>& s = state_[p.name];
  if (s.empty()) {
    for (size_t i = 0; i < n; ++i) {
      Tensor t(p.value.shape(), p.value.dtype());
      if (init != 0.0)
        for (int64_t k = 0; k < t.numel(); ++k) t.set(k, init);
      s.push_back(std::move(t));
    }
  }
  SYLVA_ASSERT(s.size() == n, "optimiser state of '", p.name, "' has ", s.size(), " tensors, expected ", n);
  return s;
}

Sgd::Sgd(SgdOptions o) : Optimizer(o.lr, "sgd"), o_(o) { check_unit_interval(name(), "momentum", o.momentum); }

void Sgd::update(Parameter& p, double lr, const RowSparsity* sparse) {
  dispatch_floating(p.value.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* w = p.value.data<T>();
    const T* g = p.grad.data<T>();
    const int64_t n = p.value.numel();
    const T rate = static_cast<T>(lr);
    if (o_.momentum == 0.0) {
      for_each_grad_range(p, sparse, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) w[i] -= rate * g[i];
      });
      return;
    }
    T* v = state(p, 1)[0].data<T>();
    const T mu = static_cast<T>(o_.momentum);
    for (int64_t i = 0; i < n; ++i) {
      v[i] = mu * v[i] + g[i];
      w[i] -= rate * v[i];
    }
  });
}

Adagrad::Adagrad(AdagradOptions o) : Optimizer(o.lr, "adagrad"), o_(o) {
  check_finite_option(name(), "eps", o.eps);
  SYLVA_CHECK(o.eps > 0.0, "[adagrad] eps must be > 0, got ", o.eps);
  check_non_negative(name(), "initial_accumulator", o.initial_accumulator);
}

void Adagrad::update(Parameter& p, double lr, const RowSparsity* sparse) {
  dispatch_floating(p.value.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* w = p.value.data<T>();
    const T* g = p.grad.data<T>();
    T* acc = state(p, 1, o_.initial_accumulator)[0].data<T>();
    const T rate = static_cast<T>(lr), eps = static_cast<T>(o_.eps);
    for_each_grad_range(p, sparse, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        acc[i] += g[i] * g[i];
        w[i] -= rate * g[i] / (std::sqrt(acc[i]) + eps);
      }
    });
  });
}

Adam::Adam(AdamOptions o) : Optimizer(o.lr, "adam"), o_(o) {
  check_unit_interval(name(), "beta1", o.beta1);
  check_unit_interval(name(), "beta2", o.beta2);
  check_finite_option(name(), "eps", o.eps);
  SYLVA_CHECK(o.eps > 0.0, "[adam] eps must be > 0, got ", o.eps);
}

void Adam::update(Parameter& p, double lr, const RowSparsity*) {
  const int64_t t = ++parameter_steps(p);
  const double c1 = 1.0 - std::pow(o_.beta1, static_cast<double>(t));
  const double c2 = 1.0 - std::pow(o_.beta2, static_cast<double>(t));
  dispatch_floating(p.value.dtype(), [&](auto zero) {
    using T = decltype(zero);
    std::vector<Tensor>& s = state(p, 2);
    T* w = p.value.data<T>();
    const T* g = p.grad.data<T>();
    T* m = s[0].data<T>();
    T* v = s[1].data<T>();
    const T b1 = static_cast<T>(o_.beta1), b2 = static_cast<T>(o_.beta2), eps = static_cast<T>(o_.eps);
    const T rate = static_cast<T>(lr), inv_c1 = static_cast<T>(1.0 / c1), inv_c2 = static_cast<T>(1.0 / c2);
    for (int64_t i = 0, n = p.value.numel(); i < n; ++i) {
      m[i] = b1 * m[i] + (1 - b1) * g[i];
      v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
      w[i] -= rate * (m[i] * inv_c1) / (std::sqrt(v[i] * inv_c2) + eps);
    }
  });
}

double global_grad_norm(const ParameterSet& params, const RowSparsity* sparse) {
  double sq = 0.0;
  for (const Parameter* p : params.all())
    dispatch_floating(p->grad.dtype(), [&](auto zero) {
      using T = decltype(zero);
      const T* g = p->grad.data<T>();
      for_each_grad_range(*p, sparse, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) sq += static_cast<double>(g[i]) * static_cast<double>(g[i]);
      });
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

}  // namespace sylva
