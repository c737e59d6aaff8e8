// The device collectives' call check and the host engine (staged through
// host memory); the NCCL engine is nccl_communicator.cc.
#include "sylva/dist/device_communicator.h"

#include <chrono>
#include <string>
#include <vector>

#include "device_calls.h"
#include "sylva/core/error.h"

namespace sylva::dist {

std::string describe_buffers(std::span<const MatView> buffers) {
  std::string s;
  for (const MatView& b : buffers) {
    if (!s.empty()) s += " ";
    s += std::string(dtype_name(b.dtype)) + "[" + std::to_string(b.numel()) + "]";
  }
  return s.empty() ? "no buffers" : s;
}

void check_buffers(std::span<const MatView> buffers, std::string_view engine) {
  for (const MatView& b : buffers)
    SYLVA_CHECK(b.dtype == DType::f32 || b.dtype == DType::f64, "[", engine, "] allreduce_sum sums float32 or float64 buffers, got ",
                dtype_name(b.dtype));
}

void check_same_call(Communicator& host, std::span<const MatView> buffers, std::string_view what) {
  const std::string mine = std::string(what) + ": " + describe_buffers(buffers);
  std::vector<int64_t> counts;
  const std::vector<std::byte> all = host.allgatherv(std::as_bytes(std::span(mine)), "device call check", &counts);
  size_t at = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    const std::string_view theirs(reinterpret_cast<const char*>(all.data()) + at, static_cast<size_t>(counts[r]));
    at += static_cast<size_t>(counts[r]);
    SYLVA_CHECK(theirs == mine, "[dist] device allreduce_sum mismatch: rank ", r, " called \"", theirs, "\" where rank ",
                host.rank(), " called \"", mine, "\" (every rank must sum the same buffers in the same order)");
  }
}

void DeviceCommunicator::allreduce_sum(std::span<const MatView> buffers, std::string_view what) {
  const std::string_view tag = engine() == "nccl" ? "nccl" : "dist";
  SYLVA_CHECK(!broken_, "[", tag, "] device allreduce_sum of '", what, "' after an earlier collective failed");
  check_buffers(buffers, tag);
  const auto start = std::chrono::steady_clock::now();
  try {
    run_allreduce(buffers, what);
  } catch (...) {
    broken_ = true;
    failed();
    seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    throw;
  }
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

namespace {

class HostStaged final : public DeviceCommunicator {
 public:
  HostStaged(Communicator& host, Backend& device) : host_(host), device_(device) {}
  int rank() const override { return host_.rank(); }
  int size() const override { return host_.size(); }
  std::string_view engine() const override { return "host"; }

  void run_allreduce(std::span<const MatView> buffers, std::string_view what) override {
    check_same_call(host_, buffers, what);
    sum<float>(buffers, DType::f32, what);
    sum<double>(buffers, DType::f64, what);
  }

 private:
  // The buffers of one element type, concatenated on the host: one download
  // each, one host allreduce, one upload each.
  template <class T>
  void sum(std::span<const MatView> buffers, DType dtype, std::string_view what) {
    size_t total = 0;
    for (const MatView& b : buffers)
      if (b.dtype == dtype) total += static_cast<size_t>(b.numel());
    if (total == 0) return;
    std::vector<T>& staged = staging<T>();
    staged.resize(total);
    size_t at = 0;
    for (const MatView& b : buffers)
      if (b.dtype == dtype && b.numel() > 0) {
        device_.download(staged.data() + at, b.data, static_cast<size_t>(b.numel()) * sizeof(T));
        at += static_cast<size_t>(b.numel());
      }
    host_.allreduce_sum(std::span<T>(staged), what);
    bytes_ += static_cast<int64_t>(total * sizeof(T));
    at = 0;
    for (const MatView& b : buffers)
      if (b.dtype == dtype && b.numel() > 0) {
        device_.upload(b.data, staged.data() + at, static_cast<size_t>(b.numel()) * sizeof(T));
        at += static_cast<size_t>(b.numel());
      }
  }
  template <class T>
  std::vector<T>& staging() {
    if constexpr (sizeof(T) == sizeof(float)) return f32_;
    else return f64_;
  }

  Communicator& host_;
  Backend& device_;
  std::vector<float> f32_;
  std::vector<double> f64_;
};

}  // namespace

std::unique_ptr<DeviceCommunicator> host_staged_communicator(Communicator& host, Backend& device) {
  return std::make_unique<HostStaged>(host, device);
}

}  // namespace sylva::dist
