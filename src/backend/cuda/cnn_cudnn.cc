// The CNN operators on the GPU: convolution and pooling through cuDNN,
// bias with activation, channel slices and element-wise terms through
// kernels/cuda/cnn.cu. Values live in the CUDA backend's device memory;
// calls are queued on the stream of the backend's current lane
// (Backend::native_stream()) and return at once. Each lane's stream gets a
// cuDNN handle and a convolution workspace of its own, made on its first
// use, so concurrent IOS groups on different lanes share neither.
// Convolutions use FMA math only (no TF32), so results match the CPU's
// float32 ones to rounding; the algorithm is cuDNN's first heuristic choice
// that supports that and fits in 1 GiB of workspace.
//
// cuDNN 9 marks this (the "legacy") API deprecated in favour of its graph
// API; it is still shipped and supported in 9.x.
#include <cudnn.h>

#include <map>
#include <memory>
#include <string>

#include "cuda/cnn.h"
#include "cuda_check.h"
#include "sylva/backend/cnn_kernels.h"

namespace sylva::cnn {
namespace {

struct Deleters {
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

class CudnnKernels final : public CnnKernels {
 public:
  // The CUDA backend checks for a device (naming what it found) and owns
  // the device memory and the streams; its first use picks device 0 for
  // this process.
  CudnnKernels() : backend_(backend_for(Device::cuda(0))) {}
  // Queued work may still use the handles and workspaces.
  ~CudnnKernels() override { cudaDeviceSynchronize(); }

  Backend& backend() override { return backend_; }
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

  void conv(const ConvSpec& n, const float* x, Nchw in, const float* w, const float* b, float* y) override {
    Lane& l = lane();
    const Conv& c = conv_for(n, in, l);
    grow_workspace(l, c.workspace);
    const float one = 1.0f, zero = 0.0f;
    SYLVA_CUDNN_CHECK(cudnnConvolutionForward(l.cudnn.get(), &one, c.x.get(), x, c.w.get(), w, c.conv.get(), c.algo,
                                              l.workspace.get(), l.workspace_bytes, &zero, c.y.get(), y));
    check(cuda_kernels::bias_activate(y, b, in.n, n.out_channels, n.out_h * n.out_w, act_code(n.act), l.stream));
  }
  void pool(const PoolSpec& n, const float* x, Nchw in, float* y) override {
    const Pool& p = pool_for(n, in);
    const float one = 1.0f, zero = 0.0f;
    SYLVA_CUDNN_CHECK(cudnnPoolingForward(lane().cudnn.get(), p.pool.get(), &one, p.x.get(), x, &zero, p.y.get(), y));
  }

 private:
  // What a lane's stream needs besides itself: a cuDNN handle bound to it
  // and a convolution workspace.
  struct Lane {
    cudaStream_t stream = nullptr;
    Owned<cudnnContext> cudnn;
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

  cudaStream_t stream() { return static_cast<cudaStream_t>(backend_.native_stream()); }
  static void check(int launched) { SYLVA_CUDA_CHECK(static_cast<cudaError_t>(launched)); }

  // The current lane's handle and workspace, made on its first use.
  Lane& lane() {
    const cudaStream_t s = stream();
    Lane& l = lanes_[s];
    if (!l.cudnn) {
      cudnnHandle_t h = nullptr;
      SYLVA_CUDNN_CHECK(cudnnCreate(&h));
      l.cudnn.reset(h);
      SYLVA_CUDNN_CHECK(cudnnSetStream(h, s));
      l.stream = s;
    }
    return l;
  }
  // The lane's workspace, grown (after its stream is done with the old one).
  void grow_workspace(Lane& l, size_t bytes) {
    if (bytes <= l.workspace_bytes) return;
    SYLVA_CUDA_CHECK(cudaStreamSynchronize(l.stream));
    l.workspace.reset();
    void* p = nullptr;
    SYLVA_CUDA_CHECK(cudaMalloc(&p, bytes));
    l.workspace.reset(p);
    l.workspace_bytes = bytes;
  }

  // Descriptors and algorithm of layer n's convolution, made on first use
  // (with lane l's handle).
  const Conv& conv_for(const ConvSpec& n, Nchw in, const Lane& l) {
    if (auto it = convs_.find(n.key); it != convs_.end()) return it->second;
    Conv c;
    const int64_t K = n.out_channels, G = n.groups, OH = n.out_h, OW = n.out_w;
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
    SYLVA_CHECK(dn == in.n && dc == K && dh == OH && dw == OW, "[cudnn] conv '", n.key, "': cuDNN computes [", dc,
                ", ", dh, ", ", dw, "] per sample, the graph declares [", K, ", ", OH, ", ", OW, "]");
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int returned = 0;
    SYLVA_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(l.cudnn.get(), c.x.get(), f, d, c.y.get(),
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
      if (cudnnGetConvolutionForwardWorkspaceSize(l.cudnn.get(), c.x.get(), f, d, c.y.get(), r.algo, &bytes) !=
              CUDNN_STATUS_SUCCESS ||
          bytes > kMaxWorkspace)
        continue;
      c.algo = r.algo;
      break;
    }
    SYLVA_CUDNN_CHECK(
        cudnnGetConvolutionForwardWorkspaceSize(l.cudnn.get(), c.x.get(), f, d, c.y.get(), c.algo, &c.workspace));
    return convs_.emplace(n.key, std::move(c)).first->second;
  }

  const Pool& pool_for(const PoolSpec& n, Nchw in) {
    if (auto it = pools_.find(n.key); it != pools_.end()) return it->second;
    Pool p;
    const bool global = n.global, is_max = n.max;
    p.x = tensor(in.n, in.c, in.h, in.w);
    p.y = tensor(in.n, in.c, n.out_h, n.out_w);
    cudnnPoolingDescriptor_t d = nullptr;
    SYLVA_CUDNN_CHECK(cudnnCreatePoolingDescriptor(&d));
    p.pool.reset(d);
    const auto i = [](int64_t v) { return static_cast<int>(v); };
    SYLVA_CUDNN_CHECK(cudnnSetPooling2dDescriptor(
        d, is_max ? CUDNN_POOLING_MAX : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING, CUDNN_NOT_PROPAGATE_NAN,
        global ? i(in.h) : i(n.kernel[0]), global ? i(in.w) : i(n.kernel[1]), global ? 0 : i(n.padding[0]),
        global ? 0 : i(n.padding[1]), global ? 1 : i(n.stride[0]), global ? 1 : i(n.stride[1])));
    return pools_.emplace(n.key, std::move(p)).first->second;
  }

  Backend& backend_;
  std::map<cudaStream_t, Lane> lanes_;  // by stream
  std::map<std::string, Conv> convs_;
  std::map<std::string, Pool> pools_;
};

}  // namespace

std::unique_ptr<CnnKernels> make_cudnn_cnn_kernels() { return std::make_unique<CudnnKernels>(); }

}  // namespace sylva::cnn
