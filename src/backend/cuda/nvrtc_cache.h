// Internal: NVRTC compilation of generated kernels with a two-level cache:
// in memory, and on disk keyed by a hash of the source, the target
// architecture and the NVRTC version (entries written atomically, checked
// on read; a damaged entry is recompiled with a warning). Compiling needs
// no GPU, so this is tested on machines without one.
//
// @code
// cuda::NvrtcCache cache(cuda::NvrtcCache::default_dir());
// std::shared_ptr<const std::string> cubin = cache.compile(kernel.source, "sm_90");
// @endcode
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace sylva::cuda {

class NvrtcCache {
 public:
  struct Stats {
    int64_t memory_hits = 0, disk_hits = 0, compiles = 0, damaged = 0;
  };

  /// `dir` empty: memory only. The directory is created when first written.
  explicit NvrtcCache(std::string dir);
  /// $SYLVA_KERNEL_CACHE, else $XDG_CACHE_HOME/sylva/kernels, else
  /// $HOME/.cache/sylva/kernels ("" when none of them is set).
  static std::string default_dir();

  /// The CUBIN of `source` for `arch` (e.g. "sm_90"). sylva::Error with
  /// NVRTC's log when the source does not compile.
  std::shared_ptr<const std::string> compile(const std::string& source, const std::string& arch);
  Stats stats() const;
  /// The disk entry's path for (source, arch), for tests and tools.
  std::string entry_path(const std::string& source, const std::string& arch) const;

 private:
  std::string key(const std::string& source, const std::string& arch) const;

  std::string dir_;
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const std::string>> memory_;
  Stats stats_;
};

}  // namespace sylva::cuda
