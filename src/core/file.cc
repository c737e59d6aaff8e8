#include "sylva/core/file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "sylva/core/error.h"

namespace sylva {

void write_file_atomically(const std::string& path, std::string_view bytes) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  SYLVA_CHECK(fd >= 0, "[file] cannot create '", tmp, "' to write '", path, "': ", std::strerror(errno));
  const char* p = bytes.data();
  size_t left = bytes.size();
  bool ok = true;
  while (left > 0 && ok) {
    const ssize_t w = ::write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    ok = w > 0;
    if (ok) {
      p += w;
      left -= static_cast<size_t>(w);
    }
  }
  const int err = errno;
  ok = ok && ::fsync(fd) == 0;
  ok = (::close(fd) == 0) && ok;
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = ok ? errno : err;
    ::unlink(tmp.c_str());
    SYLVA_THROW("[file] cannot write '", path, "': ", std::strerror(e));
  }
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  SYLVA_CHECK(f.good(), "[file] cannot open '", path, "': ", std::strerror(errno));
  std::ostringstream s;
  s << f.rdbuf();
  SYLVA_CHECK(!f.bad(), "[file] cannot read '", path, "'");
  return s.str();
}

void check_nesting(std::string_view text, const std::string& what, int max_depth) {
  int depth = 0, line = 1;
  bool in_string = false, in_comment = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      in_comment = false;
      continue;
    }
    if (in_comment) continue;
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '#') in_comment = true;
    else if (c == '[' || c == '{') {
      SYLVA_CHECK(++depth <= max_depth, "[reader] ", what, ": line ", line, ": brackets nest deeper than ", max_depth,
                  " levels (a corrupt or hostile file; no real one nests that deep)");
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
}

}  // namespace sylva
