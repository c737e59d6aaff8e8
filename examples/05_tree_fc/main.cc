// Tree-FC training throughput (the Cavs synthetic tree workload): a fully
// connected layer at every vertex of complete binary trees with random leaf
// words, a softmax at the root. Reports training vertices/s and trees/s.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "example_util.h"
#include "optimisation_flags.h"
#include "command_line.h"
#include "tree_fc_model.h"

using namespace sylva;
using namespace sylva::examples;
using namespace sylva::cli;

int main(int argc, char** argv) {
  TreeFcConfig cfg;
  int32_t leaves = 256;
  int64_t batch = 64, steps = 20, epochs = 0, trees = 1024, warmup = 1;
  int threads = 1;
  std::string device = "cpu";
  uint64_t seed = 1;
  std::string policy = "bfs", optimizer = "adam";
  double lr = 1e-3, progress_seconds = 5.0;
  bool float64 = false, profile = false;
  CLI::App app{"Tree-FC training throughput (the Cavs synthetic tree workload) with Sylva"};
  app.add_option("--leaves", leaves, "Leaves per complete binary tree (a power of two, e.g. 32...1024)")
      ->check(CLI::Range(1, 1 << 20))->capture_default_str();
  app.add_option("--hidden", cfg.hidden, "Hidden size h")->check(kPositive)->capture_default_str();
  app.add_option("--classes", cfg.classes, "Classes of the root classifier")->check(CLI::Range(2, 1 << 20))
      ->capture_default_str();
  app.add_option("--vocab", cfg.vocab, "Leaf word ids are uniform in [0, vocab)")->check(CLI::Range(1, INT32_MAX))
      ->capture_default_str();
  app.add_option("--batch", batch, "Trees per training step")->check(kPositive)->capture_default_str();
  auto* steps_opt =
      app.add_option("--steps", steps, "Training steps")->check(kPositive)->capture_default_str();
  app.add_option("--epochs", epochs, "Passes over the --trees trees (sets --steps to epochs * trees / batch)")
      ->check(kPositive)->excludes(steps_opt);
  app.add_option("--trees", trees, "Generated training trees, cycled through in shuffled order")
      ->check(kPositive)->capture_default_str();
  app.add_option("--warmup", warmup, "Steps left out of the throughput summary")->check(kNonNegative)
      ->capture_default_str();
  add_optimizer_flag(app, optimizer);
  app.add_option("--lr", lr, "Learning rate")->check(kPositive)->capture_default_str();
  add_policy_flag(app, policy);
  add_threads_flag(app, threads);
  add_device_flag(app, device);
  app.add_option("--seed", seed, "Random seed (data and parameters)")->capture_default_str();
  app.add_option("--progress-seconds", progress_seconds, "Seconds between progress lines")
      ->check(kNonNegative)->capture_default_str();
  app.add_flag("--float64", float64, "Compute in float64");
  app.add_flag("--profile", profile, "Print where the time of the timed steps goes");
  bool all_rows = false, check_numerics = false, print_plans = false;
  app.add_flag("--print-plans", print_plans,
               "After the first step, print the cell's vertex plan and the first minibatch's batch plan");
  app.add_flag("--check-numerics", check_numerics,
               "Stop at the first NaN or infinity, naming the op, the vertex and the step (slower)");
  app.add_flag("--classify-all-rows", all_rows,
               "Run the classifier on every vertex, not only the labelled roots (the ablation of select_rows)");
  const OptimisationFlags ablation(app);
  if (const int rc = parse_command_line(app, argc, argv); rc >= 0) return rc;
  cfg.select_labelled = !all_rows;
  try {
    const Optimisations optimisations = ablation.chosen();
    SYLVA_CHECK(leaves >= 1 && (leaves & (leaves - 1)) == 0, "[tree_fc] --leaves must be a power of two, got ",
                leaves);
    SYLVA_CHECK(epochs >= 0, "[tree_fc] --epochs must be >= 0, got ", epochs);
    if (epochs > 0 && batch >= 1) steps = std::max<int64_t>(1, epochs * trees / batch);
    SYLVA_CHECK(batch >= 1 && steps >= 1, "[tree_fc] --batch and --steps must be >= 1, got ", batch, " and ",
                steps);
    SYLVA_CHECK(trees >= batch, "[tree_fc] --trees (", trees, ") must be at least --batch (", batch, ")");
    SYLVA_CHECK(warmup >= 0 && warmup < steps, "[tree_fc] --warmup must be in [0, --steps), got ", warmup);
    cfg.dtype = float64 ? DType::f64 : DType::f32;
    const BatchingPolicy pol = parse_policy(policy);

    std::mt19937_64 rng(seed);
    const std::vector<InputGraph> data = tree_fc_samples(rng, trees, leaves, cfg);
    ParameterSet ps(cfg.dtype, seed);
    add_tree_fc_params(ps, cfg);
    TreeFcModel model(ps, cfg);
    Trainer trainer(model.program, ps, model.loss, make_optimizer(optimizer, lr, "tree_fc"),
                    {.executor = {.policy = pol, .device = Device::parse(device), .seed = seed, .threads = threads,
                                  .optimisations = optimisations, .precision = ablation.precision(),
                                  .check_numerics = check_numerics}});

    const int64_t vertices_per_tree = 2 * static_cast<int64_t>(leaves) - 1;
    std::printf("tree_fc: %d leaves (%ld vertices/tree) | h=%ld classes=%ld vocab=%ld params=%ld %s | batch %ld trees "
                "(%ld vertices) | %s lr %g | policy %s threads %d %s %s | %ld steps over %ld trees\n",
                leaves, static_cast<long>(vertices_per_tree), static_cast<long>(cfg.hidden),
                static_cast<long>(cfg.classes), static_cast<long>(cfg.vocab), static_cast<long>(ps.numel()),
                float64 ? "f64" : "f32", static_cast<long>(batch), static_cast<long>(batch * vertices_per_tree),
                optimizer.c_str(), lr, policy_name(pol), threads, device.c_str(),
                precision_name(ablation.precision()).data(), static_cast<long>(steps),
                static_cast<long>(trees));
    std::fflush(stdout);

    std::vector<size_t> order(data.size());
    std::iota(order.begin(), order.end(), 0);
    size_t cursor = order.size();  // reshuffle before the first step
    Series vertex_rates, tree_rates;
    RunningMean loss;  // per tree, since the last progress line
    double window_seconds = 0.0, window_trees = 0.0, window_vertices = 0.0, timed_seconds = 0.0;
    Timer total, since_progress;
    Profiler profiler;
    for (int64_t step = 1; step <= steps; ++step) {
      if (cursor + static_cast<size_t>(batch) > order.size()) {
        std::shuffle(order.begin(), order.end(), rng);
        cursor = 0;
      }
      std::vector<const InputGraph*> samples;
      for (int64_t i = 0; i < batch; ++i) samples.push_back(&data[order[cursor++]]);
      if (profile && step == warmup + 1) trainer.executor().set_observer(profiler.observer());
      // The timed region is everything a training loop does per minibatch:
      // joining the graphs, scheduling, forward, backward, the update.
      Timer t;
      const GraphBatch b(std::move(samples));
      const StepResult r = trainer.step(b);
      const double s = t.seconds();
      if (print_plans && step == 1)
        std::printf("vertex plan of the cell:\n%sbatch plan of the first minibatch:\n%s",
                    trainer.executor().vertex_plan(model.hidden).to_text().c_str(),
                    trainer.executor().batch_plan(model.hidden).to_text().c_str());
      loss.add(r.loss / r.samples, r.samples);
      window_seconds += s;
      window_trees += r.samples;
      window_vertices += r.vertices;
      if (step > warmup) {
        vertex_rates.values.push_back(r.vertices / s);
        tree_rates.values.push_back(r.samples / s);
        timed_seconds += s;
        profiler.add_wall_time(s);
      }
      if (since_progress.seconds() >= progress_seconds || step == steps) {
        const double per_step = total.seconds() / static_cast<double>(step);
        std::printf("step %ld/%ld loss/tree %.4f | %.1f trees/s %.0f vertices/s | ETA %s\n", static_cast<long>(step),
                    static_cast<long>(steps), loss.mean(), window_trees / window_seconds,
                    window_vertices / window_seconds, format_duration(per_step * static_cast<double>(steps - step)).c_str());
        std::fflush(stdout);
        loss.reset();
        window_seconds = window_trees = window_vertices = 0.0;
        since_progress.reset();
      }
    }
    std::printf("summary: tree_fc leaves %d h %ld batch %ld policy %s threads %d %s | train vertices/s median %.0f "
                "(min %.0f, max %.0f over %zu steps after %ld warm-up) | trees/s median %.2f | %.1f s timed, "
                "%s total\n",
                leaves, static_cast<long>(cfg.hidden), static_cast<long>(batch), policy_name(pol), threads,
                float64 ? "f64" : "f32", vertex_rates.median(), vertex_rates.min(), vertex_rates.max(),
                vertex_rates.values.size(), static_cast<long>(warmup), tree_rates.median(), timed_seconds,
                format_duration(total.seconds()).c_str());
    if (profile) std::printf("profile of the %zu timed steps:\n%s", vertex_rates.values.size(), profiler.report().c_str());
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "error: out of memory\n");
    return 1;
  }
}
