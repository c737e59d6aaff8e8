// The engine-independent half of every collective (argument checks, the
// broken state, timing) and the `self` engine.
#include "sylva/dist/communicator.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "sylva/core/error.h"

namespace sylva::dist {
namespace {

const char* kind_name(int kind) {
  static const char* const names[] = {"allreduce_sum", "allgatherv", "broadcast", "barrier"};
  return kind >= 0 && kind < 4 ? names[kind] : "unknown collective";
}

const char* elem_name(int elem) {
  static const char* const names[] = {"", "f32", "f64", "i64", "bytes"};
  return elem >= 0 && elem < 5 ? names[elem] : "?";
}

}  // namespace

Communicator::Communicator(CommOptions options) : options_(options) {
  SYLVA_CHECK(std::isfinite(options.deadline_s) && options.deadline_s > 0.0,
              "[dist] CommOptions::deadline_s must be a positive number of seconds, got ", options.deadline_s);
  SYLVA_CHECK(options.max_chunk >= 1 && options.max_chunk <= std::numeric_limits<int>::max(),
              "[dist] CommOptions::max_chunk must be in [1, ", std::numeric_limits<int>::max(), "], got ",
              options.max_chunk);
}

std::string Communicator::describe(const Call& call) {
  std::string s = kind_name(static_cast<int>(call.kind));
  s += call.kind == Kind::barrier ? " '" : " of '";
  s += call.what;
  s += "'";
  if (call.count >= 0) s += " (" + std::to_string(call.count) + " " + elem_name(static_cast<int>(call.elem)) + ")";
  if (call.root >= 0) s += " from rank " + std::to_string(call.root);
  return s;
}

void Communicator::check_not_broken(const Call& call) const {
  SYLVA_CHECK(!broken_, "[dist] rank ", rank(), " of ", size(), ": ", describe(call),
              " called after an earlier collective failed; this communicator is broken (end the job and restart it)");
}

template <class Fn>
void Communicator::guarded(Fn&& fn) {
  const auto start = std::chrono::steady_clock::now();
  try {
    fn();
  } catch (...) {
    broken_ = true;
    seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    throw;
  }
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

template <class Fn>
void Communicator::collective(const Call& call, int64_t bytes, Fn&& run) {
  check_not_broken(call);
  guarded([&] {
    if (started_ > 0) advance(true), started_ = 0;  // the started ones come first
    deadline_ = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                       std::chrono::duration<double>(options_.deadline_s));
    if (size() > 1) {
      if (options_.check_calls) check(call);
      run();
    }
  });
  ++sequence_;
  bytes_ += bytes;
}

void Communicator::start(void* data, Elem elem, int64_t count, std::string_view what, int64_t bytes) {
  const Call call{Kind::allreduce_sum, elem, count, -1, what};
  check_not_broken(call);
  if (size() == 1) {  // nothing to move; keeps the sequence as a blocking call would
    ++sequence_;
    return;
  }
  guarded([&] {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                                 std::chrono::duration<double>(options_.deadline_s));
    start_allreduce(data, elem, count, call, deadline);
  });
  ++sequence_;
  ++started_;
  bytes_ += bytes;
}

void Communicator::start_allreduce_sum(std::span<float> data, std::string_view what) {
  start(data.data(), Elem::f32, static_cast<int64_t>(data.size()), what, static_cast<int64_t>(data.size_bytes()));
}

void Communicator::start_allreduce_sum(std::span<double> data, std::string_view what) {
  start(data.data(), Elem::f64, static_cast<int64_t>(data.size()), what, static_cast<int64_t>(data.size_bytes()));
}

void Communicator::progress() {
  if (started_ == 0) return;
  SYLVA_CHECK(!broken_, "[dist] rank ", rank(), " of ", size(),
              ": progress() after an earlier collective failed; this communicator is broken");
  guarded([&] {
    if (advance(false)) started_ = 0;
  });
}

void Communicator::finish_started() {
  if (started_ == 0) return;
  SYLVA_CHECK(!broken_, "[dist] rank ", rank(), " of ", size(),
              ": finish_started() after an earlier collective failed; this communicator is broken");
  guarded([&] { advance(true); });
  started_ = 0;
}

void Communicator::allreduce_sum(std::span<float> data, std::string_view what) {
  const Call call{Kind::allreduce_sum, Elem::f32, static_cast<int64_t>(data.size()), -1, what};
  collective(call, static_cast<int64_t>(data.size_bytes()), [&] {
    if (!data.empty()) run_allreduce(data.data(), Elem::f32, call.count, call);
  });
}

void Communicator::allreduce_sum(std::span<double> data, std::string_view what) {
  const Call call{Kind::allreduce_sum, Elem::f64, static_cast<int64_t>(data.size()), -1, what};
  collective(call, static_cast<int64_t>(data.size_bytes()), [&] {
    if (!data.empty()) run_allreduce(data.data(), Elem::f64, call.count, call);
  });
}

void Communicator::allreduce_sum(std::span<int64_t> data, std::string_view what) {
  const Call call{Kind::allreduce_sum, Elem::i64, static_cast<int64_t>(data.size()), -1, what};
  collective(call, static_cast<int64_t>(data.size_bytes()), [&] {
    if (!data.empty()) run_allreduce(data.data(), Elem::i64, call.count, call);
  });
}

std::vector<std::byte> Communicator::allgatherv(std::span<const std::byte> mine, std::string_view what,
                                                std::vector<int64_t>* counts) {
  const Call call{Kind::allgatherv, Elem::byte, -1, -1, what};
  std::vector<std::byte> out;
  std::vector<int64_t> local_counts;
  std::vector<int64_t>& c = counts ? *counts : local_counts;
  collective(call, static_cast<int64_t>(mine.size()), [&] { out = run_allgatherv(mine, c, call); });
  if (size() == 1) {
    out.assign(mine.begin(), mine.end());
    c.assign(1, static_cast<int64_t>(mine.size()));
  }
  return out;
}

void Communicator::broadcast(std::span<std::byte> data, int root, std::string_view what) {
  SYLVA_CHECK(root >= 0 && root < size(), "[dist] broadcast of '", what, "': root rank ", root,
              " is out of range (world size ", size(), ")");
  const Call call{Kind::broadcast, Elem::byte, static_cast<int64_t>(data.size()), root, what};
  collective(call, rank() == root ? static_cast<int64_t>(data.size()) : 0, [&] {
    if (!data.empty()) run_broadcast(data, root, call);
  });
}

void Communicator::barrier(std::string_view what) {
  const Call call{Kind::barrier, Elem::none, -1, -1, what};
  collective(call, 0, [&] { run_barrier(call); });
}

namespace {

// One process: every collective is the identity (Communicator::collective
// runs nothing when size() == 1; allgatherv copies).
class SelfCommunicator final : public Communicator {
 public:
  explicit SelfCommunicator(CommOptions options) : Communicator(options) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string_view engine() const override { return "self"; }

 protected:
  void check(const Call&) override {}
  void run_allreduce(void*, Elem, int64_t, const Call&) override {}
  std::vector<std::byte> run_allgatherv(std::span<const std::byte>, std::vector<int64_t>&, const Call&) override {
    return {};
  }
  void run_broadcast(std::span<std::byte>, int, const Call&) override {}
  void run_barrier(const Call&) override {}
  void start_allreduce(void*, Elem, int64_t, const Call&, std::chrono::steady_clock::time_point) override {}
  bool advance(bool) override { return true; }
};

}  // namespace

std::unique_ptr<Communicator> self_communicator(CommOptions options) {
  return std::make_unique<SelfCommunicator>(options);
}

bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (std::getenv(var) != nullptr) return true;
  return false;
}

int local_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char* v = std::getenv(var)) {
      char* end = nullptr;
      const long r = std::strtol(v, &end, 10);
      if (*v != '\0' && *end == '\0' && r >= 0 && r <= std::numeric_limits<int>::max()) return static_cast<int>(r);
    }
  return -1;
}

}  // namespace sylva::dist
