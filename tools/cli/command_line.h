// Command lines that say no: the examples' and tools' flag parsing and the
// checks their flags share (CLI11 validators), so a bad flag is one line on
// stderr and exit status 1, never a silent default.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace sylva::cli {

/// Parses argv into `app`. Returns -1 to go on; 0 after --help (printed);
/// 1 after a bad command line, reported as one line on stderr:
/// "<program>: error: <what> (--help lists the flags)".
int parse_command_line(CLI::App& app, int argc, char** argv);

/// Validators: a number > 0 or >= 0 (short messages, unlike CLI11's
/// PositiveNumber for text that is no number), a path whose directory
/// exists (an output file to write later), a thread count in [1, 1024],
/// a probability in [0, 1).
extern const CLI::Validator kPositive;
extern const CLI::Validator kNonNegative;
extern const CLI::Validator kWritablePath;
extern const CLI::Validator kThreads;
extern const CLI::Validator kProbability;

/// The flags the training examples share, checked: --policy, --threads,
/// --device, --optimizer.
void add_policy_flag(CLI::App& app, std::string& policy);
void add_threads_flag(CLI::App& app, int& threads);
void add_device_flag(CLI::App& app, std::string& device);
void add_optimizer_flag(CLI::App& app, std::string& optimizer);
/// --distributed, --deterministic and --no-overlap (data-parallel training over MPI; docs/distributed.md).
struct DistributedFlags {
  bool distributed = false;
  bool deterministic = false;
  bool overlap = true;  // DataParallelOptions::overlap
};
void add_distributed_flags(CLI::App& app, DistributedFlags& flags);

}  // namespace sylva::cli
