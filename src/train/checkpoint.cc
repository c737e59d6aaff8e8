#include "sylva/train/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <system_error>
#include <vector>

#include "sylva/core/error.h"
#include "sylva/core/file.h"

namespace sylva {
namespace {

// Tensor bytes are written as they lie in memory; safetensors is little-endian.
static_assert(std::endian::native == std::endian::little, "checkpoint I/O assumes a little-endian host");

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // same limit as the reference implementation
constexpr const char* kMetadataKey = "__metadata__";

std::string errno_text(int err) { return std::generic_category().message(err); }

template <class... Args>
[[noreturn]] void fail(const std::string& path, const Args&... args) {
  SYLVA_THROW("[checkpoint] ", path, ": ", args...);
}

std::string safetensors_dtype(DType t) {
  switch (t) {
    case DType::f32: return "F32";
    case DType::f64: return "F64";
    case DType::i32: return "I32";
    case DType::bf16: return "BF16";
  }
  return "?";
}

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }
  /// Closes now and returns close()'s result (buffered write errors show up here).
  int close() {
    int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }

 private:
  int fd_;
};

// Removes the temporary file unless the save committed it by renaming.
struct TempFileGuard {
  std::string path;
  bool committed = false;
  ~TempFileGuard() {
    if (!committed) ::unlink(path.c_str());
  }
};

void write_all(int fd, const void* data, size_t n, const std::string& path, const std::string& tmp) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) fail(path, "cannot write temporary file '", tmp, "': ", errno_text(errno));
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void read_all(int fd, void* data, size_t n, uint64_t offset, const std::string& path) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t r = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail(path, "read failed at byte ", offset, ": ", errno_text(errno));
    if (r == 0) fail(path, "unexpected end of file at byte ", offset, " (file truncated?)");
    p += r;
    n -= static_cast<size_t>(r);
    offset += static_cast<uint64_t>(r);
  }
}

// Makes the rename itself durable; best effort, as some filesystems refuse fsync on directories.
void sync_directory(const std::string& path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

struct Entry {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
};

std::string shape_str(const std::vector<int64_t>& dims) { return Shape(dims).str(); }

std::string join(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
  return s;
}

Entry parse_entry(const std::string& path, const std::string& name, const nlohmann::json& j) {
  Entry e;
  e.name = name;
  if (!j.is_object()) fail(path, "tensor '", name, "': header entry is not a JSON object");
  auto dtype = j.find("dtype");
  if (dtype == j.end() || !dtype->is_string())
    fail(path, "tensor '", name, "': missing or non-string \"dtype\"");
  e.dtype = dtype->get<std::string>();
  auto shape = j.find("shape");
  if (shape == j.end() || !shape->is_array())
    fail(path, "tensor '", name, "': missing or non-array \"shape\"");
  for (const auto& d : *shape) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() > uint64_t{INT64_MAX})
      fail(path, "tensor '", name, "': \"shape\" must hold non-negative integers, got ", shape->dump());
    e.shape.push_back(d.get<int64_t>());
  }
  auto offsets = j.find("data_offsets");
  if (offsets == j.end() || !offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
      !(*offsets)[1].is_number_unsigned())
    fail(path, "tensor '", name, "': \"data_offsets\" must be [begin, end] with non-negative integers");
  e.begin = (*offsets)[0].get<uint64_t>();
  e.end = (*offsets)[1].get<uint64_t>();
  return e;
}

std::map<std::string, std::string> parse_metadata(const std::string& path, const nlohmann::json& j) {
  if (!j.is_object()) fail(path, "\"", kMetadataKey, "\" must be a JSON object of strings");
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : j.items()) {
    if (!v.is_string()) fail(path, "\"", kMetadataKey, "\" value of '", k, "' is not a string");
    out.emplace(k, v.get<std::string>());
  }
  return out;
}

// Reads the header length from the first 8 bytes of a file of file_size
// bytes, checked against the rest of the file and the size limit.
uint64_t read_header_length(int fd, uint64_t file_size, const std::string& path) {
  unsigned char len[8];
  read_all(fd, len, sizeof len, 0, path);
  uint64_t header_len = 0;
  for (int i = 0; i < 8; ++i) header_len |= uint64_t{len[i]} << (8 * i);
  if (header_len > file_size - 8)
    fail(path, "header length ", header_len, " exceeds the ", file_size - 8,
              " bytes after the length field (file truncated or not safetensors?)");
  if (header_len >= kMaxHeaderBytes)
    fail(path, "header length ", header_len, " is implausibly large (limit ", kMaxHeaderBytes, " bytes)");
  return header_len;
}

// Reads the header_len bytes after the length field and parses them as a JSON object.
nlohmann::json read_header(int fd, uint64_t header_len, const std::string& path) {
  std::string text(header_len, '\0');
  read_all(fd, text.data(), text.size(), 8, path);
  nlohmann::json header;
  check_nesting(text, path);
  try {
    header = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail(path, "header is not valid JSON: ", e.what());
  }
  if (!header.is_object()) fail(path, "header is not a JSON object");
  return header;
}

// Checks that the file holds exactly the expected tensors (`what` names
// them: "the parameter set"), each with its dtype and shape and
// data_offsets spanning its bytes.
void check_entries(const std::map<std::string, Tensor*>& expected, const std::string& what,
                   const std::vector<Entry>& entries, const std::string& path) {
  std::set<std::string> in_file;
  std::vector<std::string> unexpected, missing;
  for (const Entry& e : entries) {
    in_file.insert(e.name);
    if (!expected.count(e.name)) unexpected.push_back(e.name);
  }
  for (const auto& [name, t] : expected)
    if (!in_file.count(name)) missing.push_back(name);
  if (!missing.empty() || !unexpected.empty())
    fail(path, "tensors do not match ", what, "; missing from file: [", join(missing),
              "]; unexpected in file: [", join(unexpected), "]");

  for (const Entry& e : entries) {
    const Tensor& t = *expected.at(e.name);
    const std::string want_dtype = safetensors_dtype(t.dtype());
    const size_t elem = dtype_size(t.dtype());
    if (e.dtype != want_dtype)
      fail(path, "tensor '", e.name, "' has dtype \"", e.dtype, "\", expected \"", want_dtype, "\" (", what,
                "'s dtype)");
    if (e.shape != t.shape().dims())
      fail(path, "tensor '", e.name, "' has shape ", shape_str(e.shape), ", expected ", t.shape().str());
    if (e.end < e.begin || e.end - e.begin != static_cast<uint64_t>(t.numel()) * elem)
      fail(path, "tensor '", e.name, "': data_offsets [", e.begin, ", ", e.end, "] do not span the ",
                static_cast<uint64_t>(t.numel()) * elem, " bytes of a ", want_dtype, " tensor of shape ",
                t.shape().str());
  }
}

// Checks that the tensors tile the data section of data_size bytes exactly:
// no gaps, overlaps or trailing bytes.
void check_tiling(const std::vector<Entry>& entries, uint64_t data_size, const std::string& path) {
  std::vector<const Entry*> order;
  for (const Entry& e : entries) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](const Entry* a, const Entry* b) { return a->begin < b->begin; });
  uint64_t expect = 0;
  for (const Entry* e : order) {
    if (e->end > data_size)
      fail(path, "tensor '", e->name, "': data_offsets [", e->begin, ", ", e->end,
                "] out of range; the data section is only ", data_size, " bytes (file truncated?)");
    if (e->begin != expect)
      fail(path, "tensor '", e->name, "' starts at byte ", e->begin, " of the data section, expected ",
                expect, " (tensors must be contiguous and must not overlap)");
    expect = e->end;
  }
  if (expect != data_size)
    fail(path, "data section is ", data_size, " bytes but the tensors cover ", expect,
              " (trailing bytes or a corrupt header)");
}

}  // namespace

void save_tensors(const std::vector<std::pair<std::string, const Tensor*>>& tensors, const std::string& path,
                  const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header[kMetadataKey] = metadata;
  uint64_t offset = 0;
  std::set<std::string> names;
  for (const auto& [name, t] : tensors) {
    if (name == kMetadataKey) fail(path, "tensor name '", kMetadataKey, "' is reserved by safetensors");
    if (!names.insert(name).second) fail(path, "tensor name '", name, "' given twice");
    const uint64_t bytes = t->nbytes();
    header[name] = {{"dtype", safetensors_dtype(t->dtype())},
                    {"shape", t->shape().dims()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {
    fail(path, "cannot encode header (names and metadata must be valid UTF-8): ", e.what());
  }
  // Pad with spaces so the data section starts 8-byte aligned, as the format recommends.
  text.append((8 - text.size() % 8) % 8, ' ');
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(static_cast<uint64_t>(text.size()) >> (8 * i));

  TempFileGuard tmp{path + ".tmp." + std::to_string(::getpid())};
  FileDescriptor fd(::open(tmp.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) {
    const int err = errno;
    tmp.committed = true;  // nothing was created, so there is nothing to remove
    fail(path, "cannot create temporary file '", tmp.path, "': ", errno_text(err));
  }
  write_all(fd.get(), len, sizeof len, path, tmp.path);
  write_all(fd.get(), text.data(), text.size(), path, tmp.path);
  for (const auto& [name, t] : tensors) write_all(fd.get(), t->raw(), t->nbytes(), path, tmp.path);
  if (::fsync(fd.get()) != 0) fail(path, "fsync of '", tmp.path, "' failed: ", errno_text(errno));
  if (fd.close() != 0) fail(path, "close of '", tmp.path, "' failed: ", errno_text(errno));
  if (::rename(tmp.path.c_str(), path.c_str()) != 0)
    fail(path, "cannot rename '", tmp.path, "' over it: ", errno_text(errno));
  tmp.committed = true;
  sync_directory(path);
}

std::map<std::string, std::string> load_tensors(const std::vector<std::pair<std::string, Tensor*>>& tensors,
                                                const std::string& path, const std::string& what) {
  std::map<std::string, Tensor*> expected;
  for (const auto& [name, t] : tensors) expected[name] = t;
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) fail(path, "cannot open: ", errno_text(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail(path, "cannot stat: ", errno_text(errno));
  if (!S_ISREG(st.st_mode)) fail(path, "not a regular file");
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  if (file_size < 8)
    fail(path, "file is ", file_size, " bytes, too small for a safetensors header (at least 8)");

  const uint64_t header_len = read_header_length(fd.get(), file_size, path);
  const nlohmann::json header = read_header(fd.get(), header_len, path);
  std::map<std::string, std::string> metadata;
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == kMetadataKey)
      metadata = parse_metadata(path, value);
    else
      entries.push_back(parse_entry(path, name, value));
  }
  check_entries(expected, what, entries, path);
  const uint64_t data_start = 8 + header_len;
  check_tiling(entries, file_size - data_start, path);

  // Every check that can fail on a well-formed read has passed; only I/O errors remain.
  for (const Entry& e : entries) {
    Tensor& value = *expected.at(e.name);
    read_all(fd.get(), value.raw(), value.nbytes(), data_start + e.begin, path);
  }
  return metadata;
}

void save_checkpoint(const ParameterSet& ps, const std::string& path,
                     const std::map<std::string, std::string>& metadata) {
  std::vector<std::pair<std::string, const Tensor*>> tensors;
  for (const Parameter* p : ps.all()) tensors.emplace_back(p->name, &p->value);
  save_tensors(tensors, path, metadata);
}

std::map<std::string, std::string> load_checkpoint(ParameterSet& ps, const std::string& path) {
  std::vector<std::pair<std::string, Tensor*>> tensors;
  for (Parameter* p : ps.all()) tensors.emplace_back(p->name, &p->value);
  return load_tensors(tensors, path, "the parameter set");
}

}  // namespace sylva
