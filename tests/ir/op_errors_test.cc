// Op error paths: bad shapes at build time and bad ids or labels at run
// time are a sylva::Error naming the op and what is wrong (split from the
// op harness, tests/ir/op_harness_test.cc, which checks the values).
#include <gtest/gtest.h>

#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include "support/test_device.h"
#include "sylva/core/error.h"
#include "sylva/frontend/program.h"
#include "sylva/runtime/executor.h"
#include "sylva/runtime/graph_batch.h"
#include "sylva/runtime/input_graph.h"

namespace sylva {
namespace {

constexpr const char* kRowIds = "row";  // per-vertex ids 0..rows-1, as in the op harness

// ---- error paths ------------------------------------------------------------------------
void expect_error(const std::function<void()>& fn, const std::string& tag, const std::string& also = "") {
  try {
    fn();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(tag), std::string::npos) << "message lacks " << tag << ": " << msg;
    EXPECT_NE(msg.find(also), std::string::npos) << "message lacks '" << also << "': " << msg;
    return;
  }
  ADD_FAILURE() << "expected sylva::Error tagged " << tag;
}

struct ErrorRig {
  ParameterSet ps{DType::f64, 5};
  Program p{DType::f64};
  Symbol param(const std::string& name, Shape s) {
    return p.param(ps.contains(name) ? ps[name] : ps.add(name, std::move(s), Init::uniform(-1, 1)));
  }
  Symbol rowed(const std::string& name, int64_t rows, int64_t cols) {
    return lookup(param(name, {rows, cols}), p.input_ids(kRowIds));
  }
};

TEST(OpHarnessErrors, MatMulInnerDimensionMismatch) {
  ErrorRig e;
  expect_error([&] { matmul(e.param("A", {3, 4}), e.param("B", {5, 2})); }, "[matmul]", "inner");
  expect_error([&] { matmul(e.rowed("X", 5, 3), e.param("W", {4, 6})); }, "[matmul]", "inner");
  expect_error([&] { matmul(e.rowed("X", 5, 3), e.param("W", {4, 6}), false, true); }, "[matmul]", "inner");
  expect_error([&] { matmul(e.rowed("X", 5, 3), e.param("W", {4, 6}), true); }, "[matmul]");
}

TEST(OpHarnessErrors, ConcatWithMismatchedRows) {
  ErrorRig e;
  expect_error([&] { concat({e.param("A", {3, 2}), e.param("B", {4, 2})}); }, "[concat]");
  expect_error([&] { concat({e.rowed("X", 5, 3), e.param("A", {3, 2})}); }, "[concat]");
}

TEST(OpHarnessErrors, SliceOutOfRange) {
  ErrorRig e;
  Symbol x = e.rowed("X", 5, 7);
  expect_error([&] { slice(x, 2, 9); }, "[slice]", "out of range");
  expect_error([&] { slice(x, -1, 3); }, "[slice]");
  expect_error([&] { slice(x, 4, 4); }, "[slice]");
  expect_error([&] { split(x, 3); }, "[split]");
}

// Ids come from the data, so range errors surface at run time; the
// executor must stay usable once the data is fixed.
void expect_runtime_error(const std::string& ids_name, std::vector<int32_t> bad, std::vector<int32_t> good,
                          const std::function<Symbol(ErrorRig&)>& build, const std::string& tag,
                          const std::string& also) {
  ErrorRig e;
  Symbol loss = build(e);
  InputGraph g = InputGraph::from_children(std::vector<std::vector<int32_t>>(bad.size()), "bad ids");
  std::vector<int32_t> row(bad.size());
  std::iota(row.begin(), row.end(), 0);
  g.set_ids(kRowIds, row);
  g.set_ids(ids_name, bad);
  GraphBatch batch({&g});
  Executor ex(e.p, e.ps, test::on_test_device());
  expect_error([&] { ex.forward(batch, Mode::train); }, tag, also);
  InputGraph fixed_graph = g;
  fixed_graph.set_ids(ids_name, std::move(good));
  GraphBatch ok({&fixed_graph});
  ex.forward(ok, Mode::train);
  EXPECT_TRUE(std::isfinite(ex.scalar(loss)));
}

TEST(OpHarnessErrors, LookupIdOutOfRangeAtRunTime) {
  expect_runtime_error("word", {0, 6, -1}, {0, 5, -1},
                       [](ErrorRig& e) { return sum(lookup(e.param("T", {6, 4}), e.p.input_ids("word"))); },
                       "[lookup]", "6");
}

TEST(OpHarnessErrors, CrossEntropyLabelOutOfRange) {
  for (int32_t bad : {5, -2})
    expect_runtime_error("label", {1, bad, -1}, {1, 4, -1},
                         [](ErrorRig& e) { return softmax_cross_entropy(e.rowed("X", 3, 5), e.p.input_ids("label")); },
                         "[softmax_cross_entropy]", std::to_string(bad));
}

}  // namespace
}  // namespace sylva
