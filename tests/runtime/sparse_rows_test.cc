// The rows a lookup's gradient touched (Executor::sparse_grads): each
// looked-up id once, in increasing order, whether the table is small beside
// the ids (marked in a bitmap) or large (sorted), and only those rows of the
// table's gradient are non-zero.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "sylva/sylva.h"

namespace sylva {
namespace {

// sum(lookup(E, x)²) over chains of random ids (repeats and -1 included) in a table of `vocab` rows.
void expect_sorted_unique_rows(int32_t vocab) {
  ParameterSet ps(DType::f64, 1);
  ps.add("E", {vocab, 3}, Init::uniform(-1, 1));
  Program p(DType::f64);
  const Symbol x = lookup(p.param(ps["E"]), p.input_ids("x"));
  const Symbol loss = sum(x * x);
  Executor ex(p, ps);
  std::mt19937 rng(5);
  std::uniform_int_distribution<int32_t> id(-1, vocab - 1);
  for (int step = 0; step < 3; ++step) {
    std::vector<InputGraph> graphs;
    std::set<int32_t> want;
    for (int s = 0; s < 4; ++s) {
      InputGraph g = InputGraph::chain(9 + s);
      std::vector<int32_t> ids(static_cast<size_t>(g.num_vertices()));
      for (int32_t& i : ids) i = id(rng);
      if (s == 0) ids.front() = vocab - 1;  // the table's last row too
      ids.back() = ids.front();             // a repeat within a sample
      for (const int32_t i : ids)
        if (i >= 0) want.insert(i);
      g.set_ids("x", ids);
      graphs.push_back(std::move(g));
    }
    std::vector<const InputGraph*> samples;
    for (const InputGraph& g : graphs) samples.push_back(&g);
    ex.forward(GraphBatch(samples), Mode::train);
    ps.zero_grad();
    ex.backward(loss);
    ASSERT_EQ(ex.sparse_grads().count("E"), 1u);
    const std::vector<int32_t>& rows = ex.sparse_grads().at("E");
    EXPECT_EQ(rows, std::vector<int32_t>(want.begin(), want.end())) << "vocab " << vocab << ", step " << step;
    for (int32_t r = 0; r < vocab; ++r) {
      double norm = 0;
      for (int64_t c = 0; c < 3; ++c) norm += std::abs(ps["E"].grad.at(r * 3 + c));
      if (want.count(r) == 0) EXPECT_EQ(norm, 0.0) << "row " << r << " was not looked up";
      else EXPECT_GT(norm, 0.0) << "row " << r << " was looked up";
    }
  }
}

TEST(SparseRows, ASmallTableGivesEachLookedUpIdOnceInOrder) { expect_sorted_unique_rows(50); }

TEST(SparseRows, ALargeTableGivesEachLookedUpIdOnceInOrder) { expect_sorted_unique_rows(20000); }

}  // namespace
}  // namespace sylva
