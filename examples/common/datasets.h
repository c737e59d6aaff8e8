// Finding the shared datasets (SST, PTB) from a flag, SYLVA_DATA or the
// checkout's shared/data directory.
#pragma once

#include <string>
#include <vector>

namespace sylva::examples {

/// The directory of dataset `name` ("sst", "ptb") holding every file in
/// `files`: `flag` if given, else $SYLVA_DATA/<name>, else
/// shared/data/<name> found by walking up from the working directory.
/// Returns "" if none of the searched places qualifies; `looked` receives
/// every place tried. A `flag` that lacks a file is a sylva::Error (an
/// explicit path never falls back to the search or to synthetic data).
std::string find_dataset(const std::string& name, const std::vector<std::string>& files, const std::string& flag,
                         std::vector<std::string>& looked);

}  // namespace sylva::examples
