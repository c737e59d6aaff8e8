#include "lm_example.h"

#include <CLI/CLI.hpp>

#include <cstdio>

#include "lm_training.h"
#include "ptb.h"

namespace sylva::examples {

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
  app.add_option("--data", data, "PTB directory with ptb.{train,valid,test}.txt (default: $SYLVA_DATA/ptb or shared/data/ptb)");
  app.add_option("--layers", o.model.layers, "LSTM layers")->capture_default_str();
  app.add_option("--embed", o.model.embed, "Word embedding size")->capture_default_str();
  app.add_option("--hidden", o.model.hidden, "LSTM hidden size")->capture_default_str();
  app.add_option("--dropout", o.model.dropout, "Dropout on embeddings, between layers and before the softmax")
      ->capture_default_str();
  app.add_option("--init-scale", o.model.init_scale, "Parameters ~ U(-s, s)")->capture_default_str();
  if (fixed) app.add_option("--length", length, "Tokens per chain")->capture_default_str();
  app.add_option("--batch", o.batch, fixed ? "Chains per minibatch" : "Sentences per minibatch")->capture_default_str();
  app.add_option("--epochs", o.epochs, "Epochs")->capture_default_str();
  app.add_option("--lr", o.lr, "SGD learning rate")->capture_default_str();
  app.add_option("--lr-decay", o.lr_decay, "Learning-rate factor per epoch after --decay-after")->capture_default_str();
  app.add_option("--decay-after", o.decay_after, "Epochs at the full learning rate")->capture_default_str();
  app.add_option("--clip", o.clip, "Global gradient-norm clipping (0 = off)")->capture_default_str();
  app.add_option("--policy", policy, "Batching policy: bfs | serial")->capture_default_str();
  app.add_option("--threads", o.threads, "Threads for GEMMs")->capture_default_str();
  app.add_option("--device", o.device, "cpu | cuda | cuda:N")->capture_default_str();
  app.add_option("--seed", o.seed, "Random seed (initialisation, shuffling, dropout)")->capture_default_str();
  app.add_option("--max-batches", o.max_batches, "Minibatches per epoch (0 = the whole training set)")
      ->capture_default_str();
  app.add_option("--max-train", max_train, "Use only the first N training samples (0 = all)")->capture_default_str();
  app.add_option("--checkpoint", o.checkpoint, "Write the parameters here after every epoch (safetensors)");
  app.add_option("--progress-seconds", o.progress_seconds, "Seconds between progress lines")->capture_default_str();
  app.add_flag("--float64", float64, "Compute in float64");
  app.add_flag("--profile", o.profile, "Print where the training time goes after every epoch");
  app.add_flag("--check-numerics", o.check_numerics,
               "Stop at the first NaN or infinity, naming the op, the vertex and the step (slower)");
  CLI11_PARSE(app, argc, argv);
  try {
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
  }
}

}  // namespace sylva::examples
