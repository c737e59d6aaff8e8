#include "test_device.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "sylva/core/error.h"

namespace sylva::test {
namespace {

constexpr uintptr_t kTag = uintptr_t{1} << 55;

void* tag(void* p) { return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) | kTag); }

// The host address of a device pointer; null stays null (empty views).
template <class T>
T* untag(T* p) {
  if (!p) return p;
  const auto bits = reinterpret_cast<uintptr_t>(p);
  SYLVA_CHECK(bits & kTag, "[sim] a host pointer was passed where device memory belongs");
  return reinterpret_cast<T*>(bits & ~kTag);
}

MatView host_view(MatView v) {
  v.data = untag(v.data);
  return v;
}

class TaggedMemory final : public Memory {
 public:
  void* allocate(size_t bytes) override {
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) throw std::bad_alloc();
    return tag(p);
  }
  void release(void* p) noexcept override { std::free(reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) & ~kTag)); }
  void copy(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(untag(dst), untag(src), bytes);
  }
  bool host_visible() const override { return false; }
};

class SimBackend final : public Backend {
 public:
  Device device() const override { return Device::cpu(); }
  std::string name() const override { return "sim"; }
  bool supports(ir::OpKind op) const override { return cpu_.supports(op); }
  void run(const KernelArgs& a) override {
    std::vector<MatView> in(a.in.begin(), a.in.end());
    for (MatView& v : in) v = host_view(v);
    cpu_.run({a.node, in, host_view(a.out), a.ctx, a.accumulate});
  }
  void copy_rows(MatView src, std::span<const int32_t> si, MatView dst, std::span<const int32_t> di) override {
    cpu_.copy_rows(host_view(src), si, host_view(dst), di);
  }
  void add_rows(MatView src, std::span<const int32_t> si, MatView dst, std::span<const int32_t> di) override {
    cpu_.add_rows(host_view(src), si, host_view(dst), di);
  }
  void fill_zero(MatView dst) override { cpu_.fill_zero(host_view(dst)); }
  void accumulate(MatView src, MatView dst) override { cpu_.accumulate(host_view(src), host_view(dst)); }
  bool run_fused(const FusedProgram& prog, std::span<const MatView> in, std::span<const MatView> out,
                 int64_t rows) override {
    std::vector<MatView> i(in.begin(), in.end()), o(out.begin(), out.end());
    for (MatView& v : i) v = host_view(v);
    for (MatView& v : o) v = host_view(v);
    return cpu_.run_fused(prog, i, o, rows);
  }
  void set_threads(int threads) override { cpu_.set_threads(threads); }
  Memory& memory() override { return memory_; }
  void upload(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(untag(dst), src, bytes);
  }
  void download(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(dst, untag(src), bytes);
  }

 private:
  Backend& cpu_ = backend_for(Device::cpu());
  TaggedMemory memory_;
};

}  // namespace

Backend& sim_device() {
  static SimBackend sim;
  return sim;
}

bool is_sim_pointer(const void* p) { return (reinterpret_cast<uintptr_t>(p) & kTag) != 0; }

std::string test_device() {
  const char* env = std::getenv("SYLVA_TEST_DEVICE");
  const std::string d = env && *env ? env : "cpu";
  SYLVA_CHECK(d == "cpu" || d == "sim" || d == "cuda", "[test] SYLVA_TEST_DEVICE='", d,
              "' is not one of cpu, sim, cuda");
  return d;
}

ExecutorOptions on_test_device(ExecutorOptions o) {
  const std::string d = test_device();
  if (d == "sim") o.backend = &sim_device();
  if (d == "cuda") o.device = Device::cuda();
  return o;
}

}  // namespace sylva::test
