// Linked when Sylva is built without CUDA: every call says how to get it.
#include "../backend_factories.h"
#include "sylva/backend/cnn_kernels.h"
#include "sylva/core/error.h"

namespace sylva {
namespace {

[[noreturn]] void no_cuda() {
  SYLVA_THROW("[cuda] built without CUDA (configure with -DSYLVA_BUILD_CUDA=ON)");
}

class NoCudaBackend final : public Backend {
 public:
  explicit NoCudaBackend(int index) : index_(index) {}
  Device device() const override { return Device::cuda(index_); }
  std::string name() const override { return "no_cuda"; }
  bool supports(ir::OpKind) const override { no_cuda(); }
  void run(const KernelArgs&) override { no_cuda(); }
  void copy_rows(MatView, std::span<const int32_t>, MatView, std::span<const int32_t>) override { no_cuda(); }
  void add_rows(MatView, std::span<const int32_t>, MatView, std::span<const int32_t>) override { no_cuda(); }
  void fill_zero(MatView) override { no_cuda(); }
  void accumulate(MatView, MatView) override { no_cuda(); }
  void set_threads(int) override { no_cuda(); }
  Memory& memory() override { no_cuda(); }
  void upload(void*, const void*, size_t) override { no_cuda(); }
  void download(void*, const void*, size_t) override { no_cuda(); }
  void update_parameter(const ParamUpdate&) override { no_cuda(); }
  void sum_squares(MatView, MatView, double, std::span<const int32_t>, double*) override { no_cuda(); }

 private:
  int index_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(int index) { return std::make_unique<NoCudaBackend>(index); }

std::unique_ptr<cnn::CnnKernels> cnn::make_cudnn_cnn_kernels() { no_cuda(); }

}  // namespace sylva
