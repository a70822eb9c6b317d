// Storage dtypes of fused kernels. Arithmetic is always done in f32.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace fusekit {

enum class DType { kF32, kF16, kBF16 };

// "f32", "f16", "bf16".
const char* dtype_name(DType dtype);
// Inverse of dtype_name; nullopt for anything else.
std::optional<DType> parse_dtype(const std::string& text);
// Bytes per stored element.
size_t dtype_bytes(DType dtype);

}  // namespace fusekit
