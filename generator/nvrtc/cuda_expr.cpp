// CUDA C printing shared by the NVRTC printers: Halide Exprs as CUDA C
// expressions (ExprPrinter), the device prelude, load-hint helpers and the
// rounded vector store.
#include "generator/nvrtc/cuda_expr.h"


#include <algorithm>
#include <cmath>
#include <map>
#include <cstdio>
#include <sstream>

#include "common/errors.h"

#include "schedules/arch_limits.h"

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

}  // namespace fusekit
