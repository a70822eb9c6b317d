// One problem run through a loaded package's generic C entry point
// (fusekit_launch) on the GPU and compared with the CPU reference: the step
// `fusekit verify --package` repeats for every kernel and GEMM entry.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fusekit/cuda_driver.h"
#include "search/workload.h"

namespace fusekit {

// The package library's C API.
struct PackageApi {
  using LaunchFn = int (*)(const char*, const char*, const void* const*, int, void* const*, int, const float*, int,
                           const int64_t*, int, CUstream);
  using ExplainFn = int (*)(const char*, const char*, const int64_t*, int, int, char*, size_t);
  using LastErrorFn = const char* (*)();
  LaunchFn launch = nullptr;
  ExplainFn explain = nullptr;    // may be null: no explanation asked
  LastErrorFn last_error = nullptr;
};

struct PackageCase {
  std::string op, dtype;
  std::vector<int64_t> domain;    // as fusekit_launch takes it (outermost first; a GEMM's {M, N, K})
  std::vector<float> params;
  bool misaligned = false;        // every pointer one element past an aligned one
  uint32_t seed = 0;
};

struct CaseOutcome {
  std::string error;              // "" when the outputs match the reference
  std::string explanation;        // fusekit_explain's answer, where asked
  bool context_lost = false;      // a CUDA error: the context is unusable after it
};

// Throws UserError naming `what` and the driver's error when r is not
// CUDA_SUCCESS: the check of every driver call on the way to a case.
void check_cuda(const CudaDriver& cu, CUresult r, const char* what);

// Fills the inputs of problem `p` (seeded), runs the case, copies the
// outputs back (poisoned beforehand, so an unwritten element fails) and
// compares them with wl's reference at its tolerance. Driver failures on
// allocation or copies throw UserError.
CaseOutcome run_package_case(const PackageApi& api, const CudaDriver& cu, const Workload& wl, const Problem& p,
                             const PackageCase& c);

}  // namespace fusekit
