// LaunchExpr: a small integer expression over named symbols, used to describe
// a kernel's grid and scalar arguments as functions of the problem shape.
//
// Both backends describe their launches with it: the NVRTC backend writes
// e.g. "(div (add n 1023) 1024)", the Halide backend translates the host-side
// expressions Halide lowered for the kernel's closure. The runtime evaluates
// them per call without any compiler. Text form is a prefix s-expression:
//   expr := INT | SYMBOL | '(' OP expr* ')'
//   OP   := add sub mul div mod min max select lt le eq ne and or not
// div and mod round toward negative infinity (Halide's semantics). Symbols
// are names like "n", "d0", "in0.extent.1", "sm_count".
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fusekit/status.h"

namespace fusekit {

class LaunchExpr {
 public:
  enum class Op { kConst, kSymbol, kAdd, kSub, kMul, kDiv, kMod, kMin, kMax,
                  kSelect, kLt, kLe, kEq, kNe, kAnd, kOr, kNot,
                  // Division by a run-time divisor d in 1..2^31-1 as a
                  // multiply and shift: for 0 <= a < 2^31,
                  // a / d == (a * divmagic(d)) >> divshift(d) in 64-bit
                  // unsigned arithmetic. 0 for d outside that range.
                  kDivMagic, kDivShift };

  LaunchExpr() : LaunchExpr(int64_t{0}) {}
  // NOLINTNEXTLINE(google-explicit-constructor): constants read naturally.
  LaunchExpr(int64_t value);
  static LaunchExpr symbol(std::string name);
  static LaunchExpr make(Op op, std::vector<LaunchExpr> args);

  Op op() const;
  int64_t value() const;               // for kConst
  const std::string& name() const;     // for kSymbol
  const std::vector<LaunchExpr>& args() const;

  // Canonical text form (parse(to_string()) round-trips).
  std::string to_string() const;
  // Parses the text form; a Status names the offending position.
  static Status parse(const std::string& text, LaunchExpr* out);

  // Evaluates with symbol values from `lookup`, which returns false for an
  // unknown symbol. Division by zero and unknown symbols give a Status.
  using Lookup = std::function<bool(const std::string&, int64_t*)>;
  Status evaluate(const Lookup& lookup, int64_t* result) const;

  // Symbols this expression reads, each once, in first-use order.
  std::vector<std::string> symbols() const;

 private:
  struct Node;
  explicit LaunchExpr(std::shared_ptr<const Node> node) : node_(std::move(node)) {}
  std::shared_ptr<const Node> node_;
};

// Convenience builders.
LaunchExpr ceil_div(const LaunchExpr& a, int64_t b);

}  // namespace fusekit
