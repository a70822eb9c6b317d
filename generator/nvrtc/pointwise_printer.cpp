// Prints the CUDA C of a pointwise kernel (PointwiseTemplate) from the
// pipeline's own Exprs: the config read once into a PointwiseSchedule, then
// fk_point() from the outputs, fk_coords() where broadcast inputs need
// coordinates, the body over tiles, the entry, and the launch description.
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

// The pointwise schedule, read once from its config.
struct PointwiseSchedule {
  int threads = 0;    // threads per block
  int vec = 0;        // elements per access
  int ept = 0;        // vectors per thread per tile
  int64_t grid = 0;   // 0: one tile per block; k > 0: a grid-stride loop over k blocks per SM
  // plane=1: a block takes a tile of one innermost plane; its broadcast
  // inputs are constant there (loaded once per block).
  bool plane = false;
  // occ=1: registers capped so that blocks fill the SM (FK_MIN_BLOCKS). A
  // kernel holding one or two 16-byte vectors per thread needs every
  // resident thread to keep enough bytes in flight (docs/architecture.md,
  // "Decisions and findings").
  bool occ = false;
  // hint=1 and 2 (sm_80+): each full input's vector loads carry an eviction
  // policy: 1 drops the lines first (evict_first in L1 and L2, a read-once
  // stream), 2 keeps them (evict_last in L1 and L2, as Inductor's and the
  // row kernels' hint=2 read a row read once). Broadcast inputs keep plain
  // loads.
  int hint = 0;

  int64_t tile() const { return static_cast<int64_t>(threads) * vec * ept; }
};

PointwiseSchedule parse_pointwise_schedule(const FusionCandidate& cand, DType dtype, bool need_coords,
                                           const Config& config) {
  PointwiseSchedule s;
  s.threads = static_cast<int>(config.get("threads"));
  s.vec = static_cast<int>(config.get("vec"));
  s.ept = static_cast<int>(config.get("ept"));
  s.grid = config.get_or("grid", 0);
  s.plane = config.get_or("plane", 0) == 1;
  if (s.plane && op_traits(cand, dtype).plane_inputs == 0)
    throw UserError("schedule '" + config.to_string() + "' has plane=1, but " + cand.name +
                    (need_coords ? " has an input that varies along the innermost axis" : " has no broadcast input") +
                    ": set plane=0");
  s.occ = config.get_or("occ", 0) == 1;
  s.hint = load_hint(config);
  return s;
}

// How a point call finds its inputs: the scalar tail, a vector lane with
// per-lane broadcast loads, or a vector lane whose broadcast values were
// loaded once per vector (or per block with plane=1).
enum class PointMode { kScalarTail, kLane, kLaneHoisted };

// The signature parts of the body and the entry, in launch order.
struct KernelParams {
  std::string entry;        // the entry's parameters (shapes as long long)
  std::string body;         // fk_body<I>'s parameters
  std::string body_args;    // the entry's call of fk_body<I>
};

class PointwiseKernelPrinter {
 public:
  PointwiseKernelPrinter(const FusionCandidate& cand, const Pipeline& pipe, const Config& config,
                         const std::string& entry)
      : cand_(cand),
        pipe_(pipe),
        entry_(entry),
        st_(pipe.dtype == DType::kF32 ? "float" : "unsigned short"),
        k_(pipe.vars.size()),
        need_coords_(std::any_of(cand.inputs.begin(), cand.inputs.end(), [](const InputSpec& in) { return !in.full(); })),
        sched_(parse_pointwise_schedule(cand, pipe.dtype, need_coords_, config)) {}

  PrintedKernel print() const {
    std::string src = helpers() + point_function() + coords_function();
    KernelParams params;
    PrintedKernel out;
    out.launch = launch_description(&params);
    out.source = src + body(params.body) + entry_function(params);
    out.launch.source = out.source;
    return out;
  }

 private:
  std::string helpers() const;
  std::string point_function() const;
  std::string coords_function() const;
  KernelArtifact launch_description(KernelParams* params) const;
  LaunchExpr grid() const;
  std::string body(const std::string& body_params) const;
  std::string plane_tile_head() const;
  std::string vector_loads() const;
  std::string vector_points() const;
  std::string hoisted_broadcasts() const;
  std::string tail() const;
  std::string entry_function(const KernelParams& params) const;

  std::string coords_at(const std::string& idx, const std::string& indent) const;
  std::string advance(const std::string& indent) const;
  std::string bcast_index(const InputSpec& in) const;
  std::string store_vector(size_t o, const std::string& indent) const;
  std::string point_call(PointMode mode) const;

  const FusionCandidate& cand_;
  const Pipeline& pipe_;
  const std::string entry_;
  const std::string st_;    // the storage type
  const size_t k_;          // domain axes
  // Whether broadcast inputs need the domain's coordinates.
  const bool need_coords_;
  const PointwiseSchedule sched_;
};

std::string PointwiseKernelPrinter::helpers() const {
  std::string s = cuda_prelude();
  if (sched_.occ) s += min_blocks_macro();
  if (sched_.hint != 0) s += cuda_load_hint_helpers();
  return s;
}

// fk_point: the candidate's math for one element, straight from its Exprs.
// Outputs leave it as f32 values; the caller rounds them to the storage
// type, two at a time in the vector path.
std::string PointwiseKernelPrinter::point_function() const {
  std::string sig;
  auto add = [&](const std::string& s) { sig += (sig.empty() ? "" : ", ") + s; };
  for (const auto& in : cand_.inputs) add("const " + st_ + " " + halide_input_name(in.name));
  for (const auto& p : cand_.params) add("const float " + halide_param_name(p.name));
  for (size_t o = 0; o < pipe_.stored.size(); ++o) add("float& o" + std::to_string(o));
  std::string s = "static __device__ __forceinline__ void fk_point(" + sig + ") {\n";
  for (size_t o = 0; o < pipe_.stored.size(); ++o) {
    std::string stmts;
    Expr e = pipe_.stored[o];
    if (const auto* c = e.as<Halide::Internal::Cast>(); c && c->value.type() == Float(32)) e = c->value;
    // A constant output: Halide folded the cast into a storage-typed constant.
    if (const auto* f = e.as<Halide::Internal::FloatImm>()) e = Halide::Internal::FloatImm::make(Float(32), f->value);
    if (e.type() != Float(32)) throw InternalError("CUDA C printer: output math is not f32");
    e = common_subexpression_elimination(e);
    // Prefix let names per output so hoisted temporaries never collide.
    std::string value = print_cuda_expr(e, &stmts, "o" + std::to_string(o) + "_");
    s += stmts + "  o" + std::to_string(o) + " = " + value + ";\n";
  }
  return s + "}\n\n";
}

// Coordinates of a flat index in the domain, innermost first. Each
// division is a multiply-shift by the host's magic pair for the extent
// (fk_div), once per vector (once per block with plane=1); lanes inside a
// vector advance the coordinates incrementally.
std::string PointwiseKernelPrinter::coords_function() const {
  if (!need_coords_) return "";
  std::ostringstream src;
  src << "template <typename I> static __device__ __forceinline__ void fk_coords(I i";
  for (size_t a = 0; a + 1 < k_; ++a) src << ", I e" << a << ", I m" << a << ", I s" << a;
  src << ", I* c) {\n";
  src << "  const I q = fk_div(i, e0, m0, s0); c[0] = i - q * e0;\n";
  if (k_ == 2) src << "  c[1] = q;\n";
  if (k_ == 3) src << "  c[2] = fk_div(q, e1, m1, s1); c[1] = q - c[2] * e1;\n";
  if (k_ == 4)
    src << "  const I q2 = fk_div(q, e1, m1, s1); c[1] = q - q2 * e1;\n"
        << "  c[3] = fk_div(q2, e2, m2, s2); c[2] = q2 - c[3] * e2;\n";
  src << "}\n\n";
  return src.str();
}

// Kernel parameters, in launch order. `type` is the body's; shape arguments
// arrive as long long and are narrowed to the body's index type I.
KernelArtifact PointwiseKernelPrinter::launch_description(KernelParams* params) const {
  KernelArtifact launch;
  launch.backend = "nvrtc";
  launch.entry = entry_;
  launch.block[0] = sched_.threads;
  launch.pointer_alignment = sched_.vec * static_cast<int>(dtype_bytes(pipe_.dtype));
  auto add_param = [&](const std::string& type, const std::string& name, KernelParam p, bool shape) {
    params->entry += (params->entry.empty() ? "" : ", ") + ((shape ? std::string("const long long") : type) + " " + name);
    params->body += (params->body.empty() ? "" : ", ") + (type + " " + name);
    params->body_args += (params->body_args.empty() ? "" : ", ") + (shape ? "(I)" + name : name);
    launch.params.push_back(p);
  };
  using Kind = KernelParam::Kind;
  using Type = KernelParam::Type;
  for (size_t i = 0; i < cand_.inputs.size(); ++i)
    add_param("const " + st_ + "* __restrict__", "g_" + cand_.inputs[i].name,
              {Kind::kInput, Type::kPtr, static_cast<int>(i), {}}, false);
  for (size_t o = 0; o < pipe_.stored.size(); ++o)
    add_param(st_ + "* __restrict__", "g_o" + std::to_string(o), {Kind::kOutput, Type::kPtr, static_cast<int>(o), {}},
              false);
  for (size_t p = 0; p < cand_.params.size(); ++p)
    add_param("const float", halide_param_name(cand_.params[p].name),
              {Kind::kScalarParam, Type::kF32, static_cast<int>(p), {}}, false);
  add_param("const I", "n", {Kind::kShape, Type::kI64, 0, LaunchExpr::symbol("n")}, true);
  if (need_coords_)
    for (size_t a = 0; a + 1 < k_; ++a) {
      const std::string d = "d" + std::to_string(a);
      const LaunchExpr extent = LaunchExpr::symbol(d);
      add_param("const I", d, {Kind::kShape, Type::kI64, 0, extent}, true);
      add_param("const I", "m" + std::to_string(a),
                {Kind::kShape, Type::kI64, 0, LaunchExpr::make(LaunchExpr::Op::kDivMagic, {extent})}, true);
      add_param("const I", "s" + std::to_string(a),
                {Kind::kShape, Type::kI64, 0, LaunchExpr::make(LaunchExpr::Op::kDivShift, {extent})}, true);
    }
  launch.grid[0] = grid();
  return launch;
}

// Flat: tiles of the domain; plane=1: tiles of each plane, planes * tiles;
// grid=k caps it at k blocks per SM.
LaunchExpr PointwiseKernelPrinter::grid() const {
  using Op = LaunchExpr::Op;
  const LaunchExpr n = LaunchExpr::symbol("n"), d0 = LaunchExpr::symbol("d0");
  const int64_t tile = sched_.tile();
  LaunchExpr blocks = LaunchExpr::make(
      Op::kMax, {LaunchExpr(1), sched_.plane ? LaunchExpr::make(Op::kMul, {LaunchExpr::make(Op::kDiv, {n, d0}),
                                                                            ceil_div(d0, tile)})
                                             : ceil_div(n, tile)});
  if (sched_.grid > 0)
    blocks = LaunchExpr::make(
        Op::kMin, {blocks, LaunchExpr::make(Op::kMul, {LaunchExpr(sched_.grid), LaunchExpr::symbol("sm_count")})});
  return blocks;
}

// The body is a template over the index type: 32-bit when n allows, which
// makes index and coordinate arithmetic several times cheaper. A tile of
// whole vectors loads every full input's vectors, then computes them; the
// rest takes an element per thread.
std::string PointwiseKernelPrinter::body(const std::string& body_params) const {
  std::ostringstream src;
  src << "template <typename I>\nstatic __device__ __forceinline__ void fk_body(" << body_params << ") {\n";
  src << "  constexpr int kT = " << sched_.threads << ", kV = " << sched_.vec << ", kE = " << sched_.ept << ";\n";
  src << "  constexpr I kTile = (I)kT * kV * kE;\n";
  src << "  typedef fk_pack<" << st_ << ", kV> pack_t;\n";
  if (sched_.hint != 0)
    src << "  const unsigned long long fk_pol = fk_policy<" << (sched_.hint == 2 ? "true" : "false") << ">();\n";
  if (sched_.plane) {
    src << plane_tile_head();
  } else {
    src << "  for (I base = (I)blockIdx.x * kTile; base < n; base += (I)gridDim.x * kTile) {\n";
    src << "    if (n - base >= kTile) {\n";
  }
  src << vector_loads() << vector_points() << tail();
  return src.str();
}

// Block b takes tile t of plane p; the plane's coordinates (c[0] = 0) and
// broadcast values once per block, then a flat tile at base.
std::string PointwiseKernelPrinter::plane_tile_head() const {
  std::ostringstream src;
  src << "  const I tiles = (d0 + kTile - 1) / kTile, blocks = n / d0 * tiles;\n";
  src << "  for (I b = blockIdx.x; b < blocks; b += gridDim.x) {\n";
  src << "    const I p = b / tiles, t0 = (b - p * tiles) * kTile, base = p * d0 + t0;\n";
  src << "    I c[" << k_ << "];\n    c[0] = 0;\n";
  if (k_ == 2) src << "    c[1] = p;\n";
  if (k_ == 3) src << "    c[2] = fk_div(p, d1, m1, s1);\n    c[1] = p - c[2] * d1;\n";
  if (k_ == 4)
    src << "    const I p2 = fk_div(p, d1, m1, s1);\n    c[1] = p - p2 * d1;\n"
        << "    c[3] = fk_div(p2, d2, m2, s2);\n    c[2] = p2 - c[3] * d2;\n";
  for (const auto& in : cand_.inputs)
    if (!in.full()) src << "    const " << st_ << " b_" << in.name << " = g_" << in.name << "[" << bcast_index(in) << "];\n";
  src << "    if (d0 - t0 >= kTile && d0 % kV == 0) {\n";
  return src.str();
}

// Every full input's kE vectors of the tile, loaded before any is used.
std::string PointwiseKernelPrinter::vector_loads() const {
  std::ostringstream src;
  for (const auto& in : cand_.inputs)
    if (in.full()) src << "      pack_t r_" << in.name << "[kE];\n";
  src << "#pragma unroll\n      for (int e = 0; e < kE; ++e) {\n";
  src << "        const I i0 = base + ((I)e * kT + threadIdx.x) * kV;\n";
  for (const auto& in : cand_.inputs)
    if (in.full()) {
      src << "        r_" << in.name << "[e] = ";
      if (sched_.hint != 0)
        src << "fk_ldg_hint<" << st_ << ", kV, " << (sched_.hint == 2 ? 1 : 2) << ">(g_" << in.name << " + i0, fk_pol);\n";
      else
        src << "*reinterpret_cast<const pack_t*>(g_" << in.name << " + i0);\n";
    }
  src << "      }\n";
  return src.str();
}

// Each loaded vector's points, then its rounded stores.
std::string PointwiseKernelPrinter::vector_points() const {
  std::ostringstream src;
  src << "#pragma unroll\n      for (int e = 0; e < kE; ++e) {\n";
  src << "        const I i0 = base + ((I)e * kT + threadIdx.x) * kV;\n";
  if (!sched_.plane) src << coords_at("i0", "        ");
  for (size_t o = 0; o < pipe_.stored.size(); ++o)
    if (pipe_.dtype == DType::kF32) src << "        pack_t w_p" << o << "; float* w_o" << o << " = w_p" << o << ".v;\n";
    else src << "        float w_o" << o << "[kV];\n";
  if (sched_.plane) {
    src << "#pragma unroll\n        for (int l = 0; l < kV; ++l) " << point_call(PointMode::kLaneHoisted);
  } else if (need_coords_) {
    // Fast path: the vector stays inside one innermost row, so broadcast
    // values are one load per vector (a vector load when aligned).
    src << "        if (c[0] + kV <= d0) {\n" << hoisted_broadcasts();
    src << "#pragma unroll\n          for (int l = 0; l < kV; ++l) " << point_call(PointMode::kLaneHoisted);
    src << "        } else {\n";
    src << "#pragma unroll\n          for (int l = 0; l < kV; ++l) {\n";
    src << "            " << point_call(PointMode::kLane);
    src << advance("            ");
    src << "          }\n        }\n";
  } else {
    src << "#pragma unroll\n        for (int l = 0; l < kV; ++l) " << point_call(PointMode::kLane);
  }
  for (size_t o = 0; o < pipe_.stored.size(); ++o) src << store_vector(o, "        ");
  src << "      }\n";
  return src.str();
}

// The broadcast inputs' values of a vector inside one innermost row: a
// vector (aligned or lane by lane) for one that varies along it, else one
// value.
std::string PointwiseKernelPrinter::hoisted_broadcasts() const {
  std::ostringstream src;
  for (const auto& in : cand_.inputs) {
    if (in.full()) continue;
    const std::string idx = bcast_index(in);
    if (in.axes.front() == 0) {
      src << "          pack_t b_" << in.name << ";\n";
      src << "          { const I bi = " << idx << ";\n";
      src << "            if (bi % kV == 0) b_" << in.name << " = *reinterpret_cast<const pack_t*>(g_" << in.name
          << " + bi);\n";
      src << "            else {\n#pragma unroll\n              for (int l = 0; l < kV; ++l) b_" << in.name << ".v[l] = g_"
          << in.name << "[bi + l]; } }\n";
    } else {
      src << "          const " << st_ << " b_" << in.name << " = g_" << in.name << "[" << idx << "];\n";
    }
  }
  return src.str();
}

// The elements past the whole vectors: the domain's last tile (flat), or a
// plane's last tile or a plane that does not start on a vector.
std::string PointwiseKernelPrinter::tail() const {
  std::ostringstream src;
  src << "    } else {\n";
  if (sched_.plane) {
    src << "      const I end = base + (d0 - t0 < kTile ? d0 - t0 : kTile);\n";
    src << "      for (I i = base + threadIdx.x; i < end; i += kT) {\n";
  } else {
    src << "      for (I i = base + threadIdx.x; i < n; i += kT) {\n";
    src << coords_at("i", "        ");
  }
  src << "        " << point_call(PointMode::kScalarTail);
  src << "      }\n    }\n  }\n}\n\n";
  return src.str();
}

// The entry picks the body's index type from n.
std::string PointwiseKernelPrinter::entry_function(const KernelParams& params) const {
  std::ostringstream src;
  src << "extern \"C\" __global__ void __launch_bounds__(" << sched_.threads
      << (sched_.occ ? ", FK_MIN_BLOCKS(" + std::to_string(sched_.threads) + ")" : std::string()) << ") " << entry_
      << "(" << params.entry << ") {\n";
  src << "  if (n <= 0x7fffffffLL) {\n    typedef unsigned int I;\n    fk_body<I>(" << params.body_args << ");\n";
  src << "  } else {\n    typedef long long I;\n    fk_body<I>(" << params.body_args << ");\n  }\n}\n";
  return src.str();
}

// The coordinates of flat index `idx`, when broadcast inputs need them.
std::string PointwiseKernelPrinter::coords_at(const std::string& idx, const std::string& indent) const {
  if (!need_coords_) return std::string();
  std::string extents;
  for (size_t a = 0; a + 1 < k_; ++a) {
    const std::string n = std::to_string(a);
    extents += ", d" + n + ", m" + n + ", s" + n;
  }
  return indent + "I c[" + std::to_string(k_) + "];\n" + indent + "fk_coords<I>(" + idx + extents + ", c);\n";
}

// The coordinates of the next element.
std::string PointwiseKernelPrinter::advance(const std::string& indent) const {
  std::string s = indent + "if (++c[0] == d0) { c[0] = 0;";
  if (k_ == 3) s += " if (++c[1] == d1) { c[1] = 0; ++c[2]; }";
  else if (k_ == 4) s += " if (++c[1] == d1) { c[1] = 0; if (++c[2] == d2) { c[2] = 0; ++c[3]; } }";
  else s += " ++c[1];";
  return s + " }\n";
}

// A broadcast input's dense index: c[a0] + d[a0] * (c[a1] + d[a1] * c[a2]).
std::string PointwiseKernelPrinter::bcast_index(const InputSpec& in) const {
  std::string s = "c[" + std::to_string(in.axes.back()) + "]";
  for (size_t j = in.axes.size() - 1; j-- > 0;)
    s = "c[" + std::to_string(in.axes[j]) + "] + d" + std::to_string(in.axes[j]) + " * (" + s + ")";
  return s;
}

// Output o's vector, rounded to the storage type.
std::string PointwiseKernelPrinter::store_vector(size_t o, const std::string& indent) const {
  const std::string n = std::to_string(o), dst = "g_o" + n + " + i0";
  // f32 results were computed into the pack itself (w_p): no copy.
  if (pipe_.dtype == DType::kF32) return indent + "*reinterpret_cast<pack_t*>(" + dst + ") = w_p" + n + ";\n";
  return print_rounded_vector_store(pipe_.dtype, sched_.vec, indent, "w_o" + n, dst, "j");
}

std::string PointwiseKernelPrinter::point_call(PointMode mode) const {
  const bool lane = mode != PointMode::kScalarTail;
  std::string a;
  for (const auto& in : cand_.inputs) {
    std::string v;
    if (in.full()) v = lane ? "r_" + in.name + "[e].v[l]" : "g_" + in.name + "[i]";
    else if (mode == PointMode::kLaneHoisted || sched_.plane) v = in.axes.front() == 0 ? "b_" + in.name + ".v[l]" : "b_" + in.name;
    else v = "g_" + in.name + "[" + bcast_index(in) + "]";
    a += (a.empty() ? "" : ", ") + v;
  }
  for (const auto& p : cand_.params) a += (a.empty() ? "" : ", ") + halide_param_name(p.name);
  for (size_t o = 0; o < pipe_.stored.size(); ++o)
    a += (a.empty() ? "" : ", ") + ((lane ? "w_o" : "t_o") + std::to_string(o) + (lane ? "[l]" : ""));
  std::string s = "fk_point(" + a + ");";
  if (!lane)  // scalar tail: declare the temporaries, store rounded
    for (size_t o = pipe_.stored.size(); o-- > 0;) {
      const std::string n = std::to_string(o);
      s = "float t_o" + n + "; " + s + " g_o" + n + "[i] = " + round_one_fn(pipe_.dtype) + "(t_o" + n + ");";
    }
  return s + "\n";
}

}  // namespace

PrintedKernel print_pointwise_kernel(const FusionCandidate& cand, const Pipeline& pipe, const Config& config,
                                     const std::string& entry) {
  return PointwiseKernelPrinter(cand, pipe, config, entry).print();
}

}  // namespace fusekit
