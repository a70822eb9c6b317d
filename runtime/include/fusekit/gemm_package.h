// GEMM entries of a package: a table of tuned GEMM plans beside the kernel
// table, and the dispatcher that runs one call. A fused entry is one
// cublasLtMatmul with cuBLASLt's epilogue; a tail entry is the plain
// product(s) into a scratch buffer, then the package's tail kernel (an
// ordinary pointwise variant of the kernel table) over them and the
// operands. cuBLASLt is loaded at run time (fusekit/cublaslt.h).
//
// Selection, per call: op and dtype, then N and K exactly (the weights'
// extents), then the entry tuned for the nearest power-of-two bucket of M.
// A plan tuned on another arch, for another M, or with another cuBLASLt
// asks cuBLASLt's heuristic instead of its stored algorithm (once per shape
// and stream). Capturable in a CUDA graph once a stream has made one call at
// its largest M (the workspace and the tail's scratch are allocated then).
#pragma once

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// One tuned GEMM entry, as emitted into a package.
typedef struct fusekit_gemm_desc {
  const char* op;              // "bert_up"
  int dtype;                   // 0 f32, 1 f16, 2 bf16
  int sm;                      // arch the plan was tuned on
  int m_log2;                  // tuned for M <= 2^m_log2
  int64_t n, k;                // the weights' extents
  int b_transposed;            // 1: B is [N, K] (nn.Linear), 0: [K, N]
  int accumulators;            // 1, or 2: acc2 = A @ B2 as well
  const char* plan;            // gemm_plan_text (fusekit/gemm.h)
  const char* tail_op;         // "" for a fused entry; else the tail's op in the kernel table
  const int* tail_inputs;      // per tail input: -1 acc, -2 acc2, j >= 0 the call's operand j
  int num_tail_inputs;
  const float* tail_params;    // the tail's scalar parameters
  int num_tail_params;
  int bias_operand;            // fused: the operand that is cuBLASLt's bias, -1 none
  int residual_operand;        // fused: the operand that is C (beta = 1), -1 none
  const char* record_id;
} fusekit_gemm_desc;

#ifdef __cplusplus
}  // extern "C"

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "fusekit/gemm_launch.h"
#include "fusekit/package.h"

namespace fusekit {

// One call: row-major A [M, K], B (and B2), the epilogue's operands in the
// order of its expression with their dims (innermost first: a [col] bias
// {N}, a residual {N, M}), and out [M, N].
struct GemmCall {
  int64_t m = 0, n = 0, k = 0;
  CUdeviceptr a = 0, b = 0, b2 = 0, out = 0;
  std::vector<CUdeviceptr> operands;
  std::vector<std::vector<int64_t>> operand_dims;
};

class GemmPackage {
 public:
  // `kernels` holds the tail kernels (it outlives this). `driver` / `lt`
  // null: the process's libcuda and libcublasLt.
  GemmPackage(const fusekit_gemm_desc* table, size_t count, Package* kernels, const CudaDriver* driver = nullptr,
              const CublasLt* lt = nullptr);
  ~GemmPackage();
  GemmPackage(const GemmPackage&) = delete;
  GemmPackage& operator=(const GemmPackage&) = delete;

  Status launch(const char* op, DType dtype, const GemmCall& call, CUstream stream);
  // The entry a call would take, or why none.
  Status select(const char* op, DType dtype, int64_t m, int64_t n, int64_t k, const fusekit_gemm_desc** out) const;

 private:
  struct Scratch {
    CUdeviceptr base = 0;
    size_t bytes = 0;
  };
  Status libraries(const CudaDriver** d, const CublasLt** lt);
  Status device_sm(int* sm);
  Status scratch_for(const CudaDriver& d, CUstream stream, size_t bytes, CUdeviceptr* out);
  Status run_tail(const fusekit_gemm_desc& e, const GemmPlan& plan, DType dtype, const GemmCall& call,
                  CUstream stream);

  const fusekit_gemm_desc* table_;
  size_t count_;
  Package* kernels_;
  const CudaDriver* driver_;
  const CublasLt* lt_;
  const CudaDriver* driver_used_ = nullptr;  // driver_ or the process's, once known
  std::mutex mutex_;
  std::map<CUcontext, int> sms_;
  std::unique_ptr<GemmSessions> sessions_;
  std::map<const fusekit_gemm_desc*, GemmPlan> plans_;  // parsed once
  std::map<std::pair<CUcontext, CUstream>, Scratch> scratch_;
};

}  // namespace fusekit
#endif
