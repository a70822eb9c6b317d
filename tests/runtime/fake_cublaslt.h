// A fake cuBLASLt table for CPU tests of the GEMM launch path: handles and
// descriptors are counters, attributes set on operation descriptors are
// kept, the heuristic answers a chosen list, and cublasLtMatmul calls are
// recorded with their pointers, beta and algorithm. The algorithm space is
// a blob whose words are its configuration (id, tile, split-K, reduction,
// swizzle, custom option, stages, cluster), ids with chosen
// capabilities, and a check that refuses what `refuse` says.
#pragma once

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <vector>

#include "fusekit/cublaslt.h"
#include "testing/fake_driver.h"

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
  // The algorithm space: capabilities per id, and which configurations
  // (blob words) the check refuses; split-K needs 1 MiB of workspace.
  struct Caps {
    std::vector<uint32_t> tiles, stages;
    int32_t split_k = 0;
    uint32_t reduction_mask = 0, swizzle = 0, epilogue_mask = 0xffffffff;
    int32_t custom_max = 0;
  };
  std::map<int, Caps> caps;
  std::function<bool(const cublasLtMatmulAlgo_t&)> refuse = [](const cublasLtMatmulAlgo_t&) { return false; };
  int checks = 0;
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

// The blob word of a configuration attribute: its enum value (0..6), and
// word 7 for the cluster shape (the inner shape, 7, is never set).
inline int config_word(cublasLtMatmulAlgoConfigAttributes_t a) {
  return a == CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID ? 7 : static_cast<int>(a);
}

inline cublasStatus_t get_ids(cublasLtHandle_t, cublasComputeType_t, cudaDataType_t, cudaDataType_t, cudaDataType_t,
                              cudaDataType_t, cudaDataType_t, int count, int ids[], int* returned) {
  *returned = 0;
  for (const auto& [id, c] : state().caps)
    if (*returned < count) ids[(*returned)++] = id;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t algo_init(cublasLtHandle_t, cublasComputeType_t, cudaDataType_t, cudaDataType_t, cudaDataType_t,
                                cudaDataType_t, cudaDataType_t, int id, cublasLtMatmulAlgo_t* algo) {
  if (!state().caps.count(id)) return CUBLAS_STATUS_NOT_SUPPORTED;
  *algo = cublasLtMatmulAlgo_t{};
  algo->data[0] = static_cast<uint64_t>(id);
  algo->data[CUBLASLT_ALGO_CONFIG_SPLITK_NUM] = 1;
  return CUBLAS_STATUS_SUCCESS;
}
template <typename T>
cublasStatus_t put(const T& v, void* buf, size_t n, size_t* written) {
  *written = sizeof v;
  if (n == 0) return CUBLAS_STATUS_SUCCESS;
  if (n < sizeof v) return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(buf, &v, sizeof v);
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t put_list(const std::vector<uint32_t>& v, void* buf, size_t n, size_t* written) {
  *written = v.size() * sizeof(uint32_t);
  if (n == 0) return CUBLAS_STATUS_SUCCESS;
  std::memcpy(buf, v.data(), std::min(n, *written));
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t cap_get(const cublasLtMatmulAlgo_t* algo, cublasLtMatmulAlgoCapAttributes_t a, void* buf, size_t n,
                              size_t* written) {
  const State::Caps& c = state().caps[static_cast<int>(algo->data[0])];
  switch (a) {
    case CUBLASLT_ALGO_CAP_TILE_IDS: return put_list(c.tiles, buf, n, written);
    case CUBLASLT_ALGO_CAP_STAGES_IDS: return put_list(c.stages, buf, n, written);
    case CUBLASLT_ALGO_CAP_SPLITK_SUPPORT: return put(c.split_k, buf, n, written);
    case CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK: return put(c.reduction_mask, buf, n, written);
    case CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT: return put(c.swizzle, buf, n, written);
    case CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX: return put(c.custom_max, buf, n, written);
    case CUBLASLT_ALGO_CAP_EPILOGUE_MASK: return put(c.epilogue_mask, buf, n, written);
    default: return CUBLAS_STATUS_INVALID_VALUE;
  }
}
inline cublasStatus_t config_set(cublasLtMatmulAlgo_t* algo, cublasLtMatmulAlgoConfigAttributes_t a, const void* buf,
                                 size_t n) {
  uint64_t v = 0;
  std::memcpy(&v, buf, std::min<size_t>(n, sizeof v));
  algo->data[config_word(a)] = v;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t config_get(const cublasLtMatmulAlgo_t* algo, cublasLtMatmulAlgoConfigAttributes_t a, void* buf,
                                 size_t n, size_t* written) {
  const uint64_t v = algo->data[config_word(a)];
  std::memcpy(buf, &v, std::min<size_t>(n, sizeof v));
  *written = n;
  return CUBLAS_STATUS_SUCCESS;
}
inline cublasStatus_t algo_check(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                 cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t* algo,
                                 cublasLtMatmulHeuristicResult_t* result) {
  ++state().checks;
  if (state().refuse(*algo)) return CUBLAS_STATUS_NOT_SUPPORTED;
  *result = cublasLtMatmulHeuristicResult_t{};
  result->workspaceSize = algo->data[CUBLASLT_ALGO_CONFIG_SPLITK_NUM] > 1 ? size_t{1} << 20 : 0;
  result->wavesCount = 0.5f * static_cast<float>(algo->data[CUBLASLT_ALGO_CONFIG_TILE_ID]);  // tile t: t/2 waves
  return CUBLAS_STATUS_SUCCESS;
}

// The fake driver with a workspace allocator.
inline const CudaDriver& driver() {
  static CudaDriver d = [] {
    CudaDriver x = fake::driver();
    x.cuMemAlloc = [](CUdeviceptr* p, size_t) {
      *p = 0x7000000;
      return CUDA_SUCCESS;
    };
    x.cuMemFree = [](CUdeviceptr) { return CUDA_SUCCESS; };
    return x;
  }();
  return d;
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
    x.cublasLtMatmulAlgoGetIds = get_ids;
    x.cublasLtMatmulAlgoInit = algo_init;
    x.cublasLtMatmulAlgoCapGetAttribute = cap_get;
    x.cublasLtMatmulAlgoConfigSetAttribute = config_set;
    x.cublasLtMatmulAlgoConfigGetAttribute = config_get;
    x.cublasLtMatmulAlgoCheck = algo_check;
    x.cublasLtMatmul = matmul;
    return x;
  }();
  return t;
}

}  // namespace fake_lt
}  // namespace fusekit
