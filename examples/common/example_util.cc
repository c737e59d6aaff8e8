#include "example_util.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

namespace sylva::examples {

std::unique_ptr<Optimizer> make_optimizer(const std::string& name, double lr, const std::string& who) {
  if (name == "adagrad") return std::make_unique<Adagrad>(AdagradOptions{.lr = lr});
  if (name == "adam") return std::make_unique<Adam>(AdamOptions{.lr = lr});
  if (name == "sgd") return std::make_unique<Sgd>(SgdOptions{.lr = lr});
  SYLVA_THROW("[", who, "] unknown optimizer '", name, "' (adagrad, adam or sgd)");
}

std::string format_duration(double seconds) {
  char buf[32];
  const long t = std::lround(std::max(0.0, seconds));
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, (t / 60) % 60);
  else
    std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  return buf;
}

double Series::median() const {
  if (values.empty()) return 0.0;
  std::vector<double> v = values;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

double Series::min() const { return values.empty() ? 0.0 : *std::min_element(values.begin(), values.end()); }

double Series::max() const { return values.empty() ? 0.0 : *std::max_element(values.begin(), values.end()); }

std::string Series::summary(int precision) const {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.*f (%.*f..%.*f)", precision, median(), precision, min(), precision, max());
  return buf;
}

std::string rng_text(const std::mt19937_64& rng) {
  std::ostringstream os;
  os << rng;
  return os.str();
}

void restore_rng(std::mt19937_64& rng, const std::map<std::string, std::string>& meta, const std::string& path) {
  auto it = meta.find("data.rng");
  SYLVA_CHECK(it != meta.end(), "[examples] '", path, "' has no 'data.rng' (not written by --save-state?)");
  std::istringstream is(it->second);
  is >> rng;
  SYLVA_CHECK(!is.fail(), "[examples] '", path, "': 'data.rng' is not the state of a mt19937_64");
}

int64_t meta_int(const std::map<std::string, std::string>& meta, const std::string& key, const std::string& path) {
  auto it = meta.find(key);
  SYLVA_CHECK(it != meta.end(), "[examples] '", path, "' has no '", key, "' (not written by --save-state?)");
  char* end = nullptr;
  const long long v = std::strtoll(it->second.c_str(), &end, 10);
  SYLVA_CHECK(!it->second.empty() && *end == '\0', "[examples] '", path, "': '", key, "' is \"", it->second,
              "\", not an integer");
  return v;
}

std::unique_ptr<dist::Communicator> make_communicator(bool distributed) {
  if (!distributed && !dist::launched_by_mpi()) return nullptr;
  std::unique_ptr<dist::Communicator> comm = dist::mpi_communicator();
  if (comm->rank() != 0 && !std::freopen("/dev/null", "w", stdout))
    SYLVA_THROW("[examples] cannot silence the output of rank ", comm->rank());
  return comm;
}

std::string device_for_rank(const std::string& device, const dist::Communicator* comm) {
  if (device != "cuda" || comm == nullptr || comm->size() == 1) return device;
  const int local = dist::local_rank();
  return "cuda:" + std::to_string(local >= 0 ? local : comm->rank());
}

void RankTally::add(const StepResult& r) {
  samples += r.local_samples;
  vertices += r.local_vertices;
  comm_seconds += r.comm_seconds;
  comm_bytes += r.comm_bytes;
  sparse_bytes += r.sparse_bytes;
  sparse_table_bytes += r.sparse_table_bytes;
  imbalance_sum += r.imbalance;
  ++steps;
}

void print_rank_balance(dist::Communicator& comm, const RankTally& mine, const std::string& who, std::FILE* log) {
  const std::vector<std::byte> all = comm.allgatherv(std::as_bytes(std::span(&mine, 1)), "rank tallies");
  std::vector<RankTally> t(all.size() / sizeof(RankTally));
  std::memcpy(t.data(), all.data(), t.size() * sizeof(RankTally));
  if (!log || t.empty()) return;
  double mean = 0;
  for (const RankTally& r : t) mean += static_cast<double>(r.vertices) / static_cast<double>(t.size());
  for (size_t r = 0; r < t.size(); ++r) {
    const auto per_step = [&](int64_t bytes) {
      return t[r].steps > 0 ? static_cast<double>(bytes) / 1e6 / static_cast<double>(t[r].steps) : 0.0;
    };
    std::fprintf(log, "[%s] rank %zu: %ld samples, %ld vertices (%.3f x mean) | collectives %.2f s | sent per step "
                 "%.3f MB, of which embedding rows %.3f MB (whole tables: %.3f MB) | mean step imbalance %.3f\n",
                 who.c_str(), r, static_cast<long>(t[r].samples), static_cast<long>(t[r].vertices),
                 mean > 0 ? static_cast<double>(t[r].vertices) / mean : 1.0, t[r].comm_seconds,
                 per_step(t[r].comm_bytes), per_step(t[r].sparse_bytes), per_step(t[r].sparse_table_bytes),
                 t[r].steps > 0 ? t[r].imbalance_sum / static_cast<double>(t[r].steps) : 1.0);
  }
  std::fflush(log);
}

}  // namespace sylva::examples
