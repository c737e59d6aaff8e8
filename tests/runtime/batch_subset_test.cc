// GraphBatch::subset and the random streams: a share of a batch draws the
// dropout masks the whole batch draws for the same vertices, and masks
// follow the training step (Executor::set_step), not how many forwards ran.
#include <gtest/gtest.h>

#include <random>
#include <utility>
#include <vector>

#include "sylva/sylva.h"
#include "support/test_util.h"

namespace sylva {
namespace {

using test::error_of;

std::vector<InputGraph> trees(int n, uint64_t seed) { return test::random_id_trees(n, seed, 5, 3); }

// A batch keeps pointers to its graphs: GraphBatch::of takes graphs that
// outlive it and refuses a temporary vector at compile time.
template <class V>
concept BatchableFrom = requires(V&& v) { GraphBatch::of(std::forward<V>(v)); };
static_assert(BatchableFrom<std::vector<InputGraph>&>);
static_assert(BatchableFrom<const std::vector<InputGraph>&>);
static_assert(!BatchableFrom<std::vector<InputGraph>>);

TEST(GraphBatchSubset, KeysAreTheWholeBatchsVertexIds) {
  const std::vector<InputGraph> data = trees(5, 1);
  const GraphBatch all = GraphBatch::of(data);
  EXPECT_TRUE(all.vertex_keys().empty());
  const std::vector<int> pick = {3, 0};
  const GraphBatch sub = all.subset(pick);
  ASSERT_EQ(sub.num_samples(), 2);
  EXPECT_EQ(&sub.sample(0), &data[3]);
  EXPECT_EQ(&sub.sample(1), &data[0]);
  ASSERT_EQ(sub.vertex_keys().size(), static_cast<size_t>(sub.num_vertices()));
  for (int32_t v = 0; v < data[3].num_vertices(); ++v) EXPECT_EQ(sub.vertex_keys()[static_cast<size_t>(v)], all.sample_offset(3) + v);
  for (int32_t v = 0; v < data[0].num_vertices(); ++v)
    EXPECT_EQ(sub.vertex_keys()[static_cast<size_t>(sub.sample_offset(1) + v)], v);
  // A subset of a subset keys on the first batch's ids.
  const std::vector<int> second = {1};
  const GraphBatch subsub = sub.subset(second);
  for (int32_t v = 0; v < subsub.num_vertices(); ++v) EXPECT_EQ(subsub.vertex_keys()[static_cast<size_t>(v)], v);
  const std::vector<int> first = {0};
  const GraphBatch other = sub.subset(first);
  for (int32_t v = 0; v < other.num_vertices(); ++v)
    EXPECT_EQ(other.vertex_keys()[static_cast<size_t>(v)], all.sample_offset(3) + v);
}

TEST(GraphBatchSubset, RejectsBadIndices) {
  const std::vector<InputGraph> data = trees(3, 2);
  const GraphBatch all = GraphBatch::of(data);
  const std::vector<int> out_of_range = {0, 3}, twice = {1, 1};
  EXPECT_CONTAINS(error_of([&] { all.subset(out_of_range); }), "subset: sample 3 out of range [0, 3)");
  EXPECT_CONTAINS(error_of([&] { all.subset(twice); }), "subset: sample 1 listed twice");
}

// h = dropout(tanh([x; Σ children] W)) in F, dropout again on the program's rows.
struct DropoutModel {
  ParameterSet ps{DType::f64, 3};
  test::DropoutTreeNet net{ps, 5, 0.4, 0.3};
  Program& program = net.program;
  Symbol out = net.out, loss = net.loss;
};

TEST(GraphBatchSubset, ASubsetDrawsTheWholeBatchsMasks) {
  const std::vector<InputGraph> data = trees(6, 3);
  const GraphBatch all = GraphBatch::of(data);
  DropoutModel m;
  Executor whole(m.program, m.ps, {.seed = 9});
  whole.set_step(4);
  whole.forward(all, Mode::train);
  const Tensor expected = whole.value(m.out);
  const std::vector<int> pick = {4, 1, 5};
  const GraphBatch sub = all.subset(pick);
  Executor part(m.program, m.ps, {.seed = 9});
  part.forward(all, Mode::eval);  // another forward first: set_step decides, not the count
  part.set_step(4);
  part.forward(sub, Mode::train);
  const Tensor got = part.value(m.out);
  int64_t zeros = 0;
  for (int32_t k = 0; k < sub.num_samples(); ++k) {
    const int s = pick[static_cast<size_t>(k)];
    for (int32_t v = 0; v < data[static_cast<size_t>(s)].num_vertices(); ++v)
      for (int64_t c = 0; c < 4; ++c) {
        const double a = got.at((sub.sample_offset(k) + v) * 4 + c), b = expected.at((all.sample_offset(s) + v) * 4 + c);
        // The same mask (zero where the whole batch has zero); the kept values
        // agree to rounding (the GEMMs of a smaller batch round differently).
        EXPECT_EQ(a == 0.0, b == 0.0) << "sample " << s << " vertex " << v << " column " << c;
        EXPECT_NEAR(a, b, 1e-12) << "sample " << s << " vertex " << v << " column " << c;
        zeros += a == 0.0;
      }
  }
  EXPECT_GT(zeros, 0);  // dropout did drop something
  // A different step draws other masks.
  part.set_step(5);
  part.forward(sub, Mode::train);
  EXPECT_GT(test::relative_error(part.value(m.out), got), 0.0);
}

TEST(GraphBatchSubset, EvaluationsBetweenStepsLeaveTrainingUnchanged) {
  const std::vector<InputGraph> data = trees(8, 4);
  const GraphBatch batch = GraphBatch::of(data);
  std::vector<Tensor> finals[2];
  for (int with_eval = 0; with_eval < 2; ++with_eval) {
    DropoutModel m;
    Trainer t(m.program, m.ps, m.loss, Sgd{{.lr = 0.1}}, {.executor = {.seed = 2}});
    for (int step = 0; step < 3; ++step) {
      if (with_eval) t.evaluate(batch);
      t.step(batch);
    }
    for (const Parameter* p : m.ps.all()) finals[with_eval].push_back(p->value.clone());
  }
  for (size_t k = 0; k < finals[0].size(); ++k) EXPECT_EQ(test::relative_error(finals[0][k], finals[1][k]), 0.0);
}

}  // namespace
}  // namespace sylva
