#include "generator/candidates/catalog.h"

#include "common/errors.h"
#include "generator/candidates/math_ops.h"

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

// A row reduction or normalization over the last axis of [rows, cols].
FusionCandidate rows(std::string name, std::string description, std::vector<InputSpec> inputs,
                     std::vector<ParamSpec> params, std::vector<std::string> outputs, AlgorithmFn fn) {
  FusionCandidate c;
  c.name = std::move(name);
  c.description = std::move(description);
  c.layout = Layout::kRows;
  c.inputs = std::move(inputs);
  c.params = std::move(params);
  c.outputs = std::move(outputs);
  c.algorithm = std::move(fn);
  return c;
}

// The max-subtracted softmax of v along the row.
Expr softmax_of(const AlgorithmContext& c, const Expr& v) {
  Expr e = Halide::exp(v - c.reduce(Reduction::kMax, v));
  return e / c.reduce(Reduction::kSum, e);
}

Expr layernorm_of(const AlgorithmContext& c, const Expr& v) {
  Expr d = v - c.reduce(Reduction::kMean, v);
  Expr var = c.reduce(Reduction::kMean, d * d);
  return d / Halide::sqrt(var + c.param("eps")) * c.in("w") + c.in("b");
}

Expr rmsnorm_of(const AlgorithmContext& c, const Expr& v) {
  return v / Halide::sqrt(c.reduce(Reduction::kMean, v * v) + c.param("eps")) * c.in("w");
}

void add_row_ops(std::vector<FusionCandidate>* v) {
  const InputSpec x{"x", {}}, r{"residual", {}}, w{"w", {0}}, b{"b", {0}};
  v->push_back(rows("softmax", "exp(x - max(x)) / sum(exp(x - max(x))) along each row", {x}, {}, {"out"},
                    [](const AlgorithmContext& c) { return std::vector<Expr>{softmax_of(c, c.in("x"))}; }));
  v->push_back(rows("log_softmax", "x - max(x) - log(sum(exp(x - max(x)))) along each row", {x}, {}, {"out"},
                    [](const AlgorithmContext& c) {
                      Expr s = c.in("x") - c.reduce(Reduction::kMax, c.in("x"));
                      return std::vector<Expr>{s - Halide::log(c.reduce(Reduction::kSum, Halide::exp(s)))};
                    }));
  v->push_back(rows("layernorm", "(x - mean) / sqrt(var + eps) * w[col] + b[col] along each row", {x, w, b},
                    {{"eps", 1e-5f}}, {"out"},
                    [](const AlgorithmContext& c) { return std::vector<Expr>{layernorm_of(c, c.in("x"))}; }));
  v->push_back(rows("rmsnorm", "x / sqrt(mean(x * x) + eps) * w[col] along each row", {x, w}, {{"eps", 1e-6f}},
                    {"out"}, [](const AlgorithmContext& c) { return std::vector<Expr>{rmsnorm_of(c, c.in("x"))}; }));
  v->push_back(rows("add_layernorm", "sum = x + residual; out = layernorm(sum) * w[col] + b[col]", {x, r, w, b},
                    {{"eps", 1e-5f}}, {"out", "sum"}, [](const AlgorithmContext& c) {
                      Expr s = c.in("x") + c.in("residual");
                      return std::vector<Expr>{layernorm_of(c, s), s};
                    }));
  v->push_back(rows("add_rmsnorm", "sum = x + residual; out = rmsnorm(sum) * w[col]", {x, r, w}, {{"eps", 1e-6f}},
                    {"out", "sum"}, [](const AlgorithmContext& c) {
                      Expr s = c.in("x") + c.in("residual");
                      return std::vector<Expr>{rmsnorm_of(c, s), s};
                    }));
  v->push_back(rows("bias_add_softmax", "softmax(scale * x + mask) along each row", {x, {"mask", {}}},
                    {{"scale", 0.125f}}, {"out"}, [](const AlgorithmContext& c) {
                      return std::vector<Expr>{softmax_of(c, c.param("scale") * c.in("x") + c.in("mask"))};
                    }));
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
  add_row_ops(&v);
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
