#include "gemm_replay.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace sylva::bench {

int64_t RecordedGemm::flops() const {
  return 2 * out_rows * out_cols * (trans_a ? a_rows : a_cols);
}

std::optional<RecordedGemm> recorded_gemm(const OpEvent& e) {
  const ir::Node& mm = e.folded_matmul ? *e.folded_matmul : e.node;
  if (mm.op != ir::OpKind::MatMul || e.flops <= 0) return std::nullopt;
  const ir::ValueType &a = e.graph.node(mm.inputs[0]).type, &b = e.graph.node(mm.inputs[1]).type;
  const bool ta = mm.attrs.trans_a, tb = mm.attrs.trans_b;
  // ir::flops counts each rowed operand with the same rows R: R^p = flops / flops(R = 1),
  // p the number of the product's dimensions that are rows of a rowed operand.
  const int p = (a.rowed ? 1 : 0) + (b.rowed && tb ? 1 : 0);
  const int64_t unit = ir::flops(e.graph, mm, 1);
  int64_t rows = 0;
  if (p > 0) {
    rows = std::llround(std::pow(static_cast<double>(e.flops) / static_cast<double>(unit), 1.0 / p));
  } else if (b.rowed) {
    rows = ta ? a.fixed_rows() : a.cols();  // B's rows are the inner dimension, fixed by A
  }
  SYLVA_CHECK(unit > 0 && ir::flops(e.graph, mm, rows) == e.flops, "[gemm-floor] matmul node ", mm.id, " of '",
              e.graph.name(), "': ", e.flops, " flops fit no row count of its operands ", a.str(), " and ", b.str());
  RecordedGemm g{.trans_a = ta, .trans_b = tb, .accumulate = e.folded_matmul != nullptr};
  g.a_rows = a.rowed ? rows : a.fixed_rows();
  g.a_cols = a.cols();
  g.b_rows = b.rowed ? rows : b.fixed_rows();
  g.b_cols = b.cols();
  g.out_rows = ta ? g.a_cols : g.a_rows;
  g.out_cols = tb ? g.b_rows : g.b_cols;
  const int64_t inner_a = ta ? g.a_rows : g.a_cols, inner_b = tb ? g.b_cols : g.b_rows;
  SYLVA_CHECK(inner_a == inner_b, "[gemm-floor] matmul node ", mm.id, " of '", e.graph.name(),
              "': reconstructed inner dimensions differ (", inner_a, " vs ", inner_b, ")");
  return g;
}

GemmReplay::GemmReplay(Backend& backend) : backend_(backend) {
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      ir::Node& n = matmul_[ta][tb];
      n.op = ir::OpKind::MatMul;
      n.attrs.trans_a = ta != 0;
      n.attrs.trans_b = tb != 0;
    }
}

void GemmReplay::prepare(const std::vector<RecordedGemm>& gemms, DType dtype, Precision precision) {
  SYLVA_CHECK(dtype_ == dtype || (a_.capacity() == 0 && c_.capacity() == 0), "[bench] a GEMM replay changed dtype");
  dtype_ = dtype;
  ctx_.gemm = precision;
  operands_ = precision == Precision::bf16 ? DType::bf16 : dtype;
  size_t na = 0, nb = 0, nc = 0;
  for (const RecordedGemm& g : gemms) {
    na = std::max(na, static_cast<size_t>(g.a_rows * g.a_cols));
    nb = std::max(nb, static_cast<size_t>(g.b_rows * g.b_cols));
    nc = std::max(nc, static_cast<size_t>(g.out_rows * g.out_cols));
  }
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-0.05, 0.05);
  for (auto [buf, n, type] : {std::tuple{&a_, na, operands_}, std::tuple{&b_, nb, operands_}, std::tuple{&c_, nc, dtype}}) {
    const size_t had = buf->capacity() / dtype_size(type);
    if (n <= had) continue;
    buf->reserve(n * dtype_size(type));
    for (size_t i = 0; i < n; ++i) {
      if (type == DType::f64) static_cast<double*>(buf->data())[i] = u(rng);
      else if (type == DType::bf16) static_cast<uint16_t*>(buf->data())[i] = to_bf16(static_cast<float>(u(rng)));
      else static_cast<float*>(buf->data())[i] = static_cast<float>(u(rng));
    }
  }
}

void GemmReplay::run(const std::vector<RecordedGemm>& gemms) {
  for (const RecordedGemm& g : gemms) {
    const MatView in[2] = {{a_.data(), g.a_rows, g.a_cols, operands_}, {b_.data(), g.b_rows, g.b_cols, operands_}};
    const MatView out{c_.data(), g.out_rows, g.out_cols, dtype_};
    backend_.run(
        {.node = matmul_[g.trans_a][g.trans_b], .in = in, .out = out, .ctx = ctx_, .accumulate = g.accumulate});
  }
}

}  // namespace sylva::bench
