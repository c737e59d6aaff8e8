// Small pieces the examples and benchmark drivers share: optimiser by name,
// durations for progress lines, median and spread of repeated measurements.
#pragma once

#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <sylva/sylva.h>

namespace sylva::examples {

/// "adagrad", "adam" or "sgd" with learning rate `lr`; anything else is a
/// sylva::Error tagged with `who` (the example's name).
std::unique_ptr<Optimizer> make_optimizer(const std::string& name, double lr, const std::string& who);

/// The communicator of a data-parallel run: MPI when `distributed` or when
/// started by mpirun (dist::launched_by_mpi()), else null (one process).
/// Every rank runs the whole program; ranks other than 0 get their stdout
/// sent to /dev/null (stderr stays, for errors).
std::unique_ptr<dist::Communicator> make_communicator(bool distributed);

/// The device a rank trains on: "cuda" in a data-parallel run of more than
/// one rank becomes "cuda:<local rank>" (dist::local_rank(), else the
/// rank), one GPU per process; anything else is `device` unchanged.
std::string device_for_rank(const std::string& device, const dist::Communicator* comm);

/// A rank's share of an epoch's steps (StepResult's local_* and comm_*).
struct RankTally {
  int64_t samples = 0, vertices = 0, steps = 0, comm_bytes = 0, sparse_bytes = 0, sparse_table_bytes = 0;
  double comm_seconds = 0.0, imbalance_sum = 0.0;
  void add(const StepResult& r);
};
/// Every rank's tally (a collective: every rank calls it), one line per
/// rank to `log` on rank 0: samples, vertices against the mean, seconds and
/// bytes in collectives, and the mean per-step imbalance.
void print_rank_balance(dist::Communicator& comm, const RankTally& mine, const std::string& who, std::FILE* log);

/// Resumable training state of the examples (Trainer::save_state metadata):
/// a data-order RNG as text and back, and integers read back by key;
/// sylva::Error naming `path` and the key when missing or malformed.
std::string rng_text(const std::mt19937_64& rng);
void restore_rng(std::mt19937_64& rng, const std::map<std::string, std::string>& meta, const std::string& path);
int64_t meta_int(const std::map<std::string, std::string>& meta, const std::string& key, const std::string& path);

/// "12m05s", or "1h02m" from an hour on.
std::string format_duration(double seconds);

/// The values measured for one point (one per repeat or per step).
struct Series {
  std::vector<double> values;

  double median() const;
  double min() const;
  double max() const;
  /// "median (min..max)" with `precision` decimals.
  std::string summary(int precision = 1) const;
};

}  // namespace sylva::examples
