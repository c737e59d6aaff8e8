// The Tree-LSTM sentiment training loop shared by the example and the slow
// accuracy test: minibatch training, per-epoch dev evaluation, test
// accuracy of the best-dev epoch, optional checkpoint.
#pragma once

#include <cstdio>
#include <string>

#include "sentiment_eval.h"
#include "tree_lstm_model.h"
#include "treebank.h"

namespace sylva::examples {

struct SentimentTrainOptions {
  TreeLstmConfig model;  // vocab is taken from the treebank
  std::string optimizer = "adagrad";  // adagrad | adam | sgd
  double lr = 0.05;
  double emb_lr_scale = 1.0;
  double l2 = 1e-4;
  double clip = 0.0;
  int64_t batch = 25;
  int64_t epochs = 10;
  BatchingPolicy policy = BatchingPolicy::Bfs;
  int threads = 1;
  std::string device = "cpu";  // cpu | cuda | cuda:N (Device::parse)
  uint64_t seed = 1;
  std::string checkpoint;        // written at every new best dev epoch if set
  /// Trainer::save_state after every epoch (parameters, optimiser, step,
  /// epoch, shuffling RNG, best epoch so far) if set; `resume` continues
  /// from such a file with the epoch after it, exactly as the saving run
  /// would have.
  std::string save_state;
  std::string resume;
  double progress_seconds = 5.0;
  bool profile = false;  // print where the training time went after every epoch
  bool check_numerics = false;  // stop at the first NaN/infinity with its op and vertex (ExecutorOptions)
  bool print_plans = false;  // print the cell's vertex plan and the first minibatch's batch plan
  Optimisations optimisations = Optimisations::all();  // ExecutorOptions::optimisations (--no-* ablations)
  Precision precision = Precision::fp32;               // ExecutorOptions::precision (--precision)
  /// Data-parallel training (docs/distributed.md): every rank calls
  /// train_sentiment with the same options; rank 0 logs and writes the
  /// checkpoint. null: this process alone.
  dist::Communicator* comm = nullptr;
  bool deterministic = false;  // DataParallelOptions::deterministic
  bool overlap = true;         // DataParallelOptions::overlap
};

struct SentimentTrainResult {
  int best_epoch = 0;
  RootAccuracy best_dev, best_test;
  double seconds = 0.0;
};

/// Trains on tb.train, evaluates dev and test after every epoch and
/// returns the test accuracy of the epoch with the best dev fine-grained
/// root accuracy. Progress goes to `log` (nullptr: silent).
SentimentTrainResult train_sentiment(const Treebank& tb, const SentimentTrainOptions& o, std::FILE* log);

}  // namespace sylva::examples
