#include "fusekit/shape_bucket.h"

namespace fusekit {

int shape_bucket_log2(int64_t elements) {
  int k = 0;
  while (k < 62 && (int64_t{1} << k) < elements) ++k;
  return k;
}

std::string shape_bucket_name(int64_t elements) { return "n<=2^" + std::to_string(shape_bucket_log2(elements)); }

}  // namespace fusekit
