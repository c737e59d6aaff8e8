// ParameterSet: named, trainable tensors with their gradients.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "sylva/core/tensor.h"

namespace sylva {

/// How a parameter is initialised.
struct Init {
  enum class Kind : uint8_t { zeros, constant, uniform, glorot };
  Kind kind = Kind::zeros;
  double a = 0.0, b = 0.0;

  static Init zeros() { return {Kind::zeros}; }
  static Init constant(double v) { return {Kind::constant, v}; }
  /// U(lo, hi).
  static Init uniform(double lo, double hi) { return {Kind::uniform, lo, hi}; }
  /// Glorot/Xavier uniform: U(±sqrt(6 / (fan_in + fan_out))) over the last two axes.
  static Init glorot() { return {Kind::glorot}; }
};

struct Parameter {
  std::string name;
  Tensor value;
  Tensor grad;  // same shape and dtype as value
  /// Optimisers multiply their learning rate by this (e.g. embeddings).
  double lr_scale = 1.0;
  /// L2 weight decay applies to this parameter.
  bool decay = true;
};

/// Row sparsity of gradients: for each parameter named here, only the
/// listed rows (sorted, unique) of its gradient may be nonzero; parameters
/// not named are dense. Produced by Executor::sparse_grads() for embedding
/// tables read only through lookup, so optimisers touch only those rows.
using RowSparsity = std::map<std::string, std::vector<int32_t>>;

/// Sorts `rows` (each in [0, table_rows)) and drops repeats, as RowSparsity
/// keeps them. Where the table's bitmap is small beside the rows, they are
/// marked in `bits` (scratch, reused) and read back in order instead of
/// sorted (a batch-1 Tree-FC step's 256 leaf ids: std::sort was 0.4% of
/// the step).
void sort_unique_rows(std::vector<int32_t>& rows, int64_t table_rows, std::vector<uint64_t>& bits);

/// Calls fn(begin, end) for the element ranges of `p`'s gradient that may be
/// nonzero: one range per listed row when `sparse` names `p`, else [0, numel).
template <class Fn>
void for_each_grad_range(const Parameter& p, const RowSparsity* sparse, Fn&& fn) {
  if (sparse) {
    auto it = sparse->find(p.name);
    if (it != sparse->end()) {
      const int64_t cols = p.grad.shape().cols();
      for (int32_t r : it->second) fn(static_cast<int64_t>(r) * cols, static_cast<int64_t>(r + 1) * cols);
      return;
    }
  }
  fn(int64_t{0}, p.grad.numel());
}

/// Named parameters in insertion order; references stay valid while the
/// set lives. All parameters share one dtype.
///
/// @code
/// ParameterSet ps(DType::f32, /*seed=*/7);
/// ps.add("W", {300, 750}, Init::glorot());
/// ps.add("b", {750}, Init::zeros());
/// Parameter& w = ps["W"];
/// @endcode
class ParameterSet {
 public:
  explicit ParameterSet(DType dtype = DType::f32, uint64_t seed = 0) : dtype_(dtype), seed_(seed) {}
  ParameterSet(const ParameterSet&) = delete;
  ParameterSet& operator=(const ParameterSet&) = delete;

  /// Adds and initialises a parameter; throws if the name exists.
  Parameter& add(const std::string& name, Shape shape, Init init);
  /// Throws sylva::Error naming the missing parameter and the known ones.
  Parameter& operator[](const std::string& name);
  const Parameter& operator[](const std::string& name) const;
  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  size_t size() const { return params_.size(); }
  DType dtype() const { return dtype_; }

  std::vector<Parameter*> all();
  std::vector<const Parameter*> all() const;
  /// Zeroes every gradient; with `sparse`, only the listed rows of the
  /// parameters it names (the caller guarantees the other rows are zero),
  /// except that such a gradient of 32 MB or more gives all its pages back
  /// to the kernel instead (host_memory_zero_pages), so that an embedding
  /// table's gradient holds only the pages its latest rows were written to.
  void zero_grad(const RowSparsity* sparse = nullptr);
  /// Total number of scalars.
  int64_t numel() const;

 private:
  DType dtype_;
  uint64_t seed_;
  std::deque<Parameter> params_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace sylva
