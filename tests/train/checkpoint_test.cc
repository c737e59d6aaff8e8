#include "sylva/train/checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sylva/core/error.h"

#include "support/test_util.h"

namespace sylva {
namespace {

using test::error_of;

namespace fs = std::filesystem;
using nlohmann::json;

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

uint64_t read_le64(const std::string& bytes) {
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t{static_cast<unsigned char>(bytes[static_cast<size_t>(i)])} << (8 * i);
  return n;
}

// A safetensors file built by hand: length, header text (unpadded), data.
std::string make_file(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>(uint64_t{header.size()} >> (8 * i));
  return out + header + data;
}

struct Parsed {
  json header;
  std::string data;
};

// Splits a file into its JSON header and data section independently of the library.
Parsed parse_file(const fs::path& p) {
  const std::string bytes = read_bytes(p);
  EXPECT_GE(bytes.size(), 8u);
  const uint64_t n = read_le64(bytes);
  EXPECT_LE(8 + n, bytes.size());
  return {json::parse(bytes.substr(8, n)), bytes.substr(8 + n)};
}

class Checkpoint : public testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    const auto* info = testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("sylva_ckpt_" + std::to_string(::getpid()) + "_" +
                                        std::to_string(counter++) + "_" + info->name());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  static void fill(ParameterSet& ps) {
    ps.add("W", {3, 4}, Init::glorot());
    ps.add("b", {4}, Init::uniform(-1, 1));
    ps.add("E", {5, 2}, Init::uniform(-0.1, 0.1));
  }

  // Saves a two-tensor f32 set and returns its parsed header and data.
  Parsed saved_pair(const std::string& file) {
    ParameterSet ps(DType::f32, 1);
    ps.add("W", {2, 3}, Init::glorot());
    ps.add("b", {3}, Init::constant(0.5));
    save_checkpoint(ps, path(file));
    return parse_file(path(file));
  }

  std::string load_pair_error(const std::string& file) {
    ParameterSet ps(DType::f32, 2);
    ps.add("W", {2, 3}, Init::zeros());
    ps.add("b", {3}, Init::zeros());
    return error_of([&] { load_checkpoint(ps, path(file)); });
  }

  fs::path dir_;
};

TEST_F(Checkpoint, RoundTripIsBitExact) {
  for (DType dt : {DType::f32, DType::f64}) {
    ParameterSet src(dt, 7);
    fill(src);
    const std::string file = path(std::string("rt_") + std::string(dtype_name(dt)) + ".safetensors");
    save_checkpoint(src, file, {{"epoch", "3"}, {"note", "dev acc 0.51"}});

    ParameterSet dst(dt, 99);  // different seed: the values must come from the file
    fill(dst);
    ASSERT_NE(std::memcmp(src["W"].value.raw(), dst["W"].value.raw(), src["W"].value.nbytes()), 0);
    const auto meta = load_checkpoint(dst, file);
    EXPECT_EQ(meta, (std::map<std::string, std::string>{{"epoch", "3"}, {"note", "dev acc 0.51"}}));
    for (const Parameter* p : src.all())
      EXPECT_EQ(std::memcmp(p->value.raw(), dst[p->name].value.raw(), p->value.nbytes()), 0) << p->name;
  }
}

TEST_F(Checkpoint, FileFollowsSafetensorsFormat) {
  ParameterSet ps(DType::f64, 3);
  fill(ps);
  const std::string file = path("format.safetensors");
  save_checkpoint(ps, file, {{"k", "v"}});

  const std::string bytes = read_bytes(file);
  const uint64_t n = read_le64(bytes);
  EXPECT_EQ((8 + n) % 8, 0u) << "data section must start 8-byte aligned";
  const Parsed f = parse_file(file);
  EXPECT_EQ(f.header["__metadata__"], json({{"k", "v"}}));
  ASSERT_EQ(f.header.size(), 4u);
  uint64_t offset = 0;
  for (const Parameter* p : ps.all()) {  // insertion order, contiguous offsets
    const json& e = f.header.at(p->name);
    EXPECT_EQ(e.at("dtype"), "F64");
    EXPECT_EQ(e.at("shape").get<std::vector<int64_t>>(), p->value.shape().dims());
    const auto off = e.at("data_offsets").get<std::vector<uint64_t>>();
    ASSERT_EQ(off.size(), 2u);
    EXPECT_EQ(off[0], offset);
    EXPECT_EQ(off[1], offset + p->value.nbytes());
    EXPECT_EQ(std::memcmp(f.data.data() + off[0], p->value.raw(), p->value.nbytes()), 0) << p->name;
    offset = off[1];
  }
  EXPECT_EQ(offset, f.data.size());
  // F32 is spelled F32 and metadata is optional.
  ParameterSet ps32(DType::f32, 3);
  ps32.add("x", {2}, Init::zeros());
  save_checkpoint(ps32, path("f32.safetensors"));
  const Parsed g = parse_file(path("f32.safetensors"));
  EXPECT_EQ(g.header.at("x").at("dtype"), "F32");
  EXPECT_FALSE(g.header.contains("__metadata__"));
  EXPECT_EQ(g.data.size(), 8u);
}

TEST_F(Checkpoint, LoadsTensorsStoredInAnyOrder) {
  // Other writers (e.g. Python's safetensors) sort by name or size, not by our insertion order.
  ParameterSet ps(DType::f32, 0);
  ps.add("W", {2}, Init::zeros());
  ps.add("b", {1}, Init::zeros());
  const float w[2] = {1.5f, -2.0f}, b[1] = {0.25f};
  std::string data(reinterpret_cast<const char*>(b), 4);
  data.append(reinterpret_cast<const char*>(w), 8);
  json h = {{"b", {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {0, 4}}}},
            {"W", {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {4, 12}}}}};
  write_bytes(path("order.safetensors"), make_file(h.dump(), data));
  EXPECT_TRUE(load_checkpoint(ps, path("order.safetensors")).empty());
  EXPECT_EQ(ps["W"].value.data<float>()[1], -2.0f);
  EXPECT_EQ(ps["b"].value.data<float>()[0], 0.25f);
}

TEST_F(Checkpoint, RejectsTruncatedFile) {
  saved_pair("full.safetensors");
  const std::string bytes = read_bytes(path("full.safetensors"));
  write_bytes(path("cut.safetensors"), bytes.substr(0, bytes.size() - 4));
  const std::string msg = load_pair_error("cut.safetensors");
  EXPECT_CONTAINS(msg, "[checkpoint] " + path("cut.safetensors") + ": ");
  EXPECT_CONTAINS(msg, "truncated");

  write_bytes(path("tiny.safetensors"), "abc");
  EXPECT_CONTAINS(load_pair_error("tiny.safetensors"), "too small");
  write_bytes(path("headless.safetensors"), bytes.substr(0, 20));
  EXPECT_CONTAINS(load_pair_error("headless.safetensors"), "exceeds");
  write_bytes(path("long.safetensors"), bytes + "junk");
  EXPECT_CONTAINS(load_pair_error("long.safetensors"), "trailing bytes");
}

TEST_F(Checkpoint, RejectsCorruptHeader) {
  const Parsed f = saved_pair("ok.safetensors");
  EXPECT_EQ(load_pair_error("ok.safetensors"), "<no error>");
  auto with_header = [&](const std::string& name, const json& h) {
    write_bytes(path(name), make_file(h.dump(), f.data));
    return load_pair_error(name);
  };

  write_bytes(path("json.safetensors"), make_file("{\"W\": [1, 2", f.data));
  EXPECT_CONTAINS(load_pair_error("json.safetensors"), "header is not valid JSON");
  EXPECT_CONTAINS(with_header("array.safetensors", json::array()), "header is not a JSON object");

  json h = f.header;
  h["W"]["dtype"] = "F16";
  EXPECT_CONTAINS(with_header("dtype.safetensors", h), "tensor 'W' has dtype \"F16\", expected \"F32\"");

  h = f.header;
  h["b"]["shape"] = {4};
  EXPECT_CONTAINS(with_header("shape.safetensors", h), "tensor 'b' has shape [4], expected [3]");

  h = f.header;
  h["b"]["data_offsets"] = {f.data.size(), f.data.size() + 12};
  EXPECT_CONTAINS(with_header("range.safetensors", h), "out of range");

  h = f.header;
  h["b"]["data_offsets"] = {0, 12};
  EXPECT_CONTAINS(with_header("overlap.safetensors", h), "contiguous");

  h = f.header;
  h["b"]["data_offsets"] = {24, 32};
  EXPECT_CONTAINS(with_header("span.safetensors", h), "do not span the 12 bytes");

  h = f.header;
  h["W"].erase("data_offsets");
  EXPECT_CONTAINS(with_header("fields.safetensors", h), "\"data_offsets\" must be [begin, end]");

  h = f.header;
  h["W"]["shape"] = {2, -3};
  EXPECT_CONTAINS(with_header("negative.safetensors", h), "non-negative integers");

  h = f.header;
  h["__metadata__"] = {{"epoch", 3}};
  EXPECT_CONTAINS(with_header("meta.safetensors", h), "is not a string");

  // Hostile sizes are refused before anything is allocated: a shape whose
  // element count overflows 64 bits, offsets claiming 2^60 bytes.
  h = f.header;
  h["W"]["shape"] = {uint64_t{1} << 32, uint64_t{1} << 32, uint64_t{1} << 32};
  EXPECT_CONTAINS(with_header("overflow.safetensors", h), "tensor 'W' has shape [4294967296, 4294967296, 4294967296]");
  h = f.header;
  h["b"]["data_offsets"] = {uint64_t{24}, uint64_t{1} << 60};
  EXPECT_CONTAINS(with_header("claims.safetensors", h), "tensor 'b'");

  std::string huge = read_bytes(path("ok.safetensors"));
  huge[7] = 0x01;  // header length ~ 2^56
  write_bytes(path("huge.safetensors"), huge);
  EXPECT_CONTAINS(load_pair_error("huge.safetensors"), "header length");
}

TEST_F(Checkpoint, RejectsDtypeOfOtherPrecision) {
  ParameterSet f64(DType::f64, 1);
  f64.add("W", {2, 3}, Init::glorot());
  f64.add("b", {3}, Init::zeros());
  save_checkpoint(f64, path("f64.safetensors"));
  EXPECT_CONTAINS(load_pair_error("f64.safetensors"), "has dtype \"F64\", expected \"F32\"");
}

TEST_F(Checkpoint, RejectsMissingAndUnexpectedNames) {
  saved_pair("pair.safetensors");
  ParameterSet ps(DType::f32, 0);
  ps.add("W", {2, 3}, Init::zeros());
  ps.add("c", {3}, Init::zeros());
  ps.add("d", {1}, Init::zeros());
  const std::string msg = error_of([&] { load_checkpoint(ps, path("pair.safetensors")); });
  EXPECT_CONTAINS(msg, "missing from file: [c, d]");
  EXPECT_CONTAINS(msg, "unexpected in file: [b]");
  EXPECT_EQ(ps["W"].value.at(0), 0.0);  // nothing loaded on failure

  ParameterSet fewer(DType::f32, 0);
  fewer.add("W", {2, 3}, Init::zeros());
  EXPECT_CONTAINS(error_of([&] { load_checkpoint(fewer, path("pair.safetensors")); }), "unexpected in file: [b]");
  EXPECT_CONTAINS(error_of([&] { load_checkpoint(fewer, path("absent.safetensors")); }), "cannot open");
}

TEST_F(Checkpoint, AtomicWriteLeavesNoTempFile) {
  ParameterSet ps(DType::f32, 4);
  fill(ps);
  const std::string file = path("model.safetensors");
  save_checkpoint(ps, file);
  ps["b"].value.set(0, 123.0);
  save_checkpoint(ps, file);  // overwrite in place
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"model.safetensors"});
  ParameterSet back(DType::f32, 0);
  fill(back);
  load_checkpoint(back, file);
  EXPECT_EQ(back["b"].value.at(0), 123.0);
}

TEST_F(Checkpoint, FailedSaveKeepsExistingCheckpoint) {
  ParameterSet ps(DType::f32, 4);
  fill(ps);
  const std::string file = path("keep.safetensors");
  save_checkpoint(ps, file);
  const std::string before = read_bytes(file);

  // Into a directory that does not exist.
  const std::string nowhere = path("no_such_dir/keep.safetensors");
  std::string msg = error_of([&] { save_checkpoint(ps, nowhere); });
  EXPECT_CONTAINS(msg, "[checkpoint] " + nowhere + ": ");
  EXPECT_CONTAINS(msg, "No such file or directory");

  // Over an existing checkpoint whose temporary file cannot be created (works as root too).
  const fs::path blocker = file + ".tmp." + std::to_string(::getpid());
  fs::create_directory(blocker);
  ps["W"].value.set(0, 9.0);
  msg = error_of([&] { save_checkpoint(ps, file); });
  EXPECT_CONTAINS(msg, "cannot create temporary file");
  EXPECT_EQ(read_bytes(file), before);
  EXPECT_TRUE(fs::is_directory(blocker));  // not ours to remove
  fs::remove(blocker);

  // Errors found before writing leave it untouched as well.
  EXPECT_CONTAINS(error_of([&] { save_checkpoint(ps, file, {{"bad", "\xff"}}); }), "UTF-8");
  EXPECT_EQ(read_bytes(file), before);
  ParameterSet reserved(DType::f32, 0);
  reserved.add("__metadata__", {1}, Init::zeros());
  EXPECT_CONTAINS(error_of([&] { save_checkpoint(reserved, file); }), "reserved");
  EXPECT_EQ(read_bytes(file), before);
  EXPECT_FALSE(fs::exists(blocker));
}

TEST_F(Checkpoint, EmptySetRoundTrips) {
  ParameterSet ps(DType::f32, 0);
  save_checkpoint(ps, path("empty.safetensors"), {{"a", "b"}});
  EXPECT_EQ(load_checkpoint(ps, path("empty.safetensors")).at("a"), "b");
}

}  // namespace
}  // namespace sylva
