// Prints the CUDA C of a pointwise kernel (PointwiseTemplate) from the
// pipeline's own Exprs: fk_point() from the outputs, then the kernel
// skeleton for the schedule and the launch description.
#include "generator/nvrtc/pointwise_printer.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/errors.h"
#include "generator/candidates/op_traits.h"
#include "schedules/arch_limits.h"
#include "schedules/pointwise_template.h"

namespace fusekit {
namespace {

using namespace Halide;
using namespace Halide::Internal;

// FK_MIN_BLOCKS(T): blocks of T threads that fill an SM of the arch being
// compiled (resident threads, capped by resident blocks), from the arch
// table; an arch not in it gets the smallest SM of the table. occ=1 passes
// it to __launch_bounds__, so ptxas keeps registers to what full occupancy
// allows.
std::string min_blocks_macro() {
  const auto& table = known_arch_limits();
  int threads = table.front().max_threads_per_sm, blocks = table.front().max_blocks_per_sm;
  for (const auto& a : table) {
    threads = std::min(threads, a.max_threads_per_sm);
    blocks = std::min(blocks, a.max_blocks_per_sm);
  }
  std::string s = "#if !defined(__CUDA_ARCH__)\n#define FK_SM_THREADS 2048\n#define FK_SM_BLOCKS 32\n";
  for (const auto& a : table)
    s += "#elif __CUDA_ARCH__ == " + std::to_string(a.arch.number() * 10) + "\n#define FK_SM_THREADS " +
         std::to_string(a.max_threads_per_sm) + "\n#define FK_SM_BLOCKS " + std::to_string(a.max_blocks_per_sm) + "\n";
  s += "#else\n#define FK_SM_THREADS " + std::to_string(threads) + "\n#define FK_SM_BLOCKS " + std::to_string(blocks) +
       "\n#endif\n";
  return s + "#define FK_MIN_BLOCKS(t) (FK_SM_THREADS / (t) < FK_SM_BLOCKS ? FK_SM_THREADS / (t) : FK_SM_BLOCKS)\n";
}

}  // namespace

PrintedKernel print_pointwise_kernel(const FusionCandidate& cand, const Pipeline& pipe, const Config& config,
                                     const std::string& entry) {
  const int threads = static_cast<int>(config.get("threads"));
  const int vec = static_cast<int>(config.get("vec"));
  const int ept = static_cast<int>(config.get("ept"));
  const int64_t grid = config.get_or("grid", 0);
  const std::string st = pipe.dtype == DType::kF32 ? "float" : "unsigned short";
  const size_t k = pipe.vars.size();

  // Which domain axes broadcast inputs need; coordinates only if any.
  bool need_coords = false;
  for (const auto& in : cand.inputs) need_coords |= !in.full();
  // plane=1: a block takes a tile of one innermost plane; its broadcast
  // inputs are constant there (loaded once per block).
  const bool plane = config.get_or("plane", 0) == 1;
  if (plane && op_traits(cand, pipe.dtype).plane_inputs == 0)
    throw UserError("schedule '" + config.to_string() + "' has plane=1, but " + cand.name +
                    (need_coords ? " has an input that varies along the innermost axis" : " has no broadcast input") +
                    ": set plane=0");

  // occ=1: registers capped so that blocks fill the SM (FK_MIN_BLOCKS). A
  // kernel holding one or two 16-byte vectors per thread needs every
  // resident thread to keep enough bytes in flight (docs/architecture.md, "Decisions and findings").
  const bool occ = config.get_or("occ", 0) == 1;

  // hint=1 and 2 (sm_80+): each full input's vector loads carry an
  // eviction policy: 1 drops the lines first (evict_first in L1 and L2, a
  // read-once stream), 2 keeps them (evict_last in L1 and L2, as Inductor's
  // and the row kernels' hint=2 read a row read once). Broadcast inputs
  // keep plain loads.
  const int hint = load_hint(config);

  std::ostringstream src;
  src << cuda_prelude();
  if (occ) src << min_blocks_macro();
  if (hint != 0) src << cuda_load_hint_helpers();

  // fk_point: the candidate's math for one element, straight from its Exprs.
  src << "static __device__ __forceinline__ void fk_point(";
  std::string sig;
  for (const auto& in : cand.inputs) sig += (sig.empty() ? "" : ", ") + ("const " + st + " " + halide_input_name(in.name));
  for (const auto& p : cand.params) sig += (sig.empty() ? "" : ", ") + ("const float " + halide_param_name(p.name));
  // Outputs leave fk_point as f32 values; the caller rounds them to the
  // storage type, two at a time in the vector path.
  for (size_t o = 0; o < pipe.stored.size(); ++o) sig += (sig.empty() ? "" : ", ") + ("float& o" + std::to_string(o));
  src << sig << ") {\n";
  for (size_t o = 0; o < pipe.stored.size(); ++o) {
    std::string stmts;
    Expr e = pipe.stored[o];
    if (const auto* c = e.as<Halide::Internal::Cast>(); c && c->value.type() == Float(32)) e = c->value;
    // A constant output: Halide folded the cast into a storage-typed constant.
    if (const auto* f = e.as<Halide::Internal::FloatImm>()) e = Halide::Internal::FloatImm::make(Float(32), f->value);
    if (e.type() != Float(32)) throw InternalError("CUDA C printer: output math is not f32");
    e = common_subexpression_elimination(e);
    // Prefix let names per output so hoisted temporaries never collide.
    std::string value = print_cuda_expr(e, &stmts, "o" + std::to_string(o) + "_");
    src << stmts << "  o" << o << " = " << value << ";\n";
  }
  src << "}\n\n";

  // Coordinates of a flat index in the domain, innermost first. Each
  // division is a multiply-shift by the host's magic pair for the extent
  // (fk_div), once per vector (once per block with plane=1); lanes inside a
  // vector advance the coordinates incrementally.
  if (need_coords) {
    src << "template <typename I> static __device__ __forceinline__ void fk_coords(I i";
    for (size_t a = 0; a + 1 < k; ++a) src << ", I e" << a << ", I m" << a << ", I s" << a;
    src << ", I* c) {\n";
    src << "  const I q = fk_div(i, e0, m0, s0); c[0] = i - q * e0;\n";
    if (k == 2) src << "  c[1] = q;\n";
    if (k == 3) src << "  c[2] = fk_div(q, e1, m1, s1); c[1] = q - c[2] * e1;\n";
    if (k == 4)
      src << "  const I q2 = fk_div(q, e1, m1, s1); c[1] = q - q2 * e1;\n"
          << "  c[3] = fk_div(q2, e2, m2, s2); c[2] = q2 - c[3] * e2;\n";
    src << "}\n\n";
  }

  // Kernel parameters, in launch order.
  KernelArtifact launch;
  launch.backend = "nvrtc";
  launch.entry = entry;
  launch.block[0] = threads;
  launch.pointer_alignment = vec * static_cast<int>(dtype_bytes(pipe.dtype));
  std::string params, body_params, body_args;
  // `type` is the body's; shape arguments arrive as long long and are
  // narrowed to the body's index type I.
  auto add_param = [&](const std::string& type, const std::string& name, KernelParam p, bool shape) {
    params += (params.empty() ? "" : ", ") + ((shape ? std::string("const long long") : type) + " " + name);
    body_params += (body_params.empty() ? "" : ", ") + (type + " " + name);
    body_args += (body_args.empty() ? "" : ", ") + (shape ? "(I)" + name : name);
    launch.params.push_back(p);
  };
  for (size_t i = 0; i < cand.inputs.size(); ++i)
    add_param("const " + st + "* __restrict__", "g_" + cand.inputs[i].name,
              {KernelParam::Kind::kInput, KernelParam::Type::kPtr, static_cast<int>(i), {}}, false);
  for (size_t o = 0; o < pipe.stored.size(); ++o)
    add_param(st + "* __restrict__", "g_o" + std::to_string(o),
              {KernelParam::Kind::kOutput, KernelParam::Type::kPtr, static_cast<int>(o), {}}, false);
  for (size_t p = 0; p < cand.params.size(); ++p)
    add_param("const float", halide_param_name(cand.params[p].name),
              {KernelParam::Kind::kScalarParam, KernelParam::Type::kF32, static_cast<int>(p), {}}, false);
  add_param("const I", "n", {KernelParam::Kind::kShape, KernelParam::Type::kI64, 0, LaunchExpr::symbol("n")}, true);
  if (need_coords)
    for (size_t a = 0; a + 1 < k; ++a) {
      const std::string d = "d" + std::to_string(a);
      const LaunchExpr extent = LaunchExpr::symbol(d);
      add_param("const I", d, {KernelParam::Kind::kShape, KernelParam::Type::kI64, 0, extent}, true);
      add_param("const I", "m" + std::to_string(a),
                {KernelParam::Kind::kShape, KernelParam::Type::kI64, 0,
                 LaunchExpr::make(LaunchExpr::Op::kDivMagic, {extent})},
                true);
      add_param("const I", "s" + std::to_string(a),
                {KernelParam::Kind::kShape, KernelParam::Type::kI64, 0,
                 LaunchExpr::make(LaunchExpr::Op::kDivShift, {extent})},
                true);
    }

  const int64_t tile = static_cast<int64_t>(threads) * vec * ept;
  // Flat: tiles of the domain; plane=1: tiles of each plane, planes * tiles.
  LaunchExpr blocks = LaunchExpr::make(
      LaunchExpr::Op::kMax,
      {LaunchExpr(1),
       plane ? LaunchExpr::make(LaunchExpr::Op::kMul,
                                {LaunchExpr::make(LaunchExpr::Op::kDiv, {LaunchExpr::symbol("n"), LaunchExpr::symbol("d0")}),
                                 ceil_div(LaunchExpr::symbol("d0"), tile)})
             : ceil_div(LaunchExpr::symbol("n"), tile)});
  if (grid > 0)
    blocks = LaunchExpr::make(LaunchExpr::Op::kMin,
                              {blocks, LaunchExpr::make(LaunchExpr::Op::kMul, {LaunchExpr(grid), LaunchExpr::symbol("sm_count")})});
  launch.grid[0] = blocks;

  // Code fragments for coordinates, broadcast loads and the point call.
  std::string extents;
  for (size_t a = 0; a + 1 < k; ++a) {
    const std::string n = std::to_string(a);
    extents += ", d" + n + ", m" + n + ", s" + n;
  }
  auto coords_at = [&](const std::string& idx, const std::string& indent) {
    if (!need_coords) return std::string();
    return indent + "I c[" + std::to_string(k) + "];\n" + indent + "fk_coords<I>(" + idx + extents + ", c);\n";
  };
  auto advance = [&](const std::string& indent) {
    std::string s = indent + "if (++c[0] == d0) { c[0] = 0;";
    if (k == 3) s += " if (++c[1] == d1) { c[1] = 0; ++c[2]; }";
    else if (k == 4) s += " if (++c[1] == d1) { c[1] = 0; if (++c[2] == d2) { c[2] = 0; ++c[3]; } }";
    else s += " ++c[1];";
    return s + " }\n";
  };
  auto bcast_index = [&](const InputSpec& in) {
    // Dense: c[a0] + d[a0] * (c[a1] + d[a1] * c[a2]).
    std::string s = "c[" + std::to_string(in.axes.back()) + "]";
    for (size_t j = in.axes.size() - 1; j-- > 0;)
      s = "c[" + std::to_string(in.axes[j]) + "] + d" + std::to_string(in.axes[j]) + " * (" + s + ")";
    return s;
  };
  // Rounding f32 results to the storage type: one value, or a packed pair.
  const std::string round1 = round_one_fn(pipe.dtype);
  auto store_vector = [&](size_t o, const std::string& indent) {
    const std::string n = std::to_string(o), dst = "g_o" + n + " + i0";
    // f32 results were computed into the pack itself (w_p): no copy.
    if (pipe.dtype == DType::kF32) return indent + "*reinterpret_cast<pack_t*>(" + dst + ") = w_p" + n + ";\n";
    return print_rounded_vector_store(pipe.dtype, vec, indent, "w_o" + n, dst, "j");
  };
  // mode: 0 scalar tail, 1 vector lane with per-lane broadcast loads,
  // 2 vector lane whose broadcast values were loaded once per vector.
  auto point_call = [&](int mode) {
    std::string a;
    for (const auto& in : cand.inputs) {
      std::string v;
      if (in.full()) v = mode ? "r_" + in.name + "[e].v[l]" : "g_" + in.name + "[i]";
      else if (mode == 2 || plane) v = in.axes.front() == 0 ? "b_" + in.name + ".v[l]" : "b_" + in.name;
      else v = "g_" + in.name + "[" + bcast_index(in) + "]";
      a += (a.empty() ? "" : ", ") + v;
    }
    for (const auto& p : cand.params) a += (a.empty() ? "" : ", ") + halide_param_name(p.name);
    for (size_t o = 0; o < pipe.stored.size(); ++o)
      a += (a.empty() ? "" : ", ") + ((mode ? "w_o" : "t_o") + std::to_string(o) + (mode ? "[l]" : ""));
    std::string s = "fk_point(" + a + ");";
    if (mode == 0)  // scalar tail: declare the temporaries, store rounded
      for (size_t o = pipe.stored.size(); o-- > 0;) {
        const std::string n = std::to_string(o);
        s = "float t_o" + n + "; " + s + " g_o" + n + "[i] = " + round1 + "(t_o" + n + ");";
      }
    return s + "\n";
  };

  // The body is a template over the index type: 32-bit when n allows, which
  // makes index and coordinate arithmetic several times cheaper.
  src << "template <typename I>\nstatic __device__ __forceinline__ void fk_body(" << body_params << ") {\n";
  src << "  constexpr int kT = " << threads << ", kV = " << vec << ", kE = " << ept << ";\n";
  src << "  constexpr I kTile = (I)kT * kV * kE;\n";
  src << "  typedef fk_pack<" << st << ", kV> pack_t;\n";
  if (hint != 0) src << "  const unsigned long long fk_pol = fk_policy<" << (hint == 2 ? "true" : "false") << ">();\n";
  if (plane) {
    // Block b takes tile t of plane p; the plane's coordinates (c[0] = 0)
    // and broadcast values once per block, then a flat tile at base.
    src << "  const I tiles = (d0 + kTile - 1) / kTile, blocks = n / d0 * tiles;\n";
    src << "  for (I b = blockIdx.x; b < blocks; b += gridDim.x) {\n";
    src << "    const I p = b / tiles, t0 = (b - p * tiles) * kTile, base = p * d0 + t0;\n";
    src << "    I c[" << k << "];\n    c[0] = 0;\n";
    if (k == 2) src << "    c[1] = p;\n";
    if (k == 3) src << "    c[2] = fk_div(p, d1, m1, s1);\n    c[1] = p - c[2] * d1;\n";
    if (k == 4)
      src << "    const I p2 = fk_div(p, d1, m1, s1);\n    c[1] = p - p2 * d1;\n"
          << "    c[3] = fk_div(p2, d2, m2, s2);\n    c[2] = p2 - c[3] * d2;\n";
    for (const auto& in : cand.inputs)
      if (!in.full())
        src << "    const " << st << " b_" << in.name << " = g_" << in.name << "[" << bcast_index(in) << "];\n";
    src << "    if (d0 - t0 >= kTile && d0 % kV == 0) {\n";
  } else {
    src << "  for (I base = (I)blockIdx.x * kTile; base < n; base += (I)gridDim.x * kTile) {\n";
    src << "    if (n - base >= kTile) {\n";
  }
  for (const auto& in : cand.inputs)
    if (in.full()) src << "      pack_t r_" << in.name << "[kE];\n";
  src << "#pragma unroll\n      for (int e = 0; e < kE; ++e) {\n";
  src << "        const I i0 = base + ((I)e * kT + threadIdx.x) * kV;\n";
  for (const auto& in : cand.inputs)
    if (in.full()) {
      src << "        r_" << in.name << "[e] = ";
      if (hint != 0)
        src << "fk_ldg_hint<" << st << ", kV, " << (hint == 2 ? 1 : 2) << ">(g_" << in.name << " + i0, fk_pol);\n";
      else
        src << "*reinterpret_cast<const pack_t*>(g_" << in.name << " + i0);\n";
    }
  src << "      }\n";
  src << "#pragma unroll\n      for (int e = 0; e < kE; ++e) {\n";
  src << "        const I i0 = base + ((I)e * kT + threadIdx.x) * kV;\n";
  if (!plane) src << coords_at("i0", "        ");
  for (size_t o = 0; o < pipe.stored.size(); ++o)
    if (pipe.dtype == DType::kF32) src << "        pack_t w_p" << o << "; float* w_o" << o << " = w_p" << o << ".v;\n";
    else src << "        float w_o" << o << "[kV];\n";
  if (plane) {
    src << "#pragma unroll\n        for (int l = 0; l < kV; ++l) " << point_call(2);
  } else if (need_coords) {
    // Fast path: the vector stays inside one innermost row, so broadcast
    // values are one load per vector (a vector load when aligned).
    src << "        if (c[0] + kV <= d0) {\n";
    for (const auto& in : cand.inputs) {
      if (in.full()) continue;
      const std::string idx = bcast_index(in);
      if (in.axes.front() == 0) {
        src << "          pack_t b_" << in.name << ";\n";
        src << "          { const I bi = " << idx << ";\n";
        src << "            if (bi % kV == 0) b_" << in.name << " = *reinterpret_cast<const pack_t*>(g_" << in.name
            << " + bi);\n";
        src << "            else {\n#pragma unroll\n              for (int l = 0; l < kV; ++l) b_" << in.name
            << ".v[l] = g_" << in.name << "[bi + l]; } }\n";
      } else {
        src << "          const " << st << " b_" << in.name << " = g_" << in.name << "[" << idx << "];\n";
      }
    }
    src << "#pragma unroll\n          for (int l = 0; l < kV; ++l) " << point_call(2);
    src << "        } else {\n";
    src << "#pragma unroll\n          for (int l = 0; l < kV; ++l) {\n";
    src << "            " << point_call(1);
    src << advance("            ");
    src << "          }\n        }\n";
  } else {
    src << "#pragma unroll\n        for (int l = 0; l < kV; ++l) " << point_call(1);
  }
  for (size_t o = 0; o < pipe.stored.size(); ++o) src << store_vector(o, "        ");
  src << "      }\n";
  src << "    } else {\n";
  if (plane) {
    // The plane's last tile, or a plane that does not start on a vector.
    src << "      const I end = base + (d0 - t0 < kTile ? d0 - t0 : kTile);\n";
    src << "      for (I i = base + threadIdx.x; i < end; i += kT) {\n";
  } else {
    src << "      for (I i = base + threadIdx.x; i < n; i += kT) {\n";
    src << coords_at("i", "        ");
  }
  src << "        " << point_call(0);
  src << "      }\n    }\n  }\n}\n\n";

  src << "extern \"C\" __global__ void __launch_bounds__(" << threads
      << (occ ? ", FK_MIN_BLOCKS(" + std::to_string(threads) + ")" : std::string()) << ") " << entry << "(" << params
      << ") {\n";
  src << "  if (n <= 0x7fffffffLL) {\n    typedef unsigned int I;\n    fk_body<I>(" << body_args << ");\n";
  src << "  } else {\n    typedef long long I;\n    fk_body<I>(" << body_args << ");\n  }\n}\n";

  PrintedKernel out;
  out.source = src.str();
  launch.source = out.source;
  out.launch = launch;
  return out;
}

}  // namespace fusekit
