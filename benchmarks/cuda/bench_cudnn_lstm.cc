// The Fixed-LSTM workload's strongest GPU baseline (the Cavs paper's): one
// training step of the LSTM language model with the recurrence in cuDNN's
// RNN (LSTM) kernels, doing what `bench_suite --workload fixed-lstm
// --device cuda --optimizer sgd` does per step on Sylva's side, so the two
// rates compare like for like. Per step, on --batch chains of --steps
// tokens (time-major):
//  - the host checks every id and target against the vocabulary (Sylva's
//    executor validates its batch) and uploads them through the backend;
//  - the gradients are zeroed as Sylva's strategy zeroes them (dense ones
//    in full, the embedding's rows touched last step);
//  - forward: embedding lookup, cuDNN LSTM forward (training), projection
//    to the vocabulary plus its bias, softmax cross-entropy summed over
//    tokens (as Sylva's loss), the loss downloaded (Sylva's strategy reads
//    its loss after forward: one wait);
//  - backward: the loss gradient, the projection's and bias's gradients,
//    cuDNN backward data and weights, the embedding gradient added into
//    the looked-up rows;
//  - the update: Sylva's own SGD on the device (ParamStore updated there), the
//    optimiser Sylva's side runs: each gradient's sum of squares in one
//    download (checked for NaNs), then the update kernels, the embedding's
//    rows only;
//  - a device synchronisation before the clock stops.
// What differs: the LSTM recurrence (cuDNN's fused RNN kernels against
// Sylva's batched cell) and the ids (uniform synthetic ones here, PTB's
// stream on Sylva's side: the same work per token). cuDNN, cuBLAS and the
// backend's kernels share the backend's stream. Prints words/s (median and
// spread of --repeats steps after a warm-up). Exits 2 with the reason when
// there is no GPU.
//
//   bench_cudnn_lstm [--batch 16,64] [--hidden 200] [--vocab 10000] [--steps 64] [--layers 1] [--repeats 20]
#include <CLI/CLI.hpp>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "sylva/backend/backend.h"
#include "sylva/frontend/parameter_set.h"
#include "sylva/ir/graph.h"
#include "sylva/runtime/param_store.h"
#include "sylva/train/optimizer.h"

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

struct Result {
  double median, lo, hi;  // words per second
};

Result run(int64_t B, int64_t H, int64_t V, int64_t T, int L, int repeats) {
  const int64_t D = H, N = T * B;  // embedding size = hidden, as the Sylva model
  Backend& gpu = backend_for(Device::cuda());
  std::mt19937 rng(42);
  cudnnHandle_t cudnn = nullptr;
  CK_CUDNN(cudnnCreate(&cudnn));
  // cuDNN and the backend's kernels on the backend's stream, in order.
  const auto stream = static_cast<cudaStream_t>(gpu.native_stream());
  CK_CUDNN(cudnnSetStream(cudnn, stream));
  // Token ids and targets, time-major (row t * B + b).
  std::vector<int32_t> ids(static_cast<size_t>(N)), targets(static_cast<size_t>(N));
  std::uniform_int_distribution<int32_t> word(0, static_cast<int32_t>(V - 1));
  for (int64_t k = 0; k < N; ++k) ids[static_cast<size_t>(k)] = word(rng), targets[static_cast<size_t>(k)] = word(rng);
  Dev d_ids(ids.size() * 4), d_targets(targets.size() * 4);
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
  Dev work(work_bytes), reserve(reserve_bytes);
  // The parameters, Sylva's way: a ParameterSet kept on the device by a
  // ParamStore updated on the device (cuDNN's weights as one flat parameter).
  ParameterSet ps(DType::f32, 42);
  ps.add("E", {V, D}, Init::uniform(-0.1, 0.1));
  ps.add("lstm", {static_cast<int64_t>(weight_bytes / 4)}, Init::uniform(-0.1, 0.1));
  ps.add("Ws", {H, V}, Init::uniform(-0.1, 0.1));
  ps.add("bs", {V}, Init::zeros());
  ParamStore store(ps, gpu);
  store.set_update_side(Side::device);
  store.make_current(Side::device);
  Sgd sgd({.lr = 0.1});
  Buffer sums(gpu.memory());
  sums.reserve(ps.all().size() * sizeof(double));
  std::vector<double> host_sums(ps.all().size());
  const MatView E = store.value("E"), dE = store.grad("E"), W = store.value("lstm"), dW = store.grad("lstm"),
                Ws = store.value("Ws"), dWs = store.grad("Ws"), bs = store.value("bs"), dbs = store.grad("bs");
  // Activations (no initial state: hx = cx = 0, as chains carry none).
  Dev x(static_cast<size_t>(N * D) * 4), dx(static_cast<size_t>(N * D) * 4), y(static_cast<size_t>(N * H) * 4),
      dy(static_cast<size_t>(N * H) * 4), proj(static_cast<size_t>(N * V) * 4), logits(static_cast<size_t>(N * V) * 4),
      dlogits(static_cast<size_t>(N * V) * 4), loss(4), seed(4), dbias(static_cast<size_t>(V) * 4);
  const float one = 1.0f;
  CK_CUDA(cudaMemcpy(seed.p, &one, 4, cudaMemcpyHostToDevice));
  CK_CUDA(cudaDeviceSynchronize());  // the set-up's copies ran on the default stream
  const auto view = [](const Dev& d, int64_t r, int64_t c, DType t = DType::f32) { return MatView{d.p, r, c, t}; };
  ExecContext ctx;
  ctx.training = true;
  const auto op = [&](OpKind k, std::vector<MatView> in, MatView out, bool ta = false, bool tb = false,
                      bool accumulate = false) {
    ir::Node n;
    n.op = k;
    n.attrs.trans_a = ta;
    n.attrs.trans_b = tb;
    gpu.run({n, in, out, ctx, accumulate});
  };
  RowSparsity touched;  // the embedding rows the last backward touched
  bool first = true;
  const auto step = [&] {
    for (size_t k = 0; k < ids.size(); ++k)
      if (ids[k] < 0 || ids[k] >= V || targets[k] < 0 || targets[k] >= V) {
        std::fprintf(stderr, "bench_cudnn_lstm: token %zu out of range\n", k);
        std::exit(1);
      }
    gpu.upload(d_ids.p, ids.data(), ids.size() * 4);
    gpu.upload(d_targets.p, targets.data(), targets.size() * 4);
    store.zero_grads(first ? RowSparsity{} : touched);
    first = false;
    const MatView iv = view(d_ids, N, 1, DType::i32), tv = view(d_targets, N, 1, DType::i32);
    op(OpKind::Lookup, {E, iv}, view(x, N, D));
    CK_CUDNN(cudnnRNNForward(cudnn, rnn, CUDNN_FWD_MODE_TRAINING, d_lengths.i(), x_desc, x.p, y_desc, y.p, h_desc,
                             nullptr, nullptr, h_desc, nullptr, nullptr, weight_bytes, W.data, work_bytes, work.p,
                             reserve_bytes, reserve.p));
    op(OpKind::MatMul, {view(y, N, H), Ws}, view(proj, N, V));
    op(OpKind::Add, {view(proj, N, V), {bs.data, 1, V, DType::f32}}, view(logits, N, V));
    op(OpKind::SoftmaxCrossEntropy, {view(logits, N, V), tv}, view(loss, 1, 1));
    float loss_value = 0.0f;
    gpu.download(&loss_value, loss.p, sizeof loss_value);  // the loss read after forward
    op(OpKind::SoftmaxCrossEntropyGrad, {view(logits, N, V), tv, view(seed, 1, 1)}, view(dlogits, N, V));
    op(OpKind::MatMul, {view(y, N, H), view(dlogits, N, V)}, dWs, true, false, /*accumulate=*/true);
    op(OpKind::SumRows, {view(dlogits, N, V)}, view(dbias, 1, V));
    gpu.accumulate(view(dbias, 1, V), dbs);
    op(OpKind::MatMul, {view(dlogits, N, V), Ws}, view(dy, N, H), false, true);
    CK_CUDNN(cudnnRNNBackwardData_v8(cudnn, rnn, d_lengths.i(), y_desc, y.p, dy.p, x_desc, dx.p, h_desc, nullptr,
                                     nullptr, nullptr, h_desc, nullptr, nullptr, nullptr, weight_bytes, W.data,
                                     work_bytes, work.p, reserve_bytes, reserve.p));
    CK_CUDNN(cudnnRNNBackwardWeights_v8(cudnn, rnn, CUDNN_WGRAD_MODE_ADD, d_lengths.i(), x_desc, x.p, h_desc, nullptr,
                                        y_desc, y.p, weight_bytes, dW.data, work_bytes, work.p, reserve_bytes,
                                        reserve.p));
    gpu.add_rows(view(dx, N, D), {}, dE, ids);
    std::vector<int32_t>& rows = touched["E"];
    rows.assign(ids.begin(), ids.end());
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    queue_gradient_sums(store, touched, 0.0, static_cast<double*>(sums.data()));
    gpu.download(host_sums.data(), sums.data(), host_sums.size() * sizeof(double));
    sgd.step(store, &touched, 0.0, 1.0, host_sums);
    gpu.synchronize();
    if (!std::isfinite(loss_value)) {
      std::fprintf(stderr, "bench_cudnn_lstm: the loss is %g\n", static_cast<double>(loss_value));
      std::exit(1);
    }
  };
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
