#pragma once

#include <Halide.h>

namespace fusekit {

// The target the CPU references are JIT-compiled for: this machine's, minus
// any level whose instructions its CPU lacks.
Halide::Target cpu_jit_target();

}  // namespace fusekit
