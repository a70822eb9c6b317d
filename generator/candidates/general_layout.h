// A general-layout candidate (fusion_candidate.h) as its schedule template
// sees it: its traits for the space, and its pipeline's Funcs for
// GeneralLayoutTemplate::apply_halide.
#pragma once

#include "generator/candidates/fusion_candidate.h"
#include "schedules/general_layout_template.h"

namespace fusekit {

// The axes threads and blocks map onto: the reductions' kept axes (they
// must agree; UserError naming them otherwise), else the output axes.
std::vector<int> general_thread_axes(const FusionCandidate& candidate, const Pipeline& pipeline);

GeneralTraits general_traits(const FusionCandidate& candidate, DType dtype);

// The pipeline's output, vars, reductions and permuted inputs.
GeneralLayoutShape general_layout_shape(const FusionCandidate& candidate, const Pipeline& pipeline);

}  // namespace fusekit
