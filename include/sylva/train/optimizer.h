// Optimisers (SGD, Adagrad, Adam) and gradient utilities (norm, clipping,
// L2 weight decay) over a ParameterSet.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sylva/frontend/parameter_set.h"

namespace sylva {

/// Updates parameters from their gradients. Per-parameter state (momentum,
/// accumulators, moments) lives inside the optimiser, keyed by parameter
/// name, and is allocated on a parameter's first step; it must keep the
/// shape and dtype it was created with (sylva::Error otherwise).
///
/// Each parameter moves with learning rate `learning_rate() * lr_scale`.
/// L2 decay is not part of step(): call add_weight_decay() first (Trainer
/// does), which honours each parameter's `decay` flag.
///
/// Options are plain structs, so they take designated initialisers:
/// @code
/// Adam adam{{.lr = 1e-3, .beta2 = 0.98}};
/// Sgd sgd{{.lr = 0.1, .momentum = 0.9}};
/// ps.zero_grad();
/// executor.backward(loss);
/// clip_grad_norm(ps, 5.0);
/// adam.step(ps);
/// @endcode
class Optimizer {
 public:
  virtual ~Optimizer() = default;

  /// Checks every gradient first, then updates every parameter: a NaN or
  /// infinite gradient throws sylva::Error naming the parameter and leaves
  /// all parameters and all state unchanged.
  /// With `sparse` (see RowSparsity), gradients of the parameters it names
  /// are nonzero only in the listed rows: SGD without momentum and Adagrad
  /// then update only those rows (the result is identical, since a zero
  /// gradient leaves their rows unchanged); Adam and momentum SGD stay
  /// dense because their state decays every step.
  virtual void step(ParameterSet& params, const RowSparsity* sparse = nullptr);

  double learning_rate() const { return lr_; }
  /// Throws sylva::Error unless lr is finite and >= 0.
  void set_learning_rate(double lr);
  /// Steps taken so far (calls of step()).
  int64_t steps() const { return steps_; }
  /// Drops all per-parameter state; the next step starts afresh.
  void reset();
  /// "sgd", "adagrad", "adam": the tag of error messages.
  virtual std::string_view name() const = 0;
  /// Whether step() with `sparse` changes only the listed rows of the
  /// parameters it names (SGD without momentum, Adagrad); a device
  /// executor then uploads just those rows before its next forward.
  virtual bool updates_only_sparse_rows() const { return false; }

 protected:
  Optimizer(double lr, std::string_view who);
  Optimizer(const Optimizer&) = default;
  Optimizer& operator=(const Optimizer&) = default;
  Optimizer(Optimizer&&) = default;
  Optimizer& operator=(Optimizer&&) = default;

  /// Applies one update to `p` with effective learning rate `lr`.
  /// `sparse` is null or names the rows of p's gradient that may be nonzero.
  virtual void update(Parameter& p, double lr, const RowSparsity* sparse) = 0;
  /// The state tensors of `p` (n of them, zero-filled, p's shape and dtype
  /// on first use; filled with `init` instead of zeros when given).
  std::vector<Tensor>& state(const Parameter& p, size_t n, double init = 0.0);
  /// Steps taken by `p` (counted per parameter, for Adam's bias correction).
  int64_t& parameter_steps(const Parameter& p) { return counts_[p.name]; }

 private:
  double lr_;
  int64_t steps_ = 0;
  std::map<std::string, std::vector<Tensor>> state_;
  std::map<std::string, int64_t> counts_;
};

/// Stochastic gradient descent with (heavy-ball) momentum, as in PyTorch:
/// v = momentum·v + g;  w -= lr·v. With momentum = 0: w -= lr·g.
struct SgdOptions {
  double lr = 0.01;
  double momentum = 0.0;  ///< in [0, 1)
};

class Sgd final : public Optimizer {
 public:
  explicit Sgd(SgdOptions o = {});
  std::string_view name() const override { return "sgd"; }
  bool updates_only_sparse_rows() const override { return o_.momentum == 0.0; }
  const SgdOptions& options() const { return o_; }

 private:
  void update(Parameter& p, double lr, const RowSparsity* sparse) override;
  SgdOptions o_;
};

/// Adagrad (Duchi et al. 2011): G += g²;  w -= lr·g / (sqrt(G) + eps).
/// eps defaults to 1e-10 (PyTorch's default): it only guards against 0/0
/// for parameters whose gradient has always been zero.
struct AdagradOptions {
  double lr = 0.01;
  double eps = 1e-10;
  double initial_accumulator = 0.0;  ///< G's starting value, >= 0
};

class Adagrad final : public Optimizer {
 public:
  explicit Adagrad(AdagradOptions o = {});
  std::string_view name() const override { return "adagrad"; }
  bool updates_only_sparse_rows() const override { return true; }
  const AdagradOptions& options() const { return o_; }

 private:
  void update(Parameter& p, double lr, const RowSparsity* sparse) override;
  AdagradOptions o_;
};

/// Adam (Kingma & Ba 2015) with bias correction; t counts this parameter's
/// steps from 1:  m = β1·m + (1-β1)·g;  v = β2·v + (1-β2)·g²;
/// w -= lr·(m / (1-β1^t)) / (sqrt(v / (1-β2^t)) + eps).
struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;    ///< in [0, 1)
  double beta2 = 0.999;  ///< in [0, 1)
  double eps = 1e-8;
};

class Adam final : public Optimizer {
 public:
  explicit Adam(AdamOptions o = {});
  std::string_view name() const override { return "adam"; }
  const AdamOptions& options() const { return o_; }

 private:
  void update(Parameter& p, double lr, const RowSparsity* sparse) override;
  AdamOptions o_;
};

/// sqrt of the sum of squares of every gradient of `params` (accumulated in
/// float64). NaN or infinity if any gradient is not finite.
double global_grad_norm(const ParameterSet& params, const RowSparsity* sparse = nullptr);

/// Scales every gradient by max_norm / norm when the global norm exceeds
/// `max_norm` (> 0); returns the norm before clipping. A non-finite norm
/// leaves the gradients untouched (Optimizer::step then reports the
/// offending parameter).
double clip_grad_norm(ParameterSet& params, double max_norm, const RowSparsity* sparse = nullptr);

/// grad += l2 · value for every parameter with `decay` set (l2 >= 0):
/// the gradient of (l2 / 2)·‖w‖². Call after backward, before clipping.
void add_weight_decay(ParameterSet& params, double l2);

}  // namespace sylva
