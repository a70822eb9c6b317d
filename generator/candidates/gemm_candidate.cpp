#include "generator/candidates/gemm_candidate.h"

#include "common/errors.h"
#include "generator/candidates/expr_parser.h"

namespace fusekit {
namespace {

Halide::Type storage_of(DType dtype) {
  switch (dtype) {
    case DType::kF32: return Halide::Float(32);
    case DType::kF16: return Halide::Float(16);
    case DType::kBF16: return Halide::BFloat(16);
  }
  return Halide::Float(32);
}

// The epilogue's view of the GEMM pipeline: accumulators are the product
// Funcs, every other input its ImageParam at the epilogue's axes.
class GemmContext final : public AlgorithmContext {
 public:
  GemmContext(const GemmCandidate& c, Pipeline& p, std::vector<Halide::Func> products,
              std::vector<Halide::ImageParam> operands)
      : c_(c), p_(p), products_(std::move(products)), operands_(std::move(operands)) {}

  Halide::Expr in(const std::string& name) const override {
    const auto& inputs = c_.epilogue.inputs;
    const std::vector<size_t> ops = c_.operand_inputs();
    for (int w = 0; w < c_.accumulators; ++w)
      if (static_cast<int>(c_.accumulator_input(w)) >= 0 && inputs[c_.accumulator_input(w)].name == name)
        return products_[w](p_.vars[0], p_.vars[1]);
    for (size_t j = 0; j < ops.size(); ++j) {
      const InputSpec& spec = inputs[ops[j]];
      if (spec.name != name) continue;
      std::vector<Halide::Expr> args;
      if (spec.full()) args = {p_.vars[0], p_.vars[1]};
      else
        for (int a : spec.axes) args.push_back(p_.vars.at(a));
      Halide::Expr e = operands_[j](args);
      return p_.storage == Halide::Float(32) ? e : Halide::cast<float>(e);
    }
    throw InternalError("GEMM epilogue " + c_.name + " has no input '" + name + "'");
  }
  Halide::Expr param(const std::string& name) const override {
    for (size_t i = 0; i < c_.epilogue.params.size(); ++i)
      if (c_.epilogue.params[i].name == name) return p_.params[i];
    throw InternalError("GEMM epilogue " + c_.name + " has no parameter '" + name + "'");
  }
  Halide::Expr reduce(Reduction, const Halide::Expr&) const override {
    throw UserError("a GEMM epilogue cannot reduce along a row");
  }

 private:
  const GemmCandidate& c_;
  Pipeline& p_;
  std::vector<Halide::Func> products_;
  std::vector<Halide::ImageParam> operands_;
};

}  // namespace

std::vector<size_t> GemmCandidate::operand_inputs() const {
  std::vector<size_t> out;
  for (size_t i = 0; i < epilogue.inputs.size(); ++i)
    if (epilogue.inputs[i].name != kGemmAccumulator && epilogue.inputs[i].name != kGemmSecondAccumulator)
      out.push_back(i);
  return out;
}

int GemmCandidate::accumulator_input(int which) const {
  const char* name = which == 0 ? kGemmAccumulator : kGemmSecondAccumulator;
  for (size_t i = 0; i < epilogue.inputs.size(); ++i)
    if (epilogue.inputs[i].name == name) return static_cast<int>(i);
  return -1;
}

GemmCandidate make_gemm_candidate(const std::string& epilogue_source, bool b_transposed, const std::string& name) {
  GemmCandidate c;
  c.epilogue = parse_expression(epilogue_source);
  c.description = epilogue_source;
  c.b_transposed = b_transposed;
  FusionCandidate& e = c.epilogue;
  if (e.layout == Layout::kRows)
    throw UserError("GEMM epilogue '" + epilogue_source + "' reduces along a row; an epilogue is pointwise over the "
                    "product (run the reduction as its own op after the GEMM)");
  if (e.layout == Layout::kNchw)
    throw UserError("GEMM epilogue '" + epilogue_source + "' indexes NCHW axes (n, c, hw); a GEMM's output is "
                    "[rows, cols]: use b[col] for a per-feature vector, b[row] for a per-token one");
  e.layout = Layout::kRowCol;  // a flat epilogue (full-shape inputs only) is one over [M, N]
  if (e.outputs.size() != 1)
    throw UserError("GEMM epilogue '" + epilogue_source + "' has " + std::to_string(e.outputs.size()) +
                    " outputs; write one output (out = ...)");
  for (int w = 0; w < 2; ++w) {
    const int i = c.accumulator_input(w);
    if (i >= 0 && !e.inputs[i].full())
      throw UserError(std::string("GEMM epilogue indexes '") + e.inputs[i].name + "' by axes; the product " +
                      e.inputs[i].name + " is full-shape [M, N]: write it bare");
  }
  if (c.accumulator_input(0) < 0)
    throw UserError("GEMM epilogue '" + epilogue_source + "' never reads 'acc', the product A @ B; e.g. "
                    "out = gelu(acc + b[col])");
  c.accumulators = c.accumulator_input(1) >= 0 ? 2 : 1;
  const std::string text = gemm_canonical_text(c, DType::kF32);
  c.name = name.empty() ? "gemm_" + pipeline_hash(text).substr(0, 8) : name;
  c.epilogue.name = c.name + "_tail";
  return c;
}

GemmCandidate parse_gemm_flag(const std::string& text) {
  const size_t colon = text.find(':');
  const std::string name = text.substr(0, colon);
  const bool named = colon != std::string::npos && !name.empty() &&
                     name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos;
  if (!named)
    throw UserError("--gemm '" + text + "' is not NAME:EXPR (NAME in lowercase letters, digits and _), e.g. "
                    "--gemm 'bert_up:out = gelu(acc + b[col])'");
  std::string expr = text.substr(colon + 1);
  bool b_transposed = true;
  if (expr.rfind("kn:", 0) == 0) {
    b_transposed = false;
    expr = expr.substr(3);
  }
  return make_gemm_candidate(expr, b_transposed, name);
}

std::vector<int64_t> gemm_domain(const GemmDims& d) {
  if (d.m < 1 || d.n < 1 || d.k < 1)
    throw UserError("GEMM shape " + std::to_string(d.m) + "x" + std::to_string(d.n) + "x" + std::to_string(d.k) +
                    " has an extent below 1; write MxNxK with M, N, K >= 1 (e.g. 128x3072x768)");
  return {d.n, d.m, d.k};
}

GemmDims gemm_dims(const std::vector<int64_t>& domain) {
  if (domain.size() != 3)
    throw UserError("a GEMM shape has 3 extents (MxNxK), not " + std::to_string(domain.size()));
  GemmDims d{domain[1], domain[0], domain[2]};
  gemm_domain(d);
  return d;
}

std::vector<std::vector<int64_t>> gemm_input_dims(const GemmCandidate& c, const GemmDims& d) {
  std::vector<std::vector<int64_t>> dims;
  dims.push_back({d.k, d.m});
  for (int w = 0; w < c.accumulators; ++w)
    dims.push_back(c.b_transposed ? std::vector<int64_t>{d.k, d.n} : std::vector<int64_t>{d.n, d.k});
  const std::vector<int64_t> out = {d.n, d.m};
  for (size_t i : c.operand_inputs()) dims.push_back(c.epilogue.input_dims(i, out));
  return dims;
}

Pipeline instantiate_gemm(const GemmCandidate& c, DType dtype, bool f64_products) {
  Pipeline p;
  p.dtype = dtype;
  p.storage = storage_of(dtype);
  p.vars = {Halide::Var("col"), Halide::Var("row")};
  const Halide::Var col = p.vars[0], row = p.vars[1];
  p.inputs.emplace_back(p.storage, 2, halide_input_name("A"));
  for (int w = 0; w < c.accumulators; ++w) p.inputs.emplace_back(p.storage, 2, halide_input_name(w ? "B2" : "B"));
  std::vector<Halide::ImageParam> operands;
  for (size_t i : c.operand_inputs()) {
    const InputSpec& spec = c.epilogue.inputs[i];
    operands.emplace_back(p.storage, spec.full() ? 2 : static_cast<int>(spec.axes.size()), halide_input_name(spec.name));
    p.inputs.push_back(operands.back());
  }
  for (const auto& prm : c.epilogue.params) {
    p.params.emplace_back(halide_param_name(prm.name));
    p.params.back().set(prm.value);
  }
  const Halide::Type acc_type = f64_products ? Halide::Float(64) : Halide::Float(32);
  Halide::RDom r(0, p.inputs[0].dim(0).extent(), "fk_k");
  std::vector<Halide::Func> products;
  for (int w = 0; w < c.accumulators; ++w) {
    const Halide::ImageParam& b = p.inputs[1 + w];
    Halide::Func sum("fk_gemm_sum" + std::to_string(w)), product("fk_gemm" + std::to_string(w));
    Halide::Expr bv = c.b_transposed ? b(r.x, col) : b(col, r.x);
    sum(col, row) = Halide::cast(acc_type, 0);
    sum(col, row) += Halide::cast(acc_type, p.inputs[0](r.x, row)) * Halide::cast(acc_type, bv);
    product(col, row) = Halide::cast<float>(sum(col, row));
    p.reductions.push_back({Reduction::kSum, Halide::Func(), product, sum, r});
    products.push_back(product);
  }
  GemmContext ctx(c, p, products, operands);
  std::vector<Halide::Expr> values = c.epilogue.algorithm(ctx);
  FUSEKIT_INTERNAL_ASSERT(values.size() == 1 && values[0].type() == Halide::Float(32),
                          c.name + ": the epilogue must give one f32 value");
  p.stored = {Halide::cast(p.storage, values[0])};
  p.output = Halide::Func(kHalideOutputName);
  p.output(col, row) = p.stored[0];
  return p;
}

std::string gemm_canonical_text(const GemmCandidate& c, DType dtype) {
  return std::string("gemm ") + (c.b_transposed ? "B[N,K]" : "B[K,N]") + " acc=" + std::to_string(c.accumulators) +
         "; " + canonical_pipeline_text(c.epilogue, dtype);
}

}  // namespace fusekit
