#include "sylva/frontend/parameter_set.h"

#include <cstring>

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>
#include <utility>

#include "sylva/core/buffer.h"
#include "sylva/core/error.h"

namespace sylva {
namespace {

// mt19937_64 and seed_seq are fully specified by the standard, unlike the
// distributions, so values depend only on (seed, index) on every platform.
std::mt19937_64 make_rng(uint64_t seed, size_t index) {
  const uint64_t i = index;
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32),
                    static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32)};
  return std::mt19937_64(seq);
}

// Uniform in [0, 1) from the top 53 bits.
double unit_uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

void check_init(const std::string& name, const Init& init) {
  switch (init.kind) {
    case Init::Kind::zeros:
    case Init::Kind::glorot: return;
    case Init::Kind::constant:
      SYLVA_CHECK(std::isfinite(init.a), "[parameters] '", name, "': constant init value is ", init.a,
                  "; expected a finite number");
      return;
    case Init::Kind::uniform:
      SYLVA_CHECK(std::isfinite(init.a) && std::isfinite(init.b) && init.a <= init.b, "[parameters] '",
                  name, "': uniform init needs finite lo <= hi, got [", init.a, ", ", init.b, ")");
      return;
  }
  SYLVA_THROW("[parameters] '", name, "': unknown init kind ", static_cast<int>(init.kind));
}

// Fan-in/fan-out over the last two axes; a vector [c] counts as c -> c.
double glorot_limit(const Shape& s) {
  double fan_in = 1, fan_out = 1;
  if (s.rank() >= 2) {
    fan_in = static_cast<double>(s[s.rank() - 2]);
    fan_out = static_cast<double>(s[s.rank() - 1]);
  } else if (s.rank() == 1) {
    fan_in = fan_out = static_cast<double>(s[0]);
  }
  return std::sqrt(6.0 / (fan_in + fan_out));
}

void initialise(Tensor& t, const Init& init, uint64_t seed, size_t index) {
  dispatch_floating(t.dtype(), [&](auto zero) {
    using T = decltype(zero);
    T* p = t.data<T>();
    const int64_t n = t.numel();
    switch (init.kind) {
      case Init::Kind::zeros: break;  // Tensor is zero-filled on construction
      case Init::Kind::constant:
        for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(init.a);
        break;
      case Init::Kind::uniform:
      case Init::Kind::glorot: {
        double lo = init.a, hi = init.b;
        if (init.kind == Init::Kind::glorot) {
          hi = glorot_limit(t.shape());
          lo = -hi;
        }
        std::mt19937_64 rng = make_rng(seed, index);
        for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(lo + (hi - lo) * unit_uniform(rng));
        break;
      }
    }
  });
}

}  // namespace

Parameter& ParameterSet::add(const std::string& name, Shape shape, Init init) {
  SYLVA_CHECK(is_floating(dtype_), "[parameters] cannot add '", name, "': the set's dtype is ",
              dtype_name(dtype_), "; parameters must be float32 or float64");
  SYLVA_CHECK(!name.empty(), "[parameters] parameter names must not be empty");
  SYLVA_CHECK(!contains(name), "[parameters] a parameter named '", name,
              "' already exists; choose a unique name");
  for (int64_t d : shape.dims())
    SYLVA_CHECK(d > 0, "[parameters] '", name, "' has shape ", shape.str(),
                "; every extent must be positive");
  check_init(name, init);

  const size_t index = params_.size();
  Parameter p;
  p.name = name;
  p.value = Tensor(shape, dtype_);
  p.grad = Tensor(shape, dtype_);
  initialise(p.value, init, seed_, index);
  params_.push_back(std::move(p));
  index_.emplace(name, index);
  return params_.back();
}

const Parameter& ParameterSet::operator[](const std::string& name) const {
  auto it = index_.find(name);
  if (it != index_.end()) return params_[it->second];
  std::string known;
  const size_t shown = std::min<size_t>(params_.size(), 10);
  for (size_t i = 0; i < shown; ++i) known += (i ? ", " : "") + params_[i].name;
  if (params_.size() > shown) known += ", ... (" + std::to_string(params_.size() - shown) + " more)";
  SYLVA_THROW("[parameters] no parameter named '", name, "'; the set has ", params_.size(),
              params_.empty() ? " parameters" : " parameters: ", known);
}

Parameter& ParameterSet::operator[](const std::string& name) {
  return const_cast<Parameter&>(std::as_const(*this)[name]);
}

std::vector<Parameter*> ParameterSet::all() {
  std::vector<Parameter*> out;
  out.reserve(params_.size());
  for (Parameter& p : params_) out.push_back(&p);
  return out;
}

std::vector<const Parameter*> ParameterSet::all() const {
  std::vector<const Parameter*> out;
  out.reserve(params_.size());
  for (const Parameter& p : params_) out.push_back(&p);
  return out;
}

namespace {
// A row-sparse gradient this large gives its pages back to the kernel when
// zeroed instead of having its listed rows cleared: the rows a run writes
// reach most of a table, all of whose pages would then stay resident, while
// one step writes a few hundred pages. Each page written again costs a page
// fault, about 1.5 us on the machine of docs/notes/memory.md ("An embedding
// gradient's pages given back"): 1-2% of an SST Tree-LSTM step at
// h = 512 (a 37 MB table; 19-27 MB less peak RSS), 5-13% at h = 128 (9 MB),
// hence a table of this size and more only.
constexpr size_t kReleasedGradBytes = size_t{32} << 20;
}  // namespace

void ParameterSet::zero_grad(const RowSparsity* sparse) {
  for (Parameter& p : params_) {
    const size_t elem = dtype_size(p.grad.dtype());
    char* g = static_cast<char*>(p.grad.raw());
    const size_t bytes = static_cast<size_t>(p.grad.numel()) * elem;
    if (sparse && bytes >= kReleasedGradBytes && sparse->count(p.name) && host_memory_zero_pages(g, bytes)) continue;
    for_each_grad_range(p, sparse, [&](int64_t b, int64_t e) {
      std::memset(g + b * static_cast<int64_t>(elem), 0, static_cast<size_t>(e - b) * elem);
    });
  }
}

void sort_unique_rows(std::vector<int32_t>& rows, int64_t table_rows, std::vector<uint64_t>& bits) {
  const auto words = static_cast<size_t>((table_rows + 63) / 64);
  if (words > 4 * rows.size() + 64) {
    std::sort(rows.begin(), rows.end());
    rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
    return;
  }
  bits.assign(words, 0);
  for (const int32_t r : rows) bits[static_cast<size_t>(r) >> 6] |= uint64_t{1} << (r & 63);
  rows.clear();
  for (size_t w = 0; w < words; ++w)
    for (uint64_t b = bits[w]; b != 0; b &= b - 1) rows.push_back(static_cast<int32_t>(w * 64 + std::countr_zero(b)));
}

int64_t ParameterSet::numel() const {
  int64_t n = 0;
  for (const Parameter& p : params_) n += p.value.numel();
  return n;
}

}  // namespace sylva
