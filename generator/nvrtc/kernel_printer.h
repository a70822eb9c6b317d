// The NVRTC kernel of any candidate: row reductions or pointwise.
#pragma once

#include <string>

#include "generator/candidates/fusion_candidate.h"
#include "generator/nvrtc/cuda_expr.h"
#include "schedules/param_space.h"

namespace fusekit {

// The NVRTC kernel of any candidate: row reductions or pointwise.
PrintedKernel print_nvrtc_kernel(const FusionCandidate& candidate, const Pipeline& pipeline, const Config& config,
                                 const std::string& entry);

}  // namespace fusekit
