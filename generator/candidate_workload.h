// The Workload and Builder of one catalog or expression candidate at one
// dtype: the bridge from generator/ (Halide) to search/ (interfaces only).
#pragma once

#include <memory>
#include <string>

#include "generator/candidates/fusion_candidate.h"
#include "search/interfaces.h"

namespace fusekit {

// Shapes, parameters and the CPU reference: the candidate's Halide pipeline
// JIT-compiled for the host (vectorized and parallel, so 64 M elements take
// well under a second).
// Full-size inputs are drawn from [-input_magnitude, input_magnitude) when
// measured; broadcast inputs from [-3, 3).
std::unique_ptr<Workload> make_candidate_workload(const FusionCandidate& candidate, DType dtype,
                                                  float input_magnitude = 3.0f);

// The op mix of a canonical pipeline text (canonical_pipeline_text): its
// reductions ("fk_red0 = mean over col of ..."), function calls ("exp_f32(",
// "erff(") and arithmetic operators.
OpMix op_mix_of(const std::string& canonical_text);

// Builds both backends for one arch. Every failure becomes a BuildResult
// with the error text; nothing throws out of build().
std::unique_ptr<Builder> make_kernel_builder(const FusionCandidate& candidate, DType dtype, const ArchLimits& arch);

// The procedural symbol of a kernel:
// "fusekit_sm90_sigmoid_mul_tanh_add_f32_nvrtc_<8 hex of the config hash>".
std::string kernel_symbol(const FusionCandidate& candidate, DType dtype, const Arch& arch, Backend backend,
                          const Config& config);

}  // namespace fusekit
