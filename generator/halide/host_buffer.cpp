#include "generator/halide/host_buffer.h"

#include <climits>
#include <string>
#include <vector>

#include "common/errors.h"

namespace fusekit {

Halide::Buffer<> host_buffer(const Halide::Type& storage, const HostTensor& t) {
  std::vector<int> sizes;
  for (int64_t d : t.dims) {
    if (d > INT32_MAX) throw UserError("reference: extent " + std::to_string(d) + " exceeds Halide's int32 limit");
    sizes.push_back(static_cast<int>(d));
  }
  return Halide::Buffer<>(storage, const_cast<uint8_t*>(t.bytes.data()), sizes);
}

}  // namespace fusekit
