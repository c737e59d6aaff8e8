// Trainer::step() across ranks with the optimiser on the device
// (docs/distributed.md, "On GPUs"): the default mode of data_parallel.cc,
// with the gradients summed where they live. Each rank runs forward and
// backward on its share; then
//  - the embedding rows: every rank's row ids are gathered over the host
//    communicator (ids only) and merged, each row-sparse gradient's rows of
//    that union are packed on the device,
//  - the dense gradients, the packed rows and the loss are summed in one
//    device collective (NCCL on CUDA),
//  - the packed rows go back, and the device update (decay, clipping, the
//    optimiser) runs unchanged on every rank: the same sums give the same
//    parameters everywhere.
// No gradient passes through the host, and only the union's rows move.
#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "data_parallel.h"
#include "sylva/core/error.h"
#include "sylva/train/trainer.h"

namespace sylva {
namespace {

std::unique_ptr<dist::DeviceCommunicator> make_device_sums(dist::Communicator& comm, Backend& device,
                                                           DataParallelOptions::DeviceSums how) {
  using How = DataParallelOptions::DeviceSums;
  const bool nccl = how == How::nccl || (how == How::automatic && device.device().kind == DeviceKind::cuda);
  return nccl ? dist::nccl_communicator(comm, device) : dist::host_staged_communicator(comm, device);
}

// Every rank's rows of each row-sparse parameter (`sparse_ks`, indices into
// `all`), merged: one allgatherv of (i32 count, i32 rows...) per parameter.
std::vector<std::vector<int32_t>> union_of_rows(dist::Communicator& comm, const std::vector<Parameter*>& all,
                                                const std::vector<size_t>& sparse_ks, const RowSparsity& local,
                                                StepResult& r) {
  std::vector<int32_t> mine;
  for (size_t k : sparse_ks) {
    auto it = local.find(all[k]->name);
    const size_t n = it == local.end() ? 0 : it->second.size();
    mine.push_back(static_cast<int32_t>(n));
    if (n > 0) mine.insert(mine.end(), it->second.begin(), it->second.end());
  }
  r.sparse_bytes += static_cast<int64_t>(mine.size() * sizeof(int32_t));
  std::vector<int64_t> counts;
  const std::vector<std::byte> blobs = comm.allgatherv(std::as_bytes(std::span(mine)), "embedding row ids", &counts);
  std::vector<int32_t> every(blobs.size() / sizeof(int32_t));
  if (!every.empty()) std::memcpy(every.data(), blobs.data(), every.size() * sizeof(int32_t));
  std::vector<std::vector<int32_t>> rows(sparse_ks.size());
  size_t at = 0;
  for (int64_t bytes : counts) {
    const size_t end = at + static_cast<size_t>(bytes) / sizeof(int32_t);
    for (size_t j = 0; j < sparse_ks.size(); ++j) {
      SYLVA_ASSERT(at < end, "[trainer] a rank sent fewer row lists than there are row-sparse parameters");
      const auto n = static_cast<size_t>(every[at++]);
      SYLVA_ASSERT(at + n <= end, "[trainer] a rank's row list runs past its blob");
      detail::merge_rows(rows[j], std::span<const int32_t>(every).subspan(at, n));
      at += n;
    }
    SYLVA_ASSERT(at == end, "[trainer] a rank sent more row lists than there are row-sparse parameters");
  }
  return rows;
}

// One device collective: the dense gradients of `all`, the row-sparse ones
// (`sparse_ks`) at their union of `rows` only (packed into `packed`, one
// grow-only buffer each, and copied back), and the loss where it was staged.
void sum_on_device(dist::DeviceCommunicator& comm, ParamStore& store, const std::vector<Parameter*>& all,
                   const std::vector<size_t>& sparse_ks, const std::vector<std::vector<int32_t>>& rows,
                   std::vector<Buffer>& packed, MatView loss, StepResult& r) {
  Backend& device = store.backend();
  while (packed.size() < sparse_ks.size()) packed.emplace_back(device.memory());
  std::vector<MatView> buffers, rows_of(sparse_ks.size());
  size_t j = 0;
  for (size_t k = 0; k < all.size(); ++k) {
    const MatView g = store.grad(all[k]->name);
    if (j == sparse_ks.size() || sparse_ks[j] != k) {
      buffers.push_back(g);
      continue;
    }
    const std::vector<int32_t>& ids = rows[j];
    const int64_t row_bytes = g.cols * static_cast<int64_t>(dtype_size(g.dtype));
    packed[j].reserve(std::max<size_t>(ids.size() * static_cast<size_t>(row_bytes), 1));
    rows_of[j] = {packed[j].data(), static_cast<int64_t>(ids.size()), g.cols, g.dtype};
    if (!ids.empty()) device.copy_rows(g, ids, rows_of[j], {});
    buffers.push_back(rows_of[j]);
    r.sparse_bytes += static_cast<int64_t>(ids.size()) * row_bytes;
    r.sparse_table_bytes += g.rows * row_bytes;
    ++j;
  }
  buffers.push_back(loss);
  comm.allreduce_sum(buffers, "gradients and loss");
  for (j = 0; j < sparse_ks.size(); ++j)
    if (!rows[j].empty()) device.copy_rows(rows_of[j], {}, store.grad(all[sparse_ks[j]]->name), rows[j]);
}

}  // namespace

// The device route of Trainer::step: this rank's share forward and
// backward with the gradients on the device, then summed over the ranks on
// the device (device_sums_: NCCL or staged through the host), the loss with
// them; row-sparse parameters exchange only the union of the rows touched.
void Trainer::device_ranks_gradients(const GraphBatch& batch, StepResult& r) {
  dist::Communicator& comm = *options_.communicator;
  ParamStore& store = executor_.param_store();
  Backend& device = executor_.backend();
  const DataParallelOptions& po = options_.parallel;
  if (!device_sums_) device_sums_ = make_device_sums(comm, device, po.device_sums);
  const detail::UnitPlan plan = detail::plan_units(batch, po, comm.size(), comm.rank());
  const std::vector<int>& share_ids = plan.units[0];

  r.imbalance = plan.imbalance;
  const std::vector<Parameter*> all = params_.all();
  const DType dtype = params_.dtype();
  sums_.reserve((all.size() + 1) * sizeof(double));
  auto* sums = static_cast<double*>(sums_.data());
  RowSparsity local;
  if (!share_ids.empty()) {
    const GraphBatch share = batch.subset(share_ids);  // dropout drawn as on the whole batch
    r.local_samples = share.num_samples();
    r.local_vertices = share.num_vertices();
    executor_.set_step(static_cast<uint64_t>(steps_));
    executor_.forward(share, Mode::train);
    SYLVA_CHECK(executor_.device_value(loss_).dtype == dtype, "[trainer] the loss is ",
                dtype_name(executor_.device_value(loss_).dtype), " but the parameters are ", dtype_name(dtype),
                "; data-parallel training on the device sums them as one type");
    stage_loss();
    const double seed = options_.normalisation == LossScale::per_sample ? 1.0 / r.samples : 1.0;  // the global count
    executor_.backward(loss_, seed);
    local = executor_.sparse_grads();
  } else {  // no samples here: zero gradients and a zero loss take part in the sums
    device.fill_zero({sums + all.size(), 1, 1, DType::f64});
  }

  // Row-sparse this step: the gradient plan's, unless decayed (decay makes a gradient dense).
  const plan::ProgramGradPlan& gp = executor_.gradient_plan(loss_);
  std::vector<size_t> sparse_ks;
  for (size_t k = 0; k < all.size(); ++k)
    if (gp.sparse_params.count(all[k]->name) && !(options_.weight_decay > 0.0 && all[k]->decay)) sparse_ks.push_back(k);
  const std::vector<std::vector<int32_t>> rows = union_of_rows(comm, all, sparse_ks, local, r);

  sum_on_device(*device_sums_, store, all, sparse_ks, rows, sparse_rows_, {sums + all.size(), 1, 1, dtype}, r);
  sparse_.clear();
  for (size_t j = 0; j < sparse_ks.size(); ++j) sparse_[all[sparse_ks[j]]->name] = rows[j];
}

}  // namespace sylva
