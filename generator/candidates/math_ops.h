// Activation functions as f32 Halide Exprs, shared by the catalog and the
// expression language so that both spell each op the same way.
#pragma once

#include <Halide.h>

namespace fusekit {

Halide::Expr fk_relu(const Halide::Expr& x);
Halide::Expr fk_sigmoid(const Halide::Expr& x);
Halide::Expr fk_silu(const Halide::Expr& x);
// erf through the C library's erff (a pure extern call in the IR).
Halide::Expr fk_erf(const Halide::Expr& x);
// Exact GELU, 0.5 x (1 + erf(x / sqrt 2)) (PyTorch's default).
Halide::Expr fk_gelu(const Halide::Expr& x);
// Tanh approximation, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
Halide::Expr fk_gelu_tanh(const Halide::Expr& x);
Halide::Expr fk_rsqrt(const Halide::Expr& x);
// x^e for a constant e: small integer powers as products, so that a negative
// base keeps its sign (a fast-math powf computes exp2(e log2 x), NaN for x < 0,
// and exporters write the variance of layernorm as Pow(x - mean, 2)).
Halide::Expr fk_pow(const Halide::Expr& x, const Halide::Expr& e);

}  // namespace fusekit
