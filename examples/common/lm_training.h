// The LSTM language-model training loop shared by the var_lstm and
// fixed_lstm examples and the benchmarks: SGD with Zaremba et al.'s
// learning-rate schedule, gradient-norm clipping, validation perplexity
// every epoch and test perplexity at the end.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "example_util.h"
#include "lstm_lm.h"

namespace sylva::examples {

/// Samples (chains with "words" and "labels" ids) of each split.
struct LmData {
  std::vector<InputGraph> train, valid, test;
};

struct LmTrainOptions {
  LstmLmConfig model;  // vocab must be set
  double lr = 1.0;
  /// lr of epoch e (1-based) = lr · lr_decay^max(e - decay_after, 0).
  double lr_decay = 0.5;
  int64_t decay_after = 4;
  double clip = 5.0;  // global gradient-norm clip; 0 = off
  int64_t batch = 20;
  int64_t epochs = 13;
  int64_t max_batches = 0;  // per epoch; 0 = the whole training set
  int64_t eval_batch = 64;
  BatchingPolicy policy = BatchingPolicy::Bfs;
  int threads = 1;
  std::string device = "cpu";  // cpu | cuda | cuda:N (Device::parse)
  uint64_t seed = 1;
  std::string checkpoint;  // written (atomically) after every epoch if set
  /// Trainer::save_state after every epoch (parameters, optimiser, step,
  /// epoch, shuffling RNG) if set; `resume` continues from such a file with
  /// the epoch after it, exactly as the saving run would have.
  std::string save_state;
  std::string resume;
  double progress_seconds = 10.0;
  bool profile = false;  // print where the training time went after every epoch (sylva::Profiler)
  bool check_numerics = false;  // stop at the first NaN/infinity with its op and vertex (ExecutorOptions)
  Optimisations optimisations = Optimisations::all();  // ExecutorOptions::optimisations (--no-* ablations)
  Precision precision = Precision::fp32;               // ExecutorOptions::precision (--precision)
  std::string name = "lm";  // prefixes log lines
  /// Data-parallel training (docs/distributed.md): every rank calls train_lm
  /// with the same options; rank 0 logs and writes the checkpoint. null:
  /// this process alone.
  dist::Communicator* comm = nullptr;
  bool deterministic = false;  // DataParallelOptions::deterministic
  bool overlap = true;         // DataParallelOptions::overlap
};

struct LmEpoch {
  int64_t epoch = 0;
  double lr = 0, train_ppl = 0, valid_ppl = 0, seconds = 0, words_per_second = 0;
};

struct LmTrainResult {
  std::vector<LmEpoch> epochs;
  double test_ppl = 0;
  double seconds = 0;  // all of it, evaluation included
};

/// Learning rate of 1-based `epoch` under `o`'s schedule.
double lm_learning_rate(const LmTrainOptions& o, int64_t epoch);

/// Trains on data.train (shuffled every epoch), reports validation
/// perplexity after every epoch and test perplexity of the final
/// parameters. Progress goes to `log` (nullptr: silent).
LmTrainResult train_lm(const LmData& data, const LmTrainOptions& o, std::FILE* log);

/// exp(total loss / predicted tokens) of the trainer's model on `samples`,
/// in evaluation mode (no dropout), in batches of `batch` samples.
double perplexity(Trainer& trainer, const std::vector<InputGraph>& samples, int64_t batch);

}  // namespace sylva::examples
