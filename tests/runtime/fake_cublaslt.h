// A fake cuBLASLt table for CPU tests of the GEMM launch path: handles and
// descriptors are counters, attributes set on operation descriptors are
// kept, the heuristic answers a chosen list, and cublasLtMatmul calls are
// recorded with their pointers, beta and algorithm.
#pragma once

#include <cstring>
#include <map>
#include <vector>

#include "fusekit/cublaslt.h"

namespace fusekit {
namespace fake_lt {

struct Matmul {
  const void *a, *b, *c;
  void* d;
  float alpha, beta;
  cublasLtMatmulAlgo_t algo;
  uint32_t epilogue;
  const void* bias;
  int trans_a;
  std::vector<std::vector<uint64_t>> layouts;  // rows, cols, ld of cuBLASLt's A, B, C, D
  cudaStream_t stream;
};

struct State {
  size_t version = 130100;
  int handles = 0;
  int heuristic_calls = 0;
  int live_descriptors = 0;
  std::vector<cublasLtMatmulAlgo_t> answers;  // what the heuristic returns
  std::map<uintptr_t, std::map<int, std::vector<uint8_t>>> attributes;   // per operation descriptor
  std::map<uintptr_t, std::vector<uint64_t>> layouts;
  std::vector<Matmul> matmuls;
  uintptr_t next = 0x1000;
};

inline State& state() {
  static State s;
  return s;
}
inline void reset() {
  size_t v = state().version;
  state() = State();
  state().version = v;
}

inline size_t get_version() { return state().version; }
inline cublasStatus_t create(cublasLtHandle_t* h) {
  *h = reinterpret_cast<cublasLtHandle_t>(state().next++);
  ++state().handles;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t destroy(cublasLtHandle_t) { return CUBLAS_STATUS_SUCCESS; }
inline cublasStatus_t desc_create(cublasLtMatmulDesc_t* d, cublasComputeType_t, cudaDataType_t) {
  *d = reinterpret_cast<cublasLtMatmulDesc_t>(state().next++);
  ++state().live_descriptors;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t desc_destroy(cublasLtMatmulDesc_t) {
  --state().live_descriptors;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t desc_set(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const void* buf, size_t n) {
  auto* p = static_cast<const uint8_t*>(buf);
  state().attributes[reinterpret_cast<uintptr_t>(d)][a] = std::vector<uint8_t>(p, p + n);
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t layout_create(cublasLtMatrixLayout_t* l, cudaDataType, uint64_t rows, uint64_t cols, int64_t ld) {
  *l = reinterpret_cast<cublasLtMatrixLayout_t>(state().next++);
  state().layouts[reinterpret_cast<uintptr_t>(*l)] = {rows, cols, static_cast<uint64_t>(ld)};
  ++state().live_descriptors;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t layout_destroy(cublasLtMatrixLayout_t) {
  --state().live_descriptors;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t pref_create(cublasLtMatmulPreference_t* p) {
  *p = reinterpret_cast<cublasLtMatmulPreference_t>(state().next++);
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t pref_destroy(cublasLtMatmulPreference_t) { return CUBLAS_STATUS_SUCCESS; }
inline cublasStatus_t pref_set(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t, const void*, size_t) {
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t heuristic(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatmulPreference_t, int count,
                                cublasLtMatmulHeuristicResult_t results[], int* returned) {
  ++state().heuristic_calls;
  *returned = 0;
  for (const auto& a : state().answers) {
    if (*returned == count) break;
    cublasLtMatmulHeuristicResult_t r{};
    r.algo = a;
    r.workspaceSize = 1024;
    r.state = CUBLAS_STATUS_SUCCESS;
    results[(*returned)++] = r;
  }
  return state().answers.empty() ? CUBLAS_STATUS_NOT_SUPPORTED : CUBLAS_STATUS_SUCCESS;
}
template <typename T>
T attribute(uintptr_t desc, int a) {
  T v{};
  const auto& bytes = state().attributes[desc][a];
  if (bytes.size() == sizeof v) std::memcpy(&v, bytes.data(), sizeof v);
  return v;
}
inline cublasStatus_t matmul(cublasLtHandle_t, cublasLtMatmulDesc_t op, const void* alpha, const void* a,
                             cublasLtMatrixLayout_t la, const void* b, cublasLtMatrixLayout_t lb, const void* beta,
                             const void* c, cublasLtMatrixLayout_t lc, void* d, cublasLtMatrixLayout_t ld,
                             const cublasLtMatmulAlgo_t* algo, void*, size_t, cudaStream_t stream) {
  const uintptr_t o = reinterpret_cast<uintptr_t>(op);
  Matmul m{a, b, c, d, *static_cast<const float*>(alpha), *static_cast<const float*>(beta), *algo,
           attribute<uint32_t>(o, CUBLASLT_MATMUL_DESC_EPILOGUE), attribute<const void*>(o, CUBLASLT_MATMUL_DESC_BIAS_POINTER),
           attribute<int>(o, CUBLASLT_MATMUL_DESC_TRANSA), {}, stream};
  for (auto* l : {la, lb, lc, ld}) m.layouts.push_back(state().layouts[reinterpret_cast<uintptr_t>(l)]);
  state().matmuls.push_back(m);
  return CUBLAS_STATUS_SUCCESS;
}

inline const CublasLt& table() {
  static CublasLt t = [] {
    CublasLt x{};
    x.cublasLtGetVersion = get_version;
    x.cublasLtCreate = create;
    x.cublasLtDestroy = destroy;
    x.cublasLtMatmulDescCreate = desc_create;
    x.cublasLtMatmulDescDestroy = desc_destroy;
    x.cublasLtMatmulDescSetAttribute = desc_set;
    x.cublasLtMatrixLayoutCreate = layout_create;
    x.cublasLtMatrixLayoutDestroy = layout_destroy;
    x.cublasLtMatmulPreferenceCreate = pref_create;
    x.cublasLtMatmulPreferenceDestroy = pref_destroy;
    x.cublasLtMatmulPreferenceSetAttribute = pref_set;
    x.cublasLtMatmulAlgoGetHeuristic = heuristic;
    x.cublasLtMatmul = matmul;
    return x;
  }();
  return t;
}

}  // namespace fake_lt
}  // namespace fusekit
