// Static CNN graphs (the IOS graphs) run forward, float32 NCHW: the graph
// logic of convolution (stride, padding, groups, depthwise), max/avg/global
// pooling, identity (channel concat of summed slices), relu and
// activations, element-wise add/mul and sequential nodes; IOS plans
// executed stage by stage; and IOS's profiling cost model. The operators
// are a backend's CNN kernels (sylva/backend/cnn_kernels.h): oneDNN or the
// naive reference on the CPU, cuDNN on an NVIDIA GPU (with
// -DSYLVA_BUILD_CUDA=ON); memory, copies and lanes are the Backend's.
//
// @code
// ios::CnnGraph g = ios::read_ios_graph("inception_v3.seq.json");
// cnn::CnnRunner run(g, /*batch=*/1, /*seed=*/7);
// run.run_all();                                   // every node, block by block
// std::vector<float> out = run.value(g.blocks.back().exit.name);  // a copy
// cnn::CnnRunner gpu(g, 1, 7, cnn::Impl::cudnn);   // same weights and input, on CUDA device 0
// @endcode
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "sylva/backend/cnn_kernels.h"
#include "sylva/sched/ios.h"
#include "sylva/sched/ios_graph.h"

namespace sylva::cnn {

/// Which kernels run the operators: oneDNN on the CPU, the naive loops on
/// the CPU, cuDNN (and Sylva's kernels) on CUDA device 0, kernels given to
/// the constructor, or oneDNN with the convolutions on CoSA-scheduled
/// kernels -- every one (cosa), or per layer the faster of the two as
/// measured on its first call (cosa_pick): sylva/graph/cnn_cosa.h.
enum class Impl : uint8_t { onednn, reference, cudnn, custom, cosa, cosa_pick };

class CnnRunner {
 public:
  /// Seeded random input and weights (uniform, scaled by fan-in) for every
  /// convolution of `g`, including those inside sequential nodes; the same
  /// numbers for every Impl. Checks the graph first (channel slices, sizes
  /// of concatenated inputs, output shapes): sylva::Error naming the node.
  /// All values are allocated here, in the kernels' backend's memory (on
  /// the GPU for cudnn, with the input and weights uploaded).
  CnnRunner(const ios::CnnGraph& g, int64_t batch, uint64_t seed, Impl impl = Impl::onednn);
  /// The same with kernels of one's own (Impl::custom), on their backend:
  /// the tests run the GPU's lane logic on a simulator of lanes this way.
  CnnRunner(const ios::CnnGraph& g, int64_t batch, uint64_t seed, std::unique_ptr<CnnKernels> kernels);
  ~CnnRunner();
  CnnRunner(const CnnRunner&) = delete;
  CnnRunner& operator=(const CnnRunner&) = delete;

  /// Computes node `n` from its inputs' values, which must exist
  /// (sylva::Error naming the missing one otherwise). On the CPU, safe to
  /// call from several threads for nodes whose outputs differ; on a GPU,
  /// the work is queued on the backend's current lane (a CUDA stream) and
  /// run() returns at once.
  void run(const ios::CnnNode& n);
  /// Runs the convolutions `convs` (which ios::merge_convs accepts) as one
  /// merged convolution and gives each its channel slice of the result. The
  /// merged weights are built on first use and kept (not rearranged per call).
  void run_merged(const std::vector<const ios::CnnNode*>& convs);
  /// Every node of every block, in file order.
  void run_all();
  /// [batch, C, H, W] of node `name` (downloaded from the GPU, after the
  /// work queued so far); sylva::Error if not computed.
  std::vector<float> value(const std::string& name) const;
  /// Returns when all queued work is done (a no-op on the CPU): call it
  /// before reading a clock.
  void synchronize();
  int64_t batch() const { return batch_; }
  Impl impl() const { return impl_; }
  /// The kernels that run the operators (a CosaCnnKernels for cosa and
  /// cosa_pick, which says what each convolution ran on).
  CnnKernels& kernels() const;
  /// The backend whose memory holds the values and whose lanes run the work.
  Backend& backend() const;
  /// Bytes of every node's output and every weight and bias: what a run of
  /// the whole graph reads and writes at least once.
  size_t working_set_bytes() const;
  /// Reads (a float per cache line) the values that `nodes` read, so they
  /// are in the caches as they are when their producers have just run (host
  /// memory only; a no-op on a device).
  void read_inputs(const std::vector<const ios::CnnNode*>& nodes) const;

  struct State;

 private:
  friend void run_plan(CnnRunner&, const ios::CnnBlock&, const ios::BlockPart&, const ios::StagePlan&, int);
  friend double time_plan(CnnRunner&, const ios::CnnBlock&, const ios::BlockPart&, const ios::StagePlan&, int,
                          std::vector<double>*);
  friend class ProfilingCost;
  void run_stage(const std::vector<const ios::CnnNode*>& ops, const ios::BlockPart& part, const ios::Stage& st,
                 int cores);
  void init(uint64_t seed);

  const ios::CnnGraph& g_;
  int64_t batch_;
  Impl impl_;
  std::unique_ptr<State> s_;
};

/// The weights of a merged convolution: member k's [K_k, C, kh, kw]
/// weights zero-padded to m.conv.kernel and centred, stacked along output
/// channels; the biases stacked likewise.
template <class T>
void merge_conv_weights(const ios::MergedConv& m, const std::vector<const ios::CnnNode*>& convs,
                        const std::vector<const std::vector<T>*>& weights,
                        const std::vector<const std::vector<T>*>& biases, std::vector<T>& w, std::vector<T>& b);

/// The kernels' description of conv node `n` (keyed by its name).
ConvSpec conv_spec(const ios::CnnNode& n);
/// The kernels' description of pool node `n` (keyed by its name).
PoolSpec pool_spec(const ios::CnnNode& n);

/// conv_reference (sylva/backend/cnn_kernels.h) of conv node `n`: direct
/// convolution accumulating in double, the reference every convolution is
/// checked against. `x` is [N, C, H, W]; `y` becomes [N, K, OH, OW].
template <class T>
void conv_reference(const ios::CnnNode& n, const std::vector<T>& x, int64_t N, int64_t C, int64_t H, int64_t W,
                    const std::vector<T>& wt, const std::vector<T>& b, std::vector<T>& y);

/// Runs the operators of `part` (a part of `block`) as `plan` says, each
/// group in topological order. On the CPU the groups of a concurrent stage
/// run on their own threads (each with cores / groups threads for its
/// operators), and a stage of one group, or a merged stage
/// (CnnRunner::run_merged), uses every core. On a backend that takes calls
/// from one thread (a GPU) each group of a concurrent stage gets a lane of
/// its own (Backend::reserve_lanes; groups share lanes round robin when
/// there are fewer), forked from and joined back into the current lane
/// with events (`cores` is unused); the call returns once the work is
/// queued.
void run_plan(CnnRunner& runner, const ios::CnnBlock& block, const ios::BlockPart& part, const ios::StagePlan& plan,
              int cores);

/// Measured stage latencies with their spread, keyed by the stage's
/// operators (their names, so one cache serves every part, variant and
/// search of a graph), optionally kept in a file across runs. The file
/// holds one context (what the costs were measured for: graph, batch,
/// cores, kernels, device); a file of another context is not read, and
/// save() replaces it, atomically.
class StageCosts {
 public:
  struct Cost {
    double median = 0, min = 0, max = 0;  // seconds
  };
  /// Reads `file` when it exists and holds `context`; sylva::Error naming
  /// the file and line when it is malformed.
  explicit StageCosts(std::string context, std::string file = "");
  const Cost* find(const std::string& key) const;
  void put(const std::string& key, const Cost& c);
  /// Writes every cost to the file (nothing without one).
  void save() const;
  int64_t size() const { return static_cast<int64_t>(costs_.size()); }
  /// Costs read from the file at construction.
  int64_t loaded() const { return loaded_; }
  const std::string& context() const { return context_; }

 private:
  std::string context_, file_;
  std::map<std::string, Cost> costs_;
  int64_t loaded_ = 0;
};

/// The cache key of `stage` of `part`: its groups' operator names.
std::string stage_key(const ios::CnnBlock& block, const ios::BlockPart& part, const ios::Stage& stage);

/// IOS's profiling cost model: a stage's latency is measured by running it
/// the way run_plan runs it, on the runner's device (concurrent groups
/// together, on their threads or lanes; one warm-up, then the median of
/// `repeats`, each to completion), and kept in `costs` with its spread. The
/// runner must already hold the part's inputs (run the graph once first).
/// Convolutions are mergeable as ios::merge_convs says.
///
/// With `rest_bytes` (the CPU only), the threads first read that many
/// bytes of a buffer of their own (at most twice the last-level cache)
/// before every timed run: the rest of the network, which in a real run
/// passes through the caches between two runs of a stage. Pass the graph's
/// working_set_bytes(): a stage of a network that fits the caches then
/// finds its weights there, as in a real run, and one of a larger network
/// reads them from memory, as in a real run, not from the cache its own
/// previous repeat left them in. Then the stage's inputs are read
/// (CnnRunner::read_inputs): in a real run their producers have just
/// written them.
class ProfilingCost final : public ios::StageCostModel {
 public:
  ProfilingCost(CnnRunner& runner, const ios::CnnBlock& block, const ios::BlockPart& part, int cores,
                int repeats = 3, StageCosts* costs = nullptr, size_t rest_bytes = 0);
  double latency(const ios::OpDag& dag, const ios::Stage& stage) override;
  bool mergeable(const ios::OpDag& dag, ios::OpSet ops) override;
  /// Distinct stages this model measured (not found in the cache).
  int64_t profiled() const { return profiled_; }

 private:
  CnnRunner& runner_;
  const ios::CnnBlock& block_;
  const ios::BlockPart& part_;
  int cores_, repeats_;
  size_t rest_bytes_;
  std::unique_ptr<StageCosts> own_;
  StageCosts* costs_;
  int64_t profiled_ = 0;
};

/// Seconds of one run of `plan` over `part`, to completion. With
/// `stage_seconds`, also each stage's seconds within that run (the clock
/// read, after a synchronize, between stages): the stages' costs in the
/// context of the plan, to set beside ProfilingCost's.
double time_plan(CnnRunner& runner, const ios::CnnBlock& block, const ios::BlockPart& part, const ios::StagePlan& plan,
                 int cores, std::vector<double>* stage_seconds = nullptr);

/// IOS's final choice, measured: the candidate plans of `part` run end to
/// end in turns (ios::fastest, `rounds` rounds after a warm-up one).
/// `contest.best` is the fastest candidate and `contest.seconds[k]` how
/// candidate k did; candidates that are the same stages run once and share
/// their times (`same[k]` is the first candidate equal to k).
struct PlanChoice {
  ios::Contest contest;
  std::vector<size_t> same;
};
PlanChoice choose_plan(CnnRunner& runner, const ios::CnnBlock& block, const ios::BlockPart& part,
                       const std::vector<ios::StagePlan>& candidates, int cores, int rounds);

}  // namespace sylva::cnn
