#include "fusekit/dtype.h"

namespace fusekit {

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
  }
  return "?";
}

std::optional<DType> parse_dtype(const std::string& text) {
  if (text == "f32") return DType::kF32;
  if (text == "f16") return DType::kF16;
  if (text == "bf16") return DType::kBF16;
  return std::nullopt;
}

size_t dtype_bytes(DType dtype) { return dtype == DType::kF32 ? 4 : 2; }

}  // namespace fusekit
