// CUDA C for row reductions and normalizations (the `rows` layout), printed
// from the pipeline's own Exprs like the pointwise printer. Schedule:
// RowReductionTemplate (threads, rows, vec, cache, fast).
#pragma once

#include <string>

#include "generator/cuda_c_printer.h"
#include "generator/fusion_candidate.h"
#include "schedules/param_space.h"

namespace fusekit {

// Launch: block (threads, rows), grid ceil(rows_of_tensor / rows); the
// kernel takes inputs, outputs, scalar parameters, then rows (64-bit) and
// cols (32-bit: launching rows of 2^31 columns or more is a Status).
PrintedKernel print_row_reduction_kernel(const FusionCandidate& candidate, const Pipeline& pipeline,
                                         const Config& config, const std::string& entry);

// The NVRTC kernel of any candidate: row reductions or pointwise.
PrintedKernel print_nvrtc_kernel(const FusionCandidate& candidate, const Pipeline& pipeline, const Config& config,
                                 const std::string& entry);

}  // namespace fusekit
