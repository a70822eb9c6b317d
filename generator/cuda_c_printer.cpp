// Map:
//   print_cuda_expr         Halide Expr -> CUDA C expression (+ hoisted lets)
//   print_pointwise_kernel  prelude, fk_point() from the Exprs, the kernel
//                           skeleton for the schedule, and the launch description
#include "generator/cuda_c_printer.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <cstdio>
#include <sstream>

#include "common/errors.h"
#include "generator/row_reduction_printer.h"
#include "schedules/pointwise_template.h"

namespace fusekit {
namespace {

using namespace Halide;
using namespace Halide::Internal;

std::string c_type(const Type& t) {
  if (t.is_bfloat() || (t.is_float() && t.bits() == 16)) return "unsigned short";
  if (t.is_float()) return t.bits() == 64 ? "double" : "float";
  if (t.is_bool()) return "bool";
  const bool u = t.is_uint();
  switch (t.bits()) {
    case 8: return u ? "unsigned char" : "signed char";
    case 16: return u ? "unsigned short" : "short";
    case 32: return u ? "unsigned int" : "int";
    case 64: return u ? "unsigned long long" : "long long";
  }
  throw UserError("CUDA C printer: unsupported type " + std::to_string(t.bits()) + "-bit");
}

std::string float_literal(double v) {
  if (std::isnan(v)) return "__int_as_float(0x7fc00000)";
  if (std::isinf(v)) return v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s + "f";
}

std::string sanitize(const std::string& prefix, const std::string& name) {
  std::string s = prefix;
  for (char c : name) s += (std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return s;
}

class ExprPrinter {
 public:
  ExprPrinter(std::string* statements, std::string prefix, const std::map<std::string, std::string>* funcs = nullptr)
      : stmts_(statements), prefix_(std::move(prefix)), funcs_(funcs) {}

  std::string print(const Expr& e) {
    const Type t = e.type();
    if (const auto* op = e.as<IntImm>()) return t.bits() == 64 ? std::to_string(op->value) + "LL" : std::to_string(op->value);
    if (const auto* op = e.as<UIntImm>()) return t.is_bool() ? (op->value ? "true" : "false") : std::to_string(op->value) + "u";
    if (const auto* op = e.as<FloatImm>()) return float_literal(op->value);
    if (const auto* op = e.as<Variable>()) {
      if (op->param.defined()) return op->name;  // "p_alpha"
      return sanitize(prefix_, op->name);
    }
    if (const auto* op = e.as<Cast>()) return cast(op->type, op->value);
    if (const auto* op = e.as<Add>()) return bin(op->a, "+", op->b);
    if (const auto* op = e.as<Sub>()) return bin(op->a, "-", op->b);
    if (const auto* op = e.as<Mul>()) return bin(op->a, "*", op->b);
    if (const auto* op = e.as<Div>()) {
      if (t.is_float()) return bin(op->a, "/", op->b);
      return "fk_floor_div(" + print(op->a) + ", " + print(op->b) + ")";
    }
    if (const auto* op = e.as<Mod>()) {
      if (t.is_float()) return "fk_floor_modf(" + print(op->a) + ", " + print(op->b) + ")";
      return "fk_floor_mod(" + print(op->a) + ", " + print(op->b) + ")";
    }
    if (const auto* op = e.as<Min>()) return (t.is_float() ? "fminf(" : "min(") + print(op->a) + ", " + print(op->b) + ")";
    if (const auto* op = e.as<Max>()) return (t.is_float() ? "fmaxf(" : "max(") + print(op->a) + ", " + print(op->b) + ")";
    if (const auto* op = e.as<EQ>()) return bin(op->a, "==", op->b);
    if (const auto* op = e.as<NE>()) return bin(op->a, "!=", op->b);
    if (const auto* op = e.as<LT>()) return bin(op->a, "<", op->b);
    if (const auto* op = e.as<LE>()) return bin(op->a, "<=", op->b);
    if (const auto* op = e.as<GT>()) return bin(op->a, ">", op->b);
    if (const auto* op = e.as<GE>()) return bin(op->a, ">=", op->b);
    if (const auto* op = e.as<And>()) return bin(op->a, "&&", op->b);
    if (const auto* op = e.as<Or>()) return bin(op->a, "||", op->b);
    if (const auto* op = e.as<Not>()) return "(!" + print(op->a) + ")";
    if (const auto* op = e.as<Select>())
      return "(" + print(op->condition) + " ? " + print(op->true_value) + " : " + print(op->false_value) + ")";
    if (const auto* op = e.as<Let>()) {
      const std::string name = sanitize(prefix_, op->name);
      *stmts_ += "  const " + c_type(op->value.type()) + " " + name + " = " + print(op->value) + ";\n";
      return print(op->body);
    }
    if (const auto* op = e.as<Call>()) return call(op);
    std::ostringstream s;
    s << e;
    throw UserError("CUDA C printer: unsupported expression " + s.str());
  }

 private:
  std::string bin(const Expr& a, const char* op, const Expr& b) { return "(" + print(a) + " " + op + " " + print(b) + ")"; }

  std::string cast(const Type& to, const Expr& v) {
    const Type from = v.type();
    const std::string x = print(v);
    const bool from_h = from.is_float() && from.bits() == 16 && !from.is_bfloat();
    const bool to_h = to.is_float() && to.bits() == 16 && !to.is_bfloat();
    if (to == Float(32) && from_h) return "fk_h2f(" + x + ")";
    if (to == Float(32) && from.is_bfloat()) return "fk_bf2f(" + x + ")";
    if (to_h && from == Float(32)) return "fk_f2h(" + x + ")";
    if (to.is_bfloat() && from == Float(32)) return "fk_f2bf(" + x + ")";
    if (to_h || to.is_bfloat() || from_h || from.is_bfloat())
      throw UserError("CUDA C printer: unsupported 16-bit float cast");
    return "((" + c_type(to) + ")(" + x + "))";
  }

  std::string call(const Call* op) {
    if (op->call_type == Call::Image) return op->param.defined() ? op->param.name() : op->name;  // "in_x"
    if (op->call_type == Call::Halide && funcs_) {
      auto it = funcs_->find(Function(op->func).name());
      if (it != funcs_->end()) return it->second;
    }
    if (op->call_type == Call::Halide) {
      // A call to another Func (ImageParams wrap theirs as "in_x_im"): inline
      // its definition with the call's arguments substituted.
      Function f(op->func);
      if (f.has_update_definition()) throw UserError("CUDA C printer: Func '" + f.name() + "' has updates");
      Expr body = f.values().at(op->value_index);
      for (size_t i = 0; i < f.args().size(); ++i) body = substitute(f.args()[i], op->args.at(i), body);
      return print(body);
    }
    auto args = [&](size_t i) { return print(op->args.at(i)); };
    if (op->is_intrinsic(Call::abs)) return (op->args[0].type().is_float() ? "fabsf(" : "abs(") + args(0) + ")";
    if (op->is_intrinsic(Call::likely) || op->is_intrinsic(Call::likely_if_innermost) ||
        op->is_intrinsic(Call::promise_clamped) || op->is_intrinsic(Call::unsafe_promise_clamped))
      return args(0);
    if (op->is_intrinsic(Call::if_then_else))
      return "(" + args(0) + " ? " + args(1) + " : " + (op->args.size() > 2 ? args(2) : "0") + ")";
    if (op->is_intrinsic(Call::bitwise_and)) return "(" + args(0) + " & " + args(1) + ")";
    if (op->is_intrinsic(Call::bitwise_or)) return "(" + args(0) + " | " + args(1) + ")";
    if (op->is_intrinsic(Call::bitwise_xor)) return "(" + args(0) + " ^ " + args(1) + ")";
    if (op->is_intrinsic(Call::bitwise_not)) return "(~" + args(0) + ")";
    if (op->is_intrinsic(Call::shift_left)) return "(" + args(0) + " << " + args(1) + ")";
    if (op->is_intrinsic(Call::shift_right)) return "(" + args(0) + " >> " + args(1) + ")";
    if (op->is_intrinsic(Call::reinterpret)) {
      const Type from = op->args[0].type();
      if (op->type == Float(32) && from.bits() == 32) return "__int_as_float((int)(" + args(0) + "))";
      if (from == Float(32) && op->type.is_int()) return "__float_as_int(" + args(0) + ")";
      if (from == Float(32) && op->type.is_uint()) return "__float_as_uint(" + args(0) + ")";
    }
    if (op->call_type == Call::PureExtern && op->name == "erff") return "fk_erf(" + args(0) + ")";
    if (op->call_type == Call::PureExtern && op->name == "tanh_f32") return "fk_tanh(" + args(0) + ")";
    if (op->call_type == Call::PureExtern && op->name.size() > 4 &&
        op->name.compare(op->name.size() - 4, 4, "_f32") == 0) {
      const std::string base = op->name.substr(0, op->name.size() - 4);
      std::string fn;
      if (base == "is_nan") fn = "isnan";
      else if (base == "is_inf") fn = "isinf";
      else if (base == "is_finite") fn = "isfinite";
      else fn = base + "f";  // exp_f32 -> expf, tanh_f32 -> tanhf, ...
      std::string s = fn + "(";
      for (size_t i = 0; i < op->args.size(); ++i) s += (i ? ", " : "") + args(i);
      return s + ")";
    }
    throw UserError("CUDA C printer: unsupported call '" + op->name + "'");
  }

  std::string* stmts_;
  std::string prefix_;
  const std::map<std::string, std::string>* funcs_;
};

const char* kPrelude = R"cuda(// Generated by fusekit. Do not edit.
static __device__ __forceinline__ float fk_h2f(unsigned short h) {
  float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f;
}
static __device__ __forceinline__ unsigned short fk_f2h(float f) {
  unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;
}
static __device__ __forceinline__ float fk_bf2f(unsigned short b) { return __uint_as_float(((unsigned)b) << 16); }
static __device__ __forceinline__ unsigned short fk_f2bf(float f) {
#if __CUDA_ARCH__ >= 800
  unsigned short h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;
#else
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);                                                   // round to nearest even
  return (unsigned short)(u >> 16);
#endif
}
// Two floats to one packed 32-bit word (lo in the low half): one cvt on
// sm_80+, where the scalar form costs a conversion plus a byte permute each.
static __device__ __forceinline__ unsigned fk_f2bf2(float lo, float hi) {
#if __CUDA_ARCH__ >= 800
  unsigned r; asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo)); return r;
#else
  return (unsigned)fk_f2bf(lo) | ((unsigned)fk_f2bf(hi) << 16);
#endif
}
static __device__ __forceinline__ unsigned fk_f2h2(float lo, float hi) {
#if __CUDA_ARCH__ >= 800
  unsigned r; asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo)); return r;
#else
  return (unsigned)fk_f2h(lo) | ((unsigned)fk_f2h(hi) << 16);
#endif
}
// FK_FAST (with --use_fast_math): tanh.approx.f32, one MUFU op, relative
// error about 2^-11; verification decides where that is good enough.
static __device__ __forceinline__ float fk_tanh(float x) {
#if defined(FK_FAST) && __CUDA_ARCH__ >= 750
  float y; asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x)); return y;
#else
  return tanhf(x);
#endif
}
// FK_FAST: erf by Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7) with the
// fast reciprocal and exp, a dozen instructions against erff's branchy
// polynomial; checked against libm's erff like every candidate.
static __device__ __forceinline__ float fk_erf(float x) {
#if defined(FK_FAST)
  const float a = fabsf(x);
  const float t = 1.0f / fmaf(0.3275911f, a, 1.0f);
  const float p =
      t * fmaf(fmaf(fmaf(fmaf(1.061405429f, t, -1.453152027f), t, 1.421413741f), t, -0.284496736f), t, 0.254829592f);
  return copysignf(1.0f - p * __expf(-a * a), x);
#else
  return erff(x);
#endif
}
// Coordinates divide by run-time extents: in the 32-bit body by the host's
// multiply-shift pair (LaunchExpr divmagic/divshift), else by division.
static __device__ __forceinline__ unsigned fk_div(unsigned a, unsigned d, unsigned m, unsigned s) {
  return (unsigned)(((unsigned long long)a * m) >> s);
}
static __device__ __forceinline__ long long fk_div(long long a, long long d, long long, long long) { return a / d; }
template <typename I> static __device__ __forceinline__ I fk_floor_div(I a, I b) {
  I q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <typename I> static __device__ __forceinline__ I fk_floor_mod(I a, I b) { return a - fk_floor_div(a, b) * b; }
static __device__ __forceinline__ float fk_floor_modf(float a, float b) { return a - b * floorf(a / b); }
template <typename T, int N> struct alignas(sizeof(T) * N) fk_pack { T v[N]; };
)cuda";

// Loads with an L2 eviction policy (createpolicy, ld .L2::cache_hint; sm_80+):
// fk_policy<true>() keeps lines (evict_last), fk_policy<false>() drops them
// first (evict_first); fk_ldg_hint loads N elements of T at an aligned
// address, with L1 priority kL1 (0: none, 1: evict_last, 2: evict_first).
// cuda_load_hint_helpers() wraps it in the sm_80 guard.
const char* kLoadHintBody = R"cuda(template <bool kLast>
static __device__ __forceinline__ unsigned long long fk_policy() {
  unsigned long long p;
  if (kLast) asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  else asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}
// N elements of T (4, 8 or 16 bytes) at an aligned address; L1 qualifier Q.
#define FK_LDG_HINT(Q)                                                                           \
  if constexpr (kBytes == 16)                                                                    \
    asm("ld.global" Q ".L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"                       \
        : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3]) : "l"(p), "l"(policy));                 \
  else if constexpr (kBytes == 8)                                                                \
    asm("ld.global" Q ".L2::cache_hint.v2.u32 {%0, %1}, [%2], %3;"                               \
        : "=r"(w[0]), "=r"(w[1]) : "l"(p), "l"(policy));                                         \
  else if constexpr (kBytes == 4)                                                                \
    asm("ld.global" Q ".L2::cache_hint.u32 %0, [%1], %2;" : "=r"(w[0]) : "l"(p), "l"(policy));
template <typename T, int N, int kL1 = 0>
static __device__ __forceinline__ fk_pack<T, N> fk_ldg_hint(const T* p, unsigned long long policy) {
  constexpr int kBytes = sizeof(T) * N;
  fk_pack<T, N> d;
  unsigned w[4];
  if constexpr (kL1 == 1) {
    FK_LDG_HINT(".L1::evict_last")
  } else if constexpr (kL1 == 2) {
    FK_LDG_HINT(".L1::evict_first")
  } else {
    FK_LDG_HINT("")
  }
  if constexpr (kBytes == 4 || kBytes == 8 || kBytes == 16) memcpy(&d, w, kBytes);
  else d = *reinterpret_cast<const fk_pack<T, N>*>(p);
  return d;
}
#undef FK_LDG_HINT
)cuda";

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

std::string print_cuda_expr(const Expr& e, std::string* statements, const std::string& let_prefix,
                            const std::map<std::string, std::string>* func_values) {
  return ExprPrinter(statements, let_prefix, func_values).print(e);
}

const char* cuda_prelude() { return kPrelude; }
std::string cuda_load_hint_helpers(const std::string& more) {
  return std::string("\n#if __CUDA_ARCH__ >= 800\n") + kLoadHintBody + more + "#endif\n";
}

int load_hint(const Config& config) {
  const int64_t hint = config.get_or("hint", 0);
  if (hint < 0 || hint > 2)
    throw UserError("schedule '" + config.to_string() + "' has hint=" + std::to_string(hint) +
                    ": use 0 (plain loads), 1 (evict_first) or 2 (evict_last)");
  return static_cast<int>(hint);
}

const char* round_one_fn(DType dtype) {
  return dtype == DType::kF32 ? "" : dtype == DType::kF16 ? "fk_f2h" : "fk_f2bf";
}
const char* round_pair_fn(DType dtype) { return dtype == DType::kF16 ? "fk_f2h2" : "fk_f2bf2"; }

std::string print_rounded_vector_store(DType dtype, int vec, const std::string& indent, const std::string& values,
                                       const std::string& dst, const std::string& lane) {
  const std::string& l = lane;
  if (dtype == DType::kF32)
    return indent + "{ pack_t q;\n#pragma unroll\n" + indent + "  for (int " + l + " = 0; " + l + " < kV; ++" + l +
           ") q.v[" + l + "] = " + values + "[" + l + "];\n" + indent + "  *reinterpret_cast<pack_t*>(" + dst +
           ") = q; }\n";
  if (vec == 1) return indent + "*(" + dst + ") = " + round_one_fn(dtype) + "(" + values + "[0]);\n";
  return indent + "{ fk_pack<unsigned, kV / 2> q;\n#pragma unroll\n" + indent + "  for (int " + l + " = 0; " + l +
         " < kV / 2; ++" + l + ") q.v[" + l + "] = " + round_pair_fn(dtype) + "(" + values + "[2 * " + l + "], " +
         values + "[2 * " + l + " + 1]);\n" + indent + "  *reinterpret_cast<fk_pack<unsigned, kV / 2>*>(" + dst +
         ") = q; }\n";
}

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
  // resident thread to keep enough bytes in flight: bn_relu bf16 at 64 M
  // elements took 70.9 us at 40 registers (12 blocks of 128 per SM) where
  // Inductor's kernel of the same shape, at 21, took 67.2 (gap probe beb058d).
  const bool occ = config.get_or("occ", 0) == 1;

  // hint=1 and 2 (sm_80+): each full input's vector loads carry an
  // eviction policy: 1 drops the lines first (evict_first in L1 and L2, a
  // read-once stream), 2 keeps them (evict_last in L1 and L2, as Inductor's
  // and the row kernels' hint=2 read a row read once). Broadcast inputs
  // keep plain loads.
  const int hint = load_hint(config);

  std::ostringstream src;
  src << kPrelude;
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
    if (e.type() != Float(32)) throw InternalError("CUDA C printer: output math is not f32");
    e = common_subexpression_elimination(e);
    // Prefix let names per output so hoisted temporaries never collide.
    std::string value = print_cuda_expr(e, &stmts, "o" + std::to_string(o) + "_");
    src << stmts << "  o" << o << " = " << value << ";\n";
  }
  src << "}\n\n";

  // Coordinates of a flat index in the domain, innermost first.
  if (need_coords) {
    src << "template <typename I> static __device__ __forceinline__ void fk_coords(I i";
    for (size_t a = 0; a + 1 < k; ++a) src << ", I e" << a << ", I m" << a << ", I s" << a;
    src << ", I* c) {\n";
    src << "  const I q = fk_div(i, e0, m0, s0); c[0] = i - q * e0;\n";
    if (k == 2) src << "  c[1] = q;\n";
    if (k == 3) src << "  c[2] = fk_div(q, e1, m1, s1); c[1] = q - c[2] * e1;\n";
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
