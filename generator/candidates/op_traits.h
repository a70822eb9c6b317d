// What a candidate offers the schedule space, found in its pipeline.
#pragma once

#include <vector>

#include "generator/candidates/fusion_candidate.h"

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

}  // namespace fusekit
