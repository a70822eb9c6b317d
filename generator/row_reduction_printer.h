// CUDA C for row reductions and normalizations (the `rows` layout), printed
// from the pipeline's own Exprs like the pointwise printer. Schedule:
// RowReductionTemplate (threads, rows, vec, cache, fast).
#pragma once

#include <string>
#include <vector>

#include "generator/cuda_c_printer.h"
#include "generator/fusion_candidate.h"
#include "schedules/param_space.h"

namespace fusekit {

// Consecutive reductions that one combine can finish together (schedule
// parameter onepass=1): the mean of v and the mean or sum of (v - mean)^2
// (layernorm's variance), or the max of v and the sum of exp(v - max)
// (softmax's denominator). `first` indexes the pipeline's reductions; the
// pair is first and first + 1.
struct ReductionPair {
  enum class Kind { kMeanVar, kMaxSumExp };
  size_t first = 0;
  Kind kind = Kind::kMeanVar;
};
std::vector<ReductionPair> find_reduction_pairs(const Pipeline& pipeline);
// What the op offers the schedule space: a row op's weights and pairs, a
// pointwise op's inputs constant over the innermost planes.
OpTraits op_traits(const FusionCandidate& candidate, DType dtype);

// Launch: block (threads, rows), grid ceil(rows_of_tensor / rows); the
// kernel takes inputs, outputs, scalar parameters, then rows (64-bit) and
// cols (32-bit: launching rows of 2^31 columns or more is a Status).
PrintedKernel print_row_reduction_kernel(const FusionCandidate& candidate, const Pipeline& pipeline,
                                         const Config& config, const std::string& entry);

// The NVRTC kernel of any candidate: row reductions or pointwise.
PrintedKernel print_nvrtc_kernel(const FusionCandidate& candidate, const Pipeline& pipeline, const Config& config,
                                 const std::string& entry);

}  // namespace fusekit
