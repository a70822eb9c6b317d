#include "graph/op_table.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <set>

namespace fusekit::graph {
namespace {

using Args = std::vector<LoweredValue>;
using V = LoweredValue;

const std::string& val(const V& v, const std::string& op) {
  if (v.is_condition) throw Unsupported(op + " takes a boolean produced inside the region as a number");
  if (v.text.empty()) throw Unsupported(op + " is missing an input");
  return v.text;
}

LowerFn unary(const char* fn) {
  return [fn](const LoweringContext& c, const Args& a) {
    return V::value(std::string(fn) + "(" + val(a.at(0), c.node.op) + ")");
  };
}

LowerFn binary(const char* op) {
  return [op](const LoweringContext& c, const Args& a) {
    return V::value("(" + val(a.at(0), c.node.op) + " " + op + " " + val(a.at(1), c.node.op) + ")");
  };
}

LowerFn compare(const char* op) {
  return [op](const LoweringContext& c, const Args& a) {
    return V::condition(val(a.at(0), c.node.op), op, val(a.at(1), c.node.op));
  };
}

// min/max are variadic in ONNX.
LowerFn fold(const char* fn) {
  return [fn](const LoweringContext& c, const Args& a) {
    std::string acc = val(a.at(0), c.node.op);
    for (size_t i = 1; i < a.size(); ++i) acc = std::string(fn) + "(" + acc + ", " + val(a[i], c.node.op) + ")";
    return V::value(acc);
  };
}

double scalar_input(const LoweringContext& c, size_t i, const char* what) {
  const Tensor* t = c.input_constant(i);
  if (!t || t->values.size() != 1) throw Unsupported(c.node.op + "'s " + what + " is not a scalar constant");
  return t->values[0];
}

// The reduced axis of an input of rank r must be the last one.
void require_last_axis(const LoweringContext& c, std::vector<int64_t> axes) {
  const Shape* s = c.input_shape(0);
  if (!s) throw Unsupported(c.node.op + ": input rank unknown");
  const int64_t rank = static_cast<int64_t>(s->size());
  if (axes.size() != 1) throw Unsupported(c.node.op + " over " + std::to_string(axes.size()) + " axes (only the last axis)");
  const int64_t axis = axes[0] < 0 ? axes[0] + rank : axes[0];
  if (axis != rank - 1) throw Unsupported("reduction over a non-last axis (" + c.node.op + " axis " + std::to_string(axes[0]) + ")");
}

// A Reduce* node's axes: an attribute (older opsets) or the second input
// (ReduceSum 13+, the others 18+); empty when it names none (all axes).
std::vector<int64_t> reduce_axes_of(const LoweringContext& c) {
  std::vector<int64_t> axes;
  if (auto attr = c.node.attr_ints("axes")) {
    axes = *attr;
  } else if (c.node.inputs.size() > 1 && !c.node.inputs[1].empty()) {
    const Tensor* t = c.input_constant(1);
    if (!t) throw Unsupported(c.node.op + "'s axes input is not a constant");
    for (double v : t->values) axes.push_back(static_cast<int64_t>(v));
  }
  return axes;
}

// Whether `axes` are H and W of a 4-D (NCHW) input, in any order or sign.
bool is_hw(const LoweringContext& c, const std::vector<int64_t>& axes) {
  const Shape* s = c.input_shape(0);
  if (!s || s->size() != 4 || axes.size() != 2) return false;
  std::set<int64_t> norm;
  for (int64_t a : axes) norm.insert(a < 0 ? a + 4 : a);
  return norm == std::set<int64_t>{2, 3};
}

// ReduceMean/ReduceSum/ReduceMax along the last axis, or over H and W of
// NCHW (a global pool, the general nchw layout); keepdims must be 1.
LowerFn reduce(const char* fn) {
  return [fn](const LoweringContext& c, const Args& a) {
    const std::vector<int64_t> axes = reduce_axes_of(c);
    if (axes.empty()) throw Unsupported(c.node.op + " over all axes");
    const bool hw = is_hw(c, axes);
    if (!hw) require_last_axis(c, axes);
    if (c.node.attr_int("keepdims").value_or(1) != 1)
      throw Unsupported(c.node.op + " with keepdims=0 (the result must broadcast over the " +
                        (hw ? "image" : "row") + ")");
    return V::value(std::string(fn) + "(" + val(a.at(0), c.node.op) + (hw ? ", hw)" : ", col)"));
  };
}

// GlobalAveragePool/GlobalMaxPool: over H and W of an NCHW input (1-D and
// 3-D spatial inputs have no layout).
LowerFn global_pool(const char* fn) {
  return [fn](const LoweringContext& c, const Args& a) {
    const Shape* s = c.input_shape(0);
    if (!s) throw Unsupported(c.node.op + ": input rank unknown");
    if (s->size() != 4)
      throw Unsupported(c.node.op + " over a " + std::to_string(s->size()) + "-D input (NCHW, 4-D, only)");
    return V::value(std::string(fn) + "(" + val(a.at(0), c.node.op) + ", hw)");
  };
}

// Softmax/LogSoftmax: opset 13+ reduce along `axis` (default -1); before 13
// the input is flattened to 2-D at `axis` (default 1), which is one row per
// leading index only when axis is the last axis.
void softmax_axis(const LoweringContext& c) {
  const Shape* s = c.input_shape(0);
  if (!s) throw Unsupported(c.node.op + ": input rank unknown");
  const int64_t rank = static_cast<int64_t>(s->size());
  const bool modern = c.graph.opset >= 13;
  int64_t axis = c.node.attr_int("axis").value_or(modern ? -1 : 1);
  if (axis < 0) axis += rank;
  if (axis != rank - 1)
    throw Unsupported(modern ? "reduction over a non-last axis (" + c.node.op + " axis " + std::to_string(axis) + ")"
                             : c.node.op + " before opset 13 over the flattened axes " + std::to_string(axis) + "..");
}

V softmax(const LoweringContext& c, const Args& a) {
  softmax_axis(c);
  const std::string& x = val(a.at(0), c.node.op);
  const std::string e = "exp(" + x + " - max(" + x + ", col))";
  return V::value("(" + e + " / sum(" + e + ", col))");
}

V log_softmax(const LoweringContext& c, const Args& a) {
  softmax_axis(c);
  const std::string& x = val(a.at(0), c.node.op);
  const std::string m = "max(" + x + ", col)";
  return V::value("(" + x + " - " + m + " - log(sum(exp(" + x + " - " + m + "), col)))");
}

void only_first_output(const LoweringContext& c) {
  for (size_t i = 1; i < c.node.outputs.size(); ++i)
    if (!c.node.outputs[i].empty()) throw Unsupported(c.node.op + " with its optional output " + c.node.outputs[i] + " used");
}

V layer_norm(const LoweringContext& c, const Args& a) {
  only_first_output(c);
  const Shape* s = c.input_shape(0);
  if (!s) throw Unsupported("LayerNormalization: input rank unknown");
  require_last_axis(c, {c.node.attr_int("axis").value_or(-1)});
  const std::string eps = number_text(c.node.attr_float("epsilon").value_or(1e-5));
  const std::string& x = val(a.at(0), c.node.op);
  const std::string d = "(" + x + " - mean(" + x + ", col))";
  std::string out = "(" + d + " * rsqrt(mean(" + d + " * " + d + ", col) + " + eps + "))";
  if (a.size() > 1 && !a[1].text.empty()) out = "(" + out + " * " + val(a[1], c.node.op) + ")";
  if (a.size() > 2 && !a[2].text.empty()) out = "(" + out + " + " + val(a[2], c.node.op) + ")";
  return V::value(out);
}

// Inference form only: (x - mean) * scale / sqrt(var + eps) + bias.
V batch_norm(const LoweringContext& c, const Args& a) {
  if (c.node.attr_int("training_mode").value_or(0) != 0) throw Unsupported("BatchNormalization in training mode");
  only_first_output(c);
  const std::string eps = number_text(c.node.attr_float("epsilon").value_or(1e-5));
  const std::string& op = c.node.op;
  return V::value("((" + val(a.at(0), op) + " - " + val(a.at(3), op) + ") * (" + val(a.at(1), op) + " * rsqrt(" +
                  val(a.at(4), op) + " + " + eps + ")) + " + val(a.at(2), op) + ")");
}

V cast(const LoweringContext& c, const Args& a) {
  const auto* out = c.graph.tensor(c.node.outputs.at(0));
  const bool to_bool = out && out->dtype == ElemType::kBool;
  if (a.at(0).is_condition) {
    if (to_bool) return a[0];
    return V::value("where(" + a[0].condition_text() + ", 1, 0)");
  }
  if (to_bool) return V::condition(val(a[0], "Cast"), "!=", "0");
  return a[0];  // between float storage types: the region stores its own dtype
}

V where(const LoweringContext& c, const Args& a) {
  if (!a.at(0).is_condition)
    throw Unsupported("Where's condition is a boolean tensor from outside the region (kernels take float inputs)");
  return V::value("where(" + a[0].condition_text() + ", " + val(a.at(1), "Where") + ", " + val(a.at(2), "Where") + ")");
}

V logical_not(const LoweringContext& c, const Args& a) {
  if (!a.at(0).is_condition) throw Unsupported("Not of a boolean tensor from outside the region");
  static const std::map<std::string, std::string> inverse = {{"<", ">="}, {">=", "<"}, {">", "<="},
                                                             {"<=", ">"}, {"==", "!="}, {"!=", "=="}};
  return V::condition(a[0].lhs, inverse.at(a[0].cmp), a[0].rhs);
}

V power(const LoweringContext& c, const Args& a) {
  const double e = scalar_input(c, 1, "exponent");
  return V::value("pow(" + val(a.at(0), "Pow") + ", " + number_text(e) + ")");
}

// Clip's bounds: attributes before opset 11, optional inputs after.
V clip(const LoweringContext& c, const Args& a) {
  std::string out = val(a.at(0), "Clip");
  auto bound = [&](size_t i, const char* attr) -> std::string {
    if (auto v = c.node.attr_float(attr)) return number_text(*v);
    if (a.size() > i && !a[i].text.empty()) return val(a[i], "Clip");
    return "";
  };
  const std::string lo = bound(1, "min"), hi = bound(2, "max");
  if (!lo.empty()) out = "max(" + out + ", " + lo + ")";
  if (!hi.empty()) out = "min(" + out + ", " + hi + ")";
  return V::value(out);
}

V leaky_relu(const LoweringContext& c, const Args& a) {
  const std::string& x = val(a.at(0), "LeakyRelu");
  const std::string alpha = number_text(c.node.attr_float("alpha").value_or(0.01));
  return V::value("where(" + x + " > 0, " + x + ", " + alpha + " * " + x + ")");
}

V hard_sigmoid(const LoweringContext& c, const Args& a) {
  const std::string alpha = number_text(c.node.attr_float("alpha").value_or(0.2));
  const std::string beta = number_text(c.node.attr_float("beta").value_or(0.5));
  return V::value("max(min(" + alpha + " * " + val(a.at(0), "HardSigmoid") + " + " + beta + ", 1), 0)");
}

V hard_swish(const LoweringContext& c, const Args& a) {
  const std::string& x = val(a.at(0), "HardSwish");
  return V::value("(" + x + " * max(min(" + x + " / 6 + 0.5, 1), 0))");
}

V gelu(const LoweringContext& c, const Args& a) {
  const std::string approx = c.node.attr_string("approximate").value_or("none");
  if (approx != "none" && approx != "tanh") throw Unsupported("Gelu approximate='" + approx + "'");
  return V::value((approx == "tanh" ? "gelu_tanh(" : "gelu(") + val(a.at(0), "Gelu") + ")");
}

V reciprocal(const LoweringContext& c, const Args& a) { return V::value("(1 / " + val(a.at(0), "Reciprocal") + ")"); }
V negate(const LoweringContext& c, const Args& a) { return V::value("(-" + val(a.at(0), "Neg") + ")"); }
V softplus(const LoweringContext& c, const Args& a) { return V::value("log(exp(" + val(a.at(0), "Softplus") + ") + 1)"); }
V erf(const LoweringContext& c, const Args& a) {
  throw Unsupported("Erf outside the erf-GELU pattern (the language has gelu(), not erf())");
}

const std::map<std::string, OpInfo>& table() {
  using C = OpClass;
  static const std::map<std::string, OpInfo> t = {
      // elementwise
      {"Sqrt", {C::kElementwise, unary("sqrt")}},
      {"Exp", {C::kElementwise, unary("exp")}},
      {"Log", {C::kElementwise, unary("log")}},
      {"Tanh", {C::kElementwise, unary("tanh")}},
      {"Sigmoid", {C::kElementwise, unary("sigmoid")}},
      {"Relu", {C::kElementwise, unary("relu")}},
      {"Abs", {C::kElementwise, unary("abs")}},
      {"Reciprocal", {C::kElementwise, reciprocal}},
      {"Neg", {C::kElementwise, negate}},
      {"Erf", {C::kElementwise, erf}},
      {"Gelu", {C::kElementwise, gelu}},
      {"LeakyRelu", {C::kElementwise, leaky_relu}},
      {"HardSigmoid", {C::kElementwise, hard_sigmoid}},
      {"HardSwish", {C::kElementwise, hard_swish}},
      {"Softplus", {C::kElementwise, softplus}},
      {"Cast", {C::kElementwise, cast}},
      {"CastLike", {C::kElementwise, cast}},
      {"Not", {C::kElementwise, logical_not}},
      // broadcast
      {"Add", {C::kBroadcast, binary("+")}},
      {"Sub", {C::kBroadcast, binary("-")}},
      {"Mul", {C::kBroadcast, binary("*")}},
      {"Div", {C::kBroadcast, binary("/")}},
      {"Pow", {C::kBroadcast, power}},
      {"Min", {C::kBroadcast, fold("min")}},
      {"Max", {C::kBroadcast, fold("max")}},
      {"Clip", {C::kBroadcast, clip}},
      {"Where", {C::kBroadcast, where}},
      {"Equal", {C::kBroadcast, compare("==")}},
      {"Less", {C::kBroadcast, compare("<")}},
      {"LessOrEqual", {C::kBroadcast, compare("<=")}},
      {"Greater", {C::kBroadcast, compare(">")}},
      {"GreaterOrEqual", {C::kBroadcast, compare(">=")}},
      {"BatchNormalization", {C::kBroadcast, batch_norm}},
      // reductions along the last axis, and the normalizations built on them
      {"ReduceMean", {C::kReduction, reduce("mean")}},
      {"ReduceSum", {C::kReduction, reduce("sum")}},
      {"ReduceMax", {C::kReduction, reduce("max")}},
      {"Softmax", {C::kReduction, softmax}},
      {"LogSoftmax", {C::kReduction, log_softmax}},
      {"LayerNormalization", {C::kReduction, layer_norm}},
      // reductions over H and W of NCHW (the general nchw layout)
      {"GlobalAveragePool", {C::kReduction, global_pool("mean")}},
      {"GlobalMaxPool", {C::kReduction, global_pool("max")}},
      // injective
      {"Reshape", {C::kInjective, {}}}, {"Transpose", {C::kInjective, {}}}, {"Unsqueeze", {C::kInjective, {}}},
      {"Squeeze", {C::kInjective, {}}}, {"Expand", {C::kInjective, {}}},    {"Concat", {C::kInjective, {}}},
      {"Slice", {C::kInjective, {}}},   {"Split", {C::kInjective, {}}},     {"Gather", {C::kInjective, {}}},
      {"Flatten", {C::kInjective, {}}}, {"Tile", {C::kInjective, {}}},      {"Pad", {C::kInjective, {}}},
      {"Identity", {C::kInjective, {}}}, {"Dropout", {C::kInjective, {}}}, {"Trilu", {C::kInjective, {}}},
      // anchors
      {"MatMul", {C::kAnchor, {}}}, {"Gemm", {C::kAnchor, {}}}, {"Conv", {C::kAnchor, {}}},
      {"ConvTranspose", {C::kAnchor, {}}}, {"Einsum", {C::kAnchor, {}}}, {"Attention", {C::kAnchor, {}}},
      // opaque: shape computations, pooling, data-dependent ops
      {"Shape", {C::kOpaque, {}}}, {"Size", {C::kOpaque, {}}}, {"ConstantOfShape", {C::kOpaque, {}}},
      {"Range", {C::kOpaque, {}}}, {"MaxPool", {C::kOpaque, {}}}, {"AveragePool", {C::kOpaque, {}}},
      {"Constant", {C::kOpaque, {}}}, {"And", {C::kOpaque, {}}},
      {"Or", {C::kOpaque, {}}}, {"Cos", {C::kOpaque, {}}}, {"Sin", {C::kOpaque, {}}},
      {"ScatterND", {C::kOpaque, {}}}, {"TopK", {C::kOpaque, {}}}, {"ArgMax", {C::kOpaque, {}}},
      {"Opaque", {C::kOpaque, {}}},
  };
  return t;
}

}  // namespace

const char* op_class_name(OpClass c) {
  switch (c) {
    case OpClass::kElementwise: return "elementwise";
    case OpClass::kBroadcast: return "broadcast";
    case OpClass::kInjective: return "injective";
    case OpClass::kReduction: return "reduction";
    case OpClass::kAnchor: return "anchor";
    case OpClass::kOpaque: return "opaque";
  }
  return "opaque";
}

bool reduces_over_hw(const Graph& graph, const Node& node) {
  if (node.op == "GlobalAveragePool" || node.op == "GlobalMaxPool") return true;
  if (node.op != "ReduceMean" && node.op != "ReduceSum" && node.op != "ReduceMax") return false;
  const LoweringContext c{graph, node};
  try {
    return is_hw(c, reduce_axes_of(c));
  } catch (const Unsupported&) {
    return false;
  }
}

const OpInfo* find_op(const std::string& op) {
  auto it = table().find(op);
  return it == table().end() ? nullptr : &it->second;
}

std::string number_text(double v) {
  const float f = static_cast<float>(v);
  if (!std::isfinite(f)) throw Unsupported("a constant outside f32's range (" + std::to_string(v) + ")");
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(f));
  std::string s = buf;
  return s[0] == '-' ? "(" + s + ")" : s;
}

const Shape* LoweringContext::input_shape(size_t i) const {
  if (i >= node.inputs.size() || node.inputs[i].empty()) return nullptr;
  const Tensor* t = graph.tensor(node.inputs[i]);
  return t && t->shape ? &*t->shape : nullptr;
}

const Tensor* LoweringContext::input_constant(size_t i) const {
  if (i >= node.inputs.size() || node.inputs[i].empty()) return nullptr;
  const Tensor* t = graph.tensor(node.inputs[i]);
  return t && t->has_values() ? t : nullptr;
}

}  // namespace fusekit::graph
