#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <mutex>
#include <numeric>
#include <atomic>
#include <thread>
#include <unordered_map>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define SYLVA_HAVE_MXCSR 1
#endif

#include "sylva/core/bfloat16.h"
#include "sylva/core/denormals.h"
#include "sylva/core/dynamic_tensor.h"
#include "sylva/core/error.h"
#include "sylva/core/tensor.h"

namespace sylva {

namespace detail {
void assert_failed(const char* expr, const char* file, int line, const std::string& msg) {
  throw Error(concat("[internal] assertion `", expr, "` failed at ", file, ":", line,
                     msg.empty() ? "" : ": ", msg, " (this is a Sylva bug; please report it)"));
}
}  // namespace detail

// ---- Shape ---------------------------------------------------------------

Shape::Shape(std::initializer_list<int64_t> dims) : Shape(std::vector<int64_t>(dims)) {}

Shape::Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {
  for (int64_t d : dims_) SYLVA_CHECK(d >= 0, "[shape] negative extent in ", str());
}

int64_t Shape::numel() const {
  return std::accumulate(dims_.begin(), dims_.end(), int64_t{1}, std::multiplies<>());
}

int64_t Shape::rows() const { return cols() == 0 ? 0 : numel() / cols(); }

std::string Shape::str() const {
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) s += (i ? ", " : "") + std::to_string(dims_[i]);
  return s + "]";
}

// ---- Device --------------------------------------------------------------

Device Device::parse(const std::string& text) {
  if (text == "cpu") return cpu();
  if (text == "cuda") return cuda();
  const std::string digits = text.rfind("cuda:", 0) == 0 ? text.substr(5) : "";
  SYLVA_CHECK(!digits.empty() && digits.size() < 5 && digits.find_first_not_of("0123456789") == std::string::npos,
              "[device] '", text, "' is not cpu, cuda or cuda:N");
  return cuda(std::stoi(digits));
}

// ---- Denormals -----------------------------------------------------------

namespace {
std::atomic<bool> g_flush_denormals{true};
}  // namespace

void set_flush_denormals(bool on) { g_flush_denormals.store(on, std::memory_order_relaxed); }
bool flush_denormals() { return g_flush_denormals.load(std::memory_order_relaxed); }

DenormalScope::DenormalScope() {
#ifdef SYLVA_HAVE_MXCSR
  if (!flush_denormals()) return;
  constexpr unsigned kFtzDaz = 0x8040;  // flush-to-zero (bit 15) and denormals-are-zero (bit 6)
  saved_ = _mm_getcsr();
  if ((saved_ & kFtzDaz) == kFtzDaz) return;
  _mm_setcsr(saved_ | kFtzDaz);
  active_ = true;
#endif
}

DenormalScope::~DenormalScope() {
#ifdef SYLVA_HAVE_MXCSR
  if (active_) _mm_setcsr(saved_);
#endif
}

int usable_cpu_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

std::string cpu_threads_advice(int threads) {
  // Either variable set: the user has chosen how libgomp's threads wait.
  if (threads <= 1 || std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) return "";
  return "kernels run on " + std::to_string(threads) +
         " OpenMP threads with OMP_WAIT_POLICY unset: start the process with OMP_WAIT_POLICY=active, or the idle "
         "threads sleep between small GEMMs and waking them can make " +
         std::to_string(threads) + " threads slower than one";
}

namespace {
// The "<key>: <n> kB" line of a /proc file, in bytes; 0 if absent.
size_t proc_kb(const char* path, const char* key) {
  std::FILE* f = std::fopen(path, "r");
  if (!f) return 0;
  char line[256];
  size_t kb = 0;
  const size_t n = std::strlen(key);
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, key, n) == 0 && line[n] == ':') {
      kb = std::strtoull(line + n + 1, nullptr, 10);
      break;
    }
  std::fclose(f);
  return kb * 1024;
}
}  // namespace

size_t available_memory_bytes() {
  size_t avail = proc_kb("/proc/meminfo", "MemAvailable");
  rlimit lim{};
  if (getrlimit(RLIMIT_AS, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
    const size_t used = proc_kb("/proc/self/status", "VmSize");
    const size_t left = lim.rlim_cur > used ? static_cast<size_t>(lim.rlim_cur) - used : 0;
    avail = avail == 0 ? left : std::min(avail, left);
  }
  return avail;
}

// ---- Buffer --------------------------------------------------------------

namespace {
// Blocks of at least kMappedBytes are mapped from the kernel on their own,
// so a released one goes back to it at once, and untouched pages of a block
// (an arena's room to grow) are never resident. From the heap, an arena that
// outgrew its block left the old one resident in a hole the heap kept, and
// a new block placed over pages written before counted them whole: on the
// SST Tree-LSTM at batch 64, 5-16 MB of peak RSS (docs/notes/memory.md,
// "Host memory mapped per block"). Under AddressSanitizer every block comes
// from the heap, where it checks accesses past a block's end.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kMapLargeBlocks = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kMapLargeBlocks = false;
#else
constexpr bool kMapLargeBlocks = true;
#endif
#else
constexpr bool kMapLargeBlocks = true;
#endif
constexpr size_t kMappedBytes = size_t{1} << 20;

class HostMemory final : public Memory {
 public:
  void* allocate(size_t bytes) override {
    const size_t n = (bytes + 63) / 64 * 64;
    if (kMapLargeBlocks && n >= kMappedBytes) {
      void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) throw std::bad_alloc();
      try {
        const std::lock_guard<std::mutex> lock(mutex_);
        mapped_.emplace(p, n);
      } catch (...) {
        munmap(p, n);
        throw;
      }
      return p;
    }
    void* p = std::aligned_alloc(64, n);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void release(void* p) noexcept override {
    if (kMapLargeBlocks && p) {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (auto it = mapped_.find(p); it != mapped_.end()) {
        munmap(p, it->second);
        mapped_.erase(it);
        return;
      }
    }
    std::free(p);
  }
  void copy(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  bool host_visible() const override { return true; }

  // See host_memory_zero_pages().
  bool zero_pages(void* p, size_t bytes) {
    if (!kMapLargeBlocks || bytes < kMappedBytes) return false;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      const auto it = mapped_.find(p);
      if (it == mapped_.end() || it->second < bytes) return false;
    }
    static const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t whole = bytes / page * page;  // from p, which mmap aligned
    auto* b = static_cast<char*>(p);
    if (madvise(b, whole, MADV_DONTNEED) != 0) return false;
    std::memset(b + whole, 0, bytes - whole);
    return true;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<void*, size_t> mapped_;  // the mapped blocks and their lengths
};
}  // namespace

Memory& host_memory() {
  static HostMemory* memory = new HostMemory;  // never destroyed: buffers of other statics release into it at exit
  return *memory;
}

bool host_memory_maps_large_blocks() { return kMapLargeBlocks; }

bool host_memory_zero_pages(void* block, size_t bytes) {
  return static_cast<HostMemory&>(host_memory()).zero_pages(block, bytes);
}

Buffer::~Buffer() {
  if (data_) memory_->release(data_);
}

Buffer::Buffer(Buffer&& o) noexcept
    : memory_(o.memory_), data_(o.data_), capacity_(o.capacity_), allocations_(o.allocations_) {
  o.data_ = nullptr;
  o.capacity_ = 0;
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    if (data_) memory_->release(data_);
    memory_ = o.memory_;
    data_ = o.data_;
    capacity_ = o.capacity_;
    allocations_ = o.allocations_;
    o.data_ = nullptr;
    o.capacity_ = 0;
  }
  return *this;
}

bool Buffer::reserve(size_t bytes, bool keep) {
  if (bytes <= capacity_) return false;
  // Grow geometrically so a slowly increasing batch does not reallocate every time.
  size_t want = std::max(bytes, capacity_ + capacity_ / 2);
  want = (want + 63) / 64 * 64;
  void* p = memory_->allocate(want);
  if (keep && data_) {
    try {
      memory_->copy(p, data_, capacity_);
    } catch (...) {
      memory_->release(p);
      throw;
    }
  }
  if (data_) memory_->release(data_);
  data_ = p;
  capacity_ = want;
  ++allocations_;
  return true;
}

// ---- Tensor --------------------------------------------------------------

namespace {
// Memory another library owns: releasing it drops the owner.
class ExternalMemory final : public Memory {
 public:
  explicit ExternalMemory(std::shared_ptr<void> owner) : owner_(std::move(owner)) {}
  void* allocate(size_t bytes) override {
    SYLVA_THROW("[tensor] a tensor over external memory (Tensor::wrap) cannot grow to ", bytes, " bytes");
  }
  void release(void*) noexcept override { owner_.reset(); }
  void copy(void* dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  bool host_visible() const override { return true; }

 private:
  std::shared_ptr<void> owner_;
};

// The buffer and its memory in one block (the buffer goes first).
struct ExternalStorage {
  ExternalStorage(void* data, size_t bytes, std::shared_ptr<void> owner)
      : memory(std::move(owner)), buffer(memory, data, bytes) {}
  ExternalMemory memory;
  Buffer buffer;
};
}  // namespace

Tensor Tensor::wrap(void* data, Shape shape, DType dtype, std::shared_ptr<void> owner) {
  SYLVA_CHECK(data != nullptr || shape.numel() == 0, "[tensor] wrap: null data for shape ", shape.str());
  Tensor t;
  t.shape_ = std::move(shape);
  t.dtype_ = dtype;
  auto storage = std::make_shared<ExternalStorage>(data, t.nbytes(), std::move(owner));
  t.storage_ = std::shared_ptr<Buffer>(storage, &storage->buffer);
  return t;
}

Tensor::Tensor(Shape shape, DType dtype)
    : shape_(std::move(shape)), dtype_(dtype), storage_(std::make_shared<Buffer>()) {
  storage_->reserve(std::max<size_t>(nbytes(), 1));
  // A block mapped on its own reads as zero; clearing it by writing would
  // make every page resident (SST's embedding gradient at d = 512: 37 MB).
  if (!host_memory_zero_pages(storage_->data(), nbytes())) fill_zero();
}

void Tensor::check_type(DType t) const {
  SYLVA_CHECK(t == dtype_, "[tensor] requested ", dtype_name(t), " data of a ", dtype_name(dtype_),
              " tensor of shape ", shape_.str());
}

double Tensor::at(int64_t i) const {
  SYLVA_CHECK(i >= 0 && i < numel(), "[tensor] index ", i, " out of range for shape ", shape_.str());
  switch (dtype_) {
    case DType::f32: return static_cast<const float*>(raw())[i];
    case DType::f64: return static_cast<const double*>(raw())[i];
    case DType::i32: return static_cast<const int32_t*>(raw())[i];
    case DType::bf16: return from_bf16(static_cast<const uint16_t*>(raw())[i]);
  }
  return 0;
}

void Tensor::set(int64_t i, double v) {
  SYLVA_CHECK(i >= 0 && i < numel(), "[tensor] index ", i, " out of range for shape ", shape_.str());
  switch (dtype_) {
    case DType::f32: static_cast<float*>(raw())[i] = static_cast<float>(v); break;
    case DType::f64: static_cast<double*>(raw())[i] = v; break;
    case DType::i32: static_cast<int32_t*>(raw())[i] = static_cast<int32_t>(v); break;
    case DType::bf16: static_cast<uint16_t*>(raw())[i] = to_bf16(static_cast<float>(v)); break;
  }
}

Tensor Tensor::clone() const {
  if (!defined()) return {};
  Tensor t(shape_, dtype_);
  std::memcpy(t.raw(), raw(), nbytes());
  return t;
}

void Tensor::fill_zero() {
  if (defined() && nbytes()) std::memset(raw(), 0, nbytes());
}

void Tensor::copy_from(const Tensor& src) {
  SYLVA_CHECK(src.shape_ == shape_ && src.dtype_ == dtype_, "[tensor] copy_from: expected ",
              dtype_name(dtype_), shape_.str(), ", got ", dtype_name(src.dtype_), src.shape_.str());
  if (nbytes()) std::memcpy(raw(), src.raw(), nbytes());
}

Tensor Tensor::reshape(Shape s) const {
  SYLVA_CHECK(s.numel() == numel(), "[tensor] cannot reshape ", shape_.str(), " to ", s.str());
  Tensor t = *this;
  t.shape_ = std::move(s);
  return t;
}

// ---- DynamicTensor -------------------------------------------------------

bool DynamicTensor::reserve_rows(int64_t rows, bool keep) {
  SYLVA_ASSERT(rows >= 0);
  return arena_.reserve(static_cast<size_t>(std::max<int64_t>(rows, 1)) * row_bytes(), keep);
}

int64_t DynamicTensor::capacity_rows() const {
  return row_bytes() ? static_cast<int64_t>(arena_.capacity() / row_bytes()) : 0;
}

void DynamicTensor::set_window(int64_t offset, int64_t bs) {
  SYLVA_ASSERT(offset >= 0 && bs >= 0 && offset + bs <= capacity_rows(), "window [", offset, ", ",
               offset + bs, ") exceeds arena of ", capacity_rows(), " rows");
  offset_ = offset;
  bs_ = bs;
}

}  // namespace sylva
