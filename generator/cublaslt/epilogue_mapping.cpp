#include "generator/cublaslt/epilogue_mapping.h"

#include <algorithm>
#include <map>
#include <vector>

#include "common/errors.h"
#include "generator/candidates/expr_parser.h"

namespace fusekit {
namespace {

// Every input as a named f32 variable, so two epilogues compare as Exprs
// whatever their inputs are called.
class SymbolContext final : public AlgorithmContext {
 public:
  explicit SymbolContext(std::map<std::string, std::string> roles) : roles_(std::move(roles)) {}
  Halide::Expr in(const std::string& name) const override {
    auto it = roles_.find(name);
    return Halide::Internal::Variable::make(Halide::Float(32), it == roles_.end() ? "fk_other_" + name : it->second);
  }
  Halide::Expr param(const std::string& name) const override {
    return Halide::Internal::Variable::make(Halide::Float(32), "fk_param_" + name);
  }
  Halide::Expr reduce(Reduction, const Halide::Expr&) const override {
    throw UserError("a GEMM epilogue cannot reduce along a row");
  }

 private:
  std::map<std::string, std::string> roles_;
};

Halide::Expr symbolic(const FusionCandidate& c, const std::map<std::string, std::string>& roles) {
  SymbolContext ctx(roles);
  return c.algorithm(ctx).at(0);
}

struct Template {
  GemmEpilogue epilogue;
  const char* activation;  // "" or the expression language's call
};

// The sum's terms in every left-to-right order the parser could have seen.
std::vector<std::string> sums(std::vector<std::string> terms) {
  std::sort(terms.begin(), terms.end());
  std::vector<std::string> out;
  do {
    std::string s;
    for (size_t i = 0; i < terms.size(); ++i) s += (i ? " + " : "") + terms[i];
    out.push_back(s);
  } while (std::next_permutation(terms.begin(), terms.end()));
  return out;
}

bool matches(const Halide::Expr& e, const std::string& activation, const std::vector<std::string>& terms) {
  const std::map<std::string, std::string> roles = {{"acc", "fk_acc"}, {"bias", "fk_bias"}, {"res", "fk_res"}};
  for (const std::string& sum : sums(terms)) {
    const std::string body = activation.empty() ? sum : activation + "(" + sum + ")";
    if (Halide::Internal::graph_equal(e, symbolic(parse_expression("out = " + body), roles))) return true;
  }
  return false;
}

LtEpilogueMapping refuse(const std::string& reason) {
  LtEpilogueMapping m;
  m.reason = reason;
  return m;
}

}  // namespace

LtEpilogueMapping map_to_cublaslt(const GemmCandidate& c) {
  if (c.accumulators != 1) return refuse("two products (acc and acc2) need two GEMMs and a tail");
  if (!c.epilogue.params.empty()) return refuse("cuBLASLt's epilogues take no scalar parameters");
  LtEpilogueMapping m;
  std::map<std::string, std::string> roles = {{kGemmAccumulator, "fk_acc"}};
  for (size_t i : c.operand_inputs()) {
    const InputSpec& in = c.epilogue.inputs[i];
    if (in.full() && m.residual_input < 0) {
      m.residual_input = static_cast<int>(i);
      roles[in.name] = "fk_res";
    } else if (in.axes == std::vector<int>{0} && m.bias_input < 0) {
      m.bias_input = static_cast<int>(i);
      roles[in.name] = "fk_bias";
    } else {
      return refuse("input '" + in.name + "' is neither the one per-column bias nor the one residual cuBLASLt adds");
    }
  }
  const Halide::Expr e = symbolic(c.epilogue, roles);
  std::vector<std::string> terms = {"acc"};
  if (m.bias_input >= 0) terms.push_back("bias");
  if (m.residual_input >= 0) terms.push_back("res");
  const bool bias = m.bias_input >= 0;
  const Template templates[] = {
      {bias ? GemmEpilogue::kBias : GemmEpilogue::kDefault, ""},
      {bias ? GemmEpilogue::kReluBias : GemmEpilogue::kRelu, "relu"},
      {bias ? GemmEpilogue::kGeluBias : GemmEpilogue::kGelu, "gelu_tanh"},
  };
  for (const Template& t : templates)
    if (matches(e, t.activation, terms)) {
      m.fused = true;
      m.epilogue = t.epilogue;
      return m;
    }
  if (matches(e, "gelu", terms))
    return refuse("the epilogue's GELU is the exact (erf) form; cuBLASLt's GELU epilogue is the tanh "
                  "approximation, so only the tail kernel computes it");
  return refuse("cuBLASLt computes act(acc + bias[col] + residual) with act none, relu or gelu_tanh; this epilogue "
                "is none of them");
}

}  // namespace fusekit
