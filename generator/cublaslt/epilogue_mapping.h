// Which GEMM epilogues cuBLASLt computes itself. cuBLASLt's fused epilogues
// give D = act(A @ B + beta * C + bias[col]) with act none, ReLU or the tanh
// GELU; a candidate maps to one only when its epilogue is structurally that
// expression (the same Halide Expr as the template written in the expression
// language). An erf-GELU (BERT's) never maps: cuBLASLt's GELU is the tanh
// approximation, a numerics change fusekit does not make silently.
#pragma once

#include <string>

#include "fusekit/gemm.h"
#include "generator/candidates/gemm_candidate.h"

namespace fusekit {

struct LtEpilogueMapping {
  bool fused = false;                 // cuBLASLt computes exactly this epilogue
  GemmEpilogue epilogue = GemmEpilogue::kDefault;
  int bias_input = -1;                // epilogue input index of the per-column bias
  int residual_input = -1;            // epilogue input index of the full-shape residual (C, beta = 1)
  std::string reason;                 // why it does not map (fused == false)
};

LtEpilogueMapping map_to_cublaslt(const GemmCandidate& candidate);

}  // namespace fusekit
