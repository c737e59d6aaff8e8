// Trainer::step() across the ranks of TrainerOptions::communicator
// (docs/distributed.md). Every rank holds the same global batch and the
// same parameters; each runs forward/backward on its share, the gradients
// are combined so that every rank holds the same global gradient, and the
// host update (weight decay, clipping, the optimiser) then runs unchanged
// on every rank.
//
// Default mode: one share per rank (dist::shard_by_work over the samples);
// the dense gradients are allreduced in buckets, started while the
// backward runs, then the losses and the embedding rows are gathered in
// one allgatherv. Deterministic mode: the batch is
// split into DataParallelOptions::groups parts independently of the world
// size, each part's gradient is computed alone, all are gathered, and
// every rank adds them in part order, so the sums are the same bits
// whatever the world size.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sylva/core/error.h"
#include "sylva/core/hash.h"
#include "sylva/dist/shard.h"
#include "sylva/train/trainer.h"
#include "data_parallel.h"

namespace sylva {
namespace detail {

void merge_rows(std::vector<int32_t>& into, std::span<const int32_t> rows) {
  std::vector<int32_t> out;
  out.reserve(into.size() + rows.size());
  std::set_union(into.begin(), into.end(), rows.begin(), rows.end(), std::back_inserter(out));
  into = std::move(out);
}

void check_replicas(dist::Communicator& comm, const std::vector<Parameter*>& all, int64_t step) {
  std::vector<uint64_t> hashes;
  for (const Parameter* p : all)
    hashes.push_back(fnv1a(std::string_view(static_cast<const char*>(p->value.raw()), p->value.nbytes())));
  const std::vector<std::byte> every =
      comm.allgatherv(std::as_bytes(std::span(hashes)), "parameter fingerprints");
  SYLVA_ASSERT(every.size() == hashes.size() * sizeof(uint64_t) * static_cast<size_t>(comm.size()),
               "[trainer] parameter fingerprints of different lengths");
  std::vector<uint64_t> h(every.size() / sizeof(uint64_t));
  std::memcpy(h.data(), every.data(), every.size());
  for (int r = 1; r < comm.size(); ++r)
    for (size_t k = 0; k < all.size(); ++k)
      SYLVA_CHECK(h[static_cast<size_t>(r) * all.size() + k] == h[k],
                  "[trainer] after step ", step, " rank ", r, "'s parameter '", all[k]->name,
                  "' differs from rank 0's: the replicas diverged (every rank must build the same model from the "
                  "same seed and be given the same batches)");
}

UnitPlan plan_units(const GraphBatch& batch, const DataParallelOptions& po, int world, int rank) {
  std::vector<int64_t> work(static_cast<size_t>(batch.num_samples()));
  for (int32_t i = 0; i < batch.num_samples(); ++i) work[static_cast<size_t>(i)] = batch.sample(i).num_vertices();
  UnitPlan plan;
  if (po.deterministic) {
    dist::Shards parts = dist::shard_by_work(work, po.groups);
    const dist::Shards by_rank = dist::shard_by_work(parts.work, world);
    plan.units = std::move(parts.samples);
    plan.mine = by_rank.samples[static_cast<size_t>(rank)];
    plan.imbalance = by_rank.imbalance();
  } else {
    const dist::Shards by_rank = dist::shard_by_work(work, world);
    plan.units = {by_rank.samples[static_cast<size_t>(rank)]};
    plan.mine = {0};
    plan.imbalance = by_rank.imbalance();
  }
  return plan;
}

}  // namespace detail

namespace {

using detail::merge_rows;

// Blobs of plain values, written and read in the same order.
class BlobWriter {
 public:
  explicit BlobWriter(std::vector<std::byte>& out) : out_(out) {}
  template <class T>
  void put(const T& v) {
    bytes(&v, sizeof v);
  }
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  size_t size() const { return out_.size(); }
  std::vector<std::byte>& out() { return out_; }

 private:
  std::vector<std::byte>& out_;
};

class BlobReader {
 public:
  explicit BlobReader(std::span<const std::byte> in) : in_(in) {}
  template <class T>
  T get() {
    T v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    return v;
  }
  const std::byte* take(size_t n) {
    // Every rank wrote what every rank reads; a short blob is a bug here.
    SYLVA_ASSERT(at_ + n <= in_.size(), "[trainer] data-parallel exchange: a rank's blob is shorter than its contents");
    const std::byte* p = in_.data() + at_;
    at_ += n;
    return p;
  }
  bool done() const { return at_ == in_.size(); }

 private:
  std::span<const std::byte> in_;
  size_t at_ = 0;
};

// A parameter's gradient as one blob entry: sparse (the listed rows) or dense.
//   u8 sparse; sparse: i32 rows, the row ids, the rows' values; dense: every value.
template <class T>
void put_gradient(BlobWriter& w, const Parameter& p, const std::vector<int32_t>* rows) {
  const T* g = p.grad.data<T>();
  w.put<uint8_t>(rows ? 1 : 0);
  if (!rows) {
    w.bytes(g, static_cast<size_t>(p.grad.numel()) * sizeof(T));
    return;
  }
  const int64_t cols = p.grad.shape().cols();
  w.put(static_cast<int32_t>(rows->size()));
  w.bytes(rows->data(), rows->size() * sizeof(int32_t));
  for (int32_t r : *rows) w.bytes(g + static_cast<int64_t>(r) * cols, static_cast<size_t>(cols) * sizeof(T));
}

// What the blob entry of one parameter holds.
struct GradientEntry {
  bool sparse = false;
  std::vector<int32_t> rows;          // copied out: blob offsets are not aligned
  const std::byte* values = nullptr;  // T values: rows × cols (sparse) or numel (dense); not aligned
};

template <class T>
GradientEntry get_gradient(BlobReader& rd, const Parameter& p) {
  GradientEntry e;
  e.sparse = rd.get<uint8_t>() != 0;
  int64_t n = p.grad.numel();
  if (e.sparse) {
    const auto count = static_cast<size_t>(rd.get<int32_t>());
    e.rows.resize(count);
    if (count > 0) std::memcpy(e.rows.data(), rd.take(count * sizeof(int32_t)), count * sizeof(int32_t));
    n = static_cast<int64_t>(count) * p.grad.shape().cols();
  }
  e.values = rd.take(static_cast<size_t>(n) * sizeof(T));
  return e;
}

// grad[i] += values[i] for n values starting at element `at`.
template <class T>
void add_values(Parameter& p, int64_t at, const std::byte* values, int64_t n) {
  T* g = p.grad.data<T>() + at;
  for (int64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, values + static_cast<size_t>(i) * sizeof(T), sizeof(T));
    g[i] += v;
  }
}

// Adds an entry into `p`'s gradient (whose rows it covers must be zero or
// hold earlier entries' sums).
template <class T>
void add_gradient(Parameter& p, const GradientEntry& e) {
  if (!e.sparse) {
    add_values<T>(p, 0, e.values, p.grad.numel());
    return;
  }
  const int64_t cols = p.grad.shape().cols();
  for (size_t k = 0; k < e.rows.size(); ++k)
    add_values<T>(p, static_cast<int64_t>(e.rows[k]) * cols, e.values + k * static_cast<size_t>(cols) * sizeof(T),
                  cols);
}

const std::vector<int32_t>* rows_of(const RowSparsity& sparse, const Parameter& p) {
  auto it = sparse.find(p.name);
  return it == sparse.end() ? nullptr : &it->second;
}

// Which parameters are sparse in the global gradient, and with which rows:
// sparse in every entry that was reported (a parameter dense anywhere is
// dense), the union of the rows.
struct GlobalSparsity {
  std::vector<char> dense;          // per parameter
  std::vector<char> reported;       // per parameter: some entry named it
  std::vector<std::vector<int32_t>> rows;
  explicit GlobalSparsity(size_t n) : dense(n, 0), reported(n, 0), rows(n) {}
  void add(size_t k, const GradientEntry& e) {
    reported[k] = 1;
    if (!e.sparse) dense[k] = 1;
    else merge_rows(rows[k], e.rows);
  }
  bool sparse(size_t k) const { return reported[k] && !dense[k]; }
};

// Deterministic mode: `blobs` holds every rank's parts, each
//   i32 part, u64 bytes, f64 loss, then one gradient entry per parameter.
// Adds them in part order into the (zero) gradients; returns the loss.
template <class T>
double add_parts_in_order(std::span<const std::byte> blobs, int parts, const std::vector<Parameter*>& all,
                          RowSparsity& sparse) {
  std::vector<std::span<const std::byte>> part(static_cast<size_t>(parts));
  std::vector<double> loss(static_cast<size_t>(parts), 0.0);
  BlobReader rd(blobs);
  while (!rd.done()) {
    const auto id = static_cast<size_t>(rd.get<int32_t>());
    const auto bytes = rd.get<uint64_t>();
    SYLVA_ASSERT(id < part.size() && part[id].empty(), "[trainer] data-parallel exchange: part ", id, " twice or out of range");
    part[id] = {rd.take(bytes), bytes};
  }
  GlobalSparsity global(all.size());
  double total = 0.0;
  for (size_t id = 0; id < part.size(); ++id) {
    if (part[id].empty()) continue;  // a part with no samples (fewer samples than parts)
    BlobReader pr(part[id]);
    total += pr.get<double>();
    for (size_t k = 0; k < all.size(); ++k) {
      const GradientEntry e = get_gradient<T>(pr, *all[k]);
      add_gradient<T>(*all[k], e);
      global.add(k, e);
    }
  }
  sparse.clear();
  for (size_t k = 0; k < all.size(); ++k)
    if (global.sparse(k)) sparse[all[k]->name] = std::move(global.rows[k]);
  return total;
}

// Default mode: the dense gradients (every parameter's but the row-sparse
// ones'), allreduced in buckets of about bucket_bytes. The buckets follow
// the order in which the backward finalises the gradients (the gradient
// plan's, the same on every rank; parameters no op writes last), and with
// `overlap` each bucket's allreduce starts as soon as its last member is
// final, while the backward goes on (Executor::set_gradient_hook):
// classifier gradients before the vertex functions' loops end. A bucket's
// name lists its parameters, so the call check names a layout that differs.
class DenseBuckets {
 public:
  DenseBuckets(dist::Communicator& comm, const std::vector<Parameter*>& all, const plan::ProgramGradPlan& plan,
               const DataParallelOptions& po, DType dtype)
      : comm_(comm), all_(all), dtype_(dtype), overlap_(po.overlap), bucket_of_(all.size(), -1) {
    for (size_t k = 0; k < all.size(); ++k) index_[all[k]->name] = k;
    std::vector<size_t> order;
    std::vector<char> placed(all.size(), 0);
    auto place = [&](size_t k) {
      if (placed[k] || plan.sparse_params.count(all[k]->name)) return;
      placed[k] = 1;
      order.push_back(k);
    };
    for (const std::vector<std::string>& names : plan.final_after)
      for (const std::string& name : names)
        if (auto it = index_.find(name); it != index_.end()) place(it->second);
    for (size_t k = 0; k < all.size(); ++k) place(k);
    int64_t filled = 0;
    for (size_t k : order) {
      if (buckets_.empty() || filled >= po.bucket_bytes) buckets_.emplace_back(), filled = 0;
      Bucket& b = buckets_.back();
      b.members.push_back(k);
      b.what += (b.what.empty() ? "" : ",") + all[k]->name;
      bucket_of_[k] = static_cast<int>(buckets_.size() - 1);
      filled += static_cast<int64_t>(all[k]->grad.nbytes());
    }
    for (size_t i = 0; i < buckets_.size(); ++i) {
      buckets_[i].what = "bucket " + std::to_string(i) + ": " + buckets_[i].what;
      buckets_[i].waiting = static_cast<int>(buckets_[i].members.size());
    }
  }

  // The backward's hook: `names` are final.
  void on_final(std::span<const std::string> names) {
    if (!overlap_) return;
    for (const std::string& name : names)
      if (auto it = index_.find(name); it != index_.end() && bucket_of_[it->second] >= 0)
        --buckets_[static_cast<size_t>(bucket_of_[it->second])].waiting;
    while (next_ < buckets_.size() && buckets_[next_].waiting == 0) start(buckets_[next_++]);
    comm_.progress();
  }

  // After the backward (or instead of it, on a rank without samples):
  // every gradient is final; starts the rest, waits for all.
  void finish() {
    while (next_ < buckets_.size()) start(buckets_[next_++]);
    comm_.finish_started();
    for (Bucket& b : buckets_) {
      if (b.members.size() == 1) continue;
      size_t off = 0;
      for (size_t k : b.members) {
        const size_t n = all_[k]->grad.nbytes();
        std::memcpy(all_[k]->grad.raw(), b.buffer.data() + off, n);
        off += n;
      }
    }
  }

 private:
  struct Bucket {
    std::vector<size_t> members;
    std::string what;
    int waiting = 0;                // members not final yet
    std::vector<std::byte> buffer;  // the members' gradients, when more than one
  };

  // A bucket of one parameter (a large one) is reduced in place, without copies.
  void start(Bucket& b) {
    std::span<std::byte> data;
    if (b.members.size() == 1) {
      Tensor& g = all_[b.members[0]]->grad;
      data = {static_cast<std::byte*>(g.raw()), g.nbytes()};
    } else {
      b.buffer.clear();
      for (size_t k : b.members) {
        const auto* g = static_cast<const std::byte*>(all_[k]->grad.raw());
        b.buffer.insert(b.buffer.end(), g, g + all_[k]->grad.nbytes());
      }
      data = b.buffer;
    }
    dispatch_floating(dtype_, [&](auto t) {
      using T = decltype(t);
      comm_.start_allreduce_sum(std::span<T>(reinterpret_cast<T*>(data.data()), data.size() / sizeof(T)), b.what);
    });
  }

  dist::Communicator& comm_;
  const std::vector<Parameter*>& all_;
  DType dtype_;
  bool overlap_;
  std::map<std::string, size_t, std::less<>> index_;  // parameter name -> index in all_
  std::vector<int> bucket_of_;                         // per parameter; -1: row-sparse
  std::vector<Bucket> buckets_;
  size_t next_ = 0;  // buckets started so far
};

// Default mode, after the dense buckets: the losses and the embedding rows
// in one allgatherv. `mine` is this rank's blob: f64 loss, u8 ran (0: no
// samples), then for every row-sparse parameter an i32 index and its
// entry. Every rank's rows are added in rank order.
template <class T>
double exchange_rows(dist::Communicator& comm, double local_loss, bool ran, const RowSparsity& local_sparse,
                     const std::vector<Parameter*>& all, const std::set<std::string>& sparse_params,
                     RowSparsity& sparse, StepResult& result) {
  std::vector<std::byte> mine;
  BlobWriter w(mine);
  w.put(local_loss);
  w.put<uint8_t>(ran ? 1 : 0);
  if (ran)
    for (size_t k = 0; k < all.size(); ++k)
      if (sparse_params.count(all[k]->name)) {
        const auto* rows = rows_of(local_sparse, *all[k]);
        SYLVA_ASSERT(rows, "[trainer] the backward reported no rows for row-sparse '", all[k]->name, "'");
        w.put(static_cast<int32_t>(k));
        put_gradient<T>(w, *all[k], rows);
      }
  std::vector<int64_t> counts;
  result.sparse_bytes = static_cast<int64_t>(mine.size());
  const std::vector<std::byte> blobs = comm.allgatherv(mine, "losses and embedding rows", &counts);

  GlobalSparsity global(all.size());
  std::vector<std::vector<std::pair<size_t, GradientEntry>>> entries(counts.size());
  double loss = 0.0;
  size_t at = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    BlobReader rd{std::span<const std::byte>(blobs).subspan(at, static_cast<size_t>(counts[r]))};
    at += static_cast<size_t>(counts[r]);
    loss += rd.get<double>();
    if (rd.get<uint8_t>() == 0) continue;
    while (!rd.done()) {
      const auto k = static_cast<size_t>(rd.get<int32_t>());
      SYLVA_ASSERT(k < all.size() && sparse_params.count(all[k]->name),
                   "[trainer] data-parallel exchange: parameter index ", k, " is not a row-sparse one");
      GradientEntry e = get_gradient<T>(rd, *all[k]);
      global.add(k, e);
      entries[r].emplace_back(k, std::move(e));
    }
  }
  // This rank's own rows out, then every rank's added in rank order.
  sparse.clear();
  for (size_t k = 0; k < all.size(); ++k) {
    Parameter& p = *all[k];
    if (!sparse_params.count(p.name)) continue;
    result.sparse_table_bytes += static_cast<int64_t>(p.grad.nbytes());
    if (const auto* rows = rows_of(local_sparse, p); rows && ran) {
      const int64_t cols = p.grad.shape().cols();
      for (int32_t row : *rows) std::fill_n(p.grad.data<T>() + static_cast<int64_t>(row) * cols, cols, T{0});
    }
    sparse[p.name] = std::move(global.rows[k]);
  }
  for (const auto& rank_entries : entries)
    for (const auto& [k, e] : rank_entries) add_gradient<T>(*all[k], e);
  return loss;
}

// Deterministic mode: part `u`'s gradient as one blob entry
// (i32 part, u64 bytes that follow, f64 loss, one gradient entry per parameter).
void put_part(BlobWriter& w, int u, double loss, const std::vector<Parameter*>& all, const RowSparsity& sparse,
              DType dtype) {
  w.put(static_cast<int32_t>(u));
  const size_t length_at = w.size();
  w.put(uint64_t{0});
  w.put(loss);
  dispatch_floating(dtype, [&](auto t) {
    using T = decltype(t);
    for (const Parameter* p : all) put_gradient<T>(w, *p, rows_of(sparse, *p));
  });
  const uint64_t length = w.size() - length_at - sizeof(uint64_t);
  std::memcpy(w.out().data() + length_at, &length, sizeof length);
}

}  // namespace

// The host route of Trainer::step: this rank's share (or parts) forward and
// backward, the gradients summed over the ranks -- dense buckets started
// while the backward runs, row-sparse rows exchanged after it -- or, in
// deterministic mode, every part's gradient gathered and added in order.
void Trainer::host_ranks_gradients(const GraphBatch& batch, StepResult& r) {
  dist::Communicator* comm = options_.communicator;
  if (comm == nullptr) {
    if (!self_) self_ = dist::self_communicator();
    comm = self_.get();
  }
  const DataParallelOptions& po = options_.parallel;
  const int world = comm->size();
  const int32_t n = batch.num_samples();
  const detail::UnitPlan plan = detail::plan_units(batch, po, world, comm->rank());

  r.imbalance = plan.imbalance;
  const double seed = options_.normalisation == LossScale::per_sample ? 1.0 / n : 1.0;
  const std::vector<Parameter*> all = params_.all();
  const DType dtype = params_.dtype();

  std::vector<std::byte> parts_blob;
  BlobWriter w(parts_blob);
  double local_loss = 0.0;
  bool ran = false;
  RowSparsity local_sparse;
  const plan::ProgramGradPlan& gp = executor_.gradient_plan(loss_);
  std::optional<DenseBuckets> buckets;  // default mode: started while the backward runs
  struct HookReset {
    Executor& e;
    ~HookReset() { e.set_gradient_hook(nullptr); }
  } reset{executor_};
  if (!po.deterministic) {
    buckets.emplace(*comm, all, gp, po, dtype);
    executor_.set_gradient_hook([&](std::span<const std::string> final) { buckets->on_final(final); });
  }
  for (int u : plan.mine) {
    const std::vector<int>& samples = plan.units[static_cast<size_t>(u)];
    if (samples.empty()) continue;
    const GraphBatch share = batch.subset(samples);  // dropout drawn as on the whole batch
    r.local_samples += share.num_samples();
    r.local_vertices += share.num_vertices();
    executor_.set_step(static_cast<uint64_t>(steps_));
    executor_.forward(share, Mode::train);
    const double loss = executor_.scalar(loss_);
    executor_.backward(loss_, seed);
    ran = true;
    if (!po.deterministic) {
      local_loss = loss;
      local_sparse = executor_.sparse_grads();
      continue;
    }
    put_part(w, u, loss, all, executor_.sparse_grads(), dtype);  // this part's gradient, then zeroed for the next
    params_.zero_grad(&executor_.sparse_grads());
  }

  dispatch_floating(dtype, [&](auto t) {
    using T = decltype(t);
    if (po.deterministic) {
      const std::vector<std::byte> blobs = comm->allgatherv(parts_blob, "part gradients");
      r.loss = add_parts_in_order<T>(blobs, po.groups, all, sparse_);
    } else {
      buckets->finish();
      r.loss = exchange_rows<T>(*comm, local_loss, ran, local_sparse, all, gp.sparse_params, sparse_, r);
    }
  });
  SYLVA_CHECK(std::isfinite(r.loss), "[trainer] the loss is ", r.loss, " at step ", steps_, " (summed over ", world,
              " ranks); no parameter was updated. Lower the learning rate or enable clip_norm");
}

void Trainer::check_replicas_when_due(Route route) {
  const int64_t every = options_.parallel.fingerprint_every;
  if (route == Route::local || every <= 0 || steps_ % every != 0) return;
  dist::Communicator* comm = options_.communicator ? options_.communicator : self_.get();
  if (route == Route::host_ranks) {
    if (comm->size() > 1) detail::check_replicas(*comm, params_.all(), steps_);
    return;
  }
  executor_.param_store().make_current(Side::host);  // the replicas live on the devices
  detail::check_replicas(*comm, params_.all(), steps_);
}

Trainer::CommTotals Trainer::comm_totals(Route route) const {
  CommTotals t;
  if (route == Route::local) return t;
  if (const dist::Communicator* comm = options_.communicator ? options_.communicator : self_.get()) {
    t.seconds += comm->seconds();
    t.bytes += comm->bytes_sent();
  }
  if (route == Route::device_ranks && device_sums_) {
    t.seconds += device_sums_->seconds();
    t.bytes += device_sums_->bytes_sent();
  }
  return t;
}

}  // namespace sylva
