// Shape buckets: kernels are generic over sizes; the tuner records one winner
// per bucket and the runtime picks by bucket. A bucket is the power-of-two
// ceiling of the element count: "n<=2^12" holds 2049..4096 elements.
#pragma once

#include <cstdint>
#include <string>

namespace fusekit {

// log2 of the bucket's upper bound (0 for n <= 1).
int shape_bucket_log2(int64_t elements);
// "n<=2^12".
std::string shape_bucket_name(int64_t elements);

}  // namespace fusekit
