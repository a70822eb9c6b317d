// 16-bit float storage as unsigned bits, for pipelines that must never reach
// Halide's own half-float code generation (Halide 14's CUDA backend aborts on
// vectorized bf16 and f16 with LLVM errors and stack smashing). A buffer of
// uint16 bits is widened to f32 by shifts and reinterpretation and f32 math
// is rounded back to nearest even by integer ops, as a GPU's cvt.rn would.
#pragma once

#include <Halide.h>

#include "fusekit/dtype.h"

namespace fusekit {

// f32 value of `bits` (a UInt(16) Expr) holding an f16 or bf16.
Halide::Expr widen_storage_bits(const Halide::Expr& bits, DType dtype);
// UInt(16) bits of the f16 or bf16 nearest to `value` (f32), ties to even;
// NaN stays NaN, overflow goes to infinity.
Halide::Expr round_to_storage_bits(const Halide::Expr& value, DType dtype);

}  // namespace fusekit
