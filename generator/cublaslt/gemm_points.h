// The schedule space of a GEMM candidate and what the tuner keeps of it.
// Two backends compete under one key: cuBLASLt with its fused epilogue
// (where map_to_cublaslt allows), and a plain cuBLASLt GEMM followed by a
// fusekit tail kernel for the whole epilogue. Each point is one of the
// algorithms cuBLASLt's heuristic proposes (top-k, under a workspace limit),
// and for the tail one of its pointwise schedules.
#pragma once

#include <string>
#include <vector>

#include "fusekit/gemm.h"
#include "generator/candidates/gemm_candidate.h"
#include "search/interfaces.h"
#include "search/tuner.h"
#include "tunedb/record.h"

namespace fusekit {

constexpr int kGemmSpaceRank = 1000;

struct GemmPoint {
  bool tail = false;      // plain GEMM(s) then the tail kernel; false: cuBLASLt's fused epilogue
  // Where the algorithm came from: w * 100 + i for the i-th heuristic answer
  // under the w-th workspace limit (0: the answer PyTorch takes), 1000 + j
  // for the j-th configuration of the algorithm-space walk.
  int rank = 0;
  GemmPlan plan;          // epilogue (kDefault for a tail), algorithm, workspace
  Config tail_config;     // the tail kernel's pointwise schedule (tail only)
};

// Record backends: "cublaslt" (fused) and "cublaslt+nvrtc" (tail).
const char* gemm_point_backend(const GemmPoint& point);
// A record's params: "rank=R " + gemm_plan_text, then " tail: " + the tail
// config's text for a tail point.
std::string gemm_point_params(const GemmPoint& point);
// Inverse of gemm_point_params with the record's backend; UserError naming
// the bad part.
GemmPoint parse_gemm_point(const std::string& backend, const std::string& params);

// The point to keep: the fastest verified one, except that cuBLASLt's
// first answer (rank 0, same backend and tail schedule) stays where the
// fastest beats it by no more than the run's spread (the wider p20-p80 band
// of the two). `results[i]` is points[i]'s. -1 when nothing verified.
int choose_gemm_winner(const std::vector<GemmPoint>& points, const std::vector<MeasureResult>& results);

// Records' shape bucket: the power-of-two ceiling of M with N and K exact
// ("m<=2^7 n=3072 k=768"): models fix N and K, tokens vary M.
std::string gemm_shape_bucket(const GemmDims& dims);

// One record per measured point (failures included), stamped with the
// device, the provenance and the cuBLASLt version (joined to cuda_version).
std::vector<TuningRecord> gemm_records(const GemmCandidate& candidate, DType dtype, const GemmDims& dims,
                                       const std::vector<GemmPoint>& points, const std::vector<MeasureResult>& results,
                                       const DeviceInfo& device, const Provenance& provenance);

}  // namespace fusekit
