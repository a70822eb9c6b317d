// NVRTC: CUDA C++ to a cubin for an exact sm_XY. Runs without a GPU, so
// `tune --arch sm_86` produces sm_86 cubins on any machine.
#pragma once

#include <string>

#include "fusekit/arch.h"

namespace fusekit {

struct NvrtcResult {
  bool ok = false;
  std::string cubin;  // ELF image (PTX text from compile_cuda_to_ptx)
  std::string log;    // compiler log (errors, warnings; for a cubin also ptxas's -v lines)
  // From ptxas's report of a cubin's kernel (the last one when the source
  // has several); -1 when not reported (PTX, or a failed compile).
  int registers = -1;            // per thread
  int static_shared_bytes = -1;  // __shared__ arrays (dynamic shared memory comes on top)
  int spill_store_bytes = -1;
};

// `name` is used in diagnostics. Never throws for a compile error: the
// result carries NVRTC's status name and its log.
// `fast_math` adds --use_fast_math (approximate division, exp, log; flush
// denormals): a tuning dimension, kept only where verification passes.
NvrtcResult compile_cuda_to_cubin(const std::string& source, const std::string& name, const Arch& arch,
                                  bool fast_math = false);

// The same source as PTX for a virtual arch (compute_XY): the portable
// fallback the driver JIT-compiles for GPUs the package has no cubin for.
NvrtcResult compile_cuda_to_ptx(const std::string& source, const std::string& name, const Arch& virtual_arch,
                                bool fast_math = false);

// "13.0".
std::string nvrtc_version();

// The arch an ELF cubin was built for, from bits 8-15 of e_flags (0x5a for
// sm_90); 0 when `image` is not an ELF cubin.
int cubin_sm(const std::string& image);

}  // namespace fusekit
