// Tree-LSTM sentiment classification on the Stanford Sentiment Treebank
// (Tai et al. 2015, binary constituency Tree-LSTM, softmax at every node).
// Without SST it says where it looked and trains on a synthetic treebank.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>

#include "sentiment_eval.h"
#include "tree_lstm_model.h"
#include "treebank.h"

using namespace sylva;
using namespace sylva::examples;

namespace {

struct Flags {
  std::string data, optimizer = "adagrad", policy = "bfs", checkpoint;
  int64_t dim = 300, hidden = 150, batch = 25, epochs = 10, max_train = 0, threads = 1;
  double lr = 0.05, l2 = 1e-4, dropout = 0.5, emb_dropout = 0.0, emb_lr_scale = 1.0, clip = 0.0;
  double progress_seconds = 5.0;
  uint64_t seed = 1;
  bool synthetic = false, float64 = false;
};

std::string hms(double s) {
  char buf[32];
  int t = static_cast<int>(s);
  std::snprintf(buf, sizeof buf, "%dm%02ds", t / 60, t % 60);
  return buf;
}

std::unique_ptr<Optimizer> make_optimizer(const Flags& f) {
  if (f.optimizer == "adagrad") return std::make_unique<Adagrad>(AdagradOptions{.lr = f.lr});
  if (f.optimizer == "adam") return std::make_unique<Adam>(AdamOptions{.lr = f.lr});
  if (f.optimizer == "sgd") return std::make_unique<Sgd>(SgdOptions{.lr = f.lr});
  SYLVA_THROW("[tree_lstm] unknown optimizer '", f.optimizer, "' (adagrad, adam or sgd)");
}

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

int run(const Flags& f) {
  std::vector<std::string> looked;
  std::string sst = f.synthetic ? "" : find_sst(f.data, looked);
  Treebank tb;
  if (!sst.empty()) {
    std::printf("loading SST from %s\n", sst.c_str());
    tb = load_sst(sst);
  } else {
    if (!f.synthetic) {
      std::printf("SST not found; looked in:\n");
      for (const auto& l : looked) std::printf("  %s\n", l.c_str());
      std::printf("(set --data DIR or SYLVA_DATA). Training on a synthetic treebank instead.\n");
    }
    tb = synthetic_treebank(f.seed, 4000, 500, 500);
  }
  if (f.max_train > 0 && static_cast<size_t>(f.max_train) < tb.train.size()) tb.train.resize(static_cast<size_t>(f.max_train));
  std::printf("data: %s | train %zu dev %zu test %zu trees | vocab %d\n", tb.source.c_str(), tb.train.size(),
              tb.dev.size(), tb.test.size(), tb.vocab.size());

  TreeLstmConfig cfg{.vocab = tb.vocab.size(), .dim = f.dim, .hidden = f.hidden, .dropout = f.dropout,
                     .emb_dropout = f.emb_dropout, .dtype = f.float64 ? DType::f64 : DType::f32};
  ParameterSet ps(cfg.dtype, f.seed);
  add_tree_lstm_params(ps, cfg);
  ps["E"].lr_scale = f.emb_lr_scale;
  TreeLstmModel model(ps, cfg);
  Trainer trainer(model.program, ps, model.loss, make_optimizer(f),
                  {.policy = parse_policy(f.policy), .clip_norm = f.clip, .weight_decay = f.l2, .seed = f.seed,
                   .threads = static_cast<int>(f.threads)});
  std::printf("model: d=%ld h=%ld params=%ld | %s lr %g batch %ld l2 %g dropout %g | policy %s threads %ld\n",
              static_cast<long>(f.dim), static_cast<long>(f.hidden), static_cast<long>(ps.numel()),
              f.optimizer.c_str(), f.lr, static_cast<long>(f.batch), f.l2, f.dropout, f.policy.c_str(),
              static_cast<long>(f.threads));

  std::mt19937_64 rng(f.seed);
  std::vector<size_t> order(tb.train.size());
  std::iota(order.begin(), order.end(), 0);
  double best_dev = -1;
  int best_epoch = 0;
  RootAccuracy best_test;
  Timer total;
  for (int64_t epoch = 1; epoch <= f.epochs; ++epoch) {
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<GraphBatch> batches = batches_of(tb.train, order, f.batch);
    Timer timer, progress;
    double loss_sum = 0;
    int64_t sentences = 0;
    for (size_t b = 0; b < batches.size(); ++b) {
      StepResult r = trainer.step(batches[b]);
      loss_sum += r.loss;
      sentences += r.samples;
      if (progress.seconds() >= f.progress_seconds || b + 1 == batches.size()) {
        double rate = timer.rate(static_cast<double>(sentences));
        std::printf("epoch %ld batch %zu/%zu loss/tree %.4f | %.1f sent/s | epoch ETA %s\n", static_cast<long>(epoch),
                    b + 1, batches.size(), loss_sum / static_cast<double>(sentences), rate,
                    hms(rate > 0 ? static_cast<double>(tb.train.size() - static_cast<size_t>(sentences)) / rate : 0).c_str());
        std::fflush(stdout);
        progress.reset();
      }
    }
    double train_s = timer.seconds();
    RootAccuracy dev = evaluate(trainer, model, tb.dev);
    RootAccuracy test = evaluate(trainer, model, tb.test);
    bool best = dev.fine() > best_dev;
    if (best) {
      best_dev = dev.fine();
      best_epoch = static_cast<int>(epoch);
      best_test = test;
      if (!f.checkpoint.empty()) save_checkpoint(ps, f.checkpoint, {{"epoch", std::to_string(epoch)}});
    }
    std::printf("epoch %ld done in %s (%.1f sent/s) | dev root fine %.2f%% binary %.2f%%%s\n",
                static_cast<long>(epoch), hms(train_s).c_str(), static_cast<double>(sentences) / train_s,
                100 * dev.fine(), 100 * dev.binary(), best ? " (best so far)" : "");
    std::fflush(stdout);
  }
  std::printf("best dev epoch %d: test root fine-grained %.2f%% (%ld/%ld), binary %.2f%% (%ld/%ld) | total %s\n",
              best_epoch, 100 * best_test.fine(), static_cast<long>(best_test.fine_correct),
              static_cast<long>(best_test.fine_total), 100 * best_test.binary(),
              static_cast<long>(best_test.binary_correct), static_cast<long>(best_test.binary_total),
              hms(total.seconds()).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  CLI::App app{"Tree-LSTM sentiment classification (Tai et al. 2015) with Sylva"};
  app.add_option("--data", f.data, "SST directory with train.txt/dev.txt/test.txt (default: $SYLVA_DATA/sst or shared/data/sst)");
  app.add_flag("--synthetic", f.synthetic, "Train on the generated synthetic treebank even if SST exists");
  app.add_option("--dim", f.dim, "Word vector size d")->capture_default_str();
  app.add_option("--hidden", f.hidden, "Tree-LSTM memory size h")->capture_default_str();
  app.add_option("--batch", f.batch, "Sentences per minibatch")->capture_default_str();
  app.add_option("--epochs", f.epochs, "Epochs")->capture_default_str();
  app.add_option("--optimizer", f.optimizer, "adagrad | adam | sgd")->capture_default_str();
  app.add_option("--lr", f.lr, "Learning rate")->capture_default_str();
  app.add_option("--emb-lr-scale", f.emb_lr_scale, "Learning-rate multiplier of the embeddings")->capture_default_str();
  app.add_option("--l2", f.l2, "L2 weight decay (not on embeddings and biases)")->capture_default_str();
  app.add_option("--clip", f.clip, "Gradient-norm clipping (0 = off)")->capture_default_str();
  app.add_option("--dropout", f.dropout, "Dropout on the classifier input")->capture_default_str();
  app.add_option("--emb-dropout", f.emb_dropout, "Dropout on the word vectors")->capture_default_str();
  app.add_option("--policy", f.policy, "Batching policy: bfs | serial")->capture_default_str();
  app.add_option("--threads", f.threads, "Threads for GEMMs")->capture_default_str();
  app.add_option("--seed", f.seed, "Random seed")->capture_default_str();
  app.add_option("--max-train", f.max_train, "Use only the first N training trees (0 = all)")->capture_default_str();
  app.add_option("--checkpoint", f.checkpoint, "Write the best-dev parameters here (safetensors)");
  app.add_option("--progress-seconds", f.progress_seconds, "Seconds between progress lines")->capture_default_str();
  app.add_flag("--float64", f.float64, "Compute in float64");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(f);
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
