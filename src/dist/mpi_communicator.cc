// The Open MPI engine (built with SYLVA_WITH_MPI): nonblocking collectives
// polled against the deadline, and the call check as one small message to
// every other rank (point to point, so a timeout can say which ranks did
// not arrive).
#include <mpi.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <thread>

#include "sylva/core/error.h"
#include "sylva/dist/communicator.h"

namespace sylva::dist {
namespace {

constexpr int kCheckTag = 7301;  // the call check's messages; collectives do not use tags

int g_live = 0;               // MpiCommunicators alive
bool g_initialised_here = false;
bool g_failed = false;        // a collective failed: never finalise (MPI_Finalize could hang)

std::string mpi_error(int code) {
  std::array<char, MPI_MAX_ERROR_STRING> text{};
  int len = 0;
  if (MPI_Error_string(code, text.data(), &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text.data(), static_cast<size_t>(len));
}

// What one rank says it is about to call (64 bytes).
struct Descriptor {
  int64_t sequence;
  int64_t count;
  int32_t root;
  uint8_t kind;
  uint8_t elem;
  uint8_t what_len;
  uint8_t unused;
  char what[40];
};
static_assert(sizeof(Descriptor) == 64);

MPI_Datatype mpi_type(int elem) {
  switch (elem) {
    case 1: return MPI_FLOAT;
    case 2: return MPI_DOUBLE;
    case 3: return MPI_INT64_T;
    default: return MPI_BYTE;
  }
}

size_t elem_size(int elem) { return elem == 1 ? 4 : elem == 4 ? 1 : 8; }

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(CommOptions options) : Communicator(options) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    SYLVA_CHECK(!finalized, "[dist] mpi_communicator(): MPI was already finalised in this process");
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (!initialised) {
      int provided = 0;
      const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
      SYLVA_CHECK(rc == MPI_SUCCESS, "[dist] MPI_Init_thread failed: ", mpi_error(rc));
      g_initialised_here = true;
    }
    ok(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    ok(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    ok(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    ok(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
    ++g_live;
  }

  ~MpiCommunicator() override {
    --g_live;
    // A collective that timed out may still have requests in flight: then
    // leave MPI as it is (freeing or finalising could hang); the process
    // must exit, and mpirun ends the other ranks. A mismatch found by the
    // call check leaves nothing in flight.
    g_failed = g_failed || stuck_;
    if (stuck_) return;
    MPI_Comm_free(&comm_);
    if (g_live == 0 && g_initialised_here && !g_failed) MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view engine() const override { return "mpi"; }

 protected:
  void check(const Call& call) override {
    const Descriptor mine = descriptor(call);
    std::vector<Descriptor> theirs(static_cast<size_t>(size_));
    std::vector<MPI_Request> requests;
    requests.reserve(2 * static_cast<size_t>(size_));
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      requests.emplace_back();
      ok(MPI_Irecv(&theirs[static_cast<size_t>(r)], sizeof(Descriptor), MPI_BYTE, r, kCheckTag, comm_,
                   &requests.back()),
         "MPI_Irecv");
    }
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      requests.emplace_back();
      ok(MPI_Isend(&mine, sizeof(Descriptor), MPI_BYTE, r, kCheckTag, comm_, &requests.back()), "MPI_Isend");
    }
    if (!wait(requests)) {
      std::string missing;
      size_t k = 0;
      for (int r = 0; r < size_; ++r) {
        if (r == rank_) continue;
        int done = 0;
        MPI_Test(&requests[k++], &done, MPI_STATUS_IGNORE);
        if (!done) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      }
      SYLVA_THROW("[dist] rank ", rank_, " of ", size_, ": rank(s) ", missing.empty() ? "?" : missing,
                  " did not reach collective #", sequence_, " (", describe(call), ") within ", options_.deadline_s,
                  " s: a rank died, stalled, or stopped calling collectives");
    }
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      const Descriptor& d = theirs[static_cast<size_t>(r)];
      if (std::memcmp(&d, &mine, sizeof(Descriptor)) == 0) continue;
      const Call other{static_cast<Kind>(d.kind), static_cast<Elem>(d.elem), d.count, d.root,
                       std::string_view(d.what, std::min<size_t>(d.what_len, sizeof d.what))};
      SYLVA_THROW("[dist] rank ", rank_, " of ", size_, ": mismatched collective #", sequence_, ": this rank called ",
                  describe(call), " but rank ", r, " called ", describe(other),
                  d.sequence != sequence_ ? " as its collective #" + std::to_string(d.sequence) : std::string(),
                  " (every rank must make the same calls in the same order)");
    }
  }

  void run_allreduce(void* data, Elem elem, int64_t count, const Call& call) override {
    const int e = static_cast<int>(elem);
    std::vector<MPI_Request> requests;
    auto* bytes = static_cast<char*>(data);
    for (int64_t at = 0; at < count; at += options_.max_chunk) {
      const int n = static_cast<int>(std::min(options_.max_chunk, count - at));
      requests.emplace_back();
      ok(MPI_Iallreduce(MPI_IN_PLACE, bytes + static_cast<size_t>(at) * elem_size(e), n, mpi_type(e), MPI_SUM, comm_,
                        &requests.back()),
         "MPI_Iallreduce");
    }
    if (!wait(requests)) timed_out(call);
  }

  std::vector<std::byte> run_allgatherv(std::span<const std::byte> mine, std::vector<int64_t>& counts,
                                        const Call& call) override {
    counts.assign(static_cast<size_t>(size_), 0);
    int64_t my_count = static_cast<int64_t>(mine.size());
    std::vector<MPI_Request> requests(1);
    ok(MPI_Iallgather(&my_count, 1, MPI_INT64_T, counts.data(), 1, MPI_INT64_T, comm_, requests.data()),
       "MPI_Iallgather");
    if (!wait(requests)) timed_out(call);
    std::vector<int64_t> offsets(static_cast<size_t>(size_) + 1, 0);
    for (int r = 0; r < size_; ++r) offsets[static_cast<size_t>(r) + 1] = offsets[static_cast<size_t>(r)] + counts[static_cast<size_t>(r)];
    std::vector<std::byte> out(static_cast<size_t>(offsets.back()));
    // In rounds of at most `chunk` bytes per rank, so that every count and
    // displacement of a round fits MPI's int.
    const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(options_.max_chunk, INT_MAX / size_));
    const int64_t longest = *std::max_element(counts.begin(), counts.end());
    std::vector<int> round_counts(static_cast<size_t>(size_)), round_offsets(static_cast<size_t>(size_));
    std::vector<std::byte> round;
    for (int64_t at = 0; at < longest; at += chunk) {
      int total = 0;
      for (int r = 0; r < size_; ++r) {
        const int64_t left = std::max<int64_t>(0, counts[static_cast<size_t>(r)] - at);
        round_counts[static_cast<size_t>(r)] = static_cast<int>(std::min(chunk, left));
        round_offsets[static_cast<size_t>(r)] = total;
        total += round_counts[static_cast<size_t>(r)];
      }
      round.resize(static_cast<size_t>(total));
      const int mine_now = round_counts[static_cast<size_t>(rank_)];
      ok(MPI_Iallgatherv(mine.data() + std::min<int64_t>(at, my_count), mine_now, MPI_BYTE, round.data(),
                         round_counts.data(), round_offsets.data(), MPI_BYTE, comm_, requests.data()),
         "MPI_Iallgatherv");
      if (!wait(requests)) timed_out(call);
      for (int r = 0; r < size_; ++r)
        std::copy_n(round.data() + round_offsets[static_cast<size_t>(r)], round_counts[static_cast<size_t>(r)],
                    out.data() + offsets[static_cast<size_t>(r)] + at);
    }
    return out;
  }

  void run_broadcast(std::span<std::byte> data, int root, const Call& call) override {
    std::vector<MPI_Request> requests;
    for (size_t at = 0; at < data.size(); at += static_cast<size_t>(options_.max_chunk)) {
      const int n = static_cast<int>(std::min<size_t>(static_cast<size_t>(options_.max_chunk), data.size() - at));
      requests.emplace_back();
      ok(MPI_Ibcast(data.data() + at, n, MPI_BYTE, root, comm_, &requests.back()), "MPI_Ibcast");
    }
    if (!wait(requests)) timed_out(call);
  }

  void run_barrier(const Call& call) override {
    std::vector<MPI_Request> requests(1);
    ok(MPI_Ibarrier(comm_, requests.data()), "MPI_Ibarrier");
    if (!wait(requests)) timed_out(call);
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  mutable bool stuck_ = false;  // a wait ran out of time with requests in flight

  void ok(int rc, const char* what) const {
    SYLVA_CHECK(rc == MPI_SUCCESS, "[dist] rank ", rank_, " of ", size_, ": ", what, " failed: ", mpi_error(rc));
  }

  Descriptor descriptor(const Call& call) const {
    Descriptor d{};
    d.sequence = sequence_;
    d.count = call.count;
    d.root = call.root;
    d.kind = static_cast<uint8_t>(call.kind);
    d.elem = static_cast<uint8_t>(call.elem);
    const size_t n = std::min(call.what.size(), sizeof d.what);
    d.what_len = static_cast<uint8_t>(n);
    std::memcpy(d.what, call.what.data(), n);
    return d;
  }

  // Polls until every request completed (true) or the deadline passed
  // (false). Open MPI moves a nonblocking collective on only inside MPI
  // calls, so a collective of many rounds (a large allreduce) is as fast
  // as the polling: poll back to back, yielding the core to any other
  // runnable thread, for the first 100 ms; after that a rank is waiting for
  // a much slower one (or a dead one), and polls every millisecond.
  bool wait(std::vector<MPI_Request>& requests) const {
    const auto start = std::chrono::steady_clock::now();
    while (true) {
      int done = 0;
      ok(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE), "MPI_Testall");
      if (done) return true;
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline_) {
        stuck_ = true;
        return false;
      }
      if (now - start > std::chrono::milliseconds(100))
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      else
        std::this_thread::yield();
    }
  }

  [[noreturn]] void timed_out(const Call& call) const {
    SYLVA_THROW("[dist] rank ", rank_, " of ", size_, ": collective #", sequence_, " (", describe(call),
                ") did not complete within ", options_.deadline_s,
                " s: a rank died, stalled, or stopped calling collectives");
  }
};

}  // namespace

bool mpi_available() { return true; }

std::unique_ptr<Communicator> mpi_communicator(CommOptions options) {
  return std::make_unique<MpiCommunicator>(options);
}

}  // namespace sylva::dist
