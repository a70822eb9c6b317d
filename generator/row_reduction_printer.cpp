// Prints the CUDA C of a row-reduction kernel (RowReductionTemplate) from
// the pipeline's own Exprs: each RowReduction's body becomes fk_body<k>(),
// the outputs fk_point(); calls to reductions print as the row's reduced
// values red<k>. See schedules/row_reduction_template.h for the schedule.
#include "generator/row_reduction_printer.h"

#include <map>
#include <sstream>

#include "common/errors.h"
#include "generator/cuda_c_printer.h"

namespace fusekit {
namespace {

using Halide::Expr;

// Helpers that know the block's shape: loads that fall back to guarded
// scalars, and the row combine (warp shuffles, shared memory across warps).
const char* kRowHelpers = R"cuda(
template <typename T, int N>
static __device__ __forceinline__ fk_pack<T, N> fk_load(const T* p, int col0, int cols, bool aligned) {
  fk_pack<T, N> d;
  if (aligned && col0 + N <= cols) {
    d = *reinterpret_cast<const fk_pack<T, N>*>(p + col0);
  } else {
#pragma unroll
    for (int l = 0; l < N; ++l) d.v[l] = col0 + l < cols ? p[col0 + l] : T(0);
  }
  return d;
}
// Combines `v` across the kT threads of a row (threadIdx.x); every thread of
// the block calls it, and every thread gets the row's value.
template <int kT, bool kMax>
static __device__ __forceinline__ float fk_row_combine(float v, float* smem) {
#pragma unroll
  for (int o = (kT < 32 ? kT : 32) / 2; o > 0; o >>= 1) {
    const float u = __shfl_xor_sync(0xffffffffu, v, o);
    v = kMax ? fmaxf(v, u) : v + u;
  }
  if (kT > 32) {
    __syncthreads();  // the previous combine's reads of smem are done
    if (threadIdx.x % 32 == 0) smem[threadIdx.x / 32] = v;
    __syncthreads();
    v = smem[0];
#pragma unroll
    for (int w = 1; w < kT / 32; ++w) v = kMax ? fmaxf(v, smem[w]) : v + smem[w];
  }
  return v;
}
)cuda";

}  // namespace

PrintedKernel print_row_reduction_kernel(const FusionCandidate& cand, const Pipeline& pipe, const Config& config,
                                         const std::string& entry) {
  FUSEKIT_INTERNAL_ASSERT(cand.layout == Layout::kRows, cand.name + " is not a row reduction");
  const int threads = static_cast<int>(config.get("threads"));
  const int rows = static_cast<int>(config.get("rows"));
  const int vec = static_cast<int>(config.get("vec"));
  const int cache = static_cast<int>(config.get("cache"));
  const std::string st = pipe.dtype == DType::kF32 ? "float" : "unsigned short";
  const std::string round1 = round_one_fn(pipe.dtype);
  const size_t nred = pipe.reductions.size();

  std::map<std::string, std::string> red_values;
  for (size_t k = 0; k < nred; ++k) red_values[pipe.reductions[k].func.name()] = "red" + std::to_string(k);

  std::ostringstream src;
  src << cuda_prelude() << kRowHelpers;

  // fk_body<k> and fk_point share one argument list: every input's value at
  // the column, every reduction, every parameter.
  std::string sig;
  auto add_sig = [&](const std::string& s) { sig += (sig.empty() ? "" : ", ") + s; };
  for (const auto& in : cand.inputs) add_sig("const " + st + " " + halide_input_name(in.name));
  for (size_t k = 0; k < nred; ++k) add_sig("const float red" + std::to_string(k));
  for (const auto& p : cand.params) add_sig("const float " + halide_param_name(p.name));
  auto strip_cast = [&](Expr e) {
    if (const auto* c = e.as<Halide::Internal::Cast>(); c && c->value.type() == Halide::Float(32)) e = c->value;
    if (e.type() != Halide::Float(32)) throw InternalError("row reduction printer: math is not f32");
    return Halide::Internal::common_subexpression_elimination(e);
  };
  for (size_t k = 0; k < nred; ++k) {
    std::string stmts;
    const std::string value =
        print_cuda_expr(strip_cast(pipe.reductions[k].body.value()), &stmts, "b" + std::to_string(k) + "_", &red_values);
    src << "static __device__ __forceinline__ float fk_body" << k << "(" << sig << ") {\n"
        << stmts << "  return " << value << ";\n}\n";
  }
  std::string point_sig = sig;
  for (size_t o = 0; o < pipe.stored.size(); ++o) point_sig += ", float& o" + std::to_string(o);
  src << "static __device__ __forceinline__ void fk_point(" << point_sig << ") {\n";
  for (size_t o = 0; o < pipe.stored.size(); ++o) {
    std::string stmts;
    const std::string value = print_cuda_expr(strip_cast(pipe.stored[o]), &stmts, "o" + std::to_string(o) + "_",
                                              &red_values);
    src << stmts << "  o" << o << " = " << value << ";\n";
  }
  src << "}\n\n";

  // Kernel parameters, in launch order.
  KernelArtifact launch;
  launch.backend = "nvrtc";
  launch.entry = entry;
  launch.block[0] = threads;
  launch.block[1] = rows;
  launch.pointer_alignment = vec * static_cast<int>(dtype_bytes(pipe.dtype));
  std::string params;
  auto add_param = [&](const std::string& decl, KernelParam p) {
    params += (params.empty() ? "" : ", ") + decl;
    launch.params.push_back(p);
  };
  for (size_t i = 0; i < cand.inputs.size(); ++i)
    add_param("const " + st + "* __restrict__ g_" + cand.inputs[i].name,
              {KernelParam::Kind::kInput, KernelParam::Type::kPtr, static_cast<int>(i), {}});
  for (size_t o = 0; o < pipe.stored.size(); ++o)
    add_param(st + "* __restrict__ g_o" + std::to_string(o),
              {KernelParam::Kind::kOutput, KernelParam::Type::kPtr, static_cast<int>(o), {}});
  for (size_t p = 0; p < cand.params.size(); ++p)
    add_param("const float " + halide_param_name(cand.params[p].name),
              {KernelParam::Kind::kScalarParam, KernelParam::Type::kF32, static_cast<int>(p), {}});
  add_param("const long long rows", {KernelParam::Kind::kShape, KernelParam::Type::kI64, 0, LaunchExpr::symbol("d1")});
  // A 32-bit row length: the runtime refuses (a Status, no launch) rows of
  // 2^31 columns or more instead of the kernel computing garbage.
  add_param("const int cols", {KernelParam::Kind::kShape, KernelParam::Type::kI32, 0, LaunchExpr::symbol("d0")});
  launch.grid[0] = LaunchExpr::make(LaunchExpr::Op::kMax, {LaunchExpr(1), ceil_div(LaunchExpr::symbol("d1"), rows)});

  // One visit: the vector at col0 of every input (from the registers or
  // memory), then `action` per lane in the row.
  auto args_at = [&](const std::string& lane) {
    std::string a;
    auto add = [&](const std::string& s) { a += (a.empty() ? "" : ", ") + s; };
    for (const auto& in : cand.inputs) {
      if (in.full() || in.axes == std::vector<int>{0}) add("v_" + in.name + ".v[" + lane + "]");
      else add("r_" + in.name);  // indexed by row only
    }
    for (size_t k = 0; k < nred; ++k) add("red" + std::to_string(k));
    for (const auto& p : cand.params) add(halide_param_name(p.name));
    return a;
  };
  auto visit = [&](bool cached, const std::string& indent, const std::string& action) {
    std::string s;
    for (const auto& in : cand.inputs) {
      if (in.full())
        s += indent + "const pack_t v_" + in.name + " = " +
             (cached ? "c_" + in.name + "[j]" : "fk_load<" + st + ", kV>(x_" + in.name + ", col0, cols, aligned)") +
             ";\n";
      else if (in.axes == std::vector<int>{0})
        s += indent + "const pack_t v_" + in.name + " = fk_load<" + st + ", kV>(g_" + in.name +
             ", col0, cols, aligned);\n";
    }
    s += "#pragma unroll\n" + indent + "for (int l = 0; l < kV; ++l)\n";
    s += indent + "  if (col0 + l < cols) " + action + "\n";
    return s;
  };
  auto reduce_action = [&](size_t k) {
    const bool is_max = pipe.reductions[k].kind == Reduction::kMax;
    const std::string call = "fk_body" + std::to_string(k) + "(" + args_at("l") + ")";
    return std::string(is_max ? "acc = fmaxf(acc, " + call + ");" : "acc += " + call + ";");
  };
  std::string outs_args;
  for (size_t o = 0; o < pipe.stored.size(); ++o) outs_args += ", w_o" + std::to_string(o) + "[l]";
  const std::string point_action = "fk_point(" + args_at("l") + outs_args + ");";
  auto store_outputs = [&](const std::string& indent) {
    std::string s;
    for (size_t o = 0; o < pipe.stored.size(); ++o) {
      const std::string n = std::to_string(o), dst = "y_o" + n;
      s += indent + "if (aligned && col0 + kV <= cols) {\n";
      s += print_rounded_vector_store(pipe.dtype, vec, indent + "  ", "w_o" + n, dst + " + col0", "h");
      s += indent + "} else {\n#pragma unroll\n" + indent + "  for (int l = 0; l < kV; ++l)\n" + indent +
           "    if (col0 + l < cols) " + dst + "[col0 + l] = " + round1 + "(w_o" + n + "[l]);\n" + indent + "}\n";
    }
    return s;
  };
  auto declare_outputs = [&](const std::string& indent) {
    std::string s;
    for (size_t o = 0; o < pipe.stored.size(); ++o) s += indent + "float w_o" + std::to_string(o) + "[kV];\n";
    return s;
  };
  // The accumulator's start: -inf for a max, 0 for a sum or mean.
  auto identity = [&](size_t k) {
    return std::string(pipe.reductions[k].kind == Reduction::kMax ? "-__int_as_float(0x7f800000)" : "0.0f");
  };
  auto finish_reduction = [&](size_t k, const std::string& indent) {
    const RowReduction& r = pipe.reductions[k];
    std::string s = indent + "red" + std::to_string(k) + " = fk_row_combine<kT, " +
                    (r.kind == Reduction::kMax ? "true" : "false") + ">(acc, fk_smem[threadIdx.y]);\n";
    if (r.kind == Reduction::kMean) s += indent + "red" + std::to_string(k) + " /= (float)cols;\n";
    return s;
  };

  src << "extern \"C\" __global__ void __launch_bounds__(" << threads * rows << ") " << entry << "(" << params
      << ") {\n";
  src << "  constexpr int kT = " << threads << ", kR = " << rows << ", kV = " << vec << ", kC = " << cache << ";\n";
  src << "  typedef fk_pack<" << st << ", kV> pack_t;\n";
  src << "  __shared__ float fk_smem[kR][32];\n";
  src << "  const long long row = (long long)blockIdx.x * kR + threadIdx.y;\n";
  src << "  const bool active = row < rows;\n";
  src << "  const long long base = (active ? row : 0) * (long long)cols;\n";
  src << "  const bool aligned = cols % kV == 0;  // every row starts on a vector boundary\n";
  for (const auto& in : cand.inputs) {
    if (in.full()) src << "  const " << st << "* __restrict__ x_" << in.name << " = g_" << in.name << " + base;\n";
    else if (in.axes == std::vector<int>{1})
      src << "  const " << st << " r_" << in.name << " = g_" << in.name << "[active ? row : 0];\n";
    else if (in.axes != std::vector<int>{0})
      throw UserError("row reduction printer: input '" + in.name + "' is indexed in a way it cannot print");
  }
  for (size_t o = 0; o < pipe.stored.size(); ++o)
    src << "  " << st << "* __restrict__ y_o" << o << " = g_o" << o << " + base;\n";
  for (size_t k = 0; k < nred; ++k) src << "  float red" << k << " = 0.0f;\n";

  // Cached path: the row's vectors stay in registers across the passes.
  if (cache > 0) {
    src << "  if (cols <= kT * kV * kC) {\n";
    for (const auto& in : cand.inputs)
      if (in.full()) src << "    pack_t c_" << in.name << "[kC];\n";
    src << "#pragma unroll\n    for (int j = 0; j < kC; ++j) {\n";
    src << "      const int col0 = (j * kT + threadIdx.x) * kV;\n";
    for (const auto& in : cand.inputs)
      if (in.full())
        src << "      c_" << in.name << "[j] = active ? fk_load<" << st << ", kV>(x_" << in.name
            << ", col0, cols, aligned) : pack_t();\n";
    src << "    }\n";
    for (size_t k = 0; k < nred; ++k) {
      src << "    {\n      float acc = " << identity(k)
          << ";\n";
      src << "#pragma unroll\n      for (int j = 0; j < kC; ++j) {\n";
      src << "        const int col0 = (j * kT + threadIdx.x) * kV;\n";
      src << "        if (!active || col0 >= cols) continue;\n";
      src << visit(true, "        ", reduce_action(k));
      src << "      }\n";
      src << finish_reduction(k, "      ");
      src << "    }\n";
    }
    src << "#pragma unroll\n    for (int j = 0; j < kC; ++j) {\n";
    src << "      const int col0 = (j * kT + threadIdx.x) * kV;\n";
    src << "      if (!active || col0 >= cols) continue;\n";
    src << declare_outputs("      ") << visit(true, "      ", point_action) << store_outputs("      ");
    src << "    }\n";
    src << "    return;\n  }\n";
  }

  // Re-reading path: any row length; each pass reads the row again.
  for (size_t k = 0; k < nred; ++k) {
    src << "  {\n    float acc = " << identity(k)
        << ";\n";
    src << "    for (int col0 = threadIdx.x * kV; active && col0 < cols; col0 += kT * kV) {\n";
    src << visit(false, "      ", reduce_action(k));
    src << "    }\n";
    src << finish_reduction(k, "    ");
    src << "  }\n";
  }
  src << "  for (int col0 = threadIdx.x * kV; active && col0 < cols; col0 += kT * kV) {\n";
  src << declare_outputs("    ") << visit(false, "    ", point_action) << store_outputs("    ");
  src << "  }\n}\n";

  PrintedKernel out;
  out.source = src.str();
  launch.source = out.source;
  out.launch = launch;
  return out;
}

PrintedKernel print_nvrtc_kernel(const FusionCandidate& candidate, const Pipeline& pipeline, const Config& config,
                                 const std::string& entry) {
  return candidate.reduces() ? print_row_reduction_kernel(candidate, pipeline, config, entry)
                             : print_pointwise_kernel(candidate, pipeline, config, entry);
}

}  // namespace fusekit
