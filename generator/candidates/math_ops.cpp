#include "generator/candidates/math_ops.h"

#include <cmath>

namespace fusekit {

using Halide::Expr;

Expr fk_relu(const Expr& x) { return Halide::max(x, 0.0f); }
Expr fk_sigmoid(const Expr& x) { return 1.0f / (1.0f + Halide::exp(-x)); }
Expr fk_silu(const Expr& x) { return x * fk_sigmoid(x); }
Expr fk_erf(const Expr& x) {
  // The C library's erff as a pure extern call, rather than Halide::erf's
  // inline polynomial (which evaluates both branches of a select and a
  // division): libm on the CPU reference, CUDA's erff in printed kernels.
  // erff takes a float: a row reduction's double-precision reference passes
  // doubles (cast<float> of an f32 Expr is that Expr, so f32 pipelines and
  // their keys are unchanged).
  return Halide::Internal::Call::make(Halide::Float(32), "erff", {Halide::cast<float>(x)},
                                      Halide::Internal::Call::PureExtern);
}
Expr fk_gelu(const Expr& x) { return 0.5f * x * (1.0f + fk_erf(x * 0.70710678118654752f)); }
Expr fk_gelu_tanh(const Expr& x) {
  return 0.5f * x * (1.0f + Halide::tanh(0.79788456080286536f * (x + 0.044715f * x * x * x)));
}
Expr fk_rsqrt(const Expr& x) { return 1.0f / Halide::sqrt(x); }

Expr fk_pow(const Expr& x, const Expr& e) {
  constexpr int kMaxProduct = 8;  // larger powers through pow
  const Expr folded = Halide::Internal::simplify(e);  // -3 arrives as 0 - 3
  const double* c = Halide::Internal::as_const_float(folded);
  if (!c || *c != std::trunc(*c) || std::abs(*c) > kMaxProduct) return Halide::pow(x, e);
  const Expr one = Halide::cast(x.type(), 1.0f);
  Expr product = one;
  for (int k = static_cast<int>(std::abs(*c)); k > 0; --k) product = product.same_as(one) ? x : product * x;
  return *c < 0 ? one / product : product;
}

}  // namespace fusekit
