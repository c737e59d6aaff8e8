#include "command_line.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <sylva/sylva.h>

namespace sylva::cli {

int parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
    return -1;
  } catch (const CLI::Success& e) {  // --help, of the app or a subcommand
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    for (char& c : what)
      if (c == '\n') c = ' ';
    const std::string name = argc > 0 ? std::filesystem::path(argv[0]).filename().string() : app.get_name();
    std::fprintf(stderr, "%s: error: %s (--help lists the flags)\n", name.c_str(), what.c_str());
    return 1;
  }
}

namespace {

// A validator that `text` is a number for which ok(x) holds.
CLI::Validator number_where(bool (*ok)(double), const char* what) {
  return CLI::Validator(
      [ok, what](std::string& text) -> std::string {
        char* end = nullptr;
        const double x = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0' || !ok(x)) return std::string("must be ") + what + ", got " + text;
        return "";
      },
      what);
}

}  // namespace

const CLI::Validator kPositive = number_where([](double x) { return x > 0; }, "a number > 0");
const CLI::Validator kNonNegative = number_where([](double x) { return x >= 0; }, "a number >= 0");
const CLI::Validator kProbability = number_where([](double x) { return x >= 0 && x < 1; }, "in [0, 1)");
const CLI::Validator kWritablePath(
    [](std::string& path) -> std::string {
      const std::filesystem::path dir = std::filesystem::path(path).parent_path();
      if (path.empty()) return "an empty path";
      if (!dir.empty() && !std::filesystem::is_directory(dir))
        return "directory " + dir.string() + " of " + path + " does not exist";
      return "";
    },
    "PATH (its directory must exist)");
const CLI::Validator kThreads = CLI::Range(1, 1024);

void add_policy_flag(CLI::App& app, std::string& policy) {
  app.add_option("--policy", policy, "Batching policy: bfs | serial")
      ->check(CLI::IsMember({"bfs", "serial"}))
      ->capture_default_str();
}

void add_threads_flag(CLI::App& app, int& threads) {
  app.add_option("--threads", threads, "Threads for GEMMs (more than 1: run with OMP_WAIT_POLICY=active)")
      ->check(kThreads)
      ->capture_default_str()
      ->each([](const std::string& text) {
        const std::string advice = cpu_threads_advice(std::atoi(text.c_str()));
        if (!advice.empty()) std::fprintf(stderr, "note: %s\n", advice.c_str());
      });
}

void add_distributed_flags(CLI::App& app, DistributedFlags& flags) {
  app.add_flag("--distributed", flags.distributed,
               "Data-parallel training over MPI: run under mpirun, one rank per process (implied when started "
               "by mpirun)");
  app.add_flag("--deterministic", flags.deterministic,
               "Data-parallel: the same parameters, bit for bit, for any world size up to 4 (slower steps)");
  app.add_flag("!--no-overlap", flags.overlap,
               "Data-parallel: allreduce the gradients after the backward, not during it (for measuring the "
               "overlap; the results are the same bits)");
}

void add_device_flag(CLI::App& app, std::string& device) {
  app.add_option("--device", device, "cpu | cuda | cuda:N")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            try {
              (void)Device::parse(text);
              return "";
            } catch (const Error& e) {
              return e.what();
            }
          },
          "DEVICE"))
      ->capture_default_str();
}

void add_optimizer_flag(CLI::App& app, std::string& optimizer) {
  app.add_option("--optimizer", optimizer, "adagrad | adam | sgd")
      ->check(CLI::IsMember({"adagrad", "adam", "sgd"}))
      ->capture_default_str();
}

}  // namespace sylva::cli
