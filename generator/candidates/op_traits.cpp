// What a candidate offers the schedule space (OpTraits), and the pairs of
// reductions one combine can finish together.
#include "generator/candidates/op_traits.h"

#include "generator/candidates/general_layout.h"

#include <algorithm>

namespace fusekit {
namespace {

using Halide::Expr;
using Halide::Internal::Call;

bool calls_reduction(const Expr& e, const RowReduction& r) {
  const auto* c = e.as<Call>();
  return c && c->call_type == Call::Halide && Halide::Internal::Function(c->func).name() == r.func.name();
}

}  // namespace

std::vector<ReductionPair> find_reduction_pairs(const Pipeline& pipe) {
  using Halide::Internal::graph_equal;
  std::vector<ReductionPair> pairs;
  const auto& reds = pipe.reductions;
  for (size_t i = 0; i + 1 < reds.size(); ++i) {
    const RowReduction &first = reds[i], &second = reds[i + 1];
    // Funcs' definitions may bind `d` in a Let (`let k0 = v - mean in k0 * k0`).
    const Expr body = Halide::Internal::substitute_in_all_lets(second.body.value());
    // `d = v - mean(v)`, then the mean or sum of d * d.
    if (first.kind == Reduction::kMean && second.kind != Reduction::kMax) {
      const auto* m = body.as<Halide::Internal::Mul>();
      const auto* d = m ? m->a.as<Halide::Internal::Sub>() : nullptr;
      if (d && graph_equal(m->a, m->b) && calls_reduction(d->b, first) && graph_equal(d->a, first.body.value())) {
        pairs.push_back({i, ReductionPair::Kind::kMeanVar});
        ++i;
        continue;
      }
    }
    // `m = max(v)`, then sum(exp(v - m)).
    if (first.kind == Reduction::kMax && second.kind == Reduction::kSum) {
      const auto* e = body.as<Call>();
      const auto* d = e && e->name == "exp_f32" && e->args.size() == 1 ? e->args[0].as<Halide::Internal::Sub>() : nullptr;
      if (d && calls_reduction(d->b, first) && graph_equal(d->a, first.body.value())) {
        pairs.push_back({i, ReductionPair::Kind::kMaxSumExp});
        ++i;
      }
    }
  }
  return pairs;
}

OpTraits op_traits(const FusionCandidate& candidate, DType dtype) {
  OpTraits t;
  if (candidate.general) {
    t.general = general_traits(candidate, dtype);
    return t;
  }
  if (!candidate.reduces()) {
    for (const auto& in : candidate.inputs) {
      if (in.full()) continue;
      if (std::find(in.axes.begin(), in.axes.end(), 0) != in.axes.end()) return OpTraits{};
      ++t.plane_inputs;
    }
    return t;
  }
  for (const auto& in : candidate.inputs) t.weight_inputs += in.axes == std::vector<int>{0};
  t.reduction_pairs = static_cast<int>(find_reduction_pairs(instantiate(candidate, dtype)).size());
  return t;
}

}  // namespace fusekit
