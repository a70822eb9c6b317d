// A custom lowering pass: f32 math on scalar parameters alone (exp(a),
// a * 2) that Halide's loop-invariant hoisting moved out of a GPU kernel is
// put back inside it, so a kernel's float arguments are the candidate's
// parameters themselves, which the launch description can pass; a hoisted
// f32 expression would have to be evaluated on the host at launch.
#pragma once

#include <Halide.h>

namespace fusekit {

// A new pass for Halide::Pipeline::add_custom_lowering_pass (which owns it).
Halide::Internal::IRMutator* make_sink_scalar_math_pass();

}  // namespace fusekit
