#include "generator/candidates/general_layout.h"

#include "common/errors.h"
#include "generator/candidates/axis_reduction.h"

namespace fusekit {

std::vector<int> general_thread_axes(const FusionCandidate& c, const Pipeline& p) {
  if (p.axis_reductions.empty()) return c.output_axes;
  const std::vector<int>& kept = p.axis_reductions.front().kept;
  for (const AxisReduction& r : p.axis_reductions)
    if (r.kept != kept)
      throw UserError(c.name + ": its reductions keep different axes (" + axis_list(c.layout, kept, " ") + " and " +
                      axis_list(c.layout, r.kept, " ") +
                      "); one general-layout kernel reduces over one set of axes: write them as two expressions");
  if (kept.empty()) throw UserError(c.name + ": a reduction over every axis (a scalar) has no general-layout kernel");
  return kept;
}

GeneralTraits general_traits(const FusionCandidate& c, DType dtype) {
  GeneralTraits t;
  if (!c.general) return t;
  const Pipeline p = instantiate(c, dtype);
  t.reduces = !p.axis_reductions.empty();
  const std::vector<int> axes = general_thread_axes(c, p);
  t.thread_axes = static_cast<int>(axes.size());
  t.outputs_are_kept = t.reduces && axes == c.output_axes;
  for (const auto& in : c.inputs) t.permuted_inputs += in.permuted();
  return t;
}

GeneralLayoutShape general_layout_shape(const FusionCandidate& c, const Pipeline& p) {
  GeneralLayoutShape s;
  s.output = p.output;
  s.vars = p.vars;
  s.output_axes = c.output_axes;
  s.thread_axes = general_thread_axes(c, p);
  for (const AxisReduction& r : p.axis_reductions) s.reductions.push_back({r.total, r.rdom});
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (c.inputs[i].permuted()) s.permuted_inputs.push_back({p.permuted_reads.at(i), c.inputs[i].axes});
  return s;
}

}  // namespace fusekit
