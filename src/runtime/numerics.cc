#include "numerics.h"

#include <cmath>
#include <cstring>

#include "sylva/core/error.h"

namespace sylva::detail {

namespace {

template <class T>
int64_t first_bad(const void* data, int64_t n) {
  const T* x = static_cast<const T*>(data);
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return i;
  return -1;
}

}  // namespace

int64_t first_non_finite(Backend& backend, const MatView& v, std::vector<char>& scratch) {
  if (!is_floating(v.dtype) || v.numel() == 0 || !v.data) return -1;
  const void* host = v.data;
  if (!backend.memory().host_visible()) {  // a device's: copy it over first
    scratch.resize(static_cast<size_t>(v.numel()) * dtype_size(v.dtype));
    backend.download(scratch.data(), v.data, scratch.size());
    host = scratch.data();
  }
  int64_t bad = -1;
  dispatch_floating(v.dtype, [&](auto tag) { bad = first_bad<decltype(tag)>(host, v.numel()); });
  return bad;
}

void check_finite(Backend& backend, const MatView& v, const ir::Node& n, const NumericsSite& site,
                  const std::function<std::string(int64_t row)>& describe_row, std::vector<char>& scratch) {
  const int64_t bad = first_non_finite(backend, v, scratch);
  if (bad < 0) return;
  double value = 0;
  const char* at = static_cast<const char*>(backend.memory().host_visible() ? v.data : scratch.data());
  dispatch_floating(v.dtype, [&](auto tag) {
    using T = decltype(tag);
    T x;
    std::memcpy(&x, at + bad * static_cast<int64_t>(sizeof(T)), sizeof(T));
    value = static_cast<double>(x);
  });
  const int64_t row = bad / v.cols, col = bad % v.cols;
  const std::string where = describe_row ? describe_row(row) : std::string();
  SYLVA_THROW("[check_numerics] ", std::isnan(value) ? "nan" : value > 0 ? "+inf" : "-inf",
              " first appeared in the ", site.pass, " pass of ", site.graph, " at step ", site.step, ": node %", n.id,
              " (", ir::op_name(n.op), ") wrote it ", where.empty() ? std::string() : "for " + where + ", ",
              "at row ", row, ", column ", col, " of its ", v.rows, " x ", v.cols, " value");
}

}  // namespace sylva::detail
