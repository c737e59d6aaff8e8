// Optimisers (SGD, Adagrad, Adam) and gradient utilities (norm, clipping,
// L2 weight decay) over a ParameterSet.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sylva/backend/backend.h"
#include "sylva/frontend/parameter_set.h"
#include "sylva/runtime/param_store.h"

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
  /// dense because their state decays every step, but do not read the
  /// gradient outside the listed rows (ParamUpdate::grad_rows).
  virtual void step(ParameterSet& params, const RowSparsity* sparse = nullptr);
  /// The same step on a device (the Trainer's path there): values,
  /// gradients and this optimiser's state all stay in `store`'s backend
  /// memory (the store's update_side() must be Side::device), nothing moves
  /// to the host; the store records the values written (ParamStore::wrote).
  /// Each gradient is taken as scale · (g + l2 · w) (l2 only for parameters
  /// with `decay` set): weight decay and clipping folded into the update.
  /// `sums` holds, per parameter of store.parameters().all(), the sum of
  /// squares of that gradient before scaling (Backend::sum_squares); a
  /// non-finite one throws sylva::Error naming the parameter and element,
  /// as step() does, before anything changes. An optimiser keeps its state
  /// where its first step ran: mixing host and device steps (or two
  /// devices) without reset() throws.
  void step(ParamStore& store, const RowSparsity* sparse, double l2, double scale, std::span<const double> sums);

  double learning_rate() const { return lr_; }
  /// Throws sylva::Error unless lr is finite and >= 0.
  void set_learning_rate(double lr);
  /// Steps taken so far (calls of step()).
  int64_t steps() const { return steps_; }
  /// Drops all per-parameter state; the next step starts afresh.
  void reset();
  /// For checkpoints (Trainer::save_state): every parameter's host state
  /// tensors, named "<parameter>/<k>" (made at their initial value where
  /// no step has touched the parameter yet, so the set depends only on the
  /// parameters), to read or to overwrite. While the state is on a device
  /// they are first downloaded from it; after overwriting them call
  /// host_state_changed().
  std::vector<std::pair<std::string, Tensor*>> checkpoint_tensors(ParameterSet& params);
  /// The host state tensors were overwritten (a checkpoint was loaded into
  /// them): a state on a device takes them, now or, before the first
  /// device step, when that step creates it.
  void host_state_changed();
  /// The counters a checkpoint needs besides the tensors (the optimiser's
  /// name, steps(), the learning rate exactly, each parameter's step count),
  /// as metadata with keys "sylva.optimizer*"; restore_counters() reads
  /// them back, naming `path` and the key when one is missing or malformed
  /// or the checkpoint is another optimiser's.
  std::map<std::string, std::string> checkpoint_counters() const;
  void restore_counters(const std::map<std::string, std::string>& metadata, const std::string& path);
  /// "sgd", "adagrad", "adam": the tag of error messages.
  virtual std::string_view name() const = 0;
  /// Whether step() with `sparse` changes only the listed rows of the
  /// parameters it names (SGD without momentum, Adagrad); a device
  /// executor then uploads just those rows before its next forward.
  virtual bool updates_only_sparse_rows() const { return false; }

 protected:
  Optimizer(double lr, std::string_view who);
  // Movable, not copyable: the state may hold device buffers (move-only).
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;
  Optimizer(Optimizer&&) = default;
  Optimizer& operator=(Optimizer&&) = default;

  /// The update of `p` at effective learning rate `lr`: its rule and
  /// constants (step() fills in the views and rows). Called once per
  /// parameter and step, host or device.
  virtual ParamUpdate rule(const Parameter& p, double lr) = 0;
  /// How many state tensors the rule uses (0 to 2), and their first value.
  virtual int state_tensors() const = 0;
  virtual double state_init() const { return 0.0; }
  /// Steps taken by `p` (counted per parameter, for Adam's bias correction).
  int64_t& parameter_steps(const Parameter& p) { return counts_[p.name]; }

 private:
  // Validates lr_scale and the state's shapes of every parameter.
  void check_parameters(const std::vector<Parameter*>& all) const;
  // The rows an update covers: p's listed rows when the rule skips the
  // others (updates_only_sparse_rows()); null: every row.
  const std::vector<int32_t>* rows_of(const Parameter& p, const RowSparsity* sparse) const;
  // The host state tensors of `p`, made on first use.
  std::vector<Tensor>& host_state(const Parameter& p);
  // Where the state lives: nowhere yet, the host, or a device's memory.
  enum class Where : uint8_t { none, host, device };
  void claim(Where w, Backend* device);

  double lr_;
  int64_t steps_ = 0;
  std::map<std::string, std::vector<Tensor>> state_;
  std::map<std::string, std::vector<Buffer>> device_state_;
  std::map<std::string, int64_t> counts_;
  Where where_ = Where::none;
  Backend* device_ = nullptr;
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
  ParamUpdate rule(const Parameter& p, double lr) override;
  int state_tensors() const override { return o_.momentum == 0.0 ? 0 : 1; }
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
  ParamUpdate rule(const Parameter& p, double lr) override;
  int state_tensors() const override { return 1; }
  double state_init() const override { return o_.initial_accumulator; }
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
  ParamUpdate rule(const Parameter& p, double lr) override;
  int state_tensors() const override { return 2; }
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

/// On a device (the store updated there): queues, per parameter k of
/// store.parameters().all(), the sum of squares of its gradient taken as
/// g + l2 · w (l2 only where `decay` is set) into device_sums[k], a float64
/// array in the backend's memory, without waiting (Backend::sum_squares;
/// rows only for parameters `sparse` names, 0 where it lists none).
/// Downloaded, these are the `sums` Optimizer::step(ParamStore&, ...) takes.
void queue_gradient_sums(ParamStore& store, const RowSparsity& sparse, double l2, double* device_sums);

}  // namespace sylva
