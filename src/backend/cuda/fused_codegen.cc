// Straight-line CUDA for a fused program: every width, offset and constant
// is a literal, so NVRTC sees fixed trip counts and no indirection.
#include "fused_codegen.h"

#include <cstdio>
#include <sstream>
#include <vector>

#include "cache_entry.h"  // fnv1a, hex64
#include "sylva/backend/kernel_templates.h"
#include "sylva/core/error.h"

namespace sylva::cuda {

namespace {

using ir::OpKind;

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

std::string literal(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// The element expression of a one- or two-argument step at column c.
std::string element(OpKind op, const std::string& a, const std::string& b, double alpha) {
  const std::string x = a + "[c]", y = b + "[c]";
  switch (op) {
    case OpKind::Add: return x + " + " + y;
    case OpKind::Sub: return x + " - " + y;
    case OpKind::Mul: return x + " * " + y;
    case OpKind::TanhGrad: return y + " * (T(1) - " + x + " * " + x + ")";
    case OpKind::SigmoidGrad: return y + " * " + x + " * (T(1) - " + x + ")";
    case OpKind::ReluGrad: return x + " > T(0) ? " + y + " : T(0)";
    case OpKind::LogGrad: return y + " / " + x;
    case OpKind::Tanh: return "sylva_tanh(" + x + ")";
    case OpKind::Sigmoid: return "sylva_sigmoid(" + x + ")";
    case OpKind::Relu: return x + " > T(0) ? " + x + " : T(0)";
    case OpKind::Exp: return "sylva_exp(" + x + ")";
    case OpKind::Log: return "sylva_log(" + x + ")";
    case OpKind::Scale: return x + " * T(" + literal(alpha) + ")";
    default: return "";
  }
}

bool binary(OpKind op) {
  return op == OpKind::Add || op == OpKind::Sub || op == OpKind::Mul || op == OpKind::TanhGrad ||
         op == OpKind::SigmoidGrad || op == OpKind::ReluGrad || op == OpKind::LogGrad;
}

// The statements computing step `st` (value `v`) from its arguments.
void emit_compute(std::ostringstream& body, const FusedStep& st, const std::string& v,
                  const std::vector<std::string>& args, const std::vector<int64_t>& args_cols, const std::string& at) {
  const auto loop = [&](int64_t cols, const std::string& stmt) {
    body << "    for (int c = lane; c < " << cols << "; c += 32) " << stmt << ";\n";
  };
  switch (st.op) {
    case OpKind::Slice: loop(st.cols, v + "[c] = " + args[0] + "[" + std::to_string(st.begin) + " + c]"); break;
    case OpKind::Concat: {
      int64_t col = 0;
      for (size_t i = 0; i < args.size(); ++i) {
        loop(args_cols[i], v + "[" + std::to_string(col) + " + c] = " + args[i] + "[c]");
        col += args_cols[i];
      }
      SYLVA_CHECK(col == st.cols, at, ": arguments have ", col, " columns in all, the step ", st.cols);
      break;
    }
    case OpKind::Assemble: {
      SYLVA_CHECK(st.offsets.size() == args.size(), at, ": ", st.offsets.size(), " offsets for ", args.size(),
                  " arguments");
      loop(st.cols, v + "[c] = T(0)");
      for (size_t i = 0; i < args.size(); ++i) {
        SYLVA_CHECK(st.offsets[i] >= 0 && st.offsets[i] + args_cols[i] <= st.cols, at, ": argument ", i,
                    " at column ", st.offsets[i], " overruns ", st.cols, " columns");
        body << "    __syncwarp();\n";  // arguments may overlap: add them one after another
        loop(args_cols[i], v + "[" + std::to_string(st.offsets[i]) + " + c] += " + args[i] + "[c]");
      }
      break;
    }
    default: {
      for (size_t i = 0; i < args.size(); ++i)
        SYLVA_CHECK(args_cols[i] == st.cols, at, ": argument ", i, " has ", args_cols[i], " columns, the step ",
                    st.cols);
      loop(st.cols, v + "[c] = " + element(st.op, args[0], args.size() > 1 ? args[1] : "", st.alpha));
    }
  }
}

// Warps per block for the shared memory, the kernel's name (a hash of its
// body) and the template filled in.
void finish_kernel(FusedKernel& k, const FusedProgram& p, DType dtype, const std::string& text,
                   int64_t max_shared_bytes, const std::string& what) {
  const int64_t elem = static_cast<int64_t>(dtype_size(dtype));
  while (k.warps > 1 && k.warps * std::max<int64_t>(k.scratch_per_warp, 1) * elem > max_shared_bytes) k.warps /= 2;
  SYLVA_CHECK(std::max<int64_t>(k.scratch_per_warp, 1) * elem <= max_shared_bytes, what, ": ",
              k.scratch_per_warp * elem, " bytes of scratch per row, more than the ", max_shared_bytes,
              " bytes of shared memory (run it unfused)");
  k.shared_bytes = k.warps * std::max<int64_t>(k.scratch_per_warp, 1) * elem;
  // The name keys the kernel by its shape as well as its ops (one module per program).
  k.kernel = "sylva_fused_" + hex64(fnv1a(text));
  k.source = std::string(kFusedRowsTemplate);
  replace_all(k.source, "@NAME@", p.name.empty() ? "(unnamed)" : p.name);
  replace_all(k.source, "@T@", dtype == DType::f32 ? "float" : "double");
  replace_all(k.source, "@NIN@", std::to_string(k.inputs));
  replace_all(k.source, "@NOUT@", std::to_string(k.outputs));
  replace_all(k.source, "@WARPS@", std::to_string(k.warps));
  replace_all(k.source, "@SCRATCH@", std::to_string(std::max<int64_t>(k.scratch_per_warp, 1)));
  replace_all(k.source, "@KERNEL@", k.kernel);
  replace_all(k.source, "@BODY@", text);
}

}  // namespace

FusedKernel fused_kernel_source(const FusedProgram& p, DType dtype, std::span<const int64_t> input_cols,
                                int64_t max_shared_bytes) {
  const std::string what = "[cuda fusion] program '" + p.name + "'";
  SYLVA_CHECK(dtype == DType::f32 || dtype == DType::f64, what, ": fused kernels are f32 or f64, got ",
              dtype_name(dtype));
  SYLVA_CHECK(!p.steps.empty(), what, ": no steps");
  FusedKernel k;
  k.inputs = static_cast<int>(input_cols.size());
  std::vector<int64_t> width(p.steps.size());
  std::vector<int64_t> offset(p.steps.size(), -1);
  std::ostringstream body;
  for (int i = 0; i < k.inputs; ++i)
    body << "    const T* x" << i << " = args.in[" << i << "] + r * args.in_stride[" << i << "];\n";
  for (size_t s = 0; s < p.steps.size(); ++s) {
    const FusedStep& st = p.steps[s];
    const std::string at = what + " step " + std::to_string(s) + " (" + std::string(ir::op_name(st.op)) + ")";
    SYLVA_CHECK(ir::fusible(st.op), at, ": op is not fusible");
    SYLVA_CHECK(st.cols >= 1, at, ": ", st.cols, " columns");
    width[s] = st.cols;
    std::vector<std::string> args;
    std::vector<int64_t> args_cols;
    for (int32_t a : st.args) {
      if (a >= 0) {
        SYLVA_CHECK(static_cast<size_t>(a) < s, at, ": reads step ", a, ", which does not come before it");
        args.push_back("v" + std::to_string(a));
        args_cols.push_back(width[static_cast<size_t>(a)]);
      } else {
        const int32_t in = -1 - a;
        SYLVA_CHECK(in < k.inputs, at, ": reads input ", in, " of ", k.inputs);
        args.push_back("x" + std::to_string(in));
        args_cols.push_back(input_cols[static_cast<size_t>(in)]);
      }
    }
    const size_t arity = st.op == OpKind::Concat || st.op == OpKind::Assemble ? args.size() : binary(st.op) ? 2 : 1;
    SYLVA_CHECK(args.size() == arity && arity >= 1, at, ": ", args.size(), " arguments, expected ", arity);
    const std::string v = "v" + std::to_string(s), n = std::to_string(st.cols);
    body << "    // step " << s << ": " << ir::op_name(st.op) << "\n";
    if (st.op == OpKind::Slice && st.output < 0) {  // a pointer into its input's row
      body << "    const T* " << v << " = " << args[0] << " + " << st.begin << ";\n";
      continue;
    }
    if (st.output >= 0) {
      k.outputs = std::max(k.outputs, st.output + 1);
      body << "    T* const " << v << " = args.out[" << st.output << "] + r * " << n << ";\n";
    } else {
      offset[s] = k.scratch_per_warp;
      k.scratch_per_warp += st.cols;
      body << "    T* const " << v << " = scratch + " << offset[s] << ";\n";
    }
    emit_compute(body, st, v, args, args_cols, at);
    body << "    __syncwarp();\n";
  }
  SYLVA_CHECK(k.outputs >= 1, what, ": no step is an output");
  SYLVA_CHECK(k.inputs >= 1, what, ": no inputs");
  finish_kernel(k, p, dtype, body.str(), max_shared_bytes, what);
  return k;
}

}  // namespace sylva::cuda
