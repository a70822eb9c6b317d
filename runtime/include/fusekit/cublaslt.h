// cuBLASLt, loaded at run time with dlopen("libcublasLt.so.<major>").
//
// As with the driver (cuda_driver.h), nothing links cuBLASLt: a package
// without GEMM entries never loads it, and the CPU tests hand the GEMM
// launch path a table of fakes. Only cublasLt.h's types are used.
#pragma once

#include <cublasLt.h>

#include <cstddef>
#include <string>

#include "fusekit/status.h"

namespace fusekit {

struct CublasLt {
  size_t (*cublasLtGetVersion)();
  cublasStatus_t (*cublasLtCreate)(cublasLtHandle_t*);
  cublasStatus_t (*cublasLtDestroy)(cublasLtHandle_t);
  cublasStatus_t (*cublasLtMatmulDescCreate)(cublasLtMatmulDesc_t*, cublasComputeType_t, cudaDataType_t);
  cublasStatus_t (*cublasLtMatmulDescDestroy)(cublasLtMatmulDesc_t);
  cublasStatus_t (*cublasLtMatmulDescSetAttribute)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t,
                                                   const void*, size_t);
  cublasStatus_t (*cublasLtMatrixLayoutCreate)(cublasLtMatrixLayout_t*, cudaDataType, uint64_t, uint64_t, int64_t);
  cublasStatus_t (*cublasLtMatrixLayoutDestroy)(cublasLtMatrixLayout_t);
  cublasStatus_t (*cublasLtMatmulPreferenceCreate)(cublasLtMatmulPreference_t*);
  cublasStatus_t (*cublasLtMatmulPreferenceDestroy)(cublasLtMatmulPreference_t);
  cublasStatus_t (*cublasLtMatmulPreferenceSetAttribute)(cublasLtMatmulPreference_t,
                                                         cublasLtMatmulPreferenceAttributes_t, const void*, size_t);
  cublasStatus_t (*cublasLtMatmulAlgoGetHeuristic)(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
                                                   cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                                   cublasLtMatrixLayout_t, cublasLtMatmulPreference_t, int,
                                                   cublasLtMatmulHeuristicResult_t[], int*);
  // The tuner's walk of the algorithm space (algo_search.h); launches need none of these.
  cublasStatus_t (*cublasLtMatmulAlgoGetIds)(cublasLtHandle_t, cublasComputeType_t, cudaDataType_t, cudaDataType_t,
                                             cudaDataType_t, cudaDataType_t, cudaDataType_t, int, int[], int*);
  cublasStatus_t (*cublasLtMatmulAlgoInit)(cublasLtHandle_t, cublasComputeType_t, cudaDataType_t, cudaDataType_t,
                                           cudaDataType_t, cudaDataType_t, cudaDataType_t, int,
                                           cublasLtMatmulAlgo_t*);
  cublasStatus_t (*cublasLtMatmulAlgoCapGetAttribute)(const cublasLtMatmulAlgo_t*, cublasLtMatmulAlgoCapAttributes_t,
                                                      void*, size_t, size_t*);
  cublasStatus_t (*cublasLtMatmulAlgoConfigSetAttribute)(cublasLtMatmulAlgo_t*, cublasLtMatmulAlgoConfigAttributes_t,
                                                         const void*, size_t);
  cublasStatus_t (*cublasLtMatmulAlgoConfigGetAttribute)(const cublasLtMatmulAlgo_t*,
                                                         cublasLtMatmulAlgoConfigAttributes_t, void*, size_t, size_t*);
  cublasStatus_t (*cublasLtMatmulAlgoCheck)(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
                                            cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                            const cublasLtMatmulAlgo_t*, cublasLtMatmulHeuristicResult_t*);
  cublasStatus_t (*cublasLtMatmul)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void*, const void*,
                                   cublasLtMatrixLayout_t, const void*, cublasLtMatrixLayout_t, const void*,
                                   const void*, cublasLtMatrixLayout_t, void*, cublasLtMatrixLayout_t,
                                   const cublasLtMatmulAlgo_t*, void*, size_t, cudaStream_t);
};

// Loads libcublasLt once per process (thread-safe): the toolkit's major
// version first, then the unversioned name. kNotFound with the dlopen error
// when it is not installed.
Status load_cublaslt(const CublasLt** lt);

// "CUBLAS_STATUS_NOT_SUPPORTED" for a status code.
const char* cublas_status_name(cublasStatus_t status);

// Status for a failed call: "<call> failed: <status name>[: <context>]".
Status cublas_status(cublasStatus_t status, const char* call, const std::string& context = "");

}  // namespace fusekit

// Checks a cuBLASLt call inside a function returning Status.
#define FUSEKIT_LT_RETURN(lt, call, context)                                    \
  do {                                                                          \
    cublasStatus_t fusekit_lt_status_ = (lt).call;                              \
    if (fusekit_lt_status_ != CUBLAS_STATUS_SUCCESS)                            \
      return ::fusekit::cublas_status(fusekit_lt_status_, #call, (context));    \
  } while (0)
