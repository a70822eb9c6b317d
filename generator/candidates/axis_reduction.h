// Reductions over named domain axes (general layouts): the Halide Funcs of
// one AxisReduction, built from its body over the whole domain.
#pragma once

#include <string>
#include <vector>

#include "generator/candidates/fusion_candidate.h"

namespace fusekit {

// func(kept) = `kind` over the `reduced` axes of `value` (an Expr over
// `vars`, every domain var innermost first). `extents[a]` is axis a's
// extent; `f64`: accumulate in double (the CPU reference). Funcs are named
// with `index` (fk_ab<i>, fk_at<i>, fk_ared<i>) so kernels are stable.
AxisReduction make_axis_reduction(Reduction kind, const Halide::Expr& value, const std::vector<int>& reduced,
                                  const std::vector<int>& kept, const std::vector<Halide::Var>& vars,
                                  const std::vector<Halide::Expr>& extents, bool f64, size_t index);

// Each domain axis's extent, from the first input indexed by it (an
// undefined Expr for an axis no input has).
std::vector<Halide::Expr> axis_extents(const FusionCandidate& candidate, const std::vector<Halide::ImageParam>& inputs,
                                       size_t axes);

// Per input, a Func reading a permuted input with each coordinate clamped
// to its extent (fk_pin<i>); undefined for inputs in domain order.
std::vector<Halide::Func> permuted_reads(const FusionCandidate& candidate, const std::vector<Halide::ImageParam>& inputs);

// The axes' names joined by `sep` ("hw,n").
std::string axis_list(Layout layout, const std::vector<int>& axes, const char* sep = ",");

}  // namespace fusekit
