#include "sentiment_training.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <utility>

#include "example_util.h"

namespace sylva::examples {
namespace {

std::vector<GraphBatch> batches_of(const std::vector<InputGraph>& data, std::span<const size_t> order, int64_t size) {
  std::vector<GraphBatch> out;
  for (size_t b = 0; b < order.size(); b += static_cast<size_t>(size)) {
    std::vector<const InputGraph*> ptrs;
    for (size_t i = b; i < std::min(order.size(), b + static_cast<size_t>(size)); ++i) ptrs.push_back(&data[order[i]]);
    out.emplace_back(std::move(ptrs));
  }
  return out;
}

RootAccuracy evaluate(Trainer& trainer, const TreeLstmModel& model, const std::vector<InputGraph>& data) {
  std::vector<size_t> order(data.size());
  std::iota(order.begin(), order.end(), 0);
  RootAccuracy acc;
  for (const GraphBatch& b : batches_of(data, order, 256)) {
    trainer.evaluate(b);
    add_root_accuracy(b, trainer.executor().value(model.logits), acc);
  }
  return acc;
}

}  // namespace

SentimentTrainResult train_sentiment(const Treebank& tb, const SentimentTrainOptions& o, std::FILE* log) {
  SYLVA_CHECK(o.batch > 0 && o.epochs > 0, "[tree_lstm] batch and epochs must be positive");
  SYLVA_CHECK(!tb.train.empty() && !tb.dev.empty() && !tb.test.empty(), "[tree_lstm] ", tb.source,
              ": a split is empty (train ", tb.train.size(), ", dev ", tb.dev.size(), ", test ", tb.test.size(),
              " trees); each needs at least one tree");
  TreeLstmConfig cfg = o.model;
  cfg.vocab = tb.vocab.size();
  ParameterSet ps(cfg.dtype, o.seed);
  add_tree_lstm_params(ps, cfg);
  ps["E"].lr_scale = o.emb_lr_scale;
  TreeLstmModel model(ps, cfg);
  Trainer trainer(model.program, ps, model.loss, make_optimizer(o.optimizer, o.lr, "tree_lstm"),
                  {.executor = {.policy = o.policy, .device = Device::parse(device_for_rank(o.device, o.comm)), .seed = o.seed,
                                .threads = o.threads, .optimisations = o.optimisations, .precision = o.precision,
                                .check_numerics = o.check_numerics},
                   .clip_norm = o.clip, .weight_decay = o.l2,
                   .optimizer_on_device = !o.deterministic,  // deterministic data-parallel: the host optimiser
                   .sync_parameters = false,  // synced before each checkpoint
                   .communicator = o.comm, .parallel = {.deterministic = o.deterministic, .overlap = o.overlap}});
  const bool rank0 = o.comm == nullptr || o.comm->rank() == 0;
  if (!rank0) log = nullptr;
  if (log)
    std::fprintf(log, "model: %s cell d=%ld h=%ld params=%ld | %s lr %g batch %ld l2 %g dropout %g | policy %s threads %d %s %s\n",
                 tree_lstm_cell_name(cfg.cell), static_cast<long>(cfg.dim), static_cast<long>(cfg.hidden),
                 static_cast<long>(ps.numel()),
                 o.optimizer.c_str(), o.lr, static_cast<long>(o.batch), o.l2, cfg.dropout, policy_name(o.policy),
                 o.threads, o.device.c_str(), precision_name(o.precision).data());
  if (log && o.comm)
    std::fprintf(log, "data-parallel: world size %d over %s%s%s\n", o.comm->size(), std::string(o.comm->engine()).c_str(),
                 o.deterministic ? ", deterministic" : "",
                 trainer.optimizer_on_device() ? ", gradients summed on the device" : "");

  std::mt19937_64 rng(o.seed);
  std::vector<size_t> order(tb.train.size());
  std::iota(order.begin(), order.end(), 0);
  SentimentTrainResult result;
  int64_t first_epoch = 1;
  if (!o.resume.empty()) {
    const std::map<std::string, std::string> meta = trainer.load_state(o.resume);
    first_epoch = meta_int(meta, "epoch", o.resume) + 1;
    restore_rng(rng, meta, o.resume);
    SYLVA_CHECK(first_epoch <= o.epochs, "[", "tree_lstm", "] ", o.resume, " is the state after epoch ", first_epoch - 1,
                "; --epochs ", o.epochs, " leaves nothing to train (give the total number of epochs)");
    result.best_epoch = static_cast<int>(meta_int(meta, "best.epoch", o.resume));
    for (auto [acc, name] : {std::pair{&result.best_dev, "dev"}, std::pair{&result.best_test, "test"}}) {
      const std::string k = std::string("best.") + name + ".";
      acc->fine_correct = meta_int(meta, k + "fine_correct", o.resume);
      acc->fine_total = meta_int(meta, k + "fine_total", o.resume);
      acc->binary_correct = meta_int(meta, k + "binary_correct", o.resume);
      acc->binary_total = meta_int(meta, k + "binary_total", o.resume);
    }
    if (log) std::fprintf(log, "resumed from %s after epoch %ld\n", o.resume.c_str(), static_cast<long>(first_epoch - 1));
  }
  Timer total;
  Profiler profiler;
  for (int64_t epoch = first_epoch; epoch <= o.epochs; ++epoch) {
    if (o.profile) {
      profiler.reset();
      trainer.executor().set_observer(profiler.observer());
    }
    // Each epoch shuffles the identity, so the data order is a function of
    // the RNG's state alone (what --save-state keeps).
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<GraphBatch> batches = batches_of(tb.train, order, o.batch);
    Timer timer, progress;
    double loss_sum = 0;
    int64_t sentences = 0;
    RankTally tally;
    for (size_t b = 0; b < batches.size(); ++b) {
      StepResult r = trainer.step(batches[b]);
      if (o.print_plans && log && epoch == first_epoch && b == 0)
        std::fprintf(log, "vertex plan of the cell:\n%sbatch plan of the first minibatch:\n%s",
                     trainer.executor().vertex_plan(model.hidden).to_text().c_str(),
                     trainer.executor().batch_plan(model.hidden).to_text().c_str());
      tally.add(r);
      loss_sum += r.loss;
      sentences += r.samples;
      if (log && (progress.seconds() >= o.progress_seconds || b + 1 == batches.size())) {
        double rate = timer.rate(static_cast<double>(sentences));
        double left = rate > 0 ? static_cast<double>(tb.train.size() - static_cast<size_t>(sentences)) / rate : 0;
        std::fprintf(log, "epoch %ld batch %zu/%zu loss/tree %.4f | %.1f sent/s | epoch ETA %s\n",
                     static_cast<long>(epoch), b + 1, batches.size(), loss_sum / static_cast<double>(sentences), rate,
                     format_duration(left).c_str());
        std::fflush(log);
        progress.reset();
      }
    }
    double train_s = timer.seconds();
    trainer.executor().set_observer({});  // evaluation is not profiled
    if (o.profile && log) {
      profiler.add_wall_time(train_s);
      std::fprintf(log, "profile of epoch %ld (training steps only):\n%s", static_cast<long>(epoch),
                   profiler.report().c_str());
    }
    if (o.profile && o.comm) print_rank_balance(*o.comm, tally, "tree_lstm", log);
    trainer.sync_parameters();  // the ParameterSet is current after each epoch (a device keeps them otherwise)
    RootAccuracy dev = evaluate(trainer, model, tb.dev);
    RootAccuracy test = evaluate(trainer, model, tb.test);
    bool best = result.best_epoch == 0 || dev.fine() > result.best_dev.fine();
    if (best) {
      result.best_epoch = static_cast<int>(epoch);
      result.best_dev = dev;
      result.best_test = test;
      if (!o.checkpoint.empty() && rank0) save_checkpoint(ps, o.checkpoint, {{"epoch", std::to_string(epoch)}});
    }
    if (!o.save_state.empty()) {
      std::map<std::string, std::string> meta{{"epoch", std::to_string(epoch)}, {"data.rng", rng_text(rng)},
                                              {"best.epoch", std::to_string(result.best_epoch)}};
      for (auto [acc, name] : {std::pair{&result.best_dev, "dev"}, std::pair{&result.best_test, "test"}}) {
        const std::string k = std::string("best.") + name + ".";
        meta[k + "fine_correct"] = std::to_string(acc->fine_correct);
        meta[k + "fine_total"] = std::to_string(acc->fine_total);
        meta[k + "binary_correct"] = std::to_string(acc->binary_correct);
        meta[k + "binary_total"] = std::to_string(acc->binary_total);
      }
      trainer.save_state(o.save_state, meta);  // data-parallel: rank 0 writes
    }
    if (log) {
      std::fprintf(log, "epoch %ld done in %s (%.1f sent/s) | dev root fine %.2f%% binary %.2f%%%s\n",
                   static_cast<long>(epoch), format_duration(train_s).c_str(), static_cast<double>(sentences) / train_s,
                   100 * dev.fine(), 100 * dev.binary(), best ? " (best so far)" : "");
      std::fflush(log);
    }
  }
  result.seconds = total.seconds();
  return result;
}

}  // namespace sylva::examples
