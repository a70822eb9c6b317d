// Shape buckets: kernels are generic over sizes; the tuner records one winner
// per bucket and the runtime picks by bucket. A bucket is the power-of-two
// ceiling of the element count: "n<=2^12" holds 2049..4096 elements. Row
// reductions also bucket their row length, since it decides their schedule
// (a row of 65536 wants a cluster of blocks, one of 1024 a warp or two):
// "n<=2^25 cols<=2^10" holds 32768x1024, and 8192x4096 is "n<=2^25 cols<=2^12".
#pragma once

#include <cstdint>
#include <string>

namespace fusekit {

// log2 of the bucket's upper bound (0 for n <= 1).
int shape_bucket_log2(int64_t elements);
// "n<=2^12".
std::string shape_bucket_name(int64_t elements);
// "n<=2^25 cols<=2^10"; a negative `row_length` gives shape_bucket_name(elements).
std::string shape_bucket_name(int64_t elements, int64_t row_length);
// Reads either form: `row_log2` is -1 for a bucket without a row length.
// False (outputs untouched) for anything else, e.g. "generic".
bool parse_shape_bucket(const std::string& name, int* elements_log2, int* row_log2);

}  // namespace fusekit
