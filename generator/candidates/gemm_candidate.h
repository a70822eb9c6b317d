// GemmCandidate: out[M, N] = epilogue(A[M, K] @ B) as a Halide algorithm.
//
// The epilogue is a parsed expression over the [rows, cols] = [M, N] domain
// in which `acc` (the f32 product, never rounded to storage) is one more
// full-shape input that the GEMM binds; `acc2` is a second product A @ B2
// with the same A (Llama's gate and up projections). Every other input
// (`b[col]`, a residual `r`, ...) and parameter is the epilogue's own, so
// the expression language needs no GEMM words. The same epilogue candidate
// is what a tail kernel after a plain GEMM computes, with the products as
// its inputs.
#pragma once

#include <Halide.h>

#include <string>
#include <vector>

#include "generator/candidates/fusion_candidate.h"

namespace fusekit {

constexpr const char* kGemmAccumulator = "acc";
constexpr const char* kGemmSecondAccumulator = "acc2";

struct GemmCandidate {
  std::string name;            // "gemm_<hash>" unless given
  std::string description;     // the epilogue's source
  bool b_transposed = true;    // B stored [N, K] (nn.Linear's weight) rather than [K, N]
  int accumulators = 1;        // 2: acc2 = A @ B2 as well
  FusionCandidate epilogue;    // rowcol layout; acc (and acc2) full-shape inputs

  // Indices into epilogue.inputs of the inputs the caller passes (all but
  // the accumulators), in order.
  std::vector<size_t> operand_inputs() const;
  // Index into epilogue.inputs of `acc` / `acc2` (-1 when absent).
  int accumulator_input(int which) const;
};

// Parses `epilogue_source` (the expression language; `acc` names the
// product) into a GEMM candidate. UserError when the epilogue does not read
// `acc` as a full-shape value, reduces along a row, uses NCHW axes, or has
// other than one output.
GemmCandidate make_gemm_candidate(const std::string& epilogue_source, bool b_transposed,
                                  const std::string& name = "");

// "NAME:EXPR" (a command line's --gemm) as a candidate named NAME with B as
// nn.Linear stores it ([N, K]); "NAME:kn:EXPR" for B as [K, N]. UserError
// naming the flag's form otherwise.
GemmCandidate parse_gemm_flag(const std::string& text);

// M, N, K of one problem.
struct GemmDims {
  int64_t m = 0, n = 0, k = 0;
};
// Domain {N, M, K} (innermost first) <-> dims; UserError for extents below 1.
std::vector<int64_t> gemm_domain(const GemmDims& dims);
GemmDims gemm_dims(const std::vector<int64_t>& domain);

// Dims (innermost first) of the call's tensors: A {K, M}, B {K, N} or {N, K}
// (and B2 alike), then the epilogue's operand inputs.
std::vector<std::vector<int64_t>> gemm_input_dims(const GemmCandidate& c, const GemmDims& dims);

// The whole computation as one Halide pipeline at a storage dtype: inputs A,
// B (, B2), then the operand inputs, params as the epilogue's; the products
// summed over an RDom in f32, or in f64 (`f64_products`, the CPU reference).
Pipeline instantiate_gemm(const GemmCandidate& c, DType dtype, bool f64_products);

// "gemm B[N,K] acc=1; " + the epilogue's canonical text: the database key.
std::string gemm_canonical_text(const GemmCandidate& c, DType dtype);

}  // namespace fusekit
