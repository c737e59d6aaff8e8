// Tree-LSTM training throughput (sentences/s) on SST: Bfs vs Serial
// batching at several batch sizes, same model, same data, same thread
// count, measured in one run. Repeats each point and reports the median
// and the spread (min..max); the ratio is median(Bfs) / median(Serial).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <random>

#include "example_util.h"
#include "tree_lstm_model.h"
#include "treebank.h"

using namespace sylva;
using namespace sylva::examples;

namespace {

struct Point {
  int64_t batch;
  BatchingPolicy policy;
  Series rates;  // sentences/s per repeat
};

// Trains on `sentences` trees in minibatches of `batch`; returns sentences/s.
double measure(const Treebank& tb, const TreeLstmConfig& cfg, BatchingPolicy policy, int64_t batch, size_t sentences,
               int threads, uint64_t seed) {
  ParameterSet ps(cfg.dtype, seed);
  add_tree_lstm_params(ps, cfg);
  TreeLstmModel model(ps, cfg);
  Trainer trainer(model.program, ps, model.loss, Adagrad({.lr = 0.05}),
                  {.executor = {.policy = policy, .seed = seed, .threads = threads}, .weight_decay = 1e-4});
  std::vector<GraphBatch> batches;
  for (size_t b = 0; b < sentences; b += static_cast<size_t>(batch)) {
    std::vector<const InputGraph*> ptrs;
    for (size_t i = b; i < std::min(sentences, b + static_cast<size_t>(batch)); ++i) ptrs.push_back(&tb.train[i]);
    batches.emplace_back(std::move(ptrs));
  }
  trainer.step(batches.front());  // warm-up: arenas and optimizer state are allocated once
  Timer t;
  for (const GraphBatch& b : batches) trainer.step(b);
  return static_cast<double>(sentences) / t.seconds();
}

}  // namespace

int main(int argc, char** argv) {
  std::string data, csv;
  std::vector<int64_t> batch_sizes{1, 25, 64, 256};
  int64_t dim = 300, hidden = 150, sentences = 512, repeats = 3;
  int threads = 1;
  CLI::App app{"Tree-LSTM training throughput on SST: Bfs vs Serial batching"};
  app.add_option("--data", data, "SST directory (default: $SYLVA_DATA/sst or shared/data/sst; synthetic if absent)");
  app.add_option("--batch", batch_sizes, "Batch sizes")->capture_default_str();
  app.add_option("--dim", dim, "Word vector size")->capture_default_str();
  app.add_option("--hidden", hidden, "Tree-LSTM memory size")->capture_default_str();
  app.add_option("--sentences", sentences, "Training sentences per measurement")->capture_default_str();
  app.add_option("--repeats", repeats, "Repeats per point (median reported)")->capture_default_str();
  app.add_option("--threads", threads, "Threads for GEMMs")->capture_default_str();
  app.add_option("--csv", csv, "Also write the raw measurements here");
  CLI11_PARSE(app, argc, argv);

  try {
    std::vector<std::string> looked;
    std::string dir = find_sst(data, looked);
    Treebank tb = dir.empty() ? synthetic_treebank(1, static_cast<int>(sentences), 1, 1) : load_sst(dir);
    // A fixed, shuffled subset so every point sees the same sentences.
    std::mt19937_64 rng(42);
    std::shuffle(tb.train.begin(), tb.train.end(), rng);
    size_t n = std::min<size_t>(static_cast<size_t>(sentences), tb.train.size());
    TreeLstmConfig cfg{.vocab = tb.vocab.size(), .dim = dim, .hidden = hidden};
    std::printf("Tree-LSTM training, data %s, %zu sentences per run, d=%ld h=%ld, %d thread(s), %ld repeats\n",
                tb.source.c_str(), n, static_cast<long>(dim), static_cast<long>(hidden), threads,
                static_cast<long>(repeats));
    std::vector<Point> points;
    for (int64_t b : batch_sizes)
      for (BatchingPolicy p : {BatchingPolicy::Serial, BatchingPolicy::Bfs}) points.push_back({b, p, {}});
    // Interleave repeats so slow drift of the machine hits every point alike.
    for (int64_t r = 0; r < repeats; ++r)
      for (Point& pt : points) {
        pt.rates.values.push_back(measure(tb, cfg, pt.policy, pt.batch, n, threads, 7));
        std::fprintf(stderr, "  repeat %ld batch %ld %s: %.1f sent/s\n", static_cast<long>(r + 1),
                     static_cast<long>(pt.batch), policy_name(pt.policy), pt.rates.values.back());
      }
    std::printf("\n| batch | serial sent/s (min..max) | bfs sent/s (min..max) | bfs / serial |\n|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < points.size(); i += 2) {
      const Point &s = points[i], &b = points[i + 1];
      std::printf("| %ld | %s | %s | %.2fx |\n", static_cast<long>(s.batch), s.rates.summary().c_str(),
                  b.rates.summary().c_str(), b.rates.median() / s.rates.median());
    }
    if (!csv.empty()) {
      std::ofstream out(csv);
      out << "batch,policy,repeat,sentences_per_s\n";
      for (const Point& pt : points)
        for (size_t r = 0; r < pt.rates.values.size(); ++r)
          out << pt.batch << ',' << policy_name(pt.policy) << ',' << r + 1 << ',' << pt.rates.values[r] << '\n';
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
