#include "lm_example.h"

#include <CLI/CLI.hpp>

#include <cstdio>

#include "command_line.h"
#include "example_util.h"
#include "optimisation_flags.h"
#include "lm_training.h"
#include "ptb.h"

namespace sylva::examples {

using namespace cli;

int lm_example_main(int argc, char** argv, LmSamples samples) {
  const bool fixed = samples == LmSamples::stream;
  LmTrainOptions o;
  o.name = fixed ? "fixed_lstm" : "var_lstm";
  std::string data, policy = "bfs";
  int32_t length = 64;
  int64_t max_train = 0;
  bool float64 = false;
  CLI::App app{fixed ? "Fixed-LSTM language model on PTB: the token stream cut into fixed-length chains (Cavs)"
                     : "Var-LSTM language model on PTB: one variable-length chain per sentence, no padding"};
  app.add_option("--data", data, "PTB directory with ptb.{train,valid,test}.txt (default: $SYLVA_DATA/ptb or shared/data/ptb)")
      ->check(CLI::ExistingDirectory);
  app.add_option("--layers", o.model.layers, "LSTM layers")->check(kPositive)->capture_default_str();
  app.add_option("--embed", o.model.embed, "Word embedding size")->check(kPositive)->capture_default_str();
  app.add_option("--hidden", o.model.hidden, "LSTM hidden size")->check(kPositive)->capture_default_str();
  app.add_option("--dropout", o.model.dropout, "Dropout on embeddings, between layers and before the softmax")
      ->check(kProbability)->capture_default_str();
  app.add_option("--init-scale", o.model.init_scale, "Parameters ~ U(-s, s)")->check(kPositive)
      ->capture_default_str();
  if (fixed)
    app.add_option("--length", length, "Tokens per chain (at least 2: each predicts the next)")
        ->check(CLI::Range(2, 1 << 20))->capture_default_str();
  app.add_option("--batch", o.batch, fixed ? "Chains per minibatch" : "Sentences per minibatch")
      ->check(kPositive)->capture_default_str();
  app.add_option("--epochs", o.epochs, "Epochs")->check(kPositive)->capture_default_str();
  app.add_option("--lr", o.lr, "SGD learning rate")->check(kPositive)->capture_default_str();
  app.add_option("--lr-decay", o.lr_decay, "Learning-rate factor per epoch after --decay-after")
      ->check(kPositive)->capture_default_str();
  app.add_option("--decay-after", o.decay_after, "Epochs at the full learning rate")->check(kNonNegative)
      ->capture_default_str();
  app.add_option("--clip", o.clip, "Global gradient-norm clipping (0 = off)")->check(kNonNegative)
      ->capture_default_str();
  add_policy_flag(app, policy);
  add_threads_flag(app, o.threads);
  add_device_flag(app, o.device);
  app.add_option("--seed", o.seed, "Random seed (initialisation, shuffling, dropout)")->capture_default_str();
  app.add_option("--max-batches", o.max_batches, "Minibatches per epoch (0 = the whole training set)")
      ->check(kNonNegative)->capture_default_str();
  app.add_option("--max-train", max_train, "Use only the first N training samples (0 = all)")
      ->check(kNonNegative)->capture_default_str();
  app.add_option("--checkpoint", o.checkpoint, "Write the parameters here after every epoch (safetensors)")
      ->check(kWritablePath);
  app.add_option("--save-state", o.save_state,
                 "Write everything --resume needs here after every epoch (parameters, optimiser, data order)")
      ->check(kWritablePath);
  app.add_option("--resume", o.resume, "Continue from a --save-state file with the epoch after it")
      ->check(CLI::ExistingFile);
  app.add_option("--progress-seconds", o.progress_seconds, "Seconds between progress lines")
      ->check(kNonNegative)->capture_default_str();
  app.add_flag("--float64", float64, "Compute in float64");
  app.add_flag("--profile", o.profile, "Print where the training time goes after every epoch");
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
    o.model.dtype = float64 ? DType::f64 : DType::f32;
    std::vector<std::string> looked;
    const std::string dir = find_ptb(data, looked);
    if (dir.empty()) {
      std::fprintf(stderr, "error: PTB not found; looked in:\n");
      for (const std::string& l : looked) std::fprintf(stderr, "  %s\n", l.c_str());
      std::fprintf(stderr, "(set --data DIR or SYLVA_DATA)\n");
      return 1;
    }
    std::printf("loading PTB from %s\n", dir.c_str());
    PtbCorpus ptb = load_ptb(dir);
    o.model.vocab = ptb.vocab.size();
    const int32_t eos = ptb.vocab.id("<eos>");
    LmData d;
    auto make = [&](const std::vector<Sentence>& s, const char* file) {
      return fixed ? stream_chains(s, length, ptb.vocab.size(), file)
                   : sentence_chains(s, eos, ptb.vocab.size(), file);
    };
    d.train = make(ptb.train, "ptb.train.txt");
    d.valid = make(ptb.valid, "ptb.valid.txt");
    d.test = make(ptb.test, "ptb.test.txt");
    if (max_train > 0 && static_cast<size_t>(max_train) < d.train.size()) d.train.resize(static_cast<size_t>(max_train));
    std::printf("data: vocab %d | train %zu sentences, %ld tokens -> %zu chains | valid %zu chains | test %zu chains\n",
                ptb.vocab.size(), ptb.train.size(), static_cast<long>(count_tokens(ptb.train)), d.train.size(),
                d.valid.size(), d.test.size());
    LmTrainResult r = train_lm(d, o, stdout);
    std::printf("%s: test perplexity %.2f after %ld epochs | valid %.2f | %.0f words/s in the last epoch | total %s\n",
                o.name.c_str(), r.test_ppl, static_cast<long>(o.epochs), r.epochs.back().valid_ppl,
                r.epochs.back().words_per_second, format_duration(r.seconds).c_str());
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "error: out of memory\n");
    return 1;
  }
}

}  // namespace sylva::examples
