#include "datasets.h"

#include <cstdlib>
#include <filesystem>

namespace sylva::examples {
namespace fs = std::filesystem;

std::string find_dataset(const std::string& name, const std::vector<std::string>& files, const std::string& flag,
                         std::vector<std::string>& looked) {
  auto ok = [&](const fs::path& p) {
    looked.push_back(p.string());
    for (const std::string& f : files)
      if (!fs::exists(p / f)) return false;
    return true;
  };
  if (!flag.empty()) return ok(flag) ? flag : "";
  if (const char* env = std::getenv("SYLVA_DATA"))
    if (ok(fs::path(env) / name)) return (fs::path(env) / name).string();
  std::error_code ec;
  for (fs::path dir = fs::current_path(ec); !dir.empty(); dir = dir.parent_path()) {
    if (ok(dir / "shared" / "data" / name)) return (dir / "shared" / "data" / name).string();
    if (ok(dir / ".." / "shared" / "data" / name)) return fs::weakly_canonical(dir / ".." / "shared" / "data" / name).string();
    if (dir == dir.parent_path()) break;
  }
  return "";
}

}  // namespace sylva::examples
