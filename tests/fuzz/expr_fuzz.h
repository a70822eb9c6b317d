// A seeded grammar generator of well-formed expressions in fusekit's
// expression language: flat pointwise chains, [rows, cols] chains with
// broadcast inputs, NCHW chains with per-channel inputs, and row reductions.
// The same seed gives the same corpus on every machine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fusekit {

struct FuzzExpression {
  std::string layout;  // "flat", "rowcol", "nchw" or "rows"
  std::string source;  // expression text, e.g. "param a = 0.5\nout = tanh(x * a) + y"
};

std::vector<FuzzExpression> fuzz_expressions(uint32_t seed, int count);

}  // namespace fusekit
