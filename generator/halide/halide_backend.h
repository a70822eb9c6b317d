// The Halide backend: applies the schedule, lowers the pipeline, and runs
// Halide's own PTX device code generator on the kernel loop.
//
// Why PTX plus a launch description rather than a Halide AOT object: the
// object calls into Halide's runtime on every launch (buffer checks, context
// acquisition, its own module cache), which costs twice the per-call budget
// the runtime is allowed (docs/architecture.md). Instead we lower the
// pipeline (Halide 14 offloads GPU loops during lowering), take the PTX
// module Halide embedded and its halide_cuda_run call, and translate the
// host-side expressions for the grid and for each scalar argument into
// LaunchExprs over the buffer shapes. The runtime then launches the PTX with
// cuLaunchKernel like any NVRTC kernel. Correctness of that translation is
// checked the same way as every candidate: against the CPU reference, on odd
// shapes, on the GPU.
#pragma once

#include <string>

#include "fusekit/kernel_artifact.h"
#include "generator/candidates/fusion_candidate.h"
#include "schedules/arch_limits.h"
#include "schedules/param_space.h"

namespace fusekit {

// Throws UserError (or lets Halide's errors through) when the schedule does
// not lower to exactly one CUDA kernel with a translatable launch.
KernelArtifact build_halide_kernel(const FusionCandidate& candidate, DType dtype, const Config& config,
                                   const ArchLimits& arch, const std::string& entry_hint);

// "14.0.0" for Debian's libhalide14.
std::string halide_version();

}  // namespace fusekit
