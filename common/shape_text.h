// Shapes as text, outermost first: {8192, 4096} <-> "8192x4096"; an element
// count is a shape of one dim ("65536"). Records, --sizes and problems all
// write shapes this way.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fusekit {

inline std::string shape_text(const std::vector<int64_t>& outer_first) {
  std::string s;
  for (size_t i = 0; i < outer_first.size(); ++i) s += (i ? "x" : "") + std::to_string(outer_first[i]);
  return s;
}

// The most elements one problem may have: Halide's buffers (the CPU
// reference, the Halide backend) index with 32-bit integers.
constexpr int64_t kMaxElements = (int64_t{1} << 31) - 1;

// The extents, outermost first; nullopt unless every part is a positive
// decimal integer (at most 18 digits).
inline std::optional<std::vector<int64_t>> parse_shape_text(const std::string& text) {
  std::vector<int64_t> out;
  size_t start = 0;
  while (true) {
    const size_t end = std::min(text.find('x', start), text.size());
    const std::string part = text.substr(start, end - start);
    if (part.empty() || part.size() > 18 || part.find_first_not_of("0123456789") != std::string::npos) return {};
    out.push_back(std::stoll(part));
    if (out.back() <= 0) return {};
    if (end == text.size()) return out;
    start = end + 1;
  }
}

}  // namespace fusekit
