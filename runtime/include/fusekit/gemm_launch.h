// The launch path of GEMM entries: one cuBLASLt handle and one workspace per
// (context, stream), the operation descriptors of a call, the algorithm a
// plan stored (or cuBLASLt's heuristic answer, cached per shape, where the
// plan's cuBLASLt or shape differs), and cublasLtMatmul on the caller's
// stream. A call enqueues work only, so it can be captured in a CUDA graph;
// the first call on a stream allocates its workspace and must come before a
// capture starts.
#pragma once

#include <cuda.h>

#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "fusekit/cublaslt.h"
#include "fusekit/cuda_driver.h"
#include "fusekit/gemm.h"

namespace fusekit {

// One answer of cublasLtMatmulAlgoGetHeuristic, fastest estimate first.
struct GemmHeuristic {
  GemmAlgo algo;
  size_t workspace_bytes = 0;
  float waves = 0;
};

// cuBLASLt's data type of a storage dtype.
cudaDataType_t gemm_data_type(DType dtype);

// An algorithm as cuBLASLt's type and back: the same eight words.
cublasLtMatmulAlgo_t to_lt_algo(const GemmAlgo& algo);
GemmAlgo from_lt_algo(const cublasLtMatmulAlgo_t& algo);

class GemmSessions {
 public:
  // Default workspace per session: what cuBLAS itself uses on Hopper.
  static constexpr size_t kDefaultWorkspace = size_t{32} << 20;

  GemmSessions(const CudaDriver& driver, const CublasLt& lt, size_t workspace_bytes = kDefaultWorkspace);
  GemmSessions(const GemmSessions&) = delete;
  GemmSessions& operator=(const GemmSessions&) = delete;
  ~GemmSessions();
  // Forgets handles and workspaces without freeing them (for a static owner
  // that may outlive the context or the libraries at process exit).
  void release();

  // Checks the call (check_gemm_call), then runs it on `stream` in the
  // current context.
  Status launch(const GemmShape& shape, const GemmPlan& plan, const GemmOperands& ops, CUstream stream);
  // Up to `count` algorithms cuBLASLt proposes for the shape and the plan's
  // epilogue within `workspace_bytes` (the tuner's schedule space). `bias`
  // is a pointer of the alignment calls will pass (the heuristic reads it).
  Status heuristic(const GemmShape& shape, const GemmPlan& plan, uint64_t bias, size_t workspace_bytes, int count,
                   CUstream stream, std::vector<GemmHeuristic>* out);

  // The cuBLASLt handle of `stream`'s session in the current context (the
  // tuner asks it for algorithm ids and their capabilities).
  Status handle(CUstream stream, cublasLtHandle_t* out);
  // cublasLtMatmulAlgoCheck of `algo` for the shape and the plan's
  // epilogue: kNotSupported naming cuBLASLt's status where it refuses the
  // configuration, else the workspace it needs and its waves.
  Status check(const GemmShape& shape, const GemmPlan& plan, uint64_t bias, const GemmAlgo& algo, CUstream stream,
               GemmHeuristic* out);

  size_t workspace_bytes() const { return workspace_bytes_; }
  // How many times launch() asked the heuristic (a plan's stored algorithm
  // asks none).
  int heuristic_queries() const { return heuristic_queries_; }

 private:
  struct Session {
    cublasLtHandle_t handle = nullptr;
    CUdeviceptr workspace = 0;
    std::map<std::pair<uint32_t, std::vector<int64_t>>, GemmHeuristic> first;  // launch()'s answers per shape
  };
  Status session(CUstream stream, Session** out);
  Status algorithm_for(Session& s, const GemmShape& shape, const GemmPlan& plan, uint64_t bias, GemmHeuristic* out);
  template <typename Fn>
  Status with_descriptors(CUstream stream, const GemmShape& shape, const GemmPlan& plan, uint64_t bias, Fn&& fn);

  const CudaDriver& driver_;
  const CublasLt& lt_;
  const size_t workspace_bytes_;
  std::mutex mutex_;
  std::map<std::pair<CUcontext, CUstream>, Session> sessions_;
  int heuristic_queries_ = 0;
};

}  // namespace fusekit
