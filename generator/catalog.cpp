#include "generator/catalog.h"

#include "common/errors.h"
#include "generator/math_ops.h"

namespace fusekit {
namespace {

using Halide::Expr;

FusionCandidate flat(std::string name, std::string description, std::vector<std::string> inputs, AlgorithmFn fn) {
  FusionCandidate c;
  c.name = std::move(name);
  c.description = std::move(description);
  c.layout = Layout::kFlat;
  for (auto& i : inputs) c.inputs.push_back({std::move(i), {}});
  c.outputs = {"out"};
  c.algorithm = std::move(fn);
  return c;
}

FusionCandidate bias_gelu(const std::string& name, const std::string& form, Expr (*gelu)(const Expr&)) {
  FusionCandidate c;
  c.name = name;
  c.description = "gelu" + form + "(x + b[col]) over [rows, cols]";
  c.layout = Layout::kRowCol;
  c.inputs = {{"x", {}}, {"b", {0}}};
  c.outputs = {"out"};
  c.algorithm = [gelu](const AlgorithmContext& ctx) { return std::vector<Expr>{gelu(ctx.in("x") + ctx.in("b"))}; };
  return c;
}

std::vector<FusionCandidate> build_catalog() {
  std::vector<FusionCandidate> v;
  v.push_back(flat("relu_add", "relu(x) + y", {"x", "y"}, [](const AlgorithmContext& c) {
    return std::vector<Expr>{fk_relu(c.in("x")) + c.in("y")};
  }));
  v.push_back(flat("sigmoid_mul_tanh_add", "tanh(sigmoid(x) * y) + z", {"x", "y", "z"}, [](const AlgorithmContext& c) {
    return std::vector<Expr>{Halide::tanh(fk_sigmoid(c.in("x")) * c.in("y")) + c.in("z")};
  }));
  v.push_back(bias_gelu("bias_gelu", "", fk_gelu));
  v.push_back(bias_gelu("bias_gelu_tanh", "_tanh", fk_gelu_tanh));
  {
    FusionCandidate c;
    c.name = "bn_relu";
    c.description = "relu(x * scale[c] + shift[c]): inference batch-norm folded to per-channel scale/shift, NCHW";
    c.layout = Layout::kNchw;
    c.inputs = {{"x", {}}, {"scale", {1}}, {"shift", {1}}};
    c.outputs = {"out"};
    c.algorithm = [](const AlgorithmContext& ctx) {
      return std::vector<Expr>{fk_relu(ctx.in("x") * ctx.in("scale") + ctx.in("shift"))};
    };
    v.push_back(c);
  }
  v.push_back(flat("residual_add_relu", "relu(x + r)", {"x", "r"}, [](const AlgorithmContext& c) {
    return std::vector<Expr>{fk_relu(c.in("x") + c.in("r"))};
  }));
  v.push_back(flat("silu_mul", "silu(a) * b", {"a", "b"}, [](const AlgorithmContext& c) {
    return std::vector<Expr>{fk_silu(c.in("a")) * c.in("b")};
  }));
  return v;
}

}  // namespace

const std::vector<FusionCandidate>& catalog() {
  static const std::vector<FusionCandidate> c = build_catalog();
  return c;
}

const FusionCandidate& find_pattern(const std::string& name) {
  std::string known;
  for (const auto& c : catalog()) {
    if (c.name == name) return c;
    known += (known.empty() ? "" : " ") + c.name;
  }
  throw UserError("unknown pattern '" + name + "'; known: " + known + " (see `fusekit list`)");
}

}  // namespace fusekit
