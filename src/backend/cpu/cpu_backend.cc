// The CPU backend: the kernel table plus row movement for F's boundary.
#include <Eigen/Core>
#include <algorithm>
#include <cstring>
#include <mutex>
#include <string>

#include "../backend_factories.h"
#include "sylva/core/bfloat16.h"
#include "sylva/core/device.h"
#include "sylva/core/log.h"
#include "cpu_kernels.h"

namespace sylva {
namespace {

using cpu::KernelTable;

// copy_rows / add_rows of one column window (Backend::move_row_windows;
// add_rows is its window of all columns).
template <class T>
void move_windows_typed(MatView src, std::span<const int32_t> si, MatView dst, std::span<const int32_t> di,
                        ColumnWindow w, bool add) {
  const int64_t n = !si.empty() ? static_cast<int64_t>(si.size()) : !di.empty() ? static_cast<int64_t>(di.size()) : src.rows;
  for (int64_t k = 0; k < n; ++k) {
    const int64_t s = si.empty() ? k : si[k], d = di.empty() ? k : di[k];
    if (d < 0 || (add && s < 0)) continue;
    T* b = dst.as<T>() + d * dst.cols + w.dst_col;
    if (s < 0) {
      std::fill(b, b + w.cols, T(0));
      continue;
    }
    const T* a = src.as<const T>() + s * src.cols + w.src_col;
    if (add)
      for (int64_t c = 0; c < w.cols; ++c) b[c] += a[c];
    else
      std::copy(a, a + w.cols, b);
  }
}

class CpuBackend final : public Backend {
 public:
  CpuBackend() {
    table_.fill(nullptr);
    cpu::register_matmul_kernels(table_);
    cpu::register_elementwise_kernels(table_);
    cpu::register_structure_kernels(table_);
    cpu::register_loss_kernels(table_);
    Eigen::setNbThreads(1);
    Eigen::initParallel();  // GEMMs may run on two threads at once (streaming)
  }

  Device device() const override { return Device::cpu(); }
  std::string name() const override { return "cpu"; }
  bool supports(ir::OpKind op) const override {
    return table_[static_cast<size_t>(op)] != nullptr || cpu::unary_kernel(op) != nullptr;
  }

  void run(const KernelArgs& args) override {
    cpu::Kernel k = table_[static_cast<size_t>(args.node.op)];
    if (k == nullptr)
      if (const cpu::UnaryElementKernel* ext = cpu::unary_kernel(args.node.op)) {
        cpu::run_unary_extension(*ext, args);
        return;
      }
    SYLVA_CHECK(k != nullptr, "[cpu] no kernel for op '", ir::op_name(args.node.op), "'");
    SYLVA_ASSERT(!args.accumulate || accumulates_into_output(args.node.op), "op ", ir::op_name(args.node.op),
                 " cannot accumulate into its output");
    k(args);
  }

  void copy_rows(MatView src, std::span<const int32_t> si, MatView dst, std::span<const int32_t> di) override {
    SYLVA_ASSERT(src.cols == dst.cols && src.dtype == dst.dtype, "copy_rows: ", src.cols, " vs ", dst.cols, " cols");
    const size_t bytes = static_cast<size_t>(src.cols) * dtype_size(src.dtype);
    const int64_t n = !si.empty() ? static_cast<int64_t>(si.size()) : !di.empty() ? static_cast<int64_t>(di.size()) : src.rows;
    const char* s = static_cast<const char*>(src.data);
    char* d = static_cast<char*>(dst.data);
    for (int64_t k = 0; k < n; ++k) {
      int64_t from = si.empty() ? k : si[k], to = di.empty() ? k : di[k];
      if (to < 0) continue;
      if (from < 0) std::memset(d + to * bytes, 0, bytes);
      else std::memcpy(d + to * bytes, s + from * bytes, bytes);
    }
  }

  void add_rows(MatView src, std::span<const int32_t> si, MatView dst, std::span<const int32_t> di) override {
    SYLVA_ASSERT(src.cols == dst.cols && src.dtype == dst.dtype, "add_rows: ", src.cols, " vs ", dst.cols, " cols");
    dispatch_floating(src.dtype, [&](auto tag) {
      move_windows_typed<decltype(tag)>(src, si, dst, di, {0, 0, src.cols}, true);
    });
  }

  void move_row_windows(MatView src, std::span<const int32_t> si, MatView dst, std::span<const int32_t> di,
                        ColumnWindow w, bool add) override {
    SYLVA_ASSERT(src.dtype == dst.dtype && w.cols >= 0 && w.src_col >= 0 && w.dst_col >= 0 &&
                     w.src_col + w.cols <= src.cols && w.dst_col + w.cols <= dst.cols,
                 "move_row_windows: columns [", w.src_col, ", +", w.cols, ") of ", src.cols, " into [", w.dst_col,
                 ", +", w.cols, ") of ", dst.cols);
    dispatch_floating(src.dtype, [&](auto tag) { move_windows_typed<decltype(tag)>(src, si, dst, di, w, add); });
  }
  bool has_row_windows() const override { return true; }

  void fill_zero(MatView dst) override {
    if (dst.numel()) std::memset(dst.data, 0, static_cast<size_t>(dst.numel()) * dtype_size(dst.dtype));
  }

  void convert(MatView src, MatView dst) override {
    SYLVA_CHECK(src.rows == dst.rows && src.cols == dst.cols, "[cpu] convert [", src.rows, ", ", src.cols, "] into [",
                dst.rows, ", ", dst.cols, "]");
    if (src.dtype == DType::f32 && dst.dtype == DType::bf16)
      to_bf16(src.as<const float>(), dst.as<uint16_t>(), src.numel());
    else if (src.dtype == DType::bf16 && dst.dtype == DType::f32)
      from_bf16(src.as<const uint16_t>(), dst.as<float>(), src.numel());
    else
      Backend::convert(src, dst);
  }

  std::string precision_unsupported(Precision p) const override { return cpu::precision_unsupported(p); }

  void accumulate(MatView src, MatView dst) override {
    SYLVA_ASSERT(src.numel() == dst.numel() && src.dtype == dst.dtype, "accumulate ", src.numel(), " into ",
                 dst.numel());
    dispatch_floating(src.dtype, [&](auto tag) {
      using T = decltype(tag);
      const T* s = src.as<const T>();
      T* d = dst.as<T>();
      for (int64_t i = 0; i < src.numel(); ++i) d[i] += s[i];
    });
  }

  bool run_fused(const FusedProgram& prog, std::span<const MatView> in, std::span<const MatView> out,
                 int64_t rows) override {
    if (rows > 0 && !out.empty()) cpu::run_fused(prog, in, out, rows, out[0].dtype);
    return true;
  }

  void set_threads(int threads) override {
    if (threads <= 0) return;
    Eigen::setNbThreads(threads);
    static std::once_flag advised;
    if (const std::string advice = cpu_threads_advice(threads); !advice.empty())
      std::call_once(advised, [&] { log(LogLevel::info, "[cpu] " + advice); });
  }

  void update_parameter(const ParamUpdate& u) override { cpu::update_parameter(u, Eigen::nbThreads()); }
  void sum_squares(MatView g, MatView w, double decay, std::span<const int32_t> rows, double* out) override {
    *out = cpu::sum_squares(g, w, decay, rows);
  }
  bool has_optimiser_kernels() const override { return true; }

 private:
  KernelTable table_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace sylva
