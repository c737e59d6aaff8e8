// The Fixed-LSTM workload's strongest GPU baseline (the Cavs paper's): one
// training step of the LSTM language model with the recurrence in cuDNN's
// RNN (LSTM) kernels. Per step, on chains of --steps tokens x --batch
// chains (time-major): embedding lookup, cuDNN LSTM forward (training),
// projection to the vocabulary (cuBLAS), softmax cross-entropy (mean), and
// back: the projection's gradients, cuDNN backward data and weights, the
// embedding gradient, and an SGD update of every parameter. The lookup,
// GEMM and loss kernels are the CUDA backend's, called directly on device
// memory. Synthetic token ids (uniform over the vocabulary): only time is
// measured. Prints words/s (median and spread of --repeats steps after a
// warm-up). Exits 2 with the reason when there is no GPU.
//
//   bench_cudnn_lstm [--batch 16,64] [--hidden 200] [--vocab 10000] [--steps 64] [--layers 1] [--repeats 20]
#include <CLI/CLI.hpp>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "sylva/backend/backend.h"
#include "sylva/ir/graph.h"

using namespace sylva;
using ir::OpKind;

namespace {

[[noreturn]] void fail(const char* what, const char* why, int line) {
  std::fprintf(stderr, "bench_cudnn_lstm: %s failed (line %d): %s\n", what, line, why);
  std::exit(1);
}
#define CK_CUDA(e)                                                         \
  do {                                                                     \
    const cudaError_t err_ = (e);                                          \
    if (err_ != cudaSuccess) fail(#e, cudaGetErrorString(err_), __LINE__); \
  } while (0)
#define CK_CUDNN(e)                                                                 \
  do {                                                                              \
    const cudnnStatus_t err_ = (e);                                                 \
    if (err_ != CUDNN_STATUS_SUCCESS) fail(#e, cudnnGetErrorString(err_), __LINE__); \
  } while (0)
#define CK_CUBLAS(e)                                                                   \
  do {                                                                                 \
    const cublasStatus_t err_ = (e);                                                   \
    if (err_ != CUBLAS_STATUS_SUCCESS) fail(#e, cublasGetStatusString(err_), __LINE__); \
  } while (0)

struct Dev {  // device bytes
  void* p = nullptr;
  size_t bytes = 0;
  explicit Dev(size_t n) : bytes(std::max<size_t>(n, 4)) { CK_CUDA(cudaMalloc(&p, bytes)); }
  ~Dev() { cudaFree(p); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  float* f() const { return static_cast<float*>(p); }
  int32_t* i() const { return static_cast<int32_t*>(p); }
};

void fill_uniform(const Dev& d, size_t n, float scale, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> h(n);
  for (float& v : h) v = u(rng);
  CK_CUDA(cudaMemcpy(d.p, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
}

struct Result {
  double median, lo, hi;  // words per second
};

Result run(int64_t B, int64_t H, int64_t V, int64_t T, int L, int repeats) {
  const int64_t D = H, N = T * B;  // embedding size = hidden, as the Sylva model
  Backend& gpu = backend_for(Device::cuda());
  std::mt19937 rng(42);
  cudnnHandle_t cudnn = nullptr;
  CK_CUDNN(cudnnCreate(&cudnn));
  cublasHandle_t cublas = nullptr;
  CK_CUBLAS(cublasCreate(&cublas));
  // cuDNN, cuBLAS and the backend's kernels all on the backend's stream, in order.
  const auto stream = static_cast<cudaStream_t>(gpu.native_stream());
  CK_CUDNN(cudnnSetStream(cudnn, stream));
  CK_CUBLAS(cublasSetStream(cublas, stream));
  // Parameters and their gradients.
  Dev emb(static_cast<size_t>(V * D) * 4), demb(static_cast<size_t>(V * D) * 4), proj(static_cast<size_t>(H * V) * 4),
      dproj(static_cast<size_t>(H * V) * 4);
  fill_uniform(emb, static_cast<size_t>(V * D), 0.1f, rng);
  fill_uniform(proj, static_cast<size_t>(H * V), 0.1f, rng);
  // Token ids and targets, time-major (row t * B + b).
  std::vector<int32_t> ids(static_cast<size_t>(N)), targets(static_cast<size_t>(N));
  std::uniform_int_distribution<int32_t> word(0, static_cast<int32_t>(V - 1));
  for (int64_t k = 0; k < N; ++k) ids[static_cast<size_t>(k)] = word(rng), targets[static_cast<size_t>(k)] = word(rng);
  Dev d_ids(ids.size() * 4), d_targets(targets.size() * 4);
  CK_CUDA(cudaMemcpy(d_ids.p, ids.data(), ids.size() * 4, cudaMemcpyHostToDevice));
  CK_CUDA(cudaMemcpy(d_targets.p, targets.data(), targets.size() * 4, cudaMemcpyHostToDevice));
  // The LSTM.
  cudnnDropoutDescriptor_t drop = nullptr;
  CK_CUDNN(cudnnCreateDropoutDescriptor(&drop));
  size_t drop_bytes = 0;
  CK_CUDNN(cudnnDropoutGetStatesSize(cudnn, &drop_bytes));
  Dev drop_states(drop_bytes);
  CK_CUDNN(cudnnSetDropoutDescriptor(drop, cudnn, 0.0f, drop_states.p, drop_states.bytes, 1));
  cudnnRNNDescriptor_t rnn = nullptr;
  CK_CUDNN(cudnnCreateRNNDescriptor(&rnn));
  CK_CUDNN(cudnnSetRNNDescriptor_v8(rnn, CUDNN_RNN_ALGO_STANDARD, CUDNN_LSTM, CUDNN_RNN_DOUBLE_BIAS,
                                    CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT,
                                    CUDNN_DEFAULT_MATH, static_cast<int32_t>(D), static_cast<int32_t>(H),
                                    static_cast<int32_t>(H), L, drop, CUDNN_RNN_PADDED_IO_DISABLED));
  std::vector<int> lengths(static_cast<size_t>(B), static_cast<int>(T));
  Dev d_lengths(lengths.size() * 4);
  CK_CUDA(cudaMemcpy(d_lengths.p, lengths.data(), lengths.size() * 4, cudaMemcpyHostToDevice));
  cudnnRNNDataDescriptor_t x_desc = nullptr, y_desc = nullptr;
  CK_CUDNN(cudnnCreateRNNDataDescriptor(&x_desc));
  CK_CUDNN(cudnnCreateRNNDataDescriptor(&y_desc));
  CK_CUDNN(cudnnSetRNNDataDescriptor(x_desc, CUDNN_DATA_FLOAT, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED,
                                     static_cast<int>(T), static_cast<int>(B), static_cast<int>(D), lengths.data(),
                                     nullptr));
  CK_CUDNN(cudnnSetRNNDataDescriptor(y_desc, CUDNN_DATA_FLOAT, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED,
                                     static_cast<int>(T), static_cast<int>(B), static_cast<int>(H), lengths.data(),
                                     nullptr));
  cudnnTensorDescriptor_t h_desc = nullptr;
  CK_CUDNN(cudnnCreateTensorDescriptor(&h_desc));
  const int dims[3] = {L, static_cast<int>(B), static_cast<int>(H)};
  const int strides[3] = {static_cast<int>(B * H), static_cast<int>(H), 1};
  CK_CUDNN(cudnnSetTensorNdDescriptor(h_desc, CUDNN_DATA_FLOAT, 3, dims, strides));
  size_t weight_bytes = 0, work_bytes = 0, reserve_bytes = 0;
  CK_CUDNN(cudnnGetRNNWeightSpaceSize(cudnn, rnn, &weight_bytes));
  CK_CUDNN(cudnnGetRNNTempSpaceSizes(cudnn, rnn, CUDNN_FWD_MODE_TRAINING, x_desc, &work_bytes, &reserve_bytes));
  Dev weights(weight_bytes), dweights(weight_bytes), work(work_bytes), reserve(reserve_bytes);
  fill_uniform(weights, weight_bytes / 4, 0.1f, rng);
  // Activations (no initial state: hx = cx = 0, as chains carry none).
  Dev x(static_cast<size_t>(N * D) * 4), dx(static_cast<size_t>(N * D) * 4), y(static_cast<size_t>(N * H) * 4),
      dy(static_cast<size_t>(N * H) * 4), logits(static_cast<size_t>(N * V) * 4),
      dlogits(static_cast<size_t>(N * V) * 4), loss(4), seed(4);
  const float one = 1.0f;
  CK_CUDA(cudaMemcpy(seed.p, &one, 4, cudaMemcpyHostToDevice));
  const auto view = [](const Dev& d, int64_t r, int64_t c, DType t = DType::f32) { return MatView{d.p, r, c, t}; };
  ExecContext ctx;
  ctx.training = true;
  const auto op = [&](OpKind k, std::vector<MatView> in, MatView out, bool ta = false, bool tb = false,
                      ir::Reduction red = ir::Reduction::sum) {
    ir::Node n;
    n.op = k;
    n.attrs.trans_a = ta;
    n.attrs.trans_b = tb;
    n.attrs.reduction = red;
    gpu.run({n, in, out, ctx});
  };
  const float lr = -0.1f;
  const auto step = [&] {
    op(OpKind::Lookup, {view(emb, V, D), view(d_ids, N, 1, DType::i32)}, view(x, N, D));
    CK_CUDNN(cudnnRNNForward(cudnn, rnn, CUDNN_FWD_MODE_TRAINING, d_lengths.i(), x_desc, x.p, y_desc, y.p, h_desc,
                             nullptr, nullptr, h_desc, nullptr, nullptr, weight_bytes, weights.p, work_bytes, work.p,
                             reserve_bytes, reserve.p));
    op(OpKind::MatMul, {view(y, N, H), view(proj, H, V)}, view(logits, N, V));
    const MatView tv = view(d_targets, N, 1, DType::i32);
    op(OpKind::SoftmaxCrossEntropy, {view(logits, N, V), tv}, view(loss, 1, 1), false, false, ir::Reduction::mean);
    op(OpKind::SoftmaxCrossEntropyGrad, {view(logits, N, V), tv, view(seed, 1, 1)}, view(dlogits, N, V), false, false,
       ir::Reduction::mean);
    op(OpKind::MatMul, {view(y, N, H), view(dlogits, N, V)}, view(dproj, H, V), true, false);
    op(OpKind::MatMul, {view(dlogits, N, V), view(proj, H, V)}, view(dy, N, H), false, true);
    CK_CUDNN(cudnnRNNBackwardData_v8(cudnn, rnn, d_lengths.i(), y_desc, y.p, dy.p, x_desc, dx.p, h_desc, nullptr,
                                     nullptr, nullptr, h_desc, nullptr, nullptr, nullptr, weight_bytes, weights.p,
                                     work_bytes, work.p, reserve_bytes, reserve.p));
    CK_CUDA(cudaMemsetAsync(dweights.p, 0, weight_bytes, stream));
    CK_CUDNN(cudnnRNNBackwardWeights_v8(cudnn, rnn, CUDNN_WGRAD_MODE_ADD, d_lengths.i(), x_desc, x.p, h_desc, nullptr,
                                        y_desc, y.p, weight_bytes, dweights.p, work_bytes, work.p, reserve_bytes,
                                        reserve.p));
    op(OpKind::LookupGrad, {view(dx, N, D), view(d_ids, N, 1, DType::i32)}, view(demb, V, D));
    CK_CUBLAS(cublasSaxpy(cublas, static_cast<int>(weight_bytes / 4), &lr, dweights.f(), 1, weights.f(), 1));
    CK_CUBLAS(cublasSaxpy(cublas, static_cast<int>(H * V), &lr, dproj.f(), 1, proj.f(), 1));
    CK_CUBLAS(cublasSaxpy(cublas, static_cast<int>(V * D), &lr, demb.f(), 1, emb.f(), 1));
    CK_CUDA(cudaDeviceSynchronize());
  };
  CK_CUDA(cudaDeviceSynchronize());  // the set-up's copies ran on the default stream
  step();  // warm-up
  std::vector<double> wps;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    step();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    wps.push_back(static_cast<double>(N) / seconds);
  }
  std::sort(wps.begin(), wps.end());
  cudnnDestroyTensorDescriptor(h_desc);
  cudnnDestroyRNNDataDescriptor(x_desc);
  cudnnDestroyRNNDataDescriptor(y_desc);
  cudnnDestroyRNNDescriptor(rnn);
  cudnnDestroyDropoutDescriptor(drop);
  cublasDestroy(cublas);
  cudnnDestroy(cudnn);
  return {wps[wps.size() / 2], wps.front(), wps.back()};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Fixed-LSTM training with cuDNN's LSTM: the GPU reference the Cavs paper compared against"};
  std::vector<int64_t> batches{16, 64};
  int64_t hidden = 200, vocab = 10000, steps = 64;
  int layers = 1, repeats = 20;
  app.add_option("--batch", batches, "chains per step")->delimiter(',')->capture_default_str();
  app.add_option("--hidden", hidden, "hidden size (= embedding size)")->capture_default_str();
  app.add_option("--vocab", vocab, "vocabulary size")->capture_default_str();
  app.add_option("--steps", steps, "tokens per chain")->capture_default_str();
  app.add_option("--layers", layers, "LSTM layers")->capture_default_str();
  app.add_option("--repeats", repeats, "timed steps (median reported)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "bench_cudnn_lstm: no CUDA device (%s)\n", cudaGetErrorString(cudaGetLastError()));
    return 2;
  }
  std::printf("# cuDNN LSTM LM training, hidden %lld, vocab %lld, %lld steps, %d layer(s); words/s\n",
              static_cast<long long>(hidden), static_cast<long long>(vocab), static_cast<long long>(steps), layers);
  std::printf("%-8s %12s %12s %12s\n", "batch", "median", "min", "max");
  for (int64_t b : batches) {
    const Result r = run(b, hidden, vocab, steps, layers, repeats);
    std::printf("%-8lld %12.0f %12.0f %12.0f\n", static_cast<long long>(b), r.median, r.lo, r.hi);
  }
  return 0;
}
