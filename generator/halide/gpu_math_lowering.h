// Calls that Halide 14's CUDA backend leaves as unresolved externs in the
// PTX (it links libdevice only for the math it maps itself), rewritten as
// math inside the pipeline before scheduling: erff as a rational
// approximation over Halide's own exp.
#pragma once

#include <Halide.h>

namespace fusekit {

// Rewrites every such call in `f`'s definitions (pure and updates).
void lower_gpu_math_calls(Halide::Func f);

// erf(x) to about 2e-7 absolute (Abramowitz and Stegun 7.1.26, odd symmetry).
Halide::Expr erf_approximation(const Halide::Expr& x);

}  // namespace fusekit
