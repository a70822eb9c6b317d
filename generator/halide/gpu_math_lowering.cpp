#include "generator/halide/gpu_math_lowering.h"

namespace fusekit {
namespace {

using namespace Halide;
using namespace Halide::Internal;

class LowerCalls : public IRMutator {
  using IRMutator::visit;
  Expr visit(const Call* op) override {
    if (op->call_type == Call::PureExtern && op->name == "erff" && op->args.size() == 1)
      return erf_approximation(mutate(op->args[0]));
    return IRMutator::visit(op);
  }
};

}  // namespace

Expr erf_approximation(const Expr& x) {
  const Expr a = abs(x);
  const Expr t = 1.0f / (1.0f + 0.3275911f * a);
  const Expr poly =
      t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  const Expr magnitude = 1.0f - poly * exp(-a * a);
  return select(x < 0.0f, -magnitude, magnitude);
}

void lower_gpu_math_calls(Func f) {
  LowerCalls m;
  f.function().mutate(&m);
}

}  // namespace fusekit
