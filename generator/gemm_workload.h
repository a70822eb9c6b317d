// The Workload of a GEMM candidate at one dtype: shapes {N, M, K}, the CPU
// reference (instantiate_gemm with f64 products, JIT for the host) and a
// tolerance that widens with K.
#pragma once

#include <memory>

#include "generator/candidates/gemm_candidate.h"
#include "search/workload.h"

namespace fusekit {

// Inputs A, B (, B2), then the epilogue's operands. A and the operands are
// drawn from [-1, 1); B from [-2/sqrt(K), 2/sqrt(K)), so the product stays
// near unit size at any K and the activations see both of their sides.
std::unique_ptr<Workload> make_gemm_workload(const GemmCandidate& candidate, DType dtype);

}  // namespace fusekit
