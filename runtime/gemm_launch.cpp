#include "fusekit/gemm_launch.h"

namespace fusekit {

cudaDataType_t gemm_data_type(DType dtype) {
  switch (dtype) {
    case DType::kF32: return CUDA_R_32F;
    case DType::kF16: return CUDA_R_16F;
    case DType::kBF16: return CUDA_R_16BF;
  }
  return CUDA_R_32F;
}

cublasLtMatmulAlgo_t to_lt_algo(const GemmAlgo& algo) {
  static_assert(sizeof algo.data == sizeof(cublasLtMatmulAlgo_t::data), "cublasLtMatmulAlgo_t is 8 words");
  cublasLtMatmulAlgo_t out;
  for (int w = 0; w < 8; ++w) out.data[w] = algo.data[w];
  return out;
}

GemmAlgo from_lt_algo(const cublasLtMatmulAlgo_t& algo) {
  GemmAlgo out;
  for (int w = 0; w < 8; ++w) out.data[w] = algo.data[w];
  return out;
}

namespace {

// The row-major product as cuBLASLt's column-major one: D^T [N, M] =
// op(B^T) [N, K] x A^T [K, M], so cuBLASLt's "A" is our B and its "B" our A,
// and the bias runs along D's rows (our columns).
struct Descriptors {
  const CublasLt* lt = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;

  ~Descriptors() {
    if (!lt) return;
    for (auto* l : {a, b, c, d})
      if (l) lt->cublasLtMatrixLayoutDestroy(l);
    if (op) lt->cublasLtMatmulDescDestroy(op);
  }

  Status make(const CublasLt& l, const GemmShape& s, const GemmPlan& plan, uint64_t bias) {
    lt = &l;
    const cudaDataType_t t = gemm_data_type(s.dtype);
    FUSEKIT_LT_RETURN(l, cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "");
    const cublasOperation_t trans_a = s.b_transposed ? CUBLAS_OP_T : CUBLAS_OP_N, trans_b = CUBLAS_OP_N;
    FUSEKIT_LT_RETURN(l, cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a, sizeof trans_a),
                      "TRANSA");
    FUSEKIT_LT_RETURN(l, cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b, sizeof trans_b),
                      "TRANSB");
    const uint32_t epilogue = static_cast<uint32_t>(plan.epilogue);
    FUSEKIT_LT_RETURN(l, cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue),
                      gemm_epilogue_name(plan.epilogue));
    if (gemm_epilogue_has_bias(plan.epilogue)) {
      const void* p = reinterpret_cast<const void*>(bias);
      FUSEKIT_LT_RETURN(l, cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p, sizeof p),
                        "BIAS_POINTER");
    }
    const uint64_t m = s.m, n = s.n, k = s.k;
    if (s.b_transposed) {
      FUSEKIT_LT_RETURN(l, cublasLtMatrixLayoutCreate(&a, t, k, n, s.k), "B [N, K]");
    } else {
      FUSEKIT_LT_RETURN(l, cublasLtMatrixLayoutCreate(&a, t, n, k, s.n), "B [K, N]");
    }
    FUSEKIT_LT_RETURN(l, cublasLtMatrixLayoutCreate(&b, t, k, m, s.k), "A [M, K]");
    FUSEKIT_LT_RETURN(l, cublasLtMatrixLayoutCreate(&c, t, n, m, s.n), "residual [M, N]");
    FUSEKIT_LT_RETURN(l, cublasLtMatrixLayoutCreate(&d, t, n, m, s.n), "out [M, N]");
    return Status();
  }
};

std::string shape_context(const GemmShape& s) {
  return "M=" + std::to_string(s.m) + " N=" + std::to_string(s.n) + " K=" + std::to_string(s.k) + " " +
         dtype_name(s.dtype) + (s.b_transposed ? " B[N,K]" : " B[K,N]");
}

Status query(const CublasLt& lt, cublasLtHandle_t handle, const Descriptors& d, size_t workspace, int count,
             const GemmShape& shape, GemmEpilogue epilogue, std::vector<GemmHeuristic>* out) {
  cublasLtMatmulPreference_t pref = nullptr;
  FUSEKIT_LT_RETURN(lt, cublasLtMatmulPreferenceCreate(&pref), "");
  cublasStatus_t st = lt.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                              &workspace, sizeof workspace);
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(count));
  int returned = 0;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = lt.cublasLtMatmulAlgoGetHeuristic(handle, d.op, d.a, d.b, d.c, d.d, pref, count, results.data(), &returned);
  lt.cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS) return cublas_status(st, "cublasLtMatmulAlgoGetHeuristic", shape_context(shape));
  out->clear();
  for (int i = 0; i < returned; ++i) {
    if (results[i].state != CUBLAS_STATUS_SUCCESS) continue;
    GemmHeuristic h;
    h.algo = from_lt_algo(results[i].algo);
    h.workspace_bytes = results[i].workspaceSize;
    h.waves = results[i].wavesCount;
    out->push_back(h);
  }
  if (out->empty())
    return Status(StatusCode::kNotSupported, "cuBLASLt has no algorithm for " + shape_context(shape) +
                                                 " with epilogue " + gemm_epilogue_name(epilogue));
  return Status();
}

}  // namespace

GemmSessions::GemmSessions(const CudaDriver& driver, const CublasLt& lt, size_t workspace_bytes)
    : driver_(driver), lt_(lt), workspace_bytes_(workspace_bytes) {}

GemmSessions::~GemmSessions() {
  for (auto& [key, s] : sessions_) {
    if (s.handle) lt_.cublasLtDestroy(s.handle);
    if (s.workspace && driver_.cuMemFree) driver_.cuMemFree(s.workspace);
  }
}

void GemmSessions::release() { sessions_.clear(); }

Status GemmSessions::session(CUstream stream, Session** out) {
  CUcontext ctx = nullptr;
  FUSEKIT_CU_RETURN(driver_, cuCtxGetCurrent(&ctx), "GEMM launch");
  if (!ctx) return Status(StatusCode::kInvalidArgument, "no current CUDA context; make one current before a GEMM call");
  auto it = sessions_.find({ctx, stream});
  if (it == sessions_.end()) {
    Session s;
    FUSEKIT_LT_RETURN(lt_, cublasLtCreate(&s.handle), "");
    if (workspace_bytes_ > 0) {
      CUresult r = driver_.cuMemAlloc(&s.workspace, workspace_bytes_);
      if (r != CUDA_SUCCESS) {
        lt_.cublasLtDestroy(s.handle);
        return cuda_status(driver_, r, "cuMemAlloc", "the GEMM workspace of " + std::to_string(workspace_bytes_) +
                                                         " bytes (call once before capturing a graph)");
      }
    }
    it = sessions_.emplace(std::make_pair(ctx, stream), std::move(s)).first;
  }
  *out = &it->second;
  return Status();
}

Status GemmSessions::algorithm_for(Session& s, const GemmShape& shape, const GemmPlan& plan, uint64_t bias,
                                   GemmHeuristic* out) {
  // A stored algorithm serializes only for the cuBLASLt that chose it, and
  // was chosen for one shape.
  if (plan.has_algo && plan.cublaslt_version == lt_.cublasLtGetVersion() && plan.tuned == shape &&
      plan.workspace_bytes <= workspace_bytes_) {
    out->algo = plan.algo;
    out->workspace_bytes = plan.workspace_bytes;
    return Status();
  }
  std::pair<uint32_t, std::vector<int64_t>> key{
      static_cast<uint32_t>(plan.epilogue) | (plan.residual ? 1u << 31 : 0u),
      {shape.m, shape.n, shape.k, shape.b_transposed, static_cast<int64_t>(shape.dtype)}};
  auto it = s.first.find(key);
  if (it != s.first.end()) {
    *out = it->second;
    return Status();
  }
  Descriptors d;
  Status st = d.make(lt_, shape, plan, bias);
  if (!st.ok()) return st;
  std::vector<GemmHeuristic> found;
  ++heuristic_queries_;
  st = query(lt_, s.handle, d, workspace_bytes_, 1, shape, plan.epilogue, &found);
  if (!st.ok()) return st;
  *out = s.first[key] = found[0];
  return Status();
}

Status GemmSessions::launch(const GemmShape& shape, const GemmPlan& plan, const GemmOperands& ops, CUstream stream) {
  Status st = check_gemm_call(shape, plan, ops);
  if (!st.ok()) return st;
  std::lock_guard<std::mutex> lock(mutex_);
  Session* s = nullptr;
  if (!(st = session(stream, &s)).ok()) return st;
  GemmHeuristic algo;
  if (!(st = algorithm_for(*s, shape, plan, ops.bias, &algo)).ok()) return st;
  Descriptors d;
  if (!(st = d.make(lt_, shape, plan, ops.bias)).ok()) return st;
  const cublasLtMatmulAlgo_t lt_algo = to_lt_algo(algo.algo);
  const float alpha = 1.0f, beta = plan.residual ? 1.0f : 0.0f;
  const void* c = reinterpret_cast<const void*>(plan.residual ? ops.residual : ops.out);
  FUSEKIT_LT_RETURN(lt_, cublasLtMatmul(s->handle, d.op, &alpha, reinterpret_cast<const void*>(ops.b), d.a,
                                        reinterpret_cast<const void*>(ops.a), d.b, &beta, c, d.c,
                                        reinterpret_cast<void*>(ops.out), d.d, &lt_algo,
                                        reinterpret_cast<void*>(s->workspace), workspace_bytes_,
                                        reinterpret_cast<cudaStream_t>(stream)),
                    shape_context(shape));
  return Status();
}

// The call under the lock, in `stream`'s session, as fn(handle, descriptors).
template <typename Fn>
Status GemmSessions::with_descriptors(CUstream stream, const GemmShape& shape, const GemmPlan& plan, uint64_t bias,
                                      Fn&& fn) {
  std::lock_guard<std::mutex> lock(mutex_);
  Session* s = nullptr;
  Status st = session(stream, &s);
  if (!st.ok()) return st;
  Descriptors d;
  if (!(st = d.make(lt_, shape, plan, bias)).ok()) return st;
  return fn(s->handle, d);
}

Status GemmSessions::heuristic(const GemmShape& shape, const GemmPlan& plan, uint64_t bias, size_t workspace_bytes,
                               int count, CUstream stream, std::vector<GemmHeuristic>* out) {
  if (count < 1 || count > 64)
    return Status(StatusCode::kInvalidArgument,
                  "asked cuBLASLt for " + std::to_string(count) + " algorithms; ask for 1 to 64");
  if (workspace_bytes > workspace_bytes_)
    return Status(StatusCode::kInvalidArgument, "workspace of " + std::to_string(workspace_bytes) +
                                                    " bytes exceeds the session's " + std::to_string(workspace_bytes_));
  return with_descriptors(stream, shape, plan, bias, [&](cublasLtHandle_t handle, const Descriptors& d) {
    return query(lt_, handle, d, workspace_bytes, count, shape, plan.epilogue, out);
  });
}

Status GemmSessions::handle(CUstream stream, cublasLtHandle_t* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  Session* s = nullptr;
  Status st = session(stream, &s);
  if (st.ok()) *out = s->handle;
  return st;
}

Status GemmSessions::check(const GemmShape& shape, const GemmPlan& plan, uint64_t bias, const GemmAlgo& algo,
                           CUstream stream, GemmHeuristic* out) {
  if (!lt_.cublasLtMatmulAlgoCheck)
    return Status(StatusCode::kNotSupported, "this cuBLASLt table has no cublasLtMatmulAlgoCheck");
  return with_descriptors(stream, shape, plan, bias, [&](cublasLtHandle_t handle, const Descriptors& d) {
    const cublasLtMatmulAlgo_t lt_algo = to_lt_algo(algo);
    cublasLtMatmulHeuristicResult_t result{};
    const cublasStatus_t cs = lt_.cublasLtMatmulAlgoCheck(handle, d.op, d.a, d.b, d.c, d.d, &lt_algo, &result);
    if (cs != CUBLAS_STATUS_SUCCESS) return Status(StatusCode::kNotSupported, cublas_status_name(cs));
    out->algo = algo;
    out->workspace_bytes = result.workspaceSize;
    out->waves = result.wavesCount;
    return Status();
  });
}

}  // namespace fusekit
