// NVRTC compile + cache. Disk entries: cache_entry.h.
#include "nvrtc_cache.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "cache_entry.h"
#include "cuda_check.h"
#include "sylva/core/file.h"
#include "sylva/core/log.h"

namespace sylva::cuda {

namespace {

// RAII for an NVRTC program.
struct Program {
  nvrtcProgram p = nullptr;
  ~Program() {
    if (p) nvrtc_api().destroy_program(&p);
  }
};

std::string nvrtc_compile(const std::string& source, const std::string& arch) {
  Program prog;
  SYLVA_NVRTC_CHECK(nvrtc_api().create_program(&prog.p, source.c_str(), "sylva_fused.cu", 0, nullptr, nullptr));
  const std::string arch_flag = "--gpu-architecture=" + arch;
  const char* opts[] = {arch_flag.c_str(), "--std=c++17"};
  const nvrtcResult r = nvrtc_api().compile_program(prog.p, 2, opts);
  if (r != NVRTC_SUCCESS) {
    size_t n = 0;
    nvrtc_api().program_log_size(prog.p, &n);
    std::string log(n, '\0');
    if (n) nvrtc_api().program_log(prog.p, log.data());
    SYLVA_THROW("[nvrtc] generated kernel does not compile for ", arch, " (", nvrtc_api().error_string(r), "):\n", log);
  }
  size_t size = 0;
  SYLVA_NVRTC_CHECK(nvrtc_api().cubin_size(prog.p, &size));
  std::string cubin(size, '\0');
  SYLVA_NVRTC_CHECK(nvrtc_api().cubin(prog.p, cubin.data()));
  return cubin;
}

}  // namespace

NvrtcCache::NvrtcCache(std::string dir) : dir_(std::move(dir)) {}

std::string NvrtcCache::default_dir() {
  if (const char* d = std::getenv("SYLVA_KERNEL_CACHE"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return std::string(d) + "/sylva/kernels";
  if (const char* d = std::getenv("HOME"); d && *d) return std::string(d) + "/.cache/sylva/kernels";
  return "";
}

std::string NvrtcCache::key(const std::string& source, const std::string& arch) const {
  int major = 0, minor = 0;
  nvrtc_api().version(&major, &minor);
  return hex64(fnv1a(source, fnv1a(arch + "|nvrtc " + std::to_string(major) + "." + std::to_string(minor) + "|")));
}

std::string NvrtcCache::entry_path(const std::string& source, const std::string& arch) const {
  return dir_.empty() ? "" : dir_ + "/" + key(source, arch) + ".cubin";
}

std::shared_ptr<const std::string> NvrtcCache::compile(const std::string& source, const std::string& arch) {
  const std::string k = key(source, arch);
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = memory_.find(k); it != memory_.end()) {
    ++stats_.memory_hits;
    return it->second;
  }
  const std::string path = entry_path(source, arch);
  if (!path.empty() && std::filesystem::exists(path)) {
    std::string why;
    if (std::optional<std::string> payload = read_cache_entry(path, &why)) {
      ++stats_.disk_hits;
      return memory_[k] = std::make_shared<const std::string>(std::move(*payload));
    }
    ++stats_.damaged;
    log(LogLevel::warning, "[nvrtc] kernel cache entry " + path + " is damaged (" + why + "); compiling again");
  }
  auto cubin = std::make_shared<const std::string>(nvrtc_compile(source, arch));
  ++stats_.compiles;
  if (!path.empty()) {
    std::filesystem::create_directories(dir_);
    write_file_atomically(path, encode_cache_entry(*cubin));
  }
  return memory_[k] = cubin;
}

NvrtcCache::Stats NvrtcCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace sylva::cuda
