// The GPU half of algo_space.h: asks cuBLASLt for its algorithm ids and
// their capabilities, builds the configurations (the heuristic answers'
// neighbours and the grid), keeps those cublasLtMatmulAlgoCheck accepts
// within the workspace limit, and picks the ones to time.
#pragma once

#include <string>
#include <vector>

#include "fusekit/gemm_launch.h"
#include "generator/cublaslt/algo_space.h"

namespace fusekit {

struct AlgoSearchStats {
  int ids = 0;               // algorithm ids cuBLASLt lists for the dtype (those refusing the epilogue left out)
  size_t built = 0;          // configurations handed to cublasLtMatmulAlgoCheck
  size_t accepted = 0;       // of those, accepted within the workspace limit and not a heuristic answer
  std::string notes;         // what failed on the way, a line each
};

// Up to `budget` configurations to time besides `seeds` (the heuristic's
// answers for this shape and plan). Failures of the walk leave notes and
// fewer configurations, never an exception.
std::vector<GemmHeuristic> search_algo_space(const CublasLt& lt, GemmSessions& sessions, const GemmShape& shape,
                                             const GemmPlan& plan, uint64_t bias, size_t workspace_bytes,
                                             CUstream stream, const std::vector<GemmHeuristic>& seeds,
                                             const AlgoSpaceOptions& options, size_t budget, AlgoSearchStats* stats);

}  // namespace fusekit
