// Runs one fuzz expression at one dtype through what a tune would: both
// backends' builders for an arch (Halide in its child process), the CPU
// reference on an odd-sized domain, and, given a GPU measurer, verification
// of every built kernel.
#pragma once

#include <string>
#include <vector>

#include "fusekit/dtype.h"
#include "search/interfaces.h"
#include "tests/fuzz/expr_fuzz.h"

namespace fusekit {

struct FuzzOutcome {
  bool parsed = false;
  bool reference_ok = false;
  bool nvrtc_built = false, halide_built = false;
  bool nvrtc_verified = false, halide_verified = false;  // only with a measurer
  std::string error;  // the first failure's message
};

FuzzOutcome run_fuzz_case(const FuzzExpression& e, DType dtype, const ArchLimits& arch, Measurer* gpu);

// Compile (and verify) rates per backend and dtype, as JSON.
struct FuzzTally {
  int cases[3] = {0, 0, 0};
  int nvrtc[3] = {0, 0, 0}, halide[3] = {0, 0, 0}, reference[3] = {0, 0, 0};
  int nvrtc_verified[3] = {0, 0, 0}, halide_verified[3] = {0, 0, 0};
  void add(DType dtype, const FuzzOutcome& o);
  std::string json() const;
};

}  // namespace fusekit
