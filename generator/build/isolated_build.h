// Runs a kernel build in a forked child process, so that a compiler that
// aborts the process (LLVM's fatal errors do) becomes a failed build with
// the child's stderr as its message, not the end of the tuning run.
#pragma once

#include <functional>
#include <string>

#include "fusekit/kernel_artifact.h"

namespace fusekit {

struct IsolatedBuild {
  bool ok = false;
  KernelArtifact artifact;
  std::string error;
};

// `build` runs in the child; a thrown exception's message becomes `error`.
IsolatedBuild run_isolated_build(const std::function<KernelArtifact()>& build);

}  // namespace fusekit
