// Shared test helpers: error measures, finite differences, random ids.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "sylva/core/error.h"
#include "sylva/core/tensor.h"
#include "sylva/frontend/parameter_set.h"
#include "sylva/frontend/program.h"
#include "sylva/runtime/executor.h"
#include "sylva/train/generators.h"
#include "sylva/runtime/input_graph.h"

namespace sylva::test {

/// Runs f and returns the message of the sylva::Error it throws, or
/// "<no error>" if it throws nothing; any other exception fails the test.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw a non-sylva exception: " << e.what();
    return "<non-sylva exception>";
  }
  return "<no error>";
}

// The seeded graph generators live in train, beside the readers (sylva/train/generators.h);
// tests keep calling them as test::random_tree / test::random_dag.
using sylva::random_dag;
using sylva::random_tree;

/// Attaches "x" (ids into a table of `vocab` rows, -1 sometimes) and
/// "labels" (in [0, classes), -1 sometimes) to every vertex.
void attach_random_ids(std::mt19937_64& rng, InputGraph& g, int32_t vocab, int32_t classes);

/// `n` random binary trees of up to 9 vertices (sources "tree 0", ...) with
/// attach_random_ids(vocab, classes) ids, from `seed`.
std::vector<InputGraph> random_id_trees(int n, uint64_t seed, int32_t vocab, int32_t classes);

/// A small float64 tree network over graphs with attach_random_ids' "x" and
/// "labels" (3 classes): E [vocab, 4] (an embedding table: row-sparse
/// gradients), h = dropout(tanh([x; Σ children]·W), p) in F, then
/// `out` = dropout(h, q) over the program's rows (q = 0: none) and a softmax
/// cross-entropy `loss`. Adds E, W and Ws to `ps`.
struct DropoutTreeNet {
  Program program{DType::f64};
  Symbol out, loss;
  DropoutTreeNet(ParameterSet& ps, int64_t vocab, double p, double q = 0.0);
};

/// A chain network over graphs with per-vertex ids "x" in [0, vocab):
/// h = tanh(x·W + gather(0)·U), x a row of E [vocab, hidden]; `loss` sums
/// every h. The recurrent product gather(0)·U is read only inside its own
/// task, and ∂F's input gradient dG·Uᵀ runs per task. Adds E, W and U to `ps`.
struct ChainNet {
  ChainNet(ParameterSet& ps, int64_t vocab, int64_t hidden, DType dtype = DType::f32);
  VertexFunction f;
  Program program;
  Symbol loss;
};
/// `n` chains of `length` vertices, named "chain i", with ids "x" = (i + k) % vocab at vertex k.
std::vector<InputGraph> id_chains(int n, int32_t length, int32_t vocab);

/// The graph families of the tests at the apply's boundary (direct row
/// selection, pulls from the table) and the vertex function each runs:
/// h = tanh(kids·W + x), x F's pull [h], kids = [gather(0); gather(1)]
/// (trees and chains), Σ children (DAGs: gather_reduce), or
/// [gather(0)·x; gather(1)·x] (gated trees: a task that pulled only zero
/// rows sends its children a gradient known to be zero, so ∂F skips the
/// gather gradients).
enum class Family { tree, chain, dag, gated_tree };
const char* family_name(Family f);
/// That F, message and output h wide, in float64; adds W to `ps`.
VertexFunction family_cell(ParameterSet& ps, Family family, int64_t h);
/// Four batches of 3, 7, 1 and 5 graphs of 1-15 vertices of `family`, with
/// attach_random_ids ids, from `seed`: they grow and shrink, so rows of
/// earlier batches stay in the arenas.
std::vector<std::vector<InputGraph>> growing_batches(Family family, uint64_t seed, int32_t vocab, int32_t classes);
/// "tree, readers 1, bfs": a case of those tests, for SCOPED_TRACE.
std::string case_name(Family family, int readers, BatchingPolicy policy);

/// What those tests compare, over a training step per batch (no update):
/// each step's loss and E's sparse gradient rows; after the last step every
/// parameter's gradient and value(`shown`); with `fd`, the worst error of W's
/// and E's gradients against central differences over all steps (stale
/// rows of the step before must not leak in).
struct StepRecord {
  std::vector<double> losses;
  std::vector<std::vector<int32_t>> sparse_rows;
  std::vector<Tensor> grads;
  Tensor shown;
  double fd_error = 0.0;
};
StepRecord step_through(Executor& ex, ParameterSet& ps, Symbol loss, Symbol shown,
                        const std::vector<std::vector<InputGraph>>& batches, bool fd);

/// The loss and a copy of every parameter's gradient (in ps.all() order)
/// after forward(train) and backward over `batch` under `policy`, for
/// comparing batching policies.
struct LossAndGrads {
  double loss = 0.0;
  std::vector<Tensor> grads;
};
LossAndGrads loss_and_grads(const Program& program, ParameterSet& ps, const GraphBatch& batch, Symbol loss,
                            BatchingPolicy policy, uint64_t seed = 0);

/// max |a - b| / max(max |a|, max |b|, tiny): relative error of whole tensors.
double relative_error(const Tensor& a, const Tensor& b);

/// Checks p's gradient (already computed by a backward of `loss` over
/// `batch`) against central differences at about `samples` evenly spaced
/// entries; returns max |fd - grad| / max |grad| (the error relative to the
/// largest gradient entry). Leaves p's values unchanged.
double finite_difference_error(Executor& ex, const GraphBatch& batch, Symbol loss, Parameter& p, int64_t samples);

/// Directory of the shared data (SYLVA_DATA, else ../shared/data next to
/// the source tree); empty if it does not exist.
std::string data_dir();

}  // namespace sylva::test

/// EXPECT that string `haystack` contains `needle`, printing both if not.
#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE((haystack).find(needle), std::string::npos) << "message: " << (haystack) << "\nlacks: " << (needle)
