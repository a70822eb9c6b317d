// The one op table: every ONNX op fusekit knows, its class on the fusion
// lattice, and its lowering to the `--expr` language.
//
//   elementwise < broadcast < injective < reduction < anchor < opaque
//
// Elementwise, broadcast and reduction ops (along the last axis, or over H
// and W of NCHW) fuse; injective ops
// (reshape, transpose, slice, concat), anchors (GEMM, conv) and opaque ops
// are region boundaries.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/graph_ir.h"

namespace fusekit::graph {

enum class OpClass { kElementwise, kBroadcast, kInjective, kReduction, kAnchor, kOpaque };
const char* op_class_name(OpClass c);

// A value during lowering: expression text, or a comparison (a boolean,
// which the language allows only as where()'s condition).
struct LoweredValue {
  std::string text;                    // the value's expression
  bool is_condition = false;
  std::string lhs, cmp, rhs;           // the comparison, when is_condition
  std::string condition_text() const { return lhs + " " + cmp + " " + rhs; }
  static LoweredValue value(std::string t) { return {std::move(t), false, "", "", ""}; }
  static LoweredValue condition(std::string l, std::string op, std::string r) {
    return {"", true, std::move(l), std::move(op), std::move(r)};
  }
};

// Thrown by a lowering the language cannot express; the region becomes
// found-but-unsupported with this reason.
class Unsupported : public std::runtime_error {
 public:
  explicit Unsupported(const std::string& why) : std::runtime_error(why) {}
};

// What a lowering may look at besides its arguments.
struct LoweringContext {
  const Graph& graph;
  const Node& node;
  const Shape* input_shape(size_t i) const;              // nullptr when unknown or omitted
  const Tensor* input_constant(size_t i) const;          // a constant with values, else nullptr
};

using LowerFn = std::function<LoweredValue(const LoweringContext&, const std::vector<LoweredValue>&)>;

struct OpInfo {
  OpClass cls;
  LowerFn lower;   // empty for classes that never fuse
};

// The op's entry; nullptr for an op fusekit does not know.
const OpInfo* find_op(const std::string& op);

// Whether a reduction node reduces over H and W of a 4-D NCHW input (a
// global pool, ReduceMean over axes [2, 3]) rather than along the last axis.
bool reduces_over_hw(const Graph& graph, const Node& node);

// "1.41421354", "-3.40282347e+38": a number the language reads back exactly
// at f32. Throws Unsupported for non-finite values.
std::string number_text(double v);

}  // namespace fusekit::graph
