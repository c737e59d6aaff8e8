// Shared test helpers: seeded random graphs and error measures.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "sylva/core/error.h"
#include "sylva/core/tensor.h"
#include "sylva/runtime/executor.h"
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

/// Random tree: every internal vertex has between 1 and max_arity child
/// slots; some slots may be absent (-1) when allow_holes. Post-order ids.
InputGraph random_tree(std::mt19937_64& rng, int32_t max_vertices, int32_t max_arity, bool allow_holes,
                       const std::string& source);
/// Random DAG: vertex v has 0..max_fanin children drawn from vertices < v
/// (a vertex may be the child of several parents).
InputGraph random_dag(std::mt19937_64& rng, int32_t n, int32_t max_fanin, const std::string& source);
/// Attaches "x" (ids into a table of `vocab` rows, -1 sometimes) and
/// "labels" (in [0, classes), -1 sometimes) to every vertex.
void attach_random_ids(std::mt19937_64& rng, InputGraph& g, int32_t vocab, int32_t classes);

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
