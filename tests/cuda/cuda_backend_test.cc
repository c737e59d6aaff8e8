// The CUDA backend against the CPU backend, on device memory the test
// allocates itself, and the executor training on CUDA against the CPU (the
// op harness and invariance suites also run on CUDA: ctest's *_on_cuda).
// Without a GPU every case is skipped with the reason, after checking that
// asking for the backend says clearly that there is no device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iterator>
#include <memory>
#include <random>

#include "gpu.h"
#include "support/test_util.h"
#include "sylva/backend/backend.h"
#include "sylva/core/bfloat16.h"
#include "sylva/frontend/program.h"
#include "sylva/frontend/vertex_function.h"
#include "sylva/ir/graph.h"
#include "sylva/runtime/executor.h"
#include "sylva/train/optimizer.h"
#include "sylva/train/trainer.h"

namespace sylva {
namespace {

using ir::OpKind;

// A matrix on the host and its copy on the device.
struct Mat {
  std::vector<float> host;
  int64_t rows, cols;
  float* dev = nullptr;
  Mat(int64_t r, int64_t c, uint32_t seed, float lo = -1, float hi = 1)
      : host(static_cast<size_t>(r * c)), rows(r), cols(c) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(lo, hi);
    for (float& v : host) v = u(rng);
    EXPECT_EQ(cudaMalloc(&dev, std::max<size_t>(1, host.size()) * sizeof(float)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(dev, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the backend's stream does not wait for the default one
  }
  ~Mat() { cudaFree(dev); }
  MatView host_view() { return {host.data(), rows, cols, DType::f32}; }
  MatView dev_view() const { return {dev, rows, cols, DType::f32}; }
  std::vector<float> download() const {
    std::vector<float> out(host.size());
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the backend's calls are asynchronous
    EXPECT_EQ(cudaMemcpy(out.data(), dev, out.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }
};

// Max |a - b| / (1 + max |b|): the normalised error the device tests use.
double error(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return worst / (1 + scale);
}

class CudaBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = test::no_gpu_reason();
    if (!why.empty()) {
      EXPECT_CONTAINS(test::error_of([] { backend_for(Device::cuda()); }), "[cuda] no CUDA device 0 visible");
      GTEST_SKIP() << why << test::kGpuTestsHint;
    }
  }
  Backend& cpu = backend_for(Device::cpu());
};

TEST_F(CudaBackendTest, MatMulMatchesTheCpuInEveryLayout) {
  Backend& gpu = backend_for(Device::cuda());
  EXPECT_EQ(gpu.name(), "cuda");
  for (int layout = 0; layout < 8; ++layout) {
    const bool ta = layout & 1, tb = layout & 2, acc = layout & 4;
    const int64_t m = 37, k = 19, n = 23;
    Mat a(ta ? k : m, ta ? m : k, 1), b(tb ? n : k, tb ? k : n, 2), c_cpu(m, n, 3), c_gpu(m, n, 3);
    ir::Node node;
    node.op = OpKind::MatMul;
    node.attrs.trans_a = ta;
    node.attrs.trans_b = tb;
    ExecContext ctx;
    const MatView in_cpu[] = {a.host_view(), b.host_view()}, in_gpu[] = {a.dev_view(), b.dev_view()};
    cpu.run({node, in_cpu, c_cpu.host_view(), ctx, acc});
    gpu.run({node, in_gpu, c_gpu.dev_view(), ctx, acc});
    EXPECT_LT(error(c_gpu.download(), c_cpu.host), 1e-5) << "trans_a " << ta << " trans_b " << tb << " acc " << acc;
  }
}

// bf16 (Precision::bf16): the GPU rounds to bfloat16 with the CPU's bits
// (special values included), and its GEMMs give the product of the rounded
// operands to float32's sums, in every layout, accumulating or not.
TEST_F(CudaBackendTest, Bf16RoundsAsTheCpuAndMultipliesTheRoundedOperands) {
  Backend& gpu = backend_for(Device::cuda());
  if (const std::string why = gpu.precision_unsupported(Precision::bf16); !why.empty()) GTEST_SKIP() << why;
  Mat x(37, 19, 9);
  const uint32_t specials[] = {0x00000001u, 0x80000001u, 0x7f800001u, 0x7f800000u, 0x3f808000u, 0x3f818000u,
                               0x7f7fffffu};
  for (size_t i = 0; i < std::size(specials); ++i) std::memcpy(&x.host[i], &specials[i], 4);
  ASSERT_EQ(cudaMemcpy(x.dev, x.host.data(), x.host.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  uint16_t* low = nullptr;
  ASSERT_EQ(cudaMalloc(&low, x.host.size() * 2), cudaSuccess);
  gpu.convert(x.dev_view(), {low, x.rows, x.cols, DType::bf16});
  gpu.synchronize();
  std::vector<uint16_t> got(x.host.size());
  ASSERT_EQ(cudaMemcpy(got.data(), low, got.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(low);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], to_bf16(x.host[i])) << "element " << i;
  for (int layout = 0; layout < 8; ++layout) {
    const bool ta = layout & 1, tb = layout & 2, acc = layout & 4;
    const int64_t m = 37, k = 300, n = 23;
    Mat a(ta ? k : m, ta ? m : k, 1), b(tb ? n : k, tb ? k : n, 2), c(m, n, 3);
    ir::Node node;
    node.op = OpKind::MatMul;
    node.attrs.trans_a = ta;
    node.attrs.trans_b = tb;
    ExecContext ctx;
    ctx.gemm = Precision::bf16;
    const MatView in[] = {a.dev_view(), b.dev_view()};
    gpu.run({node, in, c.dev_view(), ctx, acc});
    std::vector<float> want(c.host.size());
    const auto r = [](float v) { return static_cast<double>(from_bf16(to_bf16(v))); };
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = acc ? c.host[static_cast<size_t>(i * n + j)] : 0.0;
        for (int64_t p = 0; p < k; ++p)
          sum += r(a.host[static_cast<size_t>(ta ? p * m + i : i * k + p)]) *
                 r(b.host[static_cast<size_t>(tb ? j * k + p : p * n + j)]);
        want[static_cast<size_t>(i * n + j)] = static_cast<float>(sum);
      }
    EXPECT_LT(error(c.download(), want), 2e-5) << "trans_a " << ta << " trans_b " << tb << " acc " << acc;
  }
}

TEST_F(CudaBackendTest, ElementwiseOpsMatchTheCpu) {
  Backend& gpu = backend_for(Device::cuda());
  for (OpKind op : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Tanh, OpKind::Sigmoid, OpKind::Relu, OpKind::Exp,
                    OpKind::Log, OpKind::Scale, OpKind::TanhGrad, OpKind::SigmoidGrad, OpKind::ReluGrad,
                    OpKind::LogGrad}) {
    const bool positive = op == OpKind::Log || op == OpKind::LogGrad;
    Mat x(50, 33, 4, positive ? 0.1f : -1, 1), y(50, 33, 5), out_cpu(50, 33, 6), out_gpu(50, 33, 6);
    ir::Node node;
    node.op = op;
    node.attrs.alpha = 0.7;
    const bool two = op != OpKind::Tanh && op != OpKind::Sigmoid && op != OpKind::Relu && op != OpKind::Exp &&
                     op != OpKind::Log && op != OpKind::Scale;
    ExecContext ctx;
    const MatView in_cpu[] = {x.host_view(), y.host_view()}, in_gpu[] = {x.dev_view(), y.dev_view()};
    cpu.run({node, std::span<const MatView>(in_cpu, two ? 2 : 1), out_cpu.host_view(), ctx});
    gpu.run({node, std::span<const MatView>(in_gpu, two ? 2 : 1), out_gpu.dev_view(), ctx});
    EXPECT_LT(error(out_gpu.download(), out_cpu.host), 1e-5) << ir::op_name(op);
  }
  // The losses have CUDA kernels of their own (kernels/cuda/ops.cu), checked against the CPU below.
  for (OpKind op : {OpKind::SoftmaxCrossEntropy, OpKind::SoftmaxCrossEntropyGrad, OpKind::LogSoftmax})
    EXPECT_TRUE(gpu.supports(op)) << ir::op_name(op);
}

TEST_F(CudaBackendTest, RowMovementMatchesTheCpu) {
  Backend& gpu = backend_for(Device::cuda());
  Mat src(10, 17, 7), d_cpu(6, 17, 8), d_gpu(6, 17, 8);
  const std::vector<int32_t> from{3, -1, 9, 0}, to{5, 0, 2, 5};
  const std::vector<int32_t> rows{0, 1, 2, 3};
  cpu.copy_rows(src.host_view(), from, d_cpu.host_view(), rows);
  gpu.copy_rows(src.dev_view(), from, d_gpu.dev_view(), rows);
  EXPECT_EQ(error(d_gpu.download(), d_cpu.host), 0);
  cpu.add_rows(src.host_view(), from, d_cpu.host_view(), to);  // row 5 twice: scatter-add
  gpu.add_rows(src.dev_view(), from, d_gpu.dev_view(), to);
  EXPECT_LT(error(d_gpu.download(), d_cpu.host), 1e-6);
  // Identity sources into scattered rows, one of them skipped (negative).
  const std::vector<int32_t> scattered{4, -1, 1};
  Mat few(3, 17, 12);
  cpu.copy_rows(few.host_view(), {}, d_cpu.host_view(), scattered);
  gpu.copy_rows(few.dev_view(), {}, d_gpu.dev_view(), scattered);
  EXPECT_EQ(error(d_gpu.download(), d_cpu.host), 0);
  Mat acc_cpu(6, 17, 9), acc_gpu(6, 17, 9);
  cpu.accumulate(d_cpu.host_view(), acc_cpu.host_view());
  gpu.accumulate(d_gpu.dev_view(), acc_gpu.dev_view());
  EXPECT_LT(error(acc_gpu.download(), acc_cpu.host), 1e-6);
  gpu.fill_zero(acc_gpu.dev_view());
  for (float v : acc_gpu.download()) EXPECT_EQ(v, 0.0f);
}

TEST_F(CudaBackendTest, AFusedGroupMatchesTheCpu) {
  Backend& gpu = backend_for(Device::cuda());
  // out0 = sigmoid(x[:, 0:8]) * tanh(x[:, 8:16]) + b (b one row, broadcast); out1 = [out0 * 2, x[:, 16:19]]
  FusedProgram p;
  p.name = "gate";
  const auto st = [&](OpKind op, std::vector<int32_t> args, int64_t cols, int32_t out = -1, int64_t begin = 0) {
    p.steps.push_back(fused_step(op, std::move(args), cols, out, begin));
    p.steps.back().alpha = 2;
  };
  st(OpKind::Slice, {-1}, 8, -1, 0);
  st(OpKind::Slice, {-1}, 8, -1, 8);
  st(OpKind::Sigmoid, {0}, 8);
  st(OpKind::Tanh, {1}, 8);
  st(OpKind::Mul, {2, 3}, 8);
  st(OpKind::Add, {4, -2}, 8, 0);
  st(OpKind::Scale, {5}, 8);
  st(OpKind::Slice, {-1}, 3, -1, 16);
  st(OpKind::Concat, {6, 7}, 11, 1);
  for (int64_t rows : {1, 7, 1000}) {
    Mat x(rows, 19, 10), b(1, 8, 11), o0c(rows, 8, 0), o1c(rows, 11, 0), o0g(rows, 8, 0), o1g(rows, 11, 0);
    const MatView in_c[] = {x.host_view(), b.host_view()}, in_g[] = {x.dev_view(), b.dev_view()};
    const MatView out_c[] = {o0c.host_view(), o1c.host_view()}, out_g[] = {o0g.dev_view(), o1g.dev_view()};
    ASSERT_TRUE(cpu.run_fused(p, in_c, out_c, rows));
    ASSERT_TRUE(gpu.run_fused(p, in_g, out_g, rows));
    EXPECT_LT(error(o0g.download(), o0c.host), 1e-5) << rows << " rows";
    EXPECT_LT(error(o1g.download(), o1c.host), 1e-5) << rows << " rows";
  }
}

// Bytes on the host and the same bytes on the device.
struct Raw {
  std::vector<char> host;
  void* dev = nullptr;
  explicit Raw(size_t bytes) : host(std::max<size_t>(bytes, 1)) {
    EXPECT_EQ(cudaMalloc(&dev, host.size()), cudaSuccess);
  }
  ~Raw() { cudaFree(dev); }
  void upload() {
    EXPECT_EQ(cudaMemcpy(dev, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  std::vector<char> download() const {
    std::vector<char> out(host.size());
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(out.data(), dev, out.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }
};

// One op on both backends: float inputs are random in [lo, hi], int32
// inputs (ids, labels) random in [-1, id_max); outputs compared by
// normalised error.
struct OpCase {
  OpKind op;
  std::vector<std::pair<int64_t, int64_t>> in_shapes;  // (rows, cols)
  std::vector<bool> in_ids;                            // int32 ids
  std::pair<int64_t, int64_t> out_shape;
  ir::Attrs attrs{};
  int32_t id_max = 0;
  float lo = -2, hi = 2;
};

// compare = false: the GPU only (for error paths the CPU would report first).
double run_case(Backend& cpu, Backend& gpu, const OpCase& c, DType t, ExecContext ctx = {}, bool compare = true) {
  std::mt19937 rng(static_cast<uint32_t>(c.op) * 31 + 7);
  const size_t es = dtype_size(t);
  std::vector<std::unique_ptr<Raw>> ins;
  std::vector<MatView> in_h, in_d;
  for (size_t i = 0; i < c.in_shapes.size(); ++i) {
    const auto [r, k] = c.in_shapes[i];
    const bool ids = i < c.in_ids.size() && c.in_ids[i];
    auto buf = std::make_unique<Raw>(static_cast<size_t>(r * k) * (ids ? 4 : es));
    for (int64_t j = 0; j < r * k; ++j) {
      if (ids) {
        const int32_t id = std::uniform_int_distribution<int32_t>(-1, c.id_max - 1)(rng);
        reinterpret_cast<int32_t*>(buf->host.data())[j] = id;
      } else {
        const double v = std::uniform_real_distribution<double>(c.lo, c.hi)(rng);
        if (t == DType::f64) reinterpret_cast<double*>(buf->host.data())[j] = v;
        else reinterpret_cast<float*>(buf->host.data())[j] = static_cast<float>(v);
      }
    }
    buf->upload();
    const DType dt = ids ? DType::i32 : t;
    in_h.push_back({buf->host.data(), r, k, dt});
    in_d.push_back({buf->dev, r, k, dt});
    ins.push_back(std::move(buf));
  }
  const auto [orows, ocols] = c.out_shape;
  Raw out_h(static_cast<size_t>(orows * ocols) * es), out_d(static_cast<size_t>(orows * ocols) * es);
  ir::Node node;
  node.op = c.op;
  node.attrs = c.attrs;
  if (compare) cpu.run({node, in_h, {out_h.host.data(), orows, ocols, t}, ctx});
  gpu.run({node, in_d, {out_d.dev, orows, ocols, t}, ctx});
  if (!compare) return 0;
  const std::vector<char> got = out_d.download();
  std::vector<float> a, b;
  for (int64_t j = 0; j < orows * ocols; ++j) {
    if (t == DType::f64) {
      a.push_back(static_cast<float>(reinterpret_cast<const double*>(got.data())[j]));
      b.push_back(static_cast<float>(reinterpret_cast<const double*>(out_h.host.data())[j]));
    } else {
      a.push_back(reinterpret_cast<const float*>(got.data())[j]);
      b.push_back(reinterpret_cast<const float*>(out_h.host.data())[j]);
    }
  }
  return error(a, b);
}

TEST_F(CudaBackendTest, EveryOtherOpMatchesTheCpu) {
  Backend& gpu = backend_for(Device::cuda());
  ir::Attrs mean;
  mean.reduction = ir::Reduction::mean;
  ir::Attrs slice;
  slice.begin = 3;
  ir::Attrs assemble;
  assemble.ranges = {0, 5, 3, 8};
  assemble.width = 9;
  ir::Attrs drop;
  drop.alpha = 0.3;
  const std::vector<OpCase> cases = {
      {OpKind::Softmax, {{40, 1000}}, {}, {40, 1000}},
      {OpKind::LogSoftmax, {{40, 37}}, {}, {40, 37}},
      {OpKind::SoftmaxGrad, {{40, 37}, {40, 37}}, {}, {40, 37}, {}, 0, 0.01f, 1},
      {OpKind::LogSoftmaxGrad, {{40, 37}, {40, 37}}, {}, {40, 37}},
      {OpKind::SoftmaxCrossEntropy, {{40, 37}, {40, 1}}, {false, true}, {1, 1}, {}, 37},
      {OpKind::SoftmaxCrossEntropy, {{40, 37}, {40, 1}}, {false, true}, {1, 1}, mean, 37},
      {OpKind::SoftmaxCrossEntropyGrad, {{40, 37}, {40, 1}, {1, 1}}, {false, true}, {40, 37}, mean, 37},
      {OpKind::Sum, {{300, 70}}, {}, {1, 1}},
      {OpKind::Mean, {{300, 70}}, {}, {1, 1}},
      {OpKind::SumRows, {{300, 70}}, {}, {1, 70}},
      {OpKind::Broadcast, {{1, 70}}, {}, {30, 70}},
      {OpKind::Broadcast, {{1, 1}}, {}, {30, 70}, mean},
      {OpKind::Lookup, {{50, 16}, {90, 1}}, {false, true}, {90, 16}, {}, 50},
      {OpKind::LookupGrad, {{90, 16}, {90, 1}}, {false, true}, {50, 16}, {}, 50},
      {OpKind::Slice, {{20, 10}}, {}, {20, 4}, slice},
      {OpKind::Concat, {{20, 10}, {20, 3}}, {}, {20, 13}},
      {OpKind::Assemble, {{20, 5}, {20, 5}}, {}, {20, 9}, assemble},
      {OpKind::DropoutMask, {{64, 33}}, {}, {64, 33}, drop},
  };
  for (DType t : {DType::f32, DType::f64})
    for (const OpCase& c : cases) {
      ASSERT_TRUE(gpu.supports(c.op)) << ir::op_name(c.op);
      ExecContext ctx;
      ctx.training = true;
      ctx.seed = 11;
      ctx.step = 3;
      EXPECT_LT(run_case(cpu, gpu, c, t, ctx), t == DType::f64 ? 1e-12 : 1e-5)
          << ir::op_name(c.op) << " in " << dtype_name(t);
    }
}

// Ids and labels are checked on the device without a wait: a bad one is
// named (row and value) at the next synchronize() or download(), the wait
// a training step has anyway; the flags are then reset, so the next
// check starts clean. The kernels skip the bad row and touch nothing else.
TEST_F(CudaBackendTest, BadIdsAndLabelsAreErrorsNamingTheRowAtTheNextWait) {
  Backend& gpu = backend_for(Device::cuda());
  Raw table(5 * 4 * sizeof(float)), ids(30 * sizeof(int32_t)), out(30 * 4 * sizeof(float));
  Raw logits(30 * 3 * sizeof(float)), loss(sizeof(float));
  auto* id = reinterpret_cast<int32_t*>(ids.host.data());
  for (int32_t r = 0; r < 30; ++r) id[r] = r % 6 - 1;  // -1 .. 4: valid
  table.upload();
  logits.upload();
  ir::Node lookup, xent;
  const ExecContext ctx;
  lookup.op = OpKind::Lookup;
  xent.op = OpKind::SoftmaxCrossEntropy;
  const auto run_lookup = [&] {
    ids.upload();
    const MatView in[] = {{table.dev, 5, 4, DType::f32}, {ids.dev, 30, 1, DType::i32}};
    gpu.run({lookup, in, {out.dev, 30, 4, DType::f32}, ctx});
  };
  run_lookup();
  EXPECT_EQ(test::error_of([&] { gpu.synchronize(); }), "<no error>") << "every id is valid";
  id[17] = 8;
  EXPECT_EQ(test::error_of(run_lookup), "<no error>") << "the call does not wait for its check";
  EXPECT_CONTAINS(test::error_of([&] { gpu.synchronize(); }), "[lookup] id 8 at row 17 is out of range [0, 5) of the table");
  EXPECT_EQ(test::error_of([&] { gpu.synchronize(); }), "<no error>") << "an error is thrown once";
  // Labels in [-1, 3) but one, named at the next download.
  for (int32_t r = 0; r < 30; ++r) id[r] = r % 4 - 1;
  id[4] = 3;
  ids.upload();
  const MatView in[] = {{logits.dev, 30, 3, DType::f32}, {ids.dev, 30, 1, DType::i32}};
  gpu.run({xent, in, {loss.dev, 1, 1, DType::f32}, ctx});
  float host_loss = 0;
  EXPECT_CONTAINS(test::error_of([&] { gpu.download(&host_loss, loss.dev, sizeof host_loss); }),
                  "[softmax_cross_entropy] label 3 at row 4 out of range [0, 3)");
  for (int32_t r = 0; r < 30; ++r) id[r] = r % 6 - 1;
  run_lookup();
  EXPECT_EQ(test::error_of([&] { gpu.synchronize(); }), "<no error>");
}

// A tree RNN trained for three SGD steps on the GPU and on the CPU from the
// same parameters: losses and parameters agree to float64 roundoff (the
// GPU sums in other orders), and the values stay on the device throughout.
// A tree RNN over embedded words (row-sparse table gradients), in double.
struct TreeNet {
  ParameterSet ps{DType::f64, 3};
  Program p{DType::f64};
  Symbol loss;
  TreeNet() {
    ps.add("E", {11, 6}, Init::uniform(-1, 1));
    ps.add("W", {6, 8}, Init::glorot());
    ps.add("U", {8, 8}, Init::glorot());
    ps.add("Wo", {8, 3}, Init::glorot());
    VertexFunction f("cell", 8, DType::f64);
    Symbol h = tanh(matmul(f.pull(6), f.param(ps["W"])) + matmul(f.gather_reduce(), f.param(ps["U"])));
    f.scatter(h);
    f.push(h);
    Symbol hs = p.apply(f, lookup(p.param(ps["E"]), p.input_ids("x")));
    loss = softmax_cross_entropy(matmul(hs, p.param(ps["Wo"])), p.input_ids("labels"));
  }
};

std::vector<InputGraph> random_trees() {
  std::mt19937_64 rng(5);
  std::vector<InputGraph> graphs;
  for (int i = 0; i < 6; ++i) {
    graphs.push_back(test::random_tree(rng, 12, 3, true, "tree"));
    test::attach_random_ids(rng, graphs.back(), 11, 3);
  }
  return graphs;
}

TEST_F(CudaBackendTest, AnExecutorTrainsOnCudaAsOnTheCpu) {
  const std::vector<InputGraph> graphs = random_trees();
  const GraphBatch batch = GraphBatch::of(graphs);
  TreeNet host_net, gpu_net;
  Executor on_cpu(host_net.p, host_net.ps), on_gpu(gpu_net.p, gpu_net.ps, {.device = Device::cuda()});
  for (int step = 0; step < 3; ++step) {
    for (auto [net, ex] : {std::pair{&host_net, &on_cpu}, std::pair{&gpu_net, &on_gpu}}) {
      ex->forward(batch, Mode::train);
      net->ps.zero_grad();
      ex->backward(net->loss);
      for (Parameter* prm : net->ps.all())
        for (int64_t i = 0; i < prm->value.numel(); ++i) prm->value.set(i, prm->value.at(i) - 0.2 * prm->grad.at(i));
    }
    EXPECT_NEAR(on_gpu.scalar(gpu_net.loss), on_cpu.scalar(host_net.loss), 1e-10) << "step " << step;
  }
  for (const Parameter* prm : host_net.ps.all())
    EXPECT_LT(test::relative_error(gpu_net.ps[prm->name].value, prm->value), 1e-10) << prm->name;
}

// The Trainer with its optimiser on the GPU (every rule, weight decay and
// clipping in device kernels) against the Trainer on the CPU.
TEST_F(CudaBackendTest, TheOptimiserOnTheGpuMatchesTheCpu) {
  const std::vector<InputGraph> graphs = random_trees();
  const GraphBatch batch = GraphBatch::of(graphs);
  for (int which = 0; which < 4; ++which) {
    const auto optimiser = [&]() -> std::unique_ptr<Optimizer> {
      switch (which) {
        case 0: return std::make_unique<Sgd>(SgdOptions{.lr = 0.2});
        case 1: return std::make_unique<Sgd>(SgdOptions{.lr = 0.2, .momentum = 0.9});
        case 2: return std::make_unique<Adagrad>(AdagradOptions{.lr = 0.2});
        default: return std::make_unique<Adam>(AdamOptions{.lr = 0.02});
      }
    };
    TreeNet host_net, gpu_net;
    for (TreeNet* n : {&host_net, &gpu_net}) n->ps["W"].decay = true;
    const TrainerOptions o{.clip_norm = 0.5, .weight_decay = 0.01};
    TrainerOptions on_gpu_options = o;
    on_gpu_options.executor.device = Device::cuda();
    Trainer on_cpu(host_net.p, host_net.ps, host_net.loss, optimiser(), o);
    Trainer on_gpu(gpu_net.p, gpu_net.ps, gpu_net.loss, optimiser(), on_gpu_options);
    ASSERT_TRUE(on_gpu.optimizer_on_device());
    for (int step = 0; step < 4; ++step) {
      const StepResult want = on_cpu.step(batch), got = on_gpu.step(batch);
      EXPECT_NEAR(got.loss, want.loss, 1e-10 * std::abs(want.loss)) << "optimiser " << which << " step " << step;
      EXPECT_NEAR(got.grad_norm, want.grad_norm, 1e-10 * want.grad_norm) << "optimiser " << which;
    }
    for (const Parameter* prm : host_net.ps.all())
      EXPECT_LT(test::relative_error(gpu_net.ps[prm->name].value, prm->value), 1e-10) << prm->name << ", " << which;
  }
}

}  // namespace
}  // namespace sylva
