#include "sylva/frontend/parameter_set.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "sylva/core/buffer.h"
#include "sylva/core/error.h"

#include "support/test_util.h"

namespace sylva {
namespace {

using test::error_of;

// Both ways of sorting a table's touched rows (a bitmap for a small table,
// std::sort for a large one) give each row once, in increasing order.
TEST(SortUniqueRows, EachRowOnceInOrderForSmallAndLargeTables) {
  std::vector<uint64_t> bits;
  for (const int64_t table : {int64_t{70}, int64_t{1} << 20}) {
    std::vector<int32_t> rows = {64, 3, 69, 0, 3, 63, 64, 65, 0};
    if (table > 70) rows.push_back(static_cast<int32_t>(table - 1));
    std::vector<int32_t> want = rows;
    std::sort(want.begin(), want.end());
    want.erase(std::unique(want.begin(), want.end()), want.end());
    sort_unique_rows(rows, table, bits);
    EXPECT_EQ(rows, want) << "table of " << table << " rows";
  }
  std::vector<int32_t> none;
  sort_unique_rows(none, 10, bits);
  EXPECT_TRUE(none.empty());
}

TEST(ParameterSet, ZerosAndConstant) {
  for (DType dt : {DType::f32, DType::f64}) {
    ParameterSet ps(dt, 1);
    Parameter& z = ps.add("z", {3, 4}, Init::zeros());
    Parameter& c = ps.add("c", {5}, Init::constant(0.25));
    EXPECT_EQ(z.value.dtype(), dt);
    EXPECT_EQ(z.value.shape(), Shape({3, 4}));
    for (int64_t i = 0; i < z.value.numel(); ++i) EXPECT_EQ(z.value.at(i), 0.0);
    for (int64_t i = 0; i < c.value.numel(); ++i) EXPECT_EQ(c.value.at(i), 0.25);
    EXPECT_EQ(ps.size(), 2u);
    EXPECT_EQ(ps.numel(), 17);
    EXPECT_EQ(ps.dtype(), dt);
  }
}

TEST(ParameterSet, UniformRespectsBounds) {
  ParameterSet ps(DType::f64, 3);
  Parameter& u = ps.add("u", {50, 40}, Init::uniform(-0.5, 2.0));
  double lo = 1e9, hi = -1e9, sum = 0;
  for (int64_t i = 0; i < u.value.numel(); ++i) {
    const double v = u.value.at(i);
    ASSERT_GE(v, -0.5);
    ASSERT_LT(v, 2.0);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  // 2000 samples: the range is covered and the mean is near 0.75.
  EXPECT_LT(lo, -0.4);
  EXPECT_GT(hi, 1.9);
  EXPECT_NEAR(sum / static_cast<double>(u.value.numel()), 0.75, 0.1);
}

TEST(ParameterSet, GlorotBounds) {
  for (DType dt : {DType::f32, DType::f64}) {
    ParameterSet ps(dt, 11);
    Parameter& w = ps.add("W", {30, 70}, Init::glorot());
    Parameter& b = ps.add("b", {24}, Init::glorot());
    const double lw = std::sqrt(6.0 / (30 + 70));
    const double lb = std::sqrt(6.0 / (24 + 24));
    double max_abs = 0;
    for (int64_t i = 0; i < w.value.numel(); ++i) {
      ASSERT_LE(std::fabs(w.value.at(i)), lw * (1 + 1e-6));
      max_abs = std::max(max_abs, std::fabs(w.value.at(i)));
    }
    EXPECT_GT(max_abs, 0.9 * lw);  // the bound is used, not a narrower one
    for (int64_t i = 0; i < b.value.numel(); ++i) ASSERT_LE(std::fabs(b.value.at(i)), lb * (1 + 1e-6));
  }
}

TEST(ParameterSet, SameSeedSameValues) {
  ParameterSet a(DType::f32, 42), b(DType::f32, 42);
  for (ParameterSet* ps : {&a, &b}) {
    ps->add("W", {8, 9}, Init::glorot());
    ps->add("E", {10, 3}, Init::uniform(-1, 1));
  }
  for (const char* name : {"W", "E"})
    EXPECT_EQ(std::memcmp(a[name].value.raw(), b[name].value.raw(), a[name].value.nbytes()), 0) << name;
  // Different parameters of one set get different streams.
  EXPECT_NE(a["W"].value.at(0), a["E"].value.at(0));
}

TEST(ParameterSet, DifferentSeedDifferentValues) {
  ParameterSet a(DType::f64, 1), b(DType::f64, 2);
  a.add("W", {16, 16}, Init::glorot());
  b.add("W", {16, 16}, Init::glorot());
  EXPECT_NE(std::memcmp(a["W"].value.raw(), b["W"].value.raw(), a["W"].value.nbytes()), 0);
}

TEST(ParameterSet, F32IsRoundedF64) {
  // Both precisions draw the same samples, so f32 values are the rounded f64 ones.
  ParameterSet a(DType::f32, 5), b(DType::f64, 5);
  a.add("W", {4, 6}, Init::glorot());
  b.add("W", {4, 6}, Init::glorot());
  for (int64_t i = 0; i < 24; ++i)
    EXPECT_EQ(a["W"].value.data<float>()[i], static_cast<float>(b["W"].value.data<double>()[i]));
}

TEST(ParameterSet, GradsZeroedSameShape) {
  ParameterSet ps(DType::f32, 0);
  Parameter& w = ps.add("W", {2, 3}, Init::constant(1));
  ASSERT_TRUE(w.grad.defined());
  EXPECT_EQ(w.grad.shape(), w.value.shape());
  EXPECT_EQ(w.grad.dtype(), DType::f32);
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(w.grad.at(i), 0.0);
  for (int64_t i = 0; i < 6; ++i) w.grad.set(i, 3.0);
  ps.zero_grad();
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(w.grad.at(i), 0.0);
  EXPECT_EQ(w.value.at(0), 1.0);  // values untouched
}

// A row-sparse gradient of 32 MB or more gives its pages back when zeroed
// (host_memory_zero_pages); a smaller one, or a dense one, has its rows
// cleared. Either way every element reads zero after.
TEST(ParameterSet, ALargeRowSparseGradientGivesItsPagesBackWhenZeroed) {
  ParameterSet ps(DType::f32, 0);
  Parameter& big = ps.add("E", {8192, 1024}, Init::zeros());  // 32 MB
  Parameter& small = ps.add("S", {64, 1024}, Init::zeros());
  const std::vector<int32_t> rows = {0, 4097, 8191};
  for (Parameter* p : {&big, &small})
    for (const int32_t r : rows)
      if (r < p->grad.shape().rows())
        for (int64_t c = 0; c < 1024; ++c) p->grad.data<float>()[r * 1024 + c] = 1.5f;
  const RowSparsity sparse = {{"E", rows}, {"S", {0}}};
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const auto resident = [page](const Tensor& t) {
    const size_t bytes = static_cast<size_t>(t.numel()) * sizeof(float);
    std::vector<unsigned char> in((bytes + page - 1) / page);
    EXPECT_EQ(mincore(const_cast<void*>(t.raw()), bytes, in.data()), 0);
    size_t n = 0;
    for (const unsigned char c : in) n += c & 1u;
    return n;
  };
  const bool mapped = host_memory_maps_large_blocks();
  if (mapped) {
    ASSERT_GE(resident(big.grad), rows.size());
  }
  ps.zero_grad(&sparse);
  if (mapped) {
    EXPECT_EQ(resident(big.grad), 0u);  // before reading (a read maps a page)
  }
  for (const Parameter* p : {&big, &small})
    for (int64_t i = 0; i < p->grad.numel(); ++i) ASSERT_EQ(p->grad.data<float>()[i], 0.0f) << p->name << " " << i;
}

TEST(ParameterSet, AllInInsertionOrderAndStableReferences) {
  ParameterSet ps(DType::f32, 0);
  Parameter& first = ps.add("z_first", {2}, Init::zeros());
  for (int i = 0; i < 100; ++i) ps.add("p" + std::to_string(i), {1}, Init::zeros());
  EXPECT_EQ(&first, &ps["z_first"]);  // a deque keeps references valid
  std::vector<Parameter*> all = ps.all();
  ASSERT_EQ(all.size(), 101u);
  EXPECT_EQ(all[0]->name, "z_first");
  EXPECT_EQ(all[1]->name, "p0");
  EXPECT_EQ(all[100]->name, "p99");
  const ParameterSet& cps = ps;
  EXPECT_EQ(cps.all()[2]->name, "p1");
  EXPECT_TRUE(ps.contains("p5"));
  EXPECT_FALSE(ps.contains("p100"));
}

TEST(ParameterSet, AddRejectsBadInput) {
  ParameterSet ps(DType::f32, 0);
  ps.add("W", {2, 2}, Init::zeros());
  EXPECT_NE(error_of([&] { ps.add("W", {3}, Init::zeros()); }).find("already exists"), std::string::npos);
  EXPECT_NE(error_of([&] { ps.add("Z", {3, 0}, Init::zeros()); }).find("every extent must be positive"),
            std::string::npos);
  EXPECT_THROW(ps.add("N", Shape(std::vector<int64_t>{2, -1}), Init::zeros()), Error);
  EXPECT_NE(error_of([&] { ps.add("U", {2}, Init::uniform(1, 0)); }).find("lo <= hi"), std::string::npos);
  EXPECT_THROW(ps.add("", {2}, Init::zeros()), Error);
  EXPECT_EQ(ps.size(), 1u);  // nothing was added by the failed calls

  ParameterSet ints(DType::i32, 0);
  EXPECT_NE(error_of([&] { ints.add("ids", {2}, Init::zeros()); }).find("float32 or float64"),
            std::string::npos);
}

TEST(ParameterSet, MissingNameListsKnownNames) {
  ParameterSet ps(DType::f32, 0);
  for (int i = 0; i < 12; ++i) ps.add("w" + std::to_string(i), {1}, Init::zeros());
  const std::string msg = error_of([&] { ps["nope"]; });
  EXPECT_NE(msg.find("[parameters] no parameter named 'nope'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("w0, w1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("w9"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("w10"), std::string::npos) << msg;  // only the first 10
  EXPECT_NE(msg.find("2 more"), std::string::npos) << msg;
  const ParameterSet& cps = ps;
  EXPECT_THROW(cps["nope"], Error);
}

}  // namespace
}  // namespace sylva
