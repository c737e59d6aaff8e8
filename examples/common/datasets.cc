#include "datasets.h"

#include <cstdlib>
#include <filesystem>

#include "sylva/core/error.h"

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
  if (!flag.empty()) {  // asked for: it must be there (no quiet fallback)
    for (const std::string& f : files)
      SYLVA_CHECK(fs::exists(fs::path(flag) / f), "[data] ", flag, " (given with --data) has no ", f, " (", name,
                  " needs ", files.size(), " files there)");
    looked.push_back(flag);
    return flag;
  }
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
