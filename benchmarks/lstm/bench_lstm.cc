// Var-LSTM and Fixed-LSTM language-model training throughput (words/s) on
// PTB: Bfs vs Serial batching at several batch and hidden sizes, same
// model, same data, same thread count, measured in one run. Each point is
// repeated (repeats interleaved over all points); the table reports the
// median and the spread (min..max), the ratio is median(Bfs) / median(Serial).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>

#include "example_util.h"
#include "lstm_lm.h"
#include "ptb.h"

using namespace sylva;
using namespace sylva::examples;

namespace {

struct Point {
  std::string model;  // var | fixed
  int64_t hidden, batch;
  BatchingPolicy policy;
  Series rates;  // words/s per repeat
};

// The first samples of `all` holding at least `words` predicted tokens and
// at least `min_samples` samples.
std::vector<InputGraph> take(const std::vector<InputGraph>& all, int64_t words, size_t min_samples) {
  std::vector<InputGraph> out;
  for (int64_t n = 0; (n < words || out.size() < min_samples) && out.size() < all.size();
       n += out.back().num_vertices())
    out.push_back(all[out.size()]);
  return out;
}

// SGD training (lr 1, clip 5, the var_lstm defaults) over `samples` in
// minibatches of `batch`; returns predicted words per second. The first
// minibatch is a warm-up (allocates arenas) and is not timed.
double measure(const std::vector<InputGraph>& samples, LstmLmConfig cfg, BatchingPolicy policy, int64_t batch,
               int threads) {
  ParameterSet ps(cfg.dtype, 1);
  add_lstm_lm_params(ps, cfg);
  LstmLm model(ps, cfg);
  Trainer trainer(model.program, ps, model.loss, Sgd{{.lr = 1.0}},
                  {.executor = {.policy = policy, .seed = 1, .threads = threads}, .clip_norm = 5.0});
  std::vector<GraphBatch> batches;
  for (size_t b = 0; b < samples.size(); b += static_cast<size_t>(batch))
    batches.push_back(GraphBatch::of(std::span(samples).subspan(b, std::min(samples.size() - b, static_cast<size_t>(batch)))));
  trainer.step(batches.front());
  int64_t words = 0;
  Timer t;
  for (const GraphBatch& b : batches) words += trainer.step(b).vertices;
  return static_cast<double>(words) / t.seconds();
}

}  // namespace

int main(int argc, char** argv) {
  std::string data, csv;
  std::vector<std::string> models{"var", "fixed"};
  std::vector<int64_t> batch_sizes{1, 16, 64, 128}, hiddens{200, 512};
  int64_t words = 4096, min_batches = 2, repeats = 3, layers = 2;
  int32_t length = 64;
  int threads = 1;
  CLI::App app{"Var-LSTM / Fixed-LSTM language-model training throughput on PTB: Bfs vs Serial batching"};
  app.add_option("--data", data, "PTB directory (default: $SYLVA_DATA/ptb or shared/data/ptb)");
  app.add_option("--models", models, "var (sentence chains) and/or fixed (stream chains)")->capture_default_str();
  app.add_option("--batch", batch_sizes, "Batch sizes (chains per minibatch)")->capture_default_str();
  app.add_option("--hidden", hiddens, "Hidden sizes (embedding size = hidden)")->capture_default_str();
  app.add_option("--layers", layers, "LSTM layers")->capture_default_str();
  app.add_option("--length", length, "Fixed-LSTM chain length")->capture_default_str();
  app.add_option("--words", words, "Training words per measurement")->capture_default_str();
  app.add_option("--min-batches", min_batches, "Minibatches per measurement, at least")->capture_default_str();
  app.add_option("--repeats", repeats, "Repeats per point (median reported)")->capture_default_str();
  app.add_option("--threads", threads, "Threads for GEMMs")->capture_default_str();
  app.add_option("--csv", csv, "Also write the raw measurements here");
  CLI11_PARSE(app, argc, argv);

  try {
    std::vector<std::string> looked;
    const std::string dir = find_ptb(data, looked);
    SYLVA_CHECK(!dir.empty(), "PTB not found (set --data or SYLVA_DATA); looked in ", looked.size(), " places, first ",
                looked.empty() ? "" : looked.front());
    PtbCorpus ptb = load_ptb(dir);
    // Var: a fixed shuffle of the training sentences, so every point sees
    // the same mix of lengths. Fixed: the start of the training stream.
    std::vector<Sentence> shuffled = ptb.train;
    std::mt19937_64 rng(42);
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    const std::vector<InputGraph> var_all =
        sentence_chains(shuffled, ptb.vocab.id("<eos>"), ptb.vocab.size(), "train");
    const std::vector<InputGraph> fixed_all = stream_chains(ptb.train, length, ptb.vocab.size(), "train");
    std::printf("LSTM LM training on PTB (%s), vocab %d, %ld layers, >= %ld words and >= %ld minibatches per run, "
                "SGD lr 1 clip 5, %d thread(s), %ld repeats\n",
                dir.c_str(), ptb.vocab.size(), static_cast<long>(layers), static_cast<long>(words),
                static_cast<long>(min_batches), threads, static_cast<long>(repeats));
    std::vector<Point> points;
    for (const std::string& m : models) {
      SYLVA_CHECK(m == "var" || m == "fixed", "unknown model '", m, "' (var or fixed)");
      for (int64_t h : hiddens)
        for (int64_t b : batch_sizes)
          for (BatchingPolicy p : {BatchingPolicy::Serial, BatchingPolicy::Bfs}) points.push_back({m, h, b, p, {}});
    }
    for (int64_t r = 0; r < repeats; ++r)
      for (Point& pt : points) {
        LstmLmConfig cfg{.vocab = ptb.vocab.size(), .embed = pt.hidden, .hidden = pt.hidden, .layers = layers};
        const std::vector<InputGraph> samples = take(pt.model == "var" ? var_all : fixed_all, words,
                                                     static_cast<size_t>(min_batches * pt.batch));
        pt.rates.values.push_back(measure(samples, cfg, pt.policy, pt.batch, threads));
        std::fprintf(stderr, "  repeat %ld %s-lstm h=%ld batch %ld %s: %.0f words/s\n", static_cast<long>(r + 1),
                     pt.model.c_str(), static_cast<long>(pt.hidden), static_cast<long>(pt.batch),
                     policy_name(pt.policy), pt.rates.values.back());
      }
    std::printf("\n| model | h | batch | serial words/s (min..max) | bfs words/s (min..max) | bfs / serial |\n"
                "|---|---:|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < points.size(); i += 2) {
      const Point &s = points[i], &b = points[i + 1];
      std::printf("| %s-lstm | %ld | %ld | %s | %s | %.2fx |\n", s.model.c_str(), static_cast<long>(s.hidden),
                  static_cast<long>(s.batch), s.rates.summary(0).c_str(), b.rates.summary(0).c_str(),
                  b.rates.median() / s.rates.median());
    }
    if (!csv.empty()) {
      std::ofstream out(csv);
      out << "model,hidden,batch,policy,repeat,words_per_s\n";
      for (const Point& pt : points)
        for (size_t r = 0; r < pt.rates.values.size(); ++r)
          out << pt.model << ',' << pt.hidden << ',' << pt.batch << ',' << policy_name(pt.policy) << ',' << r + 1 << ','
              << pt.rates.values[r] << '\n';
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
