// Checkpoints in the safetensors format (readable by PyTorch's
// safetensors.torch.load_file), written atomically.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sylva/frontend/parameter_set.h"

namespace sylva {

/// Writes every parameter's value (not gradients) to `path` as
/// safetensors: temp file in the same directory, fsync, rename. `metadata`
/// goes to the header's "__metadata__" (string values only).
void save_checkpoint(const ParameterSet& ps, const std::string& path,
                     const std::map<std::string, std::string>& metadata = {});

/// Writes named tensors (file order = this order; names unique) to `path`
/// as safetensors, atomically like save_checkpoint (which is this over the
/// parameters). Trainer::save_state uses it for parameters and optimiser state.
void save_tensors(const std::vector<std::pair<std::string, const Tensor*>>& tensors, const std::string& path,
                  const std::map<std::string, std::string>& metadata = {});

/// Reads `path` into these existing tensors: the file must hold exactly
/// them, with their dtypes and shapes (`what` names the set in errors, e.g.
/// "the parameter set"). Returns the metadata.
std::map<std::string, std::string> load_tensors(const std::vector<std::pair<std::string, Tensor*>>& tensors,
                                                const std::string& path, const std::string& what);

/// Reads `path` into the existing parameters of `ps`. Verifies that the file
/// holds exactly the parameters of `ps` with the same shapes and dtype and
/// that the header and data are well formed; throws sylva::Error naming
/// the file and the problem otherwise. Returns the metadata.
std::map<std::string, std::string> load_checkpoint(ParameterSet& ps, const std::string& path);

}  // namespace sylva
