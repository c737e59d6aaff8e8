// Finding the shared datasets (SST, PTB) from a flag, SYLVA_DATA or the
// checkout's shared/data directory.
#pragma once

#include <string>
#include <vector>

namespace sylva::examples {

/// The directory of dataset `name` ("sst", "ptb") holding every file in
/// `files`: `flag` if given, else $SYLVA_DATA/<name>, else
/// shared/data/<name> found by walking up from the working directory.
/// Returns "" if none qualifies; `looked` receives every place tried.
std::string find_dataset(const std::string& name, const std::vector<std::string>& files, const std::string& flag,
                         std::vector<std::string>& looked);

}  // namespace sylva::examples
