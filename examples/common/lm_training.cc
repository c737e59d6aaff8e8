#include "lm_training.h"

#include <algorithm>
#include <map>
#include <cmath>
#include <numeric>
#include <random>

namespace sylva::examples {
namespace {

int64_t predicted_tokens(const GraphBatch& b) {
  const std::vector<int32_t>& labels = b.ids("labels");
  return std::count_if(labels.begin(), labels.end(), [](int32_t l) { return l >= 0; });
}

GraphBatch batch_of(const std::vector<InputGraph>& data, std::span<const size_t> order, size_t begin, size_t size) {
  std::vector<const InputGraph*> ptrs;
  for (size_t i = begin; i < std::min(order.size(), begin + size); ++i) ptrs.push_back(&data[order[i]]);
  return GraphBatch(std::move(ptrs));
}

}  // namespace

double lm_learning_rate(const LmTrainOptions& o, int64_t epoch) {
  return o.lr * std::pow(o.lr_decay, static_cast<double>(std::max<int64_t>(epoch - o.decay_after, 0)));
}

double perplexity(Trainer& trainer, const std::vector<InputGraph>& samples, int64_t batch) {
  SYLVA_CHECK(batch > 0, "perplexity: batch must be positive");
  std::vector<size_t> order(samples.size());
  std::iota(order.begin(), order.end(), 0);
  double loss = 0;
  int64_t tokens = 0;
  for (size_t b = 0; b < order.size(); b += static_cast<size_t>(batch)) {
    GraphBatch gb = batch_of(samples, order, b, static_cast<size_t>(batch));
    loss += trainer.evaluate(gb);
    tokens += predicted_tokens(gb);
  }
  SYLVA_CHECK(tokens > 0, "perplexity: no labelled tokens in ", samples.size(), " samples");
  return std::exp(loss / static_cast<double>(tokens));
}

LmTrainResult train_lm(const LmData& data, const LmTrainOptions& o, std::FILE* log) {
  SYLVA_CHECK(o.batch > 0 && o.epochs > 0, "[", o.name, "] batch and epochs must be positive");
  SYLVA_CHECK(!data.train.empty(), "[", o.name, "] no training samples");
  ParameterSet ps(o.model.dtype, o.seed);
  add_lstm_lm_params(ps, o.model);
  LstmLm model(ps, o.model);
  Trainer trainer(model.program, ps, model.loss, Sgd{{.lr = o.lr}},
                  {.executor = {.policy = o.policy, .device = Device::parse(device_for_rank(o.device, o.comm)), .seed = o.seed,
                                .threads = o.threads, .optimisations = o.optimisations, .precision = o.precision,
                                .check_numerics = o.check_numerics},
                   .clip_norm = o.clip,
                   .optimizer_on_device = !o.deterministic,  // deterministic data-parallel: the host optimiser
                   .sync_parameters = false,  // synced before each checkpoint
                   .communicator = o.comm, .parallel = {.deterministic = o.deterministic, .overlap = o.overlap}});
  const bool rank0 = o.comm == nullptr || o.comm->rank() == 0;
  if (!rank0) log = nullptr;
  if (log && o.comm)
    std::fprintf(log, "[%s] data-parallel: world size %d over %s%s%s\n", o.name.c_str(), o.comm->size(),
                 std::string(o.comm->engine()).c_str(), o.deterministic ? ", deterministic" : "",
                 trainer.optimizer_on_device() ? ", gradients summed on the device" : "");
  if (log) {
    const LstmLmConfig& m = o.model;
    std::fprintf(log,
                 "[%s] model: %ld layers, embed %ld, hidden %ld, vocab %ld, dropout %g, params %ld | sgd lr %g "
                 "(x%g after epoch %ld) clip %g batch %ld | policy %s threads %d %s %s seed %lu\n",
                 o.name.c_str(), static_cast<long>(m.layers), static_cast<long>(m.embed), static_cast<long>(m.hidden),
                 static_cast<long>(m.vocab), m.dropout, static_cast<long>(ps.numel()), o.lr, o.lr_decay,
                 static_cast<long>(o.decay_after), o.clip, static_cast<long>(o.batch), policy_name(o.policy),
                 o.threads, o.device.c_str(), precision_name(o.precision).data(), static_cast<unsigned long>(o.seed));
    std::fflush(log);
  }

  std::mt19937_64 rng(o.seed);
  std::vector<size_t> order(data.train.size());
  std::iota(order.begin(), order.end(), 0);
  size_t batches = (order.size() + static_cast<size_t>(o.batch) - 1) / static_cast<size_t>(o.batch);
  if (o.max_batches > 0) batches = std::min(batches, static_cast<size_t>(o.max_batches));

  LmTrainResult result;
  int64_t first_epoch = 1;
  if (!o.resume.empty()) {
    const std::map<std::string, std::string> meta = trainer.load_state(o.resume);
    first_epoch = meta_int(meta, "epoch", o.resume) + 1;
    restore_rng(rng, meta, o.resume);
    SYLVA_CHECK(first_epoch <= o.epochs, "[", o.name, "] ", o.resume, " is the state after epoch ", first_epoch - 1,
                "; --epochs ", o.epochs, " leaves nothing to train (give the total number of epochs)");
    if (log)
      std::fprintf(log, "[%s] resumed from %s after epoch %ld\n", o.name.c_str(), o.resume.c_str(),
                   static_cast<long>(first_epoch - 1));
  }
  Timer total;
  double train_seconds = 0;
  Profiler profiler;
  for (int64_t epoch = first_epoch; epoch <= o.epochs; ++epoch) {
    const double lr = lm_learning_rate(o, epoch);
    if (o.profile) {
      profiler.reset();
      trainer.executor().set_observer(profiler.observer());
    }
    trainer.optimizer().set_learning_rate(lr);
    // Each epoch shuffles the identity, so the data order is a function of
    // the RNG's state alone (what --save-state keeps).
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    Timer timer, progress;
    double loss = 0;
    int64_t tokens = 0;
    RankTally tally;
    for (size_t b = 0; b < batches; ++b) {
      GraphBatch gb = batch_of(data.train, order, b * static_cast<size_t>(o.batch), static_cast<size_t>(o.batch));
      StepResult r = trainer.step(gb);
      tally.add(r);
      loss += r.loss;
      tokens += predicted_tokens(gb);
      if (log && (progress.seconds() >= o.progress_seconds || b + 1 == batches)) {
        const double rate = timer.rate(static_cast<double>(tokens));
        const double epoch_left = timer.seconds() * static_cast<double>(batches - b - 1) / static_cast<double>(b + 1);
        const double epoch_estimate = timer.seconds() + epoch_left;
        const double all_left = epoch_left + static_cast<double>(o.epochs - epoch) * epoch_estimate;
        std::fprintf(log,
                     "[%s] epoch %ld/%ld batch %zu/%zu | lr %.4g | train ppl %.2f | |g| %.2f | %.0f words/s | "
                     "epoch ETA %s, total ETA %s\n",
                     o.name.c_str(), static_cast<long>(epoch), static_cast<long>(o.epochs), b + 1, batches, lr,
                     std::exp(loss / static_cast<double>(tokens)), r.grad_norm, rate, format_duration(epoch_left).c_str(),
                     format_duration(all_left).c_str());
        std::fflush(log);
        progress.reset();
      }
    }
    trainer.executor().set_observer({});  // evaluation is not profiled
    LmEpoch e;
    e.epoch = epoch;
    e.lr = lr;
    e.seconds = timer.seconds();
    train_seconds += e.seconds;
    e.words_per_second = static_cast<double>(tokens) / e.seconds;
    e.train_ppl = std::exp(loss / static_cast<double>(tokens));
    e.valid_ppl = perplexity(trainer, data.valid, o.eval_batch);
    if (o.profile && log) {
      profiler.add_wall_time(e.seconds);
      std::fprintf(log, "[%s] profile of epoch %ld (training steps only):\n%s", o.name.c_str(),
                   static_cast<long>(epoch), profiler.report().c_str());
    }
    if (o.profile && o.comm) print_rank_balance(*o.comm, tally, o.name, log);
    result.epochs.push_back(e);
    trainer.sync_parameters();  // the ParameterSet is current from here (a device keeps them otherwise)
    if (!o.save_state.empty())  // data-parallel: rank 0 writes
      trainer.save_state(o.save_state, {{"epoch", std::to_string(epoch)}, {"data.rng", rng_text(rng)}});
    if (!o.checkpoint.empty() && rank0)
      save_checkpoint(ps, o.checkpoint, {{"epoch", std::to_string(epoch)}, {"valid_ppl", std::to_string(e.valid_ppl)}});
    if (log) {
      std::fprintf(log, "[%s] epoch %ld done in %s | lr %.4g | train ppl %.2f | valid ppl %.2f | %.0f words/s\n",
                   o.name.c_str(), static_cast<long>(epoch), format_duration(e.seconds).c_str(), lr, e.train_ppl,
                   e.valid_ppl, e.words_per_second);
      std::fflush(log);
    }
  }
  result.test_ppl = perplexity(trainer, data.test, o.eval_batch);
  result.seconds = total.seconds();
  if (log) {
    std::fprintf(log, "[%s] test ppl %.2f (final parameters, epoch %ld) | training %s, total %s\n", o.name.c_str(),
                 result.test_ppl, static_cast<long>(o.epochs), format_duration(train_seconds).c_str(),
                 format_duration(result.seconds).c_str());
    std::fflush(log);
  }
  return result;
}

}  // namespace sylva::examples
