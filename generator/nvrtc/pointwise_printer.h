// Prints CUDA C++ for a scheduled pointwise candidate from the pipeline's own
// Halide Exprs (no second copy of any pattern's math).
#pragma once

#include <string>

#include "generator/candidates/fusion_candidate.h"
#include "generator/nvrtc/cuda_expr.h"
#include "schedules/param_space.h"

namespace fusekit {

// `config` follows PointwiseTemplate (threads, vec, ept, grid).
PrintedKernel print_pointwise_kernel(const FusionCandidate& candidate, const Pipeline& pipeline,
                                     const Config& config, const std::string& entry);

}  // namespace fusekit
