// CNN operators of the IOS graphs on CPU: convolution (stride, padding,
// groups, depthwise), max/avg/global pooling, identity (channel concat of
// summed slices), relu and activations, element-wise add/mul, sequential
// nodes -- forward only, float32 NCHW, through oneDNN, with a naive
// reference implementation of every operator to check it against.
//
// @code
// ios::CnnGraph g = ios::read_ios_graph("inception_v3.seq.json");
// cnn::CnnRunner run(g, /*batch=*/1, /*seed=*/7);
// run.run_all();                                   // every node, block by block
// const std::vector<float>& out = run.value(g.blocks.back().exit.name);
// @endcode
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sylva/sched/ios_graph.h"

namespace sylva::cnn {

/// Which implementation runs the operators.
enum class Impl : uint8_t { onednn, reference };

class CnnRunner {
 public:
  /// Seeded random input and weights (uniform, scaled by fan-in) for every
  /// convolution of `g`, including those inside sequential nodes.
  CnnRunner(const ios::CnnGraph& g, int64_t batch, uint64_t seed, Impl impl = Impl::onednn);
  ~CnnRunner();
  CnnRunner(const CnnRunner&) = delete;
  CnnRunner& operator=(const CnnRunner&) = delete;

  /// Computes node `n` from its inputs' values, which must exist
  /// (sylva::Error naming the missing one otherwise). Safe to call from
  /// several threads for nodes whose outputs differ.
  void run(const ios::CnnNode& n);
  /// Runs the convolutions `convs` (which ios::merge_convs accepts) as one
  /// merged convolution and gives each its channel slice of the result. The
  /// merged weights are built on first use and kept (not rearranged per call).
  void run_merged(const std::vector<const ios::CnnNode*>& convs);
  /// Every node of every block, in file order.
  void run_all();
  /// [batch, C, H, W] of node `name`; sylva::Error if not computed.
  const std::vector<float>& value(const std::string& name) const;
  int64_t batch() const { return batch_; }

  struct Impl_;

 private:
  std::vector<float> gather(const ios::CnnNode& n, int64_t& channels, int64_t& h, int64_t& w) const;
  std::vector<float>& slot(const std::string& name);
  // The input of a conv or pool: in place when it is all of one node's output, else gathered into `x`.
  const float* input(const ios::CnnNode& n, std::vector<float>& x, int64_t& channels, int64_t& h, int64_t& w) const;
  void conv(const ios::CnnNode& n, const float* x, int64_t channels, int64_t h, int64_t w, const std::vector<float>& wt,
            const std::vector<float>& b, std::vector<float>& y);
  struct Merged {
    ios::MergedConv m;
    std::vector<float> w, b, y;
  };

  const ios::CnnGraph& g_;
  int64_t batch_;
  Impl impl_;
  std::map<std::string, std::vector<float>> values_;  // all slots created up front; run() fills them
  std::map<std::string, const ios::CnnNode*> nodes_;  // by name, sequential nodes' members included
  std::map<std::string, std::vector<float>> weights_, bias_;
  std::unique_ptr<Impl_> dnnl_;
  std::mutex merged_mutex_;
  std::map<std::string, std::unique_ptr<Merged>> merged_;  // by merged name
};

/// The weights of a merged convolution: member k's [K_k, C, kh, kw]
/// weights zero-padded to m.conv.kernel and centred, stacked along output
/// channels; the biases stacked likewise.
template <class T>
void merge_conv_weights(const ios::MergedConv& m, const std::vector<const ios::CnnNode*>& convs,
                        const std::vector<const std::vector<T>*>& weights,
                        const std::vector<const std::vector<T>*>& biases, std::vector<T>& w, std::vector<T>& b);

/// Direct convolution over NCHW (groups, stride, padding), then bias and
/// activation, accumulating in double: the reference every convolution is
/// checked against. `x` is [N, C, H, W]; `y` becomes [N, K, OH, OW].
template <class T>
void conv_reference(const ios::CnnNode& n, const std::vector<T>& x, int64_t N, int64_t C, int64_t H, int64_t W,
                    const std::vector<T>& wt, const std::vector<T>& b, std::vector<T>& y);

/// Runs the operators of `part` (a part of `block`) as `plan` says: the
/// groups of a concurrent stage on their own threads (each with cores /
/// groups threads for its operators), each group in topological order; a
/// stage of one group, or a merged stage (CnnRunner::run_merged), uses every
/// core.
void run_plan(CnnRunner& runner, const ios::CnnBlock& block, const ios::BlockPart& part, const ios::StagePlan& plan,
              int cores);

/// IOS's profiling cost model: a stage's latency is measured by running it
/// on the CPU (one warm-up, then the median of `repeats`), cached by its
/// groups. The runner must already hold the part's inputs (run the graph
/// once first). Convolutions are mergeable as ios::merge_convs says.
class ProfilingCost final : public ios::StageCostModel {
 public:
  ProfilingCost(CnnRunner& runner, const ios::CnnBlock& block, const ios::BlockPart& part, int cores,
                int repeats = 3)
      : runner_(runner), block_(block), part_(part), cores_(cores), repeats_(repeats) {}
  double latency(const ios::OpDag& dag, const ios::Stage& stage) override;
  bool mergeable(const ios::OpDag& dag, ios::OpSet ops) override;
  /// Distinct stages measured so far.
  int64_t profiled() const { return static_cast<int64_t>(cache_.size()); }

 private:
  CnnRunner& runner_;
  const ios::CnnBlock& block_;
  const ios::BlockPart& part_;
  int cores_, repeats_;
  std::map<std::vector<ios::OpSet>, double> cache_;
};

}  // namespace sylva::cnn
