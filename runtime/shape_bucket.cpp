#include "fusekit/shape_bucket.h"

#include <cstdio>

namespace fusekit {

int shape_bucket_log2(int64_t elements) {
  // The smallest k with 2^k >= elements (at most 62): on every launch, twice
  // (element count and row length), so one count-leading-zeros, not a loop.
  if (elements <= 1) return 0;
  const int k = 64 - __builtin_clzll(static_cast<unsigned long long>(elements - 1));
  return k < 62 ? k : 62;
}

std::string shape_bucket_name(int64_t elements) { return "n<=2^" + std::to_string(shape_bucket_log2(elements)); }

std::string shape_bucket_name(int64_t elements, int64_t row_length) {
  if (row_length < 0) return shape_bucket_name(elements);
  return shape_bucket_name(elements) + " cols<=2^" + std::to_string(shape_bucket_log2(row_length));
}

bool parse_shape_bucket(const std::string& name, int* elements_log2, int* row_log2) {
  int n = -1, r = -1, used = 0;
  if (std::sscanf(name.c_str(), "n<=2^%d%n", &n, &used) != 1 || n < 0 || n > 62) return false;
  if (static_cast<size_t>(used) != name.size()) {
    int more = 0;
    if (std::sscanf(name.c_str() + used, " cols<=2^%d%n", &r, &more) != 1 || r < 0 || r > 62 ||
        static_cast<size_t>(used + more) != name.size())
      return false;
  }
  *elements_log2 = n;
  *row_log2 = r;
  return true;
}

}  // namespace fusekit
