// The Open MPI engine (built with SYLVA_WITH_MPI): nonblocking collectives
// polled against the deadline, and the call check as one small message to
// every other rank (point to point, so a timeout can say which ranks did
// not arrive).
#include <mpi.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <deque>
#include <string>
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
    g_failed = g_failed || stuck_ || !started_.empty();
    if (stuck_ || !started_.empty()) return;
    MPI_Comm_free(&comm_);
    if (g_live == 0 && g_initialised_here && !g_failed) MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view engine() const override { return "mpi"; }

 protected:
  void check(const Call& call) override {
    CallCheck c;
    post_check(c, call);
    if (!wait(c.requests, deadline_)) did_not_arrive(c, call, sequence_);
    compare(c, call, sequence_);
  }

  void run_allreduce(void* data, Elem elem, int64_t count, const Call& call) override {
    std::vector<MPI_Request> requests;
    post_allreduce(requests, data, elem, count);
    if (!wait(requests, deadline_)) timed_out(call, sequence_);
  }

  void start_allreduce(void* data, Elem, int64_t, const Call& call,
                       std::chrono::steady_clock::time_point deadline) override {
    Started& s = started_.emplace_back();
    s.what = std::string(call.what);
    s.call = call;
    s.call.what = s.what;
    s.data = data;
    s.sequence = sequence_;
    s.deadline = deadline;
    if (options_.check_calls) post_check(s.check, s.call);
    advance(false);
  }

  bool advance(bool block) override {
    const auto start = std::chrono::steady_clock::now();
    try {
      while (!advance_once()) {
        if (!block) return false;
        pause(start);
      }
    } catch (...) {
      stuck_ = stuck_ || !started_.empty();  // requests may be in flight: leave MPI as it is
      throw;
    }
    return true;
  }

  std::vector<std::byte> run_allgatherv(std::span<const std::byte> mine, std::vector<int64_t>& counts,
                                        const Call& call) override {
    counts.assign(static_cast<size_t>(size_), 0);
    int64_t my_count = static_cast<int64_t>(mine.size());
    std::vector<MPI_Request> requests(1);
    ok(MPI_Iallgather(&my_count, 1, MPI_INT64_T, counts.data(), 1, MPI_INT64_T, comm_, requests.data()),
       "MPI_Iallgather");
    if (!wait(requests, deadline_)) timed_out(call, sequence_);
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
      if (!wait(requests, deadline_)) timed_out(call, sequence_);
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
    if (!wait(requests, deadline_)) timed_out(call, sequence_);
  }

  void run_barrier(const Call& call) override {
    std::vector<MPI_Request> requests(1);
    ok(MPI_Ibarrier(comm_, requests.data()), "MPI_Ibarrier");
    if (!wait(requests, deadline_)) timed_out(call, sequence_);
  }

 private:
  // The call check of one collective: this rank's descriptor, the others'
  // (indexed by rank), and the receives (one per other rank, in rank
  // order) then the sends.
  struct CallCheck {
    Descriptor mine{};
    std::vector<Descriptor> theirs;
    std::vector<MPI_Request> requests;
  };
  // A started allreduce: checked (when check_calls), then posted, then done.
  struct Started {
    std::string what;
    Call call{};  // call.what views `what`
    void* data = nullptr;
    int64_t sequence = 0;
    std::chrono::steady_clock::time_point deadline;
    CallCheck check;
    std::vector<MPI_Request> reduces;
    bool posted = false;
  };

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  mutable bool stuck_ = false;  // a wait ran out of time with requests in flight
  std::deque<Started> started_;  // a deque: MPI holds pointers into its elements

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

  // Sends this rank's descriptor of `call` (collective #sequence_) to every
  // other rank and posts the receives of theirs.
  void post_check(CallCheck& c, const Call& call) {
    c.mine = descriptor(call);
    c.theirs.assign(static_cast<size_t>(size_), Descriptor{});
    c.requests.reserve(2 * static_cast<size_t>(size_));
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      c.requests.emplace_back();
      ok(MPI_Irecv(&c.theirs[static_cast<size_t>(r)], sizeof(Descriptor), MPI_BYTE, r, kCheckTag, comm_,
                   &c.requests.back()),
         "MPI_Irecv");
    }
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      c.requests.emplace_back();
      ok(MPI_Isend(&c.mine, sizeof(Descriptor), MPI_BYTE, r, kCheckTag, comm_, &c.requests.back()), "MPI_Isend");
    }
  }

  // The check's deadline passed: names the ranks whose descriptor never came.
  [[noreturn]] void did_not_arrive(CallCheck& c, const Call& call, int64_t sequence) {
    std::string missing;
    size_t k = 0;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      int done = 0;
      MPI_Test(&c.requests[k++], &done, MPI_STATUS_IGNORE);
      if (!done) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    }
    SYLVA_THROW("[dist] rank ", rank_, " of ", size_, ": rank(s) ", missing.empty() ? "?" : missing,
                " did not reach collective #", sequence, " (", describe(call), ") within ", options_.deadline_s,
                " s: a rank died, stalled, or stopped calling collectives");
  }

  // Every rank's descriptor arrived: the same call everywhere, or an error
  // naming the first rank that called something else.
  void compare(const CallCheck& c, const Call& call, int64_t sequence) const {
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      const Descriptor& d = c.theirs[static_cast<size_t>(r)];
      if (std::memcmp(&d, &c.mine, sizeof(Descriptor)) == 0) continue;
      const Call other{static_cast<Kind>(d.kind), static_cast<Elem>(d.elem), d.count, d.root,
                       std::string_view(d.what, std::min<size_t>(d.what_len, sizeof d.what))};
      SYLVA_THROW("[dist] rank ", rank_, " of ", size_, ": mismatched collective #", sequence, ": this rank called ",
                  describe(call), " but rank ", r, " called ", describe(other),
                  d.sequence != sequence ? " as its collective #" + std::to_string(d.sequence) : std::string(),
                  " (every rank must make the same calls in the same order)");
    }
  }

  // MPI_Iallreduce in place over `count` elements, in pieces of max_chunk.
  void post_allreduce(std::vector<MPI_Request>& requests, void* data, Elem elem, int64_t count) {
    const int e = static_cast<int>(elem);
    auto* bytes = static_cast<char*>(data);
    for (int64_t at = 0; at < count; at += options_.max_chunk) {
      const int n = static_cast<int>(std::min(options_.max_chunk, count - at));
      requests.emplace_back();
      ok(MPI_Iallreduce(MPI_IN_PLACE, bytes + static_cast<size_t>(at) * elem_size(e), n, mpi_type(e), MPI_SUM, comm_,
                        &requests.back()),
         "MPI_Iallreduce");
    }
  }

  // One pass over the started allreduces: posts, in order, each whose call
  // check came back (a later one never before an earlier: MPI needs the
  // same order on every rank), tests the posted ones (which moves them
  // on), and drops the completed ones from the front. True when none is
  // left; an error when the oldest one's deadline passed.
  bool advance_once() {
    for (Started& s : started_) {
      if (s.posted) continue;
      if (!s.check.requests.empty()) {
        int done = 0;
        ok(MPI_Testall(static_cast<int>(s.check.requests.size()), s.check.requests.data(), &done,
                       MPI_STATUSES_IGNORE),
           "MPI_Testall");
        if (!done) break;
        try {
          compare(s.check, s.call, s.sequence);
        } catch (...) {
          settle();
          throw;
        }
      }
      post_allreduce(s.reduces, s.data, s.call.elem, s.call.count);
      s.posted = true;
    }
    for (Started& s : started_) {
      if (!s.posted) break;
      int done = 0;
      ok(MPI_Testall(static_cast<int>(s.reduces.size()), s.reduces.data(), &done, MPI_STATUSES_IGNORE), "MPI_Testall");
      if (done) s.reduces.clear();
    }
    while (!started_.empty() && started_.front().posted && started_.front().reduces.empty()) started_.pop_front();
    if (started_.empty()) return true;
    Started& oldest = started_.front();
    if (std::chrono::steady_clock::now() >= oldest.deadline) {
      stuck_ = true;
      if (!oldest.posted) did_not_arrive(oldest.check, oldest.call, oldest.sequence);
      timed_out(oldest.call, oldest.sequence);
    }
    return false;
  }

  // A started call failed its check: the ones before it were checked on
  // every rank and can complete; when they did, and no later call's check
  // messages are still in flight, nothing is left inside MPI (and it can
  // be finalised).
  void settle() {
    bool clean = true;
    for (Started& s : started_) {
      if (s.posted) {
        clean = wait(s.reduces, s.deadline) && clean;
        continue;
      }
      int done = 0;
      MPI_Testall(static_cast<int>(s.check.requests.size()), s.check.requests.data(), &done, MPI_STATUSES_IGNORE);
      clean = clean && done;
    }
    if (clean) started_.clear();
  }

  // Open MPI moves a nonblocking collective on only inside MPI calls, so a
  // collective of many rounds (a large allreduce) is as fast as the
  // polling: poll back to back, yielding the core to any other runnable
  // thread, for the first 100 ms; after that a rank is waiting for a much
  // slower one (or a dead one), and polls every millisecond.
  static void pause(std::chrono::steady_clock::time_point since) {
    if (std::chrono::steady_clock::now() - since > std::chrono::milliseconds(100))
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    else
      std::this_thread::yield();
  }

  // Polls until every request completed (true) or `deadline` passed (false).
  bool wait(std::vector<MPI_Request>& requests, std::chrono::steady_clock::time_point deadline) const {
    const auto start = std::chrono::steady_clock::now();
    while (true) {
      int done = 0;
      ok(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE), "MPI_Testall");
      if (done) return true;
      if (std::chrono::steady_clock::now() >= deadline) {
        stuck_ = true;
        return false;
      }
      pause(start);
    }
  }

  [[noreturn]] void timed_out(const Call& call, int64_t sequence) const {
    SYLVA_THROW("[dist] rank ", rank_, " of ", size_, ": collective #", sequence, " (", describe(call),
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
