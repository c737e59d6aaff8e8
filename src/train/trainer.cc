#include "sylva/train/trainer.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <span>
#include <vector>

#include "sylva/core/error.h"
#include "sylva/train/checkpoint.h"

namespace sylva {
namespace {

void check_options(const TrainerOptions& o) {
  SYLVA_CHECK(std::isfinite(o.clip_norm) && o.clip_norm >= 0.0, "[trainer] clip_norm must be finite and >= 0 (0 = off), got ",
              o.clip_norm);
  SYLVA_CHECK(std::isfinite(o.weight_decay) && o.weight_decay >= 0.0,
              "[trainer] weight_decay must be finite and >= 0 (0 = off), got ", o.weight_decay);
}

void check_loss(const Program& program, Symbol loss) {
  SYLVA_CHECK(loss.valid() && loss.graph() == &program.graph(),
              "[trainer] the loss symbol is not a symbol of the trainer's program");
  const ir::ValueType& t = loss.type();
  SYLVA_CHECK(!t.rowed && t.shape.numel() == 1, "[trainer] the loss must be a fixed scalar, got ", t.str(),
              "; reduce it with sum(), mean() or softmax_cross_entropy()");
}

// A training step's loss, before any parameter moves.
void check_loss_value(double loss, int64_t step) {
  SYLVA_CHECK(std::isfinite(loss), "[trainer] the loss is ", loss, " at step ", step,
              "; no parameter was updated. Lower the learning rate or enable clip_norm");
}

// Validates before the Executor compiles anything.
const Program& checked(const Program& program, Symbol loss, const TrainerOptions& o) {
  check_loss(program, loss);
  check_options(o);
  return program;
}

}  // namespace

Trainer::Trainer(const Program& program, ParameterSet& params, Symbol loss, std::unique_ptr<Optimizer> optimizer,
                 TrainerOptions options)
    : program_(checked(program, loss, options)),
      params_(params),
      loss_(loss),
      optimizer_(std::move(optimizer)),
      options_(options),
      executor_(program_, params, options.executor) {
  SYLVA_CHECK(optimizer_ != nullptr, "[trainer] no optimiser given (null unique_ptr)");
  ParamStore& store = executor_.param_store();
  on_device_ = options_.optimizer_on_device && !store.on_host() && executor_.backend().has_optimiser_kernels();
  const dist::Communicator* comm = options_.communicator;
  const DataParallelOptions& po = options_.parallel;
  SYLVA_CHECK(po.groups >= 1 && po.bucket_bytes >= 1 && po.fingerprint_every >= 0,
              "[trainer] DataParallelOptions: groups (", po.groups, ") and bucket_bytes (", po.bucket_bytes,
              ") must be >= 1 and fingerprint_every (", po.fingerprint_every, ") >= 0");
  SYLVA_CHECK(!po.deterministic || comm == nullptr || po.groups >= comm->size(), "[trainer] deterministic data-parallel "
              "training splits each batch into DataParallelOptions::groups = ", po.groups,
              " parts, fewer than the ", comm ? comm->size() : 1, " ranks; set groups >= the world size");
  SYLVA_CHECK(!po.deterministic || !on_device_,
              "[trainer] deterministic data-parallel training runs the optimiser on the host; set "
              "TrainerOptions::optimizer_on_device = false");
  if (on_device_) {
    store.set_update_side(Side::device);
    sums_ = Buffer(executor_.backend().memory());
  }
}

void Trainer::sync_parameters() { executor_.param_store().make_current(Side::host); }

void Trainer::parameters_changed_on_host() { executor_.param_store().wrote(Side::host); }

// On the device, after forward: the loss goes into the slot after the
// parameters' sums of squares, by a device copy (no wait), so that
// device_update's one download brings both.
void Trainer::stage_loss() {
  const MatView loss = executor_.device_value(loss_);
  SYLVA_ASSERT(loss.numel() == 1 && dtype_size(loss.dtype) <= sizeof(double), "the loss is a scalar");
  const size_t n = params_.all().size();
  sums_.reserve((n + 1) * sizeof(double));
  executor_.backend().copy_rows(loss, {}, {static_cast<double*>(sums_.data()) + n, 1, 1, loss.dtype}, {});
}

// The device half of step(), after backward: decay, clipping and the
// update in device kernels. One download (the step's one wait for the
// device) brings the sums of squares and the loss stage_loss() put beside
// them; a non-finite loss stops the step before any parameter moves.
void Trainer::device_update(StepResult& r, DType loss_dtype) {
  ParamStore& store = executor_.param_store();
  Backend& device = executor_.backend();
  const double l2 = options_.weight_decay;
  auto* sums = static_cast<double*>(sums_.data());
  queue_gradient_sums(store, sparse_, l2, sums);
  host_sums_.resize(params_.all().size() + 1);
  device.download(host_sums_.data(), sums, host_sums_.size() * sizeof(double));
  dispatch_floating(loss_dtype, [&](auto tag) {
    decltype(tag) loss;
    std::memcpy(&loss, &host_sums_.back(), sizeof loss);
    r.loss = static_cast<double>(loss);
  });
  host_sums_.pop_back();
  check_loss_value(r.loss, steps_);
  double sq = 0.0;
  for (double v : host_sums_) sq += v;
  const double norm = std::sqrt(sq);
  const double clip = options_.clip_norm;
  const double scale = clip > 0.0 && std::isfinite(norm) && norm > clip ? clip / norm : 1.0;
  optimizer_->step(store, &sparse_, l2, scale, host_sums_);
  store.zero_grads(sparse_);
  if (options_.sync_parameters) store.make_current(Side::host);
  r.grad_norm = norm;
}

// The one training step. The routes differ only in how the gradients of
// the batch are made and summed (gradients(): this process alone, the
// ranks on the host, or the ranks on the device); every step zeroes the
// gradients, has them made, drops decayed parameters from the row-sparse
// ones, updates once where the optimiser runs, and checks the replicas
// when it is time.
StepResult Trainer::step(const GraphBatch& batch) {
  SYLVA_CHECK(batch.num_samples() > 0, "[trainer] step() on an empty batch; every batch needs at least one sample");
  const Route route = this->route();
  const CommTotals before = comm_totals(route);
  zero_gradients();
  StepResult r;
  r.samples = batch.num_samples();
  r.vertices = batch.num_vertices();
  DType staged = params_.dtype();  // on the device: the type of the loss staged beside the sums
  switch (route) {
    case Route::local: staged = local_gradients(batch, r); break;
    case Route::host_ranks: host_ranks_gradients(batch, r); break;
    case Route::device_ranks: device_ranks_gradients(batch, r); break;
  }
  if (options_.weight_decay > 0.0)  // decay makes a gradient dense
    for (const Parameter* p : params_.all())
      if (p->decay) sparse_.erase(p->name);
  if (on_device_) device_update(r, staged);
  else host_update(r);
  sparse_valid_ = true;
  ++steps_;
  check_replicas_when_due(route);
  const CommTotals after = comm_totals(route);
  r.comm_seconds = after.seconds - before.seconds;
  r.comm_bytes = after.bytes - before.bytes;
  return r;
}

Trainer::Route Trainer::route() const {
  if (on_device_ && options_.communicator) return Route::device_ranks;  // any world size: NCCL's too
  if (options_.parallel.deterministic || (options_.communicator && options_.communicator->size() > 1))
    return Route::host_ranks;
  return Route::local;
}

// After a completed step only the rows the last backward touched can be
// nonzero in row-sparse gradients (embeddings); otherwise zero densely.
// On the device a completed step leaves them zero.
void Trainer::zero_gradients() {
  if (!on_device_) params_.zero_grad(sparse_valid_ ? &sparse_ : nullptr);
  else if (!sparse_valid_) executor_.param_store().zero_grads({});
  sparse_valid_ = false;
}

// This process alone: forward and backward over the whole batch. On the
// host the loss is read (and checked) before the backward; on the device it
// is staged beside the gradient sums, read with them after it.
DType Trainer::local_gradients(const GraphBatch& batch, StepResult& r) {
  executor_.set_step(static_cast<uint64_t>(steps_));  // dropout keyed by the training step
  executor_.forward(batch, Mode::train);
  if (on_device_) {
    stage_loss();
  } else {
    r.loss = executor_.scalar(loss_);
    check_loss_value(r.loss, steps_);
  }
  const double seed = options_.normalisation == LossScale::per_sample ? 1.0 / r.samples : 1.0;
  executor_.backward(loss_, seed);  // on the device the gradients stay there (resident store)
  sparse_ = executor_.sparse_grads();
  r.local_samples = r.samples;
  r.local_vertices = r.vertices;
  return executor_.device_value(loss_).dtype;
}

void Trainer::host_update(StepResult& r) {
  add_weight_decay(params_, options_.weight_decay);
  r.grad_norm = options_.clip_norm > 0.0 ? clip_grad_norm(params_, options_.clip_norm, &sparse_)
                                         : global_grad_norm(params_, &sparse_);
  optimizer_->step(params_, &sparse_);
  executor_.parameters_changed(optimizer_->updates_only_sparse_rows() ? &sparse_ : nullptr);  // a device uploads them
}

namespace {

// The tensors of a trainer checkpoint: parameters, then the optimiser's state.
std::vector<std::pair<std::string, Tensor*>> state_tensors(ParameterSet& params, Optimizer& optimizer) {
  std::vector<std::pair<std::string, Tensor*>> out;
  for (Parameter* p : params.all()) out.emplace_back("param/" + p->name, &p->value);
  for (auto& [name, t] : optimizer.checkpoint_tensors(params)) out.emplace_back("opt/" + name, t);
  return out;
}

constexpr const char* kStepsKey = "sylva.trainer.steps";

}  // namespace

void Trainer::save_state(const std::string& path, const std::map<std::string, std::string>& metadata) {
  for (const auto& [key, value] : metadata)
    SYLVA_CHECK(key.compare(0, 6, "sylva.") != 0, "[trainer] save_state: metadata key '", key,
                "' starts with \"sylva.\", which Sylva's own entries use");
  sync_parameters();
  std::string failure;
  dist::Communicator* comm = options_.communicator;
  if (comm == nullptr || comm->rank() == 0) {
    try {
      std::map<std::string, std::string> all = metadata;
      all.merge(optimizer_->checkpoint_counters());
      all[kStepsKey] = std::to_string(steps_);
      std::vector<std::pair<std::string, const Tensor*>> tensors;
      for (const auto& [name, t] : state_tensors(params_, *optimizer_)) tensors.emplace_back(name, t);
      save_tensors(tensors, path, all);
    } catch (const Error& e) {
      if (comm == nullptr || comm->size() == 1) throw;
      failure = e.what();
    }
  }
  if (comm != nullptr && comm->size() > 1) {  // every rank learns whether the file is there
    const std::vector<std::byte> said = comm->allgatherv(std::as_bytes(std::span(failure)), "checkpoint written");
    if (!said.empty())
      SYLVA_THROW("[trainer] rank 0 could not write the checkpoint: ",
                  std::string(reinterpret_cast<const char*>(said.data()), said.size()));
  }
}

std::map<std::string, std::string> Trainer::load_state(const std::string& path) {
  std::map<std::string, std::string> metadata = load_tensors(state_tensors(params_, *optimizer_), path,
                                                             "this trainer's parameters and optimiser state");
  optimizer_->restore_counters(metadata, path);
  optimizer_->host_state_changed();  // a state on the device takes the loaded one
  auto it = metadata.find(kStepsKey);
  SYLVA_CHECK(it != metadata.end(), "[trainer] checkpoint '", path, "' has no '", kStepsKey,
              "' (written by save_checkpoint, which holds only parameters? use load_checkpoint for it)");
  char* end = nullptr;
  const long long steps = std::strtoll(it->second.c_str(), &end, 10);
  SYLVA_CHECK(!it->second.empty() && *end == '\0' && steps >= 0, "[trainer] checkpoint '", path, "': '", kStepsKey,
              "' is \"", it->second, "\", not a step count");
  steps_ = steps;
  sparse_valid_ = false;  // the gradients are zeroed densely before the next step
  parameters_changed_on_host();
  for (auto i = metadata.begin(); i != metadata.end();)
    i = i->first.compare(0, 6, "sylva.") == 0 ? metadata.erase(i) : std::next(i);
  return metadata;
}

double Trainer::evaluate(const GraphBatch& batch) {
  executor_.forward(batch, Mode::eval);
  return executor_.scalar(loss_);
}

}  // namespace sylva
