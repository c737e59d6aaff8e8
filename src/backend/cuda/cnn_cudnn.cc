// The CNN operators on the GPU: convolution and pooling through cuDNN,
// bias with activation, channel slices and element-wise terms through
// kernels/cuda/cnn.cu. Values live in the CUDA backend's device memory;
// calls are queued on the current lane's stream and return at once.
// Concurrent IOS groups each get a lane: a stream with its own cuDNN
// handle and convolution workspace, forked from lane 0 and joined back
// with events. Convolutions use FMA math only (no TF32), so results match
// the CPU's float32 ones to rounding; the algorithm is cuDNN's first
// heuristic choice that supports that and fits in 1 GiB of workspace.
//
// cuDNN 9 marks this (the "legacy") API deprecated in favour of its graph
// API; it is still shipped and supported in 9.x.
#include <cudnn.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../cnn_ops.h"
#include "cuda/cnn.h"
#include "cuda_check.h"
#include "sylva/backend/backend.h"

namespace sylva::cnn {
namespace {

using ios::CnnNode;

struct Deleters {
  void operator()(CUstream_st* s) const { cudaStreamDestroy(s); }
  void operator()(CUevent_st* e) const { cudaEventDestroy(e); }
  void operator()(cudnnContext* h) const { cudnnDestroy(h); }
  void operator()(cudnnTensorStruct* d) const { cudnnDestroyTensorDescriptor(d); }
  void operator()(cudnnFilterStruct* d) const { cudnnDestroyFilterDescriptor(d); }
  void operator()(cudnnConvolutionStruct* d) const { cudnnDestroyConvolutionDescriptor(d); }
  void operator()(cudnnPoolingStruct* d) const { cudnnDestroyPoolingDescriptor(d); }
  void operator()(void* p) const { cudaFree(p); }
};
template <class T>
using Owned = std::unique_ptr<T, Deleters>;

Owned<cudnnTensorStruct> tensor(int64_t n, int64_t c, int64_t h, int64_t w) {
  cudnnTensorDescriptor_t d = nullptr;
  SYLVA_CUDNN_CHECK(cudnnCreateTensorDescriptor(&d));
  Owned<cudnnTensorStruct> owned(d);
  SYLVA_CUDNN_CHECK(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, static_cast<int>(n),
                                               static_cast<int>(c), static_cast<int>(h), static_cast<int>(w)));
  return owned;
}

int act_code(Act a) {
  switch (a) {
    case Act::relu: return 1;
    case Act::sigmoid: return 2;
    case Act::tanh: return 3;
    case Act::identity: return 0;
  }
  return 0;
}

constexpr size_t kMaxWorkspace = size_t{1} << 30;
constexpr int kMaxLanes = 64;

class CudnnOps final : public CnnOps {
 public:
  // The CUDA backend checks for a device (naming what it found) and owns
  // the device memory; its first use picks device 0 for this process.
  CudnnOps() : backend_(backend_for(Device::cuda(0))) { add_lane(); }
  ~CudnnOps() override { cudaDeviceSynchronize(); }

  Memory& memory() override { return backend_.memory(); }
  void upload(float* dst, const float* src, int64_t count) override {
    // From pageable memory: returns once `src` is staged, so the caller may reuse it.
    if (count > 0)
      SYLVA_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(count) * sizeof(float), cudaMemcpyHostToDevice,
                                       stream()));
  }
  void download(float* dst, const float* src, int64_t count) override {
    synchronize();
    if (count > 0)
      SYLVA_CUDA_CHECK(cudaMemcpy(dst, src, static_cast<size_t>(count) * sizeof(float), cudaMemcpyDeviceToHost));
  }
  void move_channels(const float* x, int64_t x_channels, int64_t x_c0, float* y, int64_t y_channels, int64_t y_c0,
                     int64_t channels, int64_t n, int64_t hw, bool add) override {
    check(cuda_kernels::move_channels(x, x_channels, x_c0, y, y_channels, y_c0, channels, n, hw, add, stream()));
  }
  void activate(float* y, int64_t count, Act act) override {
    check(cuda_kernels::bias_activate(y, nullptr, 1, 1, count, act_code(act), stream()));
  }
  void element(const float* x, float* y, int64_t n, int64_t terms, int64_t each, bool mul) override {
    check(cuda_kernels::element_terms(x, y, n, terms, each, mul, stream()));
  }

  void conv(const CnnNode& n, const float* x, Nchw in, const float* w, const float* b, float* y) override {
    const Conv& c = conv_for(n, in);
    Lane& l = lanes_[static_cast<size_t>(cur_)];
    grow_workspace(l, c.workspace);
    const float one = 1.0f, zero = 0.0f;
    SYLVA_CUDNN_CHECK(cudnnConvolutionForward(l.cudnn.get(), &one, c.x.get(), x, c.w.get(), w, c.conv.get(), c.algo,
                                              l.workspace.get(), l.workspace_bytes, &zero, c.y.get(), y));
    check(cuda_kernels::bias_activate(y, b, in.n, n.out_channels, n.output_shape[1] * n.output_shape[2],
                                      act_code(act_of(n.act)), stream()));
  }
  void pool(const CnnNode& n, const float* x, Nchw in, float* y) override {
    const Pool& p = pool_for(n, in);
    const float one = 1.0f, zero = 0.0f;
    SYLVA_CUDNN_CHECK(cudnnPoolingForward(lanes_[static_cast<size_t>(cur_)].cudnn.get(), p.pool.get(), &one,
                                          p.x.get(), x, &zero, p.y.get(), y));
  }

  int lanes() const override { return kMaxLanes; }
  void fork(int k) override {
    SYLVA_CHECK(k >= 1 && k <= kMaxLanes, "[cudnn] ", k, " concurrent groups; at most ", kMaxLanes);
    while (static_cast<int>(lanes_.size()) < k) add_lane();
    SYLVA_CUDA_CHECK(cudaEventRecord(lanes_[0].event.get(), lanes_[0].stream.get()));
    for (int g = 1; g < k; ++g)
      SYLVA_CUDA_CHECK(cudaStreamWaitEvent(lanes_[static_cast<size_t>(g)].stream.get(), lanes_[0].event.get(), 0));
    forked_ = k;
  }
  void lane(int g) override {
    SYLVA_CHECK(g >= 0 && g < forked_, "[cudnn] lane ", g, " outside the ", forked_, " forked");
    cur_ = g;
  }
  void join() override {
    for (int g = 1; g < forked_; ++g) {
      const Lane& l = lanes_[static_cast<size_t>(g)];
      SYLVA_CUDA_CHECK(cudaEventRecord(l.event.get(), l.stream.get()));
      SYLVA_CUDA_CHECK(cudaStreamWaitEvent(lanes_[0].stream.get(), l.event.get(), 0));
    }
    forked_ = 1;
    cur_ = 0;
  }
  void synchronize() override {
    for (const Lane& l : lanes_) SYLVA_CUDA_CHECK(cudaStreamSynchronize(l.stream.get()));
  }

 private:
  // A stream, its cuDNN handle, an event (recorded at fork / join; a
  // wait uses the record made before it) and a convolution workspace.
  struct Lane {
    Owned<CUstream_st> stream;
    Owned<cudnnContext> cudnn;
    Owned<CUevent_st> event;
    Owned<void> workspace;
    size_t workspace_bytes = 0;
  };
  struct Conv {
    Owned<cudnnTensorStruct> x, y;
    Owned<cudnnFilterStruct> w;
    Owned<cudnnConvolutionStruct> conv;
    cudnnConvolutionFwdAlgo_t algo{};
    size_t workspace = 0;
  };
  struct Pool {
    Owned<cudnnTensorStruct> x, y;
    Owned<cudnnPoolingStruct> pool;
  };

  cudaStream_t stream() const { return lanes_[static_cast<size_t>(cur_)].stream.get(); }
  static void check(int launched) { SYLVA_CUDA_CHECK(static_cast<cudaError_t>(launched)); }

  void add_lane() {
    Lane l;
    cudaStream_t s = nullptr;
    SYLVA_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    l.stream.reset(s);
    cudnnHandle_t h = nullptr;
    SYLVA_CUDNN_CHECK(cudnnCreate(&h));
    l.cudnn.reset(h);
    SYLVA_CUDNN_CHECK(cudnnSetStream(h, s));
    cudaEvent_t e = nullptr;
    SYLVA_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    l.event.reset(e);
    lanes_.push_back(std::move(l));
  }
  // The lane's workspace, grown (after its stream is done with the old one).
  void grow_workspace(Lane& l, size_t bytes) {
    if (bytes <= l.workspace_bytes) return;
    SYLVA_CUDA_CHECK(cudaStreamSynchronize(l.stream.get()));
    l.workspace.reset();
    void* p = nullptr;
    SYLVA_CUDA_CHECK(cudaMalloc(&p, bytes));
    l.workspace.reset(p);
    l.workspace_bytes = bytes;
  }

  // Descriptors and algorithm of node n's convolution, made on first use.
  const Conv& conv_for(const CnnNode& n, Nchw in) {
    if (auto it = convs_.find(n.name); it != convs_.end()) return it->second;
    Conv c;
    const int64_t K = n.out_channels, G = n.groups, OH = n.output_shape[1], OW = n.output_shape[2];
    c.x = tensor(in.n, in.c, in.h, in.w);
    c.y = tensor(in.n, K, OH, OW);
    cudnnFilterDescriptor_t f = nullptr;
    SYLVA_CUDNN_CHECK(cudnnCreateFilterDescriptor(&f));
    c.w.reset(f);
    SYLVA_CUDNN_CHECK(cudnnSetFilter4dDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, static_cast<int>(K),
                                                 static_cast<int>(in.c / G), static_cast<int>(n.kernel[0]),
                                                 static_cast<int>(n.kernel[1])));
    cudnnConvolutionDescriptor_t d = nullptr;
    SYLVA_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&d));
    c.conv.reset(d);
    SYLVA_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(d, static_cast<int>(n.padding[0]), static_cast<int>(n.padding[1]),
                                                      static_cast<int>(n.stride[0]), static_cast<int>(n.stride[1]), 1,
                                                      1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    SYLVA_CUDNN_CHECK(cudnnSetConvolutionGroupCount(d, static_cast<int>(G)));
    SYLVA_CUDNN_CHECK(cudnnSetConvolutionMathType(d, CUDNN_FMA_MATH));
    int dn = 0, dc = 0, dh = 0, dw = 0;
    SYLVA_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(d, c.x.get(), f, &dn, &dc, &dh, &dw));
    SYLVA_CHECK(dn == in.n && dc == K && dh == OH && dw == OW, "[cudnn] conv '", n.name, "': cuDNN computes [", dc,
                ", ", dh, ", ", dw, "] per sample, the graph declares [", K, ", ", OH, ", ", OW, "]");
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int returned = 0;
    SYLVA_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(lanes_[0].cudnn.get(), c.x.get(), f, d, c.y.get(),
                                                             CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf));
    // The first heuristic choice that runs without tensor-op math under this
    // (FMA) descriptor and fits the workspace cap; IMPLICIT_GEMM (no
    // workspace, always supported) otherwise.
    c.algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
    for (int k = 0; k < returned; ++k) {
      const cudnnConvolutionFwdAlgoPerf_t& r = perf[k];
      if (r.status != CUDNN_STATUS_SUCCESS || r.mathType == CUDNN_TENSOR_OP_MATH ||
          r.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION)
        continue;
      size_t bytes = 0;
      if (cudnnGetConvolutionForwardWorkspaceSize(lanes_[0].cudnn.get(), c.x.get(), f, d, c.y.get(), r.algo, &bytes) !=
              CUDNN_STATUS_SUCCESS ||
          bytes > kMaxWorkspace)
        continue;
      c.algo = r.algo;
      break;
    }
    SYLVA_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(lanes_[0].cudnn.get(), c.x.get(), f, d, c.y.get(),
                                                              c.algo, &c.workspace));
    return convs_.emplace(n.name, std::move(c)).first->second;
  }

  const Pool& pool_for(const CnnNode& n, Nchw in) {
    if (auto it = pools_.find(n.name); it != pools_.end()) return it->second;
    Pool p;
    const bool global = n.pool_type == "global_max" || n.pool_type == "global_avg";
    const bool is_max = n.pool_type == "max" || n.pool_type == "global_max";
    p.x = tensor(in.n, in.c, in.h, in.w);
    p.y = tensor(in.n, in.c, n.output_shape[1], n.output_shape[2]);
    cudnnPoolingDescriptor_t d = nullptr;
    SYLVA_CUDNN_CHECK(cudnnCreatePoolingDescriptor(&d));
    p.pool.reset(d);
    const auto i = [](int64_t v) { return static_cast<int>(v); };
    SYLVA_CUDNN_CHECK(cudnnSetPooling2dDescriptor(
        d, is_max ? CUDNN_POOLING_MAX : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, CUDNN_NOT_PROPAGATE_NAN,
        global ? i(in.h) : i(n.kernel[0]), global ? i(in.w) : i(n.kernel[1]), global ? 0 : i(n.padding[0]),
        global ? 0 : i(n.padding[1]), global ? 1 : i(n.stride[0]), global ? 1 : i(n.stride[1])));
    return pools_.emplace(n.name, std::move(p)).first->second;
  }

  Backend& backend_;
  std::vector<Lane> lanes_;
  int cur_ = 0, forked_ = 1;
  std::map<std::string, Conv> convs_;
  std::map<std::string, Pool> pools_;
};

}  // namespace

std::unique_ptr<CnnOps> make_cudnn_cnn_ops() { return std::make_unique<CudnnOps>(); }

}  // namespace sylva::cnn
