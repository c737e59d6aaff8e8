#include "test_device.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <new>
#include <utility>
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
  explicit TaggedMemory(std::function<void()> flush) : flush_(std::move(flush)) {}
  void* allocate(size_t bytes) override {
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) throw std::bad_alloc();
    return tag(p);
  }
  // Like a device's: queued work may still use the block, so it runs first.
  void release(void* p) noexcept override {
    try {
      flush_();
    } catch (...) {  // the error was the queued work's; the block goes anyway
    }
    std::free(reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) & ~kTag));
  }
  void copy(void* dst, const void* src, size_t bytes) override {
    flush_();
    if (bytes) std::memcpy(untag(dst), untag(src), bytes);
  }
  bool host_visible() const override { return false; }

 private:
  std::function<void()> flush_;
};

// Two lanes. Work on lane `deferred` is queued and runs only when some
// wait() needs it (or on synchronize / download / memory release), as
// late as a device could run it; work on the other lane runs at once, as
// early as it could. A runtime that reads a value of one lane on the other
// without waiting for its event therefore reads it before it is written.
class SimBackend final : public Backend {
 public:
  SimBackend(int deferred, bool fuses) : deferred_(deferred), fuses_(fuses) {}
  Device device() const override { return Device::cpu(); }
  std::string name() const override { return "sim"; }
  bool supports(ir::OpKind op) const override { return cpu_.supports(op); }
  void run(const KernelArgs& a) override {
    std::vector<MatView> in(a.in.begin(), a.in.end());
    for (MatView& v : in) v = host_view(v);
    std::vector<int32_t> rows;
    if (a.ctx.row_vertex) rows.assign(a.ctx.row_vertex, a.ctx.row_vertex + a.out.rows);
    submit([this, &node = a.node, in = std::move(in), out = host_view(a.out), ctx = a.ctx, acc = a.accumulate,
            rows = std::move(rows)]() mutable {
      if (ctx.row_vertex) ctx.row_vertex = rows.data();
      cpu_.run({node, in, out, ctx, acc});
    });
  }
  void copy_rows(MatView src, std::span<const int32_t> si, MatView dst, std::span<const int32_t> di) override {
    count_move(dst);
    submit([this, src = host_view(src), dst = host_view(dst), si = std::vector<int32_t>(si.begin(), si.end()),
            di = std::vector<int32_t>(di.begin(), di.end())] { cpu_.copy_rows(src, si, dst, di); });
  }
  void add_rows(MatView src, std::span<const int32_t> si, MatView dst, std::span<const int32_t> di) override {
    count_move(dst);
    submit([this, src = host_view(src), dst = host_view(dst), si = std::vector<int32_t>(si.begin(), si.end()),
            di = std::vector<int32_t>(di.begin(), di.end())] { cpu_.add_rows(src, si, dst, di); });
  }
  void move_row_windows(MatView src, std::span<const int32_t> si, MatView dst, std::span<const int32_t> di,
                        ColumnWindow w, bool add) override {
    submit([this, src = host_view(src), dst = host_view(dst), si = std::vector<int32_t>(si.begin(), si.end()),
            di = std::vector<int32_t>(di.begin(), di.end()), w, add] { cpu_.move_row_windows(src, si, dst, di, w, add); });
  }
  bool has_row_windows() const override { return cpu_.has_row_windows(); }
  void fill_zero(MatView dst) override {
    submit([this, dst = host_view(dst)] { cpu_.fill_zero(dst); });
  }
  void accumulate(MatView src, MatView dst) override {
    submit([this, src = host_view(src), dst = host_view(dst)] { cpu_.accumulate(src, dst); });
  }
  void convert(MatView src, MatView dst) override {
    submit([this, src = host_view(src), dst = host_view(dst)] { cpu_.convert(src, dst); });
  }
  std::string precision_unsupported(Precision p) const override { return cpu_.precision_unsupported(p); }
  bool run_fused(const FusedProgram& prog, std::span<const MatView> in, std::span<const MatView> out,
                 int64_t rows) override {
    if (!fuses_) return false;
    std::vector<MatView> i(in.begin(), in.end()), o(out.begin(), out.end());
    for (MatView& v : i) v = host_view(v);
    for (MatView& v : o) v = host_view(v);
    submit([this, prog, i = std::move(i), o = std::move(o), rows] { cpu_.run_fused(prog, i, o, rows); });
    return true;
  }
  void set_threads(int threads) override { cpu_.set_threads(threads); }
  void update_parameter(const ParamUpdate& u) override {
    ParamUpdate h = u;
    for (MatView* v : {&h.w, &h.g, &h.s0, &h.s1}) *v = host_view(*v);
    submit([this, h, rows = std::vector<int32_t>(u.rows.begin(), u.rows.end())]() mutable {
      h.rows = rows;
      cpu_.update_parameter(h);
    });
  }
  void sum_squares(MatView g, MatView w, double decay, std::span<const int32_t> rows, double* out) override {
    submit([this, g = host_view(g), w = host_view(w), decay, rows = std::vector<int32_t>(rows.begin(), rows.end()),
            out = static_cast<double*>(untag(out))] { cpu_.sum_squares(g, w, decay, rows, out); });
  }
  bool has_optimiser_kernels() const override { return true; }
  Memory& memory() override { return memory_; }
  void upload(void* dst, const void* src, size_t bytes) override {
    uploaded_ += bytes;
    if (!bytes) return;
    const auto* from = static_cast<const char*>(src);
    submit([to = untag(dst), data = std::vector<char>(from, from + bytes)] {
      std::memcpy(to, data.data(), data.size());
    });
  }
  void download(void* dst, const void* src, size_t bytes) override {
    synchronize();
    if (bytes) std::memcpy(dst, untag(src), bytes);
  }
  bool concurrent_calls() const override { return false; }
  uint64_t uploaded() const { return uploaded_; }
  uint64_t host_waits() const { return host_waits_; }
  SimRowMoves row_moves() const { return moves_; }
  // download() comes here too: each is one wait of the host for the device.
  void synchronize() override {
    ++host_waits_;
    flush_all();
  }
  int lanes() const override { return 2; }
  int set_lane(int lane) override {
    Backend::set_lane(lane);  // checks the range
    return std::exchange(lane_, lane);
  }
  // An event: the lane, and how many calls it had queued.
  uint64_t record() override { return (static_cast<uint64_t>(lane_) << 62) | submitted_[lane_]; }
  void wait(uint64_t event) override {
    if (static_cast<int>(event >> 62) == deferred_) flush(event & ((uint64_t{1} << 62) - 1));
  }

 private:
  void count_move(MatView dst) {
    ++moves_.calls;
    if (dst.cols == 1) ++moves_.one_column_calls;
  }
  void submit(std::function<void()> fn) {
    const uint64_t seq = ++submitted_[lane_];
    if (lane_ == deferred_) queue_.emplace_back(seq, std::move(fn));
    else fn();
  }
  void flush_all() { flush(queue_.empty() ? 0 : queue_.back().first); }
  // Runs the deferred lane's calls up to number `upto`.
  void flush(uint64_t upto) {
    while (!queue_.empty() && queue_.front().first <= upto) {
      std::function<void()> fn = std::move(queue_.front().second);
      queue_.pop_front();
      fn();
    }
  }

  Backend& cpu_ = backend_for(Device::cpu());
  const int deferred_;
  const bool fuses_;
  int lane_ = 0;
  uint64_t uploaded_ = 0;
  uint64_t host_waits_ = 0;
  SimRowMoves moves_;
  uint64_t submitted_[2] = {0, 0};
  std::deque<std::pair<uint64_t, std::function<void()>>> queue_;
  TaggedMemory memory_{[this] { flush_all(); }};  // a release waits on a GPU's events, not the host
};

}  // namespace

namespace {
SimBackend& sim(int deferred_lane) {
  SYLVA_CHECK(deferred_lane == 0 || deferred_lane == 1, "[sim] no lane ", deferred_lane);
  static SimBackend late_side(1, true), late_main(0, true);
  return deferred_lane == 1 ? late_side : late_main;
}
}  // namespace

Backend& sim_device(int deferred_lane) { return sim(deferred_lane); }
Backend& sim_device_without_fused_kernels() {
  static SimBackend unfused(1, false);
  return unfused;
}
uint64_t sim_uploaded_bytes(int deferred_lane) { return sim(deferred_lane).uploaded(); }
uint64_t sim_host_waits(int deferred_lane) { return sim(deferred_lane).host_waits(); }
SimRowMoves sim_row_moves(int deferred_lane) { return sim(deferred_lane).row_moves(); }

bool is_sim_pointer(const void* p) { return (reinterpret_cast<uintptr_t>(p) & kTag) != 0; }

std::string test_device() {
  const char* env = std::getenv("SYLVA_TEST_DEVICE");
  const std::string d = env && *env ? env : "cpu";
  SYLVA_CHECK(d == "cpu" || d == "sim" || d == "sim-late-main" || d == "cuda", "[test] SYLVA_TEST_DEVICE='", d,
              "' is not one of cpu, sim, sim-late-main, cuda");
  return d;
}

ExecutorOptions on_test_device(ExecutorOptions o) {
  const std::string d = test_device();
  if (d == "sim") o.backend = &sim_device(1);
  if (d == "sim-late-main") o.backend = &sim_device(0);
  if (d == "cuda") o.device = Device::cuda();
  return o;
}

std::string precision_unsupported(Precision p) {
  const ExecutorOptions o = on_test_device();
  return (o.backend ? *o.backend : backend_for(o.device)).precision_unsupported(p);
}

}  // namespace sylva::test
