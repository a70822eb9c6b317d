// The GPU side of GEMM tuning: builds a candidate's schedule space from
// cuBLASLt's heuristic (top-k algorithms under each workspace limit, for the
// fused epilogue where it maps and for the plain GEMM of the tail path,
// crossed with the tail kernel's pointwise schedules), verifies every point
// against the CPU reference (rows at both ends of the output), and times
// them in interleaved rounds over rotated copies of the tensors (together
// larger than L2), CUDA events around blocks of calls. A second pass walks
// cuBLASLt's algorithm space beyond the heuristic (algo_search.h) and
// times those configurations in the same rounds as the first pass's
// contenders.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "generator/cublaslt/algo_search.h"
#include "generator/cublaslt/epilogue_mapping.h"
#include "generator/cublaslt/gemm_points.h"

namespace fusekit {

struct GemmRaceOptions {
  int top_k = 8;                                          // algorithms asked of the heuristic (<= 8)
  std::vector<size_t> workspaces = {size_t{32} << 20, 0}; // the first is the reference (rank 0 is its first answer)
  int tail_schedules = 4;                                 // of the pointwise template's seeds
  // Configurations of cuBLASLt's algorithm space timed per plan (fused,
  // tail) beyond the heuristic's answers, the tail ones with the fastest
  // tail schedule of the first pass; 0 races the heuristic's answers only.
  int space_points = 48;
  AlgoSpaceOptions space;
  int rounds = 7;                                         // timing blocks per point
  double block_us = 2000;                                 // aimed time of one block of calls
  uint64_t seed = 1;
};

struct GemmRace {
  std::vector<GemmPoint> points;
  std::vector<MeasureResult> results;
  int winner = -1;           // choose_gemm_winner
  int heuristic_first = -1;  // cuBLASLt's first answer: fused rank 0, else the tail's rank 0 with its best schedule
  int best_heuristic = -1;   // the fastest of the heuristic's answers (rank < kGemmSpaceRank)
  AlgoSearchStats space[2];  // the algorithm-space walk of the fused plan [0] and of the tail's GEMM [1]
  int space_timed[2] = {0, 0};
};

class GemmRacer {
 public:
  virtual ~GemmRacer() = default;
  virtual const DeviceInfo& device() const = 0;
  virtual const LtEpilogueMapping& mapping() const = 0;
  virtual GemmRace race(const GemmDims& dims) = 0;
};

// Opens device 0 and cuBLASLt, builds the reference and the tail kernels for
// `arch` (the device's). UserError when no GPU or no cuBLASLt is usable.
std::unique_ptr<GemmRacer> make_gemm_racer(const GemmCandidate& candidate, DType dtype, const GemmRaceOptions& options);

}  // namespace fusekit
