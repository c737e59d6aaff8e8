// Tree-LSTM sentiment classification on the Stanford Sentiment Treebank
// (Tai et al. 2015, binary constituency Tree-LSTM, softmax at every node).
// Without SST it says where it looked and trains on a synthetic treebank.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "command_line.h"
#include "example_util.h"
#include "optimisation_flags.h"
#include "sentiment_training.h"

using namespace sylva;
using namespace sylva::examples;
using namespace sylva::cli;

int main(int argc, char** argv) {
  SentimentTrainOptions o;
  std::string data, policy = "bfs", cell = "tai";
  int64_t max_train = 0;
  bool synthetic = false, float64 = false;
  CLI::App app{"Tree-LSTM sentiment classification (Tai et al. 2015) with Sylva"};
  app.add_option("--data", data, "SST directory with train.txt/dev.txt/test.txt (default: $SYLVA_DATA/sst or shared/data/sst)")
      ->check(CLI::ExistingDirectory);
  app.add_flag("--synthetic", synthetic, "Train on the generated synthetic treebank even if SST exists");
  app.add_option("--dim", o.model.dim, "Word vector size d")->check(kPositive)->capture_default_str();
  app.add_option("--hidden", o.model.hidden, "Tree-LSTM memory size h")->check(kPositive)->capture_default_str();
  app.add_option("--cell", cell, "tai (Tai et al.'s five gates) | dynet (the DyNet benchmarks' cell: three gates, "
                 "one forget gate per child from its h)")->check(CLI::IsMember({"tai", "dynet"}))->capture_default_str();
  app.add_option("--batch", o.batch, "Sentences per minibatch")->check(kPositive)->capture_default_str();
  app.add_option("--epochs", o.epochs, "Epochs")->check(kPositive)->capture_default_str();
  add_optimizer_flag(app, o.optimizer);
  app.add_option("--lr", o.lr, "Learning rate")->check(kPositive)->capture_default_str();
  app.add_option("--emb-lr-scale", o.emb_lr_scale, "Learning-rate multiplier of the embeddings")
      ->check(kNonNegative)->capture_default_str();
  app.add_option("--l2", o.l2, "L2 weight decay (not on embeddings and biases)")->check(kNonNegative)
      ->capture_default_str();
  app.add_option("--clip", o.clip, "Gradient-norm clipping (0 = off)")->check(kNonNegative)
      ->capture_default_str();
  app.add_option("--dropout", o.model.dropout, "Dropout on the classifier input")->check(kProbability)
      ->capture_default_str();
  app.add_option("--emb-dropout", o.model.emb_dropout, "Dropout on the word vectors")->check(kProbability)
      ->capture_default_str();
  add_policy_flag(app, policy);
  add_threads_flag(app, o.threads);
  add_device_flag(app, o.device);
  app.add_option("--seed", o.seed, "Random seed")->capture_default_str();
  app.add_option("--max-train", max_train, "Use only the first N training trees (0 = all)")
      ->check(kNonNegative)->capture_default_str();
  app.add_option("--checkpoint", o.checkpoint, "Write the best-dev parameters here (safetensors)")->check(kWritablePath);
  app.add_option("--save-state", o.save_state,
                 "Write everything --resume needs here after every epoch (parameters, optimiser, data order)")
      ->check(kWritablePath);
  app.add_option("--resume", o.resume, "Continue from a --save-state file with the epoch after it")
      ->check(CLI::ExistingFile);
  app.add_option("--progress-seconds", o.progress_seconds, "Seconds between progress lines")
      ->check(kNonNegative)->capture_default_str();
  app.add_flag("--float64", float64, "Compute in float64");
  app.add_flag("--profile", o.profile, "Print where the training time goes after every epoch");
  app.add_flag("--print-plans", o.print_plans,
               "After the first step, print the cell's vertex plan and the first minibatch's batch plan");
  app.add_flag("--check-numerics", o.check_numerics,
               "Stop at the first NaN or infinity, naming the op, the vertex and the step (slower)");
  DistributedFlags distributed;
  add_distributed_flags(app, distributed);
  const OptimisationFlags ablation(app);
  if (const int rc = parse_command_line(app, argc, argv); rc >= 0) return rc;
  try {
    o.optimisations = ablation.chosen();
    o.precision = ablation.precision();
    const std::unique_ptr<dist::Communicator> comm = make_communicator(distributed.distributed);  // rank 0 prints
    o.comm = comm.get();
    o.deterministic = distributed.deterministic;
    o.overlap = distributed.overlap;
    o.policy = parse_policy(policy);
    o.model.cell = parse_tree_lstm_cell(cell);
    o.model.dtype = float64 ? DType::f64 : DType::f32;
    std::vector<std::string> looked;
    std::string sst = synthetic ? "" : find_sst(data, looked);
    Treebank tb;
    if (!sst.empty()) {
      std::printf("loading SST from %s\n", sst.c_str());
      tb = load_sst(sst);
    } else {
      if (!synthetic) {
        std::printf("SST not found; looked in:\n");
        for (const auto& l : looked) std::printf("  %s\n", l.c_str());
        std::printf("(set --data DIR or SYLVA_DATA). Training on a synthetic treebank instead.\n");
      }
      tb = synthetic_treebank(o.seed, 4000, 500, 500);
    }
    if (max_train > 0 && static_cast<size_t>(max_train) < tb.train.size()) tb.train.resize(static_cast<size_t>(max_train));
    std::printf("data: %s | train %zu dev %zu test %zu trees | vocab %d\n", tb.source.c_str(), tb.train.size(),
                tb.dev.size(), tb.test.size(), tb.vocab.size());
    SentimentTrainResult r = train_sentiment(tb, o, stdout);
    const RootAccuracy& t = r.best_test;
    std::printf("best dev epoch %d: test root fine-grained %.2f%% (%ld/%ld), binary %.2f%% (%ld/%ld) | total %dm%02ds\n",
                r.best_epoch, 100 * t.fine(), static_cast<long>(t.fine_correct), static_cast<long>(t.fine_total),
                100 * t.binary(), static_cast<long>(t.binary_correct), static_cast<long>(t.binary_total),
                static_cast<int>(r.seconds) / 60, static_cast<int>(r.seconds) % 60);
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "error: out of memory\n");
    return 1;
  }
}
