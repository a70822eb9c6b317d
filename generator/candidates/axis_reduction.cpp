#include "generator/candidates/axis_reduction.h"

#include "common/errors.h"

namespace fusekit {

AxisReduction make_axis_reduction(Reduction kind, const Halide::Expr& value, const std::vector<int>& reduced,
                                  const std::vector<int>& kept, const std::vector<Halide::Var>& vars,
                                  const std::vector<Halide::Expr>& extents, bool f64, size_t index) {
  FUSEKIT_INTERNAL_ASSERT(!reduced.empty(), "a reduction over no axes");
  const std::string k = std::to_string(index);
  AxisReduction red;
  red.kind = kind;
  red.reduced = reduced;
  red.kept = kept;
  red.body = Halide::Func("fk_ab" + k);
  red.body(std::vector<Halide::Var>(vars.begin(), vars.end())) = value;
  Halide::Region ranges;
  Halide::Expr count = 1;
  for (int a : reduced) {
    FUSEKIT_INTERNAL_ASSERT(extents.at(a).defined(), "a reduced axis without an extent");
    ranges.emplace_back(0, extents[a]);
    count = count * extents[a];
  }
  red.rdom = Halide::RDom(ranges, "fk_ar" + k);
  // The body at the kept vars and the reduction's coordinates.
  std::vector<Halide::Expr> at;
  for (size_t a = 0; a < vars.size(); ++a) at.push_back(vars[a]);
  for (size_t j = 0; j < reduced.size(); ++j) at[reduced[j]] = red.rdom[static_cast<int>(j)];
  std::vector<Halide::Var> kept_vars;
  for (int a : kept) kept_vars.push_back(vars.at(a));
  const Halide::Type acc = f64 ? Halide::Float(64) : Halide::Float(32);
  Halide::Expr v = Halide::cast(acc, red.body(at));
  red.total = Halide::Func("fk_at" + k);
  if (kind == Reduction::kMax) {
    red.total(kept_vars) = acc.min();  // -inf for floats
    red.total(kept_vars) = Halide::max(red.total(kept_vars), v);
  } else {
    red.total(kept_vars) = Halide::cast(acc, 0);
    red.total(kept_vars) = red.total(kept_vars) + v;
  }
  Halide::Expr t = red.total(kept_vars);
  if (kind == Reduction::kMean) t = t / Halide::cast(acc, count);
  red.func = Halide::Func("fk_ared" + k);
  red.func(kept_vars) = f64 ? t : Halide::cast<float>(t);
  return red;
}

std::vector<Halide::Expr> axis_extents(const FusionCandidate& candidate, const std::vector<Halide::ImageParam>& inputs,
                                       size_t axes) {
  std::vector<Halide::Expr> out(axes);
  for (size_t i = 0; i < candidate.inputs.size(); ++i) {
    const InputSpec& in = candidate.inputs[i];
    for (size_t a = 0; a < axes; ++a) {
      if (out[a].defined()) continue;
      if (in.full()) {
        out[a] = inputs[i].dim(static_cast<int>(a)).extent();
        continue;
      }
      for (size_t k = 0; k < in.axes.size(); ++k)
        if (in.axes[k] == static_cast<int>(a)) out[a] = inputs[i].dim(static_cast<int>(k)).extent();
    }
  }
  return out;
}

std::vector<Halide::Func> permuted_reads(const FusionCandidate& candidate, const std::vector<Halide::ImageParam>& inputs) {
  std::vector<Halide::Func> out(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!candidate.inputs[i].permuted()) continue;
    std::vector<Halide::Var> vs;
    std::vector<Halide::Expr> at;
    for (int k = 0; k < inputs[i].dimensions(); ++k) {
      vs.emplace_back("fk_pv" + std::to_string(k));
      at.push_back(Halide::clamp(vs.back(), 0, inputs[i].dim(k).extent() - 1));
    }
    out[i] = Halide::Func("fk_pin" + std::to_string(i));
    out[i](vs) = inputs[i](at);
  }
  return out;
}

std::string axis_list(Layout layout, const std::vector<int>& axes, const char* sep) {
  std::string s;
  for (size_t k = 0; k < axes.size(); ++k) s += (k ? sep : "") + layout_axes(layout).at(axes[k]);
  return s;
}

}  // namespace fusekit
