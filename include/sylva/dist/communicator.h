// Data-parallel training, step 2: the collectives ranks use to combine
// gradients, behind one small interface. Two engines: `self` (one process;
// every collective is a copy) and Open MPI (when Sylva is configured with
// it: SYLVA_WITH_MPI, `dist::mpi_available()`). Sylva does not move bytes
// itself.
//
// Two things plain MPI does not give, and training with dynamic batches
// needs:
//  - a deadline on every collective: a rank that died, stalled or never
//    calls ends the others with a sylva::Error naming the collective and
//    the ranks that did not arrive, instead of a hang;
//  - a check of every call before it runs: each rank sends every other a
//    short descriptor (kind, element type, count, the caller's name for
//    the buffer, a sequence number), and a rank that called something else
//    (another bucket layout, another count) is named in a sylva::Error on
//    every rank, instead of undefined behaviour inside MPI.
//
// @code
// std::unique_ptr<dist::Communicator> comm =
//     dist::launched_by_mpi() ? dist::mpi_communicator() : dist::self_communicator();
// std::vector<float> g = local_gradient();
// comm->allreduce_sum(std::span<float>(g), "bucket 0");   // every rank now holds the sum
// @endcode
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sylva::dist {

struct CommOptions {
  /// Seconds every collective may take, from the call until every rank has
  /// arrived and the data moved; then sylva::Error. Must be > 0.
  double deadline_s = 60.0;
  /// Elements per underlying MPI call; larger buffers are moved in pieces
  /// (MPI counts are `int`). Tests make it small to exercise the pieces.
  int64_t max_chunk = int64_t{1} << 28;
  /// Exchange and compare a descriptor of every call first (see above).
  /// Off: one round trip less per collective, and a mismatched call is
  /// undefined behaviour inside MPI.
  bool check_calls = true;
};

/// One rank's view of a group of processes. Every rank must make the same
/// calls in the same order (the `what` strings included: they name the
/// buffer in errors and are compared by the call check). Not thread-safe:
/// call from one thread. A collective that threw (deadline, mismatch, MPI
/// error) leaves the communicator broken: later calls throw at once, and
/// the process should exit non-zero (under mpirun that ends the others).
class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// "self" or "mpi".
  virtual std::string_view engine() const = 0;
  const CommOptions& options() const { return options_; }

  /// Element-wise sum over ranks, in place: afterwards every rank holds
  /// the same sums. The order of the additions is the engine's (not fixed;
  /// use allgatherv and add in rank order for a fixed one).
  void allreduce_sum(std::span<float> data, std::string_view what);
  void allreduce_sum(std::span<double> data, std::string_view what);
  void allreduce_sum(std::span<int64_t> data, std::string_view what);
  /// The same, started: returns at once, and the sums are in `data` once
  /// finish_started() returned. `data` must stay alive, and be neither read
  /// nor written, until then. Started collectives complete in the order
  /// they were started, and before any later blocking collective (which
  /// finishes them first). Open MPI moves a nonblocking collective on only
  /// inside MPI calls: call progress() often while computing. The call
  /// check applies as above; the deadline counts from the start.
  void start_allreduce_sum(std::span<float> data, std::string_view what);
  void start_allreduce_sum(std::span<double> data, std::string_view what);
  /// Moves the started collectives on, without waiting (a few MPI tests).
  void progress();
  /// Waits until every started collective completed.
  void finish_started();
  /// Started collectives not yet known to be complete.
  int started() const { return started_; }

  /// Every rank's `mine`, concatenated in rank order (any sizes, empty
  /// included); `counts`, when given, receives each rank's byte count.
  std::vector<std::byte> allgatherv(std::span<const std::byte> mine, std::string_view what,
                                    std::vector<int64_t>* counts = nullptr);
  /// Copies rank `root`'s `data` into every rank's (the same size everywhere).
  void broadcast(std::span<std::byte> data, int root, std::string_view what);
  void barrier(std::string_view what);

  /// Seconds spent inside collectives since construction (waiting for the
  /// other ranks included), and the bytes this rank contributed.
  double seconds() const { return seconds_; }
  int64_t bytes_sent() const { return bytes_; }
  /// Whether a collective failed (see the class comment).
  bool broken() const { return broken_; }

 protected:
  explicit Communicator(CommOptions options);

  enum class Kind : uint8_t { allreduce_sum, allgatherv, broadcast, barrier };
  enum class Elem : uint8_t { none, f32, f64, i64, byte };
  /// What a call is, as the call check compares it.
  struct Call {
    Kind kind;
    Elem elem;
    int64_t count;  // elements (allgatherv: -1, the counts may differ)
    int root;       // broadcast; else -1
    std::string_view what;
  };
  /// The engine's halves: check a call against the other ranks', then run it.
  virtual void check(const Call& call) = 0;
  virtual void run_allreduce(void* data, Elem elem, int64_t count, const Call& call) = 0;
  virtual std::vector<std::byte> run_allgatherv(std::span<const std::byte> mine, std::vector<int64_t>& counts,
                                                const Call& call) = 0;
  virtual void run_broadcast(std::span<std::byte> data, int root, const Call& call) = 0;
  virtual void run_barrier(const Call& call) = 0;
  /// Started allreduces (size() > 1): queue one (`call.what` must be
  /// copied; the sequence number is sequence_, its deadline `deadline`),
  /// and move the queue on -- until it is empty when `wait`. Returns
  /// whether it is empty.
  virtual void start_allreduce(void* data, Elem elem, int64_t count, const Call& call,
                               std::chrono::steady_clock::time_point deadline) = 0;
  virtual bool advance(bool wait) = 0;

  /// "allreduce_sum of 'bucket 2' (1,024 f32)", for errors.
  static std::string describe(const Call& call);
  CommOptions options_;
  int64_t sequence_ = 0;  // calls made so far (the call check compares it too)
  /// When the running collective must have finished (set before check()).
  std::chrono::steady_clock::time_point deadline_;

 private:
  template <class Fn>
  void collective(const Call& call, int64_t bytes, Fn&& run);
  /// Runs `fn` (engine work) timed; a throw breaks the communicator.
  template <class Fn>
  void guarded(Fn&& fn);
  void start(void* data, Elem elem, int64_t count, std::string_view what, int64_t bytes);
  void check_not_broken(const Call& call) const;
  double seconds_ = 0.0;
  int started_ = 0;
  int64_t bytes_ = 0;
  bool broken_ = false;
};

/// A group of one: this process alone.
std::unique_ptr<Communicator> self_communicator(CommOptions options = {});

/// Whether this build has the Open MPI engine (configured with SYLVA_WITH_MPI).
bool mpi_available();
/// Whether this process was started by mpirun/mpiexec (Open MPI's or a
/// PMI launcher's environment variables), so a program can pick its engine.
bool launched_by_mpi();
/// This process's rank among the job's processes on this machine, from
/// the launcher's environment (Open MPI's OMPI_COMM_WORLD_LOCAL_RANK,
/// MPICH's MPI_LOCALRANKID, Slurm's SLURM_LOCALID); -1 when none says.
/// Picks each rank's GPU: one per process.
int local_rank();
/// All processes of the MPI job (a duplicate of MPI_COMM_WORLD). Initialises
/// MPI (MPI_THREAD_FUNNELED: Sylva's worker threads never call MPI) on the
/// first call and finalises it when the last such communicator is
/// destroyed, unless a collective failed: then the process must exit
/// without finalising (mpirun then ends the others). sylva::Error when the
/// build has no MPI (saying how to configure it).
std::unique_ptr<Communicator> mpi_communicator(CommOptions options = {});

}  // namespace sylva::dist
