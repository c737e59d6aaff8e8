#include "models.h"

#include <random>

#include "lstm_lm.h"
#include "tree_lstm_model.h"
#include "treebank.h"
#include "support/test_util.h"

namespace sylva::mpi_test {

ModelCase make_model(const std::string& name, uint64_t seed, int samples, uint64_t init_seed) {
  ModelCase m;
  m.name = name;
  m.ps = std::make_unique<ParameterSet>(DType::f64, init_seed != 0 ? init_seed : seed);
  std::mt19937_64 rng(seed * 31 + 5);
  if (name == "tree_lstm") {
    examples::Treebank bank = examples::synthetic_treebank(seed, samples, 0, 0);
    examples::TreeLstmConfig cfg{.vocab = static_cast<int64_t>(bank.vocab.size()), .dim = 6, .hidden = 5, .classes = 5, .dropout = 0.25,
                                 .dtype = DType::f64};
    examples::add_tree_lstm_params(*m.ps, cfg);
    auto model = std::make_shared<examples::TreeLstmModel>(*m.ps, cfg);
    m.program = model->program;
    m.loss = model->loss;
    m.keep = model;
    m.data = std::move(bank.train);
  } else if (name == "var_lstm") {
    constexpr int32_t vocab = 30;
    examples::LstmLmConfig cfg{.vocab = vocab, .embed = 6, .hidden = 5, .layers = 2, .dropout = 0.2, .dtype = DType::f64};
    examples::add_lstm_lm_params(*m.ps, cfg);
    auto model = std::make_shared<examples::LstmLm>(*m.ps, cfg);
    m.program = model->program;
    m.loss = model->loss;
    m.keep = model;
    for (int s = 0; s < samples; ++s) {
      const auto len = static_cast<int32_t>(1 + rng() % 12);
      InputGraph g = InputGraph::chain(len, "chain " + std::to_string(s));
      std::vector<int32_t> words(static_cast<size_t>(len)), labels(static_cast<size_t>(len));
      for (auto& w : words) w = static_cast<int32_t>(rng() % vocab);
      for (int32_t v = 0; v < len; ++v)
        labels[static_cast<size_t>(v)] = v + 1 < len ? words[static_cast<size_t>(v) + 1] : -1;
      g.set_ids("words", words);
      g.set_ids("labels", labels);
      m.data.push_back(std::move(g));
    }
  } else if (name == "dag") {
    constexpr int64_t vocab = 20, d = 4, h = 6, classes = 3;
    ParameterSet& ps = *m.ps;
    ps.add("E", {vocab, d}, Init::uniform(-0.5, 0.5));
    ps.add("W", {d + h, h}, Init::glorot());
    ps.add("b", {h}, Init::zeros()).decay = false;
    ps.add("Ws", {h, classes}, Init::glorot());
    VertexFunction f("dag", h, DType::f64);
    Symbol hv = tanh(matmul(concat({f.pull(d), f.gather_reduce()}), f.param(ps["W"])) + f.param(ps["b"]));
    f.scatter(hv);
    f.push(hv);
    Symbol hs = m.program.apply(f, lookup(m.program.param(ps["E"]), m.program.input_ids("x")));
    m.loss = softmax_cross_entropy(matmul(hs, m.program.param(ps["Ws"])), m.program.input_ids("labels"));
    for (int s = 0; s < samples; ++s) {
      InputGraph g = random_dag(rng, static_cast<int32_t>(1 + rng() % 15), 3, "dag " + std::to_string(s));
      test::attach_random_ids(rng, g, static_cast<int32_t>(vocab), static_cast<int32_t>(classes));
      m.data.push_back(std::move(g));
    }
  } else {
    SYLVA_THROW("[mpi_test] unknown model '", name, "'");
  }
  return m;
}

std::unique_ptr<Optimizer> make_optimizer(const std::string& name) {
  if (name == "tree_lstm") return std::make_unique<Adam>(AdamOptions{.lr = 0.01});
  if (name == "var_lstm") return std::make_unique<Sgd>(SgdOptions{.lr = 0.5});
  return std::make_unique<Adagrad>(AdagradOptions{.lr = 0.1});
}

TrainerOptions trainer_options(const std::string& name) {
  TrainerOptions o{.executor = {.seed = 3}};
  if (name == "var_lstm") o.clip_norm = 0.5;
  if (name == "dag") o.weight_decay = 1e-3;
  return o;
}

}  // namespace sylva::mpi_test
