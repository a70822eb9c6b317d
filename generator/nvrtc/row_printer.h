// CUDA C for row reductions and normalizations (the `rows` layout), printed
// from the pipeline's own Exprs like the pointwise printer. Schedule:
// RowReductionTemplate (threads, rows, vec, cache, fast).
#pragma once

#include <string>

#include "generator/nvrtc/cuda_expr.h"
#include "generator/candidates/fusion_candidate.h"
#include "schedules/param_space.h"

namespace fusekit {

// Launch: block (threads, rows), grid ceil(rows_of_tensor / rows); the
// kernel takes inputs, outputs, scalar parameters, then rows (64-bit) and
// cols (32-bit: launching rows of 2^31 columns or more is a Status).
PrintedKernel print_row_reduction_kernel(const FusionCandidate& candidate, const Pipeline& pipeline,
                                         const Config& config, const std::string& entry);

}  // namespace fusekit
