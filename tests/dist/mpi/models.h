// The models the data-parallel tests train (Tree-LSTM, Var-LSTM, a random
// DAG network), small and in float64, with seeded data; the two LSTMs
// with dropout (masks must not depend on how a batch is shared).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sylva/sylva.h"

namespace sylva::mpi_test {

struct ModelCase {
  std::string name;
  std::unique_ptr<ParameterSet> ps;
  Program program{DType::f64};
  Symbol loss;
  std::vector<InputGraph> data;
  std::shared_ptr<void> keep;  // the example model object the program came from
};

/// "tree_lstm" (examples/common Tree-LSTM on a synthetic treebank),
/// "var_lstm" (the LSTM language model on random chains) or "dag" (a
/// gather_reduce network on random DAGs), each with `samples` samples; the
/// same seed gives the same data, and the same parameters unless
/// `init_seed` (nonzero) seeds them instead.
ModelCase make_model(const std::string& name, uint64_t seed, int samples = 40, uint64_t init_seed = 0);

/// The optimiser each case trains with (Adam, SGD with clipping, Adagrad
/// with weight decay: between them the sparse and dense update paths).
std::unique_ptr<Optimizer> make_optimizer(const std::string& name);
TrainerOptions trainer_options(const std::string& name);

}  // namespace sylva::mpi_test
