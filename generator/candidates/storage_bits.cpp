#include "generator/candidates/storage_bits.h"

#include "common/errors.h"

namespace fusekit {
namespace {

using Halide::Expr;
using Halide::select;
using Halide::UInt;

Expr u32(uint32_t v) { return Halide::Internal::make_const(UInt(32), v); }
Expr f32_bits(const Expr& f) { return Halide::reinterpret(UInt(32), f); }
Expr bits_f32(const Expr& u) { return Halide::reinterpret(Halide::Float(32), u); }

Expr widen_bf16(const Expr& bits) { return bits_f32(Halide::cast(UInt(32), bits) << 16); }

Expr widen_f16(const Expr& bits) {
  const Expr h = Halide::cast(UInt(32), bits);
  const Expr sign = (h & u32(0x8000)) << 16;
  const Expr exp = (h >> 10) & u32(0x1f);
  const Expr mant = h & u32(0x3ff);
  // Normal: rebias the exponent by 127 - 15; inf and NaN keep their mantissa.
  const Expr normal = ((h & u32(0x7fff)) << 13) + u32(112u << 23);
  const Expr special = u32(0x7f800000) | (mant << 13);
  // Subnormal (and zero): mant * 2^-24 is exact in f32.
  const Expr subnormal = f32_bits(Halide::cast<float>(mant) * (1.0f / 16777216.0f));
  const Expr magnitude = select(exp == 0, subnormal, select(exp == 31, special, normal));
  return bits_f32(magnitude | sign);
}

Expr round_bf16(const Expr& value) {
  const Expr u = f32_bits(value);
  const Expr is_nan = (u & u32(0x7fffffff)) > u32(0x7f800000);
  const Expr rounded = (u + (u32(0x7fff) + ((u >> 16) & u32(1)))) >> 16;
  return Halide::cast(UInt(16), select(is_nan, (u >> 16) | u32(0x40), rounded));
}

// Round `m` right by `s` bits (1 <= s <= 31), ties to even.
Expr shift_round_even(const Expr& m, const Expr& s) {
  const Expr r = m >> s;
  const Expr rest = m & ((u32(1) << s) - u32(1));
  const Expr half = u32(1) << (s - u32(1));
  const Expr up = rest > half || (rest == half && (r & u32(1)) == u32(1));
  return r + select(up, u32(1), u32(0));
}

Expr round_f16(const Expr& value) {
  const Expr u = f32_bits(value);
  const Expr sign = (u >> 16) & u32(0x8000);
  const Expr a = u & u32(0x7fffffff);
  const Expr e = a >> 23;
  // Normal f16 (2^-14 <= |v| < 65520): drop 13 mantissa bits, rebias by
  // 127 - 15; a carry out of the mantissa lands in the exponent as it should.
  const Expr normal = shift_round_even(a - u32(112u << 23), u32(13));
  // Subnormal f16: the mantissa with its hidden bit, in units of 2^-24.
  const Expr m = (a & u32(0x7fffff)) | u32(0x800000);
  const Expr sub_shift = Halide::min(u32(126) - Halide::min(e, u32(125)), u32(31));
  const Expr subnormal = select(e < u32(102), u32(0), shift_round_even(m, sub_shift));
  const Expr nan = u32(0x7e00);
  const Expr magnitude = select(a > u32(0x7f800000), nan,
                                select(a >= u32(0x477ff000), u32(0x7c00),
                                       select(a >= u32(0x38800000), normal, subnormal)));
  return Halide::cast(UInt(16), magnitude | sign);
}

}  // namespace

Expr widen_storage_bits(const Expr& bits, DType dtype) {
  switch (dtype) {
    case DType::kBF16: return widen_bf16(bits);
    case DType::kF16: return widen_f16(bits);
    case DType::kF32: break;
  }
  throw InternalError("widen_storage_bits: f32 is stored as f32");
}

Expr round_to_storage_bits(const Expr& value, DType dtype) {
  switch (dtype) {
    case DType::kBF16: return round_bf16(value);
    case DType::kF16: return round_f16(value);
    case DType::kF32: break;
  }
  throw InternalError("round_to_storage_bits: f32 is stored as f32");
}

}  // namespace fusekit
