// A HostTensor seen as a Halide buffer of its storage type, without a copy:
// how the CPU references read inputs and write outputs.
#pragma once

#include <Halide.h>

#include "search/workload.h"

namespace fusekit {

// Throws UserError for an extent past Halide's int32 limit.
Halide::Buffer<> host_buffer(const Halide::Type& storage, const HostTensor& t);

}  // namespace fusekit
