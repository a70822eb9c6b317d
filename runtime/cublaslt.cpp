#include "fusekit/cublaslt.h"

#include <dlfcn.h>

namespace fusekit {
namespace {

struct Loaded {
  CublasLt lt{};
  Status status;
};

template <typename Fn>
void bind(void* lib, const char* symbol, Fn* slot, std::string* missing) {
  void* p = dlsym(lib, symbol);
  if (!p) {
    if (!missing->empty()) *missing += ", ";
    *missing += symbol;
    return;
  }
  *slot = reinterpret_cast<Fn>(p);
}

void* open_library(std::string* error) {
  // The major version the headers describe: the algorithm blobs and the
  // attribute enums are those of this release.
  const std::string versioned = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
  void* lib = dlopen(versioned.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen("libcublasLt.so", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = dlerror();
    *error = "no cuBLASLt: dlopen(" + versioned + ") failed: " + (err ? err : "unknown error") +
             "; install the CUDA toolkit's cuBLAS or put its lib64 on LD_LIBRARY_PATH";
  }
  return lib;
}

Loaded load() {
  Loaded out;
  std::string error;
  void* lib = open_library(&error);
  if (!lib) {
    out.status = Status(StatusCode::kNotFound, error);
    return out;
  }
  CublasLt& l = out.lt;
  std::string missing;
  bind(lib, "cublasLtGetVersion", &l.cublasLtGetVersion, &missing);
  bind(lib, "cublasLtCreate", &l.cublasLtCreate, &missing);
  bind(lib, "cublasLtDestroy", &l.cublasLtDestroy, &missing);
  bind(lib, "cublasLtMatmulDescCreate", &l.cublasLtMatmulDescCreate, &missing);
  bind(lib, "cublasLtMatmulDescDestroy", &l.cublasLtMatmulDescDestroy, &missing);
  bind(lib, "cublasLtMatmulDescSetAttribute", &l.cublasLtMatmulDescSetAttribute, &missing);
  bind(lib, "cublasLtMatrixLayoutCreate", &l.cublasLtMatrixLayoutCreate, &missing);
  bind(lib, "cublasLtMatrixLayoutDestroy", &l.cublasLtMatrixLayoutDestroy, &missing);
  bind(lib, "cublasLtMatmulPreferenceCreate", &l.cublasLtMatmulPreferenceCreate, &missing);
  bind(lib, "cublasLtMatmulPreferenceDestroy", &l.cublasLtMatmulPreferenceDestroy, &missing);
  bind(lib, "cublasLtMatmulPreferenceSetAttribute", &l.cublasLtMatmulPreferenceSetAttribute, &missing);
  bind(lib, "cublasLtMatmulAlgoGetHeuristic", &l.cublasLtMatmulAlgoGetHeuristic, &missing);
  bind(lib, "cublasLtMatmulAlgoGetIds", &l.cublasLtMatmulAlgoGetIds, &missing);
  bind(lib, "cublasLtMatmulAlgoInit", &l.cublasLtMatmulAlgoInit, &missing);
  bind(lib, "cublasLtMatmulAlgoCapGetAttribute", &l.cublasLtMatmulAlgoCapGetAttribute, &missing);
  bind(lib, "cublasLtMatmulAlgoConfigSetAttribute", &l.cublasLtMatmulAlgoConfigSetAttribute, &missing);
  bind(lib, "cublasLtMatmulAlgoConfigGetAttribute", &l.cublasLtMatmulAlgoConfigGetAttribute, &missing);
  bind(lib, "cublasLtMatmulAlgoCheck", &l.cublasLtMatmulAlgoCheck, &missing);
  bind(lib, "cublasLtMatmul", &l.cublasLtMatmul, &missing);
  if (!missing.empty()) out.status = Status(StatusCode::kNotFound, "libcublasLt lacks symbols: " + missing);
  return out;
}

}  // namespace

Status load_cublaslt(const CublasLt** lt) {
  static Loaded loaded = load();
  *lt = loaded.status.ok() ? &loaded.lt : nullptr;
  return loaded.status;
}

const char* cublas_status_name(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

Status cublas_status(cublasStatus_t status, const char* call, const std::string& context) {
  std::string msg = std::string(call) + " failed: " + cublas_status_name(status);
  if (!context.empty()) msg += ": " + context;
  return Status(StatusCode::kDriverError, msg);
}

}  // namespace fusekit
