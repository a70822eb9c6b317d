// GEMM entries: out[M, N] = epilogue(A[M, K] @ B), row-major, through
// cuBLASLt. B is [K, N], or [N, K] as PyTorch's Linear stores its weight.
// A GemmPlan is what a tuning record keeps of the winner: the cuBLASLt
// epilogue it uses (DEFAULT when a fusekit tail kernel does the epilogue),
// whether a residual enters as C (beta = 1), and the chosen algorithm as
// cuBLASLt's opaque blob with the cuBLASLt version that made it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "fusekit/dtype.h"
#include "fusekit/status.h"

namespace fusekit {

// The cuBLASLt epilogues fusekit maps to; values are CUBLASLT_EPILOGUE_*'s.
enum class GemmEpilogue : uint32_t {
  kDefault = 1,
  kRelu = 2,
  kBias = 4,
  kReluBias = 6,
  kGelu = 32,      // cuBLASLt's GELU is the tanh approximation
  kGeluBias = 36,
};
// "default", "relu", "bias", "relu_bias", "gelu_tanh", "gelu_tanh_bias".
const char* gemm_epilogue_name(GemmEpilogue epilogue);
// Inverse of gemm_epilogue_name; false for anything else.
bool parse_gemm_epilogue(const std::string& text, GemmEpilogue* out);
// Whether the epilogue reads a per-column bias vector.
bool gemm_epilogue_has_bias(GemmEpilogue epilogue);

// Extents of one call.
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  bool b_transposed = true;  // B stored [N, K] (nn.Linear) rather than [K, N]
  DType dtype = DType::kF16; // storage of A, B, bias, residual and out; f32 accumulation

  bool operator==(const GemmShape& o) const {
    return m == o.m && n == o.n && k == o.k && b_transposed == o.b_transposed && dtype == o.dtype;
  }
};

// cublasLtMatmulAlgo_t's opaque words.
struct GemmAlgo {
  uint64_t data[8] = {};
};
// 128 lowercase hex digits, word 0 first, each word most significant digit first.
std::string gemm_algo_hex(const GemmAlgo& algo);
// Inverse of gemm_algo_hex; kInvalidArgument naming the problem otherwise.
Status parse_gemm_algo_hex(const std::string& text, GemmAlgo* algo);

struct GemmPlan {
  GemmEpilogue epilogue = GemmEpilogue::kDefault;
  bool residual = false;          // C = residual [M, N], beta = 1
  bool has_algo = false;          // false: the runtime takes cuBLASLt's first heuristic answer
  GemmAlgo algo;
  size_t workspace_bytes = 0;     // the algorithm's workspace (at most the session's)
  size_t cublaslt_version = 0;    // cublasLtGetVersion() the algorithm was chosen with
  GemmShape tuned;                // the shape it was chosen for
};

// A plan as one line of `key=value` words, as records and manifests keep it:
// "ep=gelu_tanh_bias res=0 shape=128x3072x768 bt=1 dtype=f16 ws=1048576
// cublaslt=130100 algo=<128 hex>" ("algo=heuristic" when it has none).
std::string gemm_plan_text(const GemmPlan& plan);
// Inverse of gemm_plan_text; kInvalidArgument naming the bad word.
Status parse_gemm_plan_text(const std::string& text, GemmPlan* plan);

// Device pointers of one call; bias and residual are 0 when the plan has none.
struct GemmOperands {
  uint64_t a = 0, b = 0, bias = 0, residual = 0, out = 0;
};

// The alignment cuBLASLt's fast kernels assume and fusekit requires of every
// operand pointer (the stored algorithms were chosen for it).
constexpr int kGemmPointerAlignment = 16;

// kInvalidArgument for a call the plan cannot run: extents below 1 or past
// cuBLASLt's int32 leading dimensions, null or misaligned pointers, a bias or
// residual the plan does not expect (or lacks), rows whose leading dimension
// is not a multiple of 16 bytes. The message names the value and the fix.
Status check_gemm_call(const GemmShape& shape, const GemmPlan& plan, const GemmOperands& ops);

}  // namespace fusekit
