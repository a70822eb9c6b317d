#include "generator/candidates/fusion_candidate.h"

#include <xxhash.h>

#include <map>
#include <regex>
#include <sstream>

#include "common/errors.h"
#include "generator/candidates/axis_reduction.h"
#include "generator/candidates/storage_bits.h"

namespace fusekit {

const char* layout_name(Layout layout) {
  switch (layout) {
    case Layout::kFlat: return "flat";
    case Layout::kRowCol: return "rowcol";
    case Layout::kNchw: return "nchw";
    case Layout::kRows: return "rows";
    case Layout::kNd: return "nd";
    case Layout::kNdRows: return "ndrows";
  }
  return "?";
}

const char* reduction_name(Reduction kind) {
  switch (kind) {
    case Reduction::kSum: return "sum";
    case Reduction::kMax: return "max";
    case Reduction::kMean: return "mean";
  }
  return "?";
}

const std::vector<std::string>& layout_axes(Layout layout) {
  static const std::vector<std::string> flat = {"i"}, rowcol = {"col", "row"}, nchw = {"hw", "c", "n"},
                                        nd = {"d0", "d1", "d2", "d3"};
  switch (layout) {
    case Layout::kFlat: return flat;
    case Layout::kRowCol: return rowcol;
    case Layout::kNchw: return nchw;
    case Layout::kRows: return rowcol;
    case Layout::kNd:
    case Layout::kNdRows: return nd;
  }
  return flat;
}

std::string halide_input_name(const std::string& name) { return "in_" + name; }
std::string halide_param_name(const std::string& name) { return "p_" + name; }

std::vector<int64_t> FusionCandidate::domain_for_elements(int64_t n) const {
  if (n <= 0) throw UserError("size " + std::to_string(n) + " is not positive; sizes are element counts >= 1");
  switch (layout) {
    case Layout::kFlat: return {n};
    case Layout::kRowCol:
    case Layout::kRows: return n < 1024 ? std::vector<int64_t>{n, 1} : std::vector<int64_t>{1024, (n + 1023) / 1024};
    case Layout::kNchw: return n < 64 ? std::vector<int64_t>{n, 1, 1} : std::vector<int64_t>{(n + 63) / 64, 64, 1};
    case Layout::kNd:
    case Layout::kNdRows:
      return n < 1024 ? std::vector<int64_t>{n, 1, 1, 1} : std::vector<int64_t>{1024, (n + 1023) / 1024, 1, 1};
  }
  return {n};
}

std::vector<int64_t> FusionCandidate::odd_domain() const {
  switch (layout) {
    case Layout::kFlat: return {100003};
    case Layout::kRowCol:
    case Layout::kRows: return {1001, 97};
    case Layout::kNchw: return {333, 7, 3};
    case Layout::kNd: return {101, 7, 5, 3};
    case Layout::kNdRows: return {1001, 7, 5, 3};
  }
  return {100003};
}

std::vector<int64_t> FusionCandidate::domain_for_shape(const std::vector<int64_t>& outer_first) const {
  const auto& axes = layout_axes(layout);
  const bool nd = layout == Layout::kNd || layout == Layout::kNdRows;
  if (outer_first.empty() || outer_first.size() > axes.size() || (!nd && outer_first.size() != axes.size())) {
    std::string names;
    for (size_t i = axes.size(); i-- > 0;) names += axes[i] + (i ? " x " : "");
    std::string shape;
    for (int64_t d : outer_first) shape += (shape.empty() ? "" : "x") + std::to_string(d);
    throw UserError("shape '" + shape + "' has " + std::to_string(outer_first.size()) + " dims; " + name + " (" +
                    layout_name(layout) + ") takes " + (nd ? "up to " : "") + names + " or an element count");
  }
  std::vector<int64_t> d(outer_first.rbegin(), outer_first.rend());
  d.resize(axes.size(), 1);
  return d;
}

Halide::Expr AlgorithmContext::reduce_axes(Reduction kind, const Halide::Expr&, const std::vector<int>&,
                                           const std::vector<int>&) const {
  throw UserError(std::string("a ") + reduction_name(kind) + " over named axes has no domain here");
}

std::vector<int64_t> FusionCandidate::output_dims(const std::vector<int64_t>& domain) const {
  if (!general || output_axes.size() == domain.size()) return domain;
  std::vector<int64_t> dims;
  for (int a : output_axes) dims.push_back(domain.at(a));
  return dims;
}

std::vector<int64_t> FusionCandidate::input_dims(size_t i, const std::vector<int64_t>& domain) const {
  const InputSpec& in = inputs.at(i);
  if (in.full()) return domain;
  std::vector<int64_t> dims;
  for (int a : in.axes) dims.push_back(domain.at(a));
  return dims;
}

namespace {

Halide::Type storage_type(DType dtype) {
  switch (dtype) {
    case DType::kF32: return Halide::Float(32);
    case DType::kF16: return Halide::Float(16);
    case DType::kBF16: return Halide::BFloat(16);
  }
  return Halide::Float(32);
}

class Context final : public AlgorithmContext {
 public:
  Context(const FusionCandidate& c, Pipeline& p) : c_(c), p_(p) {}
  Halide::Expr in(const std::string& name) const override {
    for (size_t i = 0; i < c_.inputs.size(); ++i) {
      if (c_.inputs[i].name != name) continue;
      std::vector<Halide::Expr> args;
      if (c_.inputs[i].full()) {
        for (const auto& v : p_.vars) args.push_back(v);
      } else {
        for (int a : c_.inputs[i].axes) args.push_back(p_.vars.at(a));
      }
      Halide::Expr e = p_.permuted_reads.size() > i && p_.permuted_reads[i].defined() ? p_.permuted_reads[i](args)
                                                                                   : p_.inputs[i](args);
      if (f64_) return Halide::cast<double>(e);
      if (p_.storage == Halide::UInt(16)) return widen_storage_bits(e, p_.dtype);
      return p_.storage == Halide::Float(32) ? e : Halide::cast<float>(e);
    }
    throw InternalError("candidate " + c_.name + " has no input '" + name + "'");
  }
  Halide::Expr param(const std::string& name) const override {
    for (size_t i = 0; i < c_.params.size(); ++i)
      if (c_.params[i].name == name) return f64_ ? Halide::cast<double>(p_.params[i]) : Halide::Expr(p_.params[i]);
    throw InternalError("candidate " + c_.name + " has no parameter '" + name + "'");
  }
  Halide::Expr reduce(Reduction kind, const Halide::Expr& value) const override {
    if (!c_.reduces())
      throw UserError(std::string("a ") + reduction_name(kind) + " over a row needs the rows layout (" + c_.name +
                      " is " + layout_name(c_.layout) + ")");
    if (!p_.row_length.defined()) throw UserError(c_.name + ": a row reduction needs a full-shape input");
    // A row is one point of the outer axes: {row}, or {d1, d2, d3} in ndrows.
    const std::vector<Halide::Var> row(p_.vars.begin() + 1, p_.vars.end());
    std::vector<Halide::Expr> row_args(row.begin(), row.end());
    // The same reduction written twice (a user's `max(x, col)` in both the
    // numerator and the denominator) is reduced once.
    for (const RowReduction& r : p_.reductions)
      if (r.kind == kind && Halide::Internal::graph_equal(r.body.value(), value)) return r.func(row_args);
    const std::string k = std::to_string(p_.reductions.size());
    RowReduction red;
    red.kind = kind;
    red.body = Halide::Func("fk_rb" + k);
    red.body(p_.vars) = value;
    red.total = Halide::Func("fk_rt" + k);
    Halide::RDom r(0, p_.row_length, "fk_r" + k);
    red.rdom = r;
    const Halide::Type acc = f64_ ? Halide::Float(64) : Halide::Float(32);
    std::vector<Halide::Expr> at_r = {r.x};
    at_r.insert(at_r.end(), row_args.begin(), row_args.end());
    Halide::Expr v = Halide::cast(acc, red.body(at_r));
    if (kind == Reduction::kMax) {
      red.total(row) = acc.min();  // -inf for floats
      red.total(row) = Halide::max(red.total(row), v);
    } else {
      red.total(row) = Halide::cast(acc, 0);
      red.total(row) = red.total(row) + v;
    }
    red.func = Halide::Func("fk_red" + k);
    Halide::Expr t = red.total(row);
    if (kind == Reduction::kMean) t = t / Halide::cast(acc, p_.row_length);
    red.func(row) = f64_ ? t : Halide::cast<float>(t);
    p_.reductions.push_back(red);
    return red.func(row_args);
  }
  Halide::Expr reduce_axes(Reduction kind, const Halide::Expr& value, const std::vector<int>& reduced,
                           const std::vector<int>& kept) const override {
    if (!c_.general)
      throw UserError(std::string("a ") + reduction_name(kind) + " over named axes needs a general layout (" + c_.name +
                      " is " + layout_name(c_.layout) + ")");
    // The same reduction written twice is reduced once.
    for (const AxisReduction& r : p_.axis_reductions)
      if (r.kind == kind && r.reduced == reduced && Halide::Internal::graph_equal(r.body.value(), value)) {
        std::vector<Halide::Expr> at;
        for (int a : kept) at.push_back(p_.vars.at(a));
        return r.func(at);
      }
    p_.axis_reductions.push_back(
        make_axis_reduction(kind, value, reduced, kept, p_.vars, p_.axis_extents, f64_, p_.axis_reductions.size()));
    std::vector<Halide::Expr> at;
    for (int a : kept) at.push_back(p_.vars.at(a));
    return p_.axis_reductions.back().func(at);
  }
  bool f64_ = false;

 private:
  const FusionCandidate& c_;
  Pipeline& p_;
};

// Min 0 and dense strides. Halide ties every output buffer's min and extent
// to the first output's, so later outputs take strides only.
void constrain(Halide::OutputImageParam b, size_t dims, bool set_min) {
  for (size_t k = 0; k < dims; ++k) {
    auto d = b.dim(static_cast<int>(k));
    if (set_min) d.set_min(0);
    if (k == 0) d.set_stride(1);
    else d.set_stride(b.dim(static_cast<int>(k) - 1).stride() * b.dim(static_cast<int>(k) - 1).extent());
  }
}

Pipeline instantiate_with(const FusionCandidate& candidate, DType dtype, bool f64_math, bool storage_bits) {
  Pipeline p;
  p.dtype = dtype;
  p.storage = storage_bits && dtype != DType::kF32 ? Halide::UInt(16) : storage_type(dtype);
  for (const auto& axis : layout_axes(candidate.layout)) p.vars.emplace_back(axis);
  for (const auto& in : candidate.inputs)
    p.inputs.emplace_back(p.storage, in.full() ? static_cast<int>(p.vars.size()) : static_cast<int>(in.axes.size()),
                          halide_input_name(in.name));
  for (const auto& prm : candidate.params) {
    p.params.emplace_back(halide_param_name(prm.name));
    p.params.back().set(prm.value);
  }
  for (size_t i = 0; i < candidate.inputs.size() && !p.row_length.defined(); ++i)
    if (candidate.inputs[i].full()) p.row_length = p.inputs[i].dim(0).extent();
  if (candidate.general) {
    p.axis_extents = axis_extents(candidate, p.inputs, p.vars.size());
    p.permuted_reads = permuted_reads(candidate, p.inputs);
  }
  Context ctx(candidate, p);
  ctx.f64_ = f64_math;
  std::vector<Halide::Expr> values = candidate.algorithm(ctx);
  FUSEKIT_INTERNAL_ASSERT(values.size() == candidate.outputs.size(),
                          candidate.name + ": algorithm returned the wrong number of outputs");
  for (auto& v : values) {
    FUSEKIT_INTERNAL_ASSERT(v.type() == (ctx.f64_ ? Halide::Float(64) : Halide::Float(32)),
                            candidate.name + ": output math must be f32 (f64 in a reference)");
    p.stored.push_back(p.storage == Halide::UInt(16) ? round_to_storage_bits(v, dtype) : Halide::cast(p.storage, v));
  }
  p.output = Halide::Func(kHalideOutputName);
  std::vector<Halide::Var> args(p.vars.begin(), p.vars.end());
  if (candidate.general && candidate.output_axes.size() != p.vars.size()) {
    args.clear();
    for (int a : candidate.output_axes) args.push_back(p.vars.at(a));
  }
  if (p.stored.size() == 1) p.output(args) = p.stored[0];
  else p.output(args) = Halide::Tuple(p.stored);
  return p;
}

}  // namespace

Pipeline instantiate(const FusionCandidate& candidate, DType dtype, bool f64_reductions, bool storage_bits) {
  return instantiate_with(candidate, dtype, f64_reductions && (candidate.reduces() || candidate.general), storage_bits);
}

Pipeline instantiate_f64(const FusionCandidate& candidate, DType dtype) {
  return instantiate_with(candidate, dtype, true, false);
}

void Pipeline::constrain_buffers() {
  for (auto& in : inputs) constrain(in, static_cast<size_t>(in.dimensions()), true);
  auto outs = output.output_buffers();
  for (size_t i = 0; i < outs.size(); ++i) constrain(outs[i], static_cast<size_t>(output.dimensions()), i == 0);
}

std::vector<Halide::Argument> Pipeline::arguments() const {
  std::vector<Halide::Argument> args;
  for (const auto& in : inputs) args.emplace_back(in);
  for (const auto& p : params) args.emplace_back(p);
  return args;
}

std::string canonical_pipeline_text(const FusionCandidate& candidate, DType dtype) {
  Pipeline p = instantiate(candidate, dtype);
  std::ostringstream s;
  s << "layout " << layout_name(candidate.layout) << "; dtype " << dtype_name(dtype) << ";";
  for (const auto& in : candidate.inputs) {
    s << " input " << in.name;
    if (!in.full()) {
      s << "[";
      for (size_t k = 0; k < in.axes.size(); ++k) s << (k ? "," : "") << layout_axes(candidate.layout)[in.axes[k]];
      s << "]";
    }
    s << ";";
  }
  for (const auto& prm : candidate.params) s << " param " << prm.name << ";";
  for (const auto& r : p.reductions)
    s << " " << r.func.name() << " = " << reduction_name(r.kind) << " over col of " << r.body.value() << ";";
  for (const auto& r : p.axis_reductions)
    s << " " << r.func.name() << " = " << reduction_name(r.kind) << " over " << axis_list(candidate.layout, r.reduced)
      << " of " << r.body.value() << ";";
  if (candidate.general) s << " outputs over " << axis_list(candidate.layout, candidate.output_axes) << ";";
  for (size_t i = 0; i < p.stored.size(); ++i) s << " " << candidate.outputs[i] << " = " << p.stored[i] << ";";
  // Halide makes names unique per process ("in_x_im$2", the lets "t319" of
  // a Func definition); the key must not depend on how many pipelines were
  // built before this one. Lets are renamed k0, k1, ... in order.
  std::string text = std::regex_replace(s.str(), std::regex(R"(\$[0-9]+)"), "");
  std::map<std::string, std::string> lets;
  const std::regex let_name(R"(let (t[0-9]+) =)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), let_name); it != std::sregex_iterator(); ++it)
    lets.emplace((*it)[1].str(), "k" + std::to_string(lets.size()));
  for (const auto& [from, to] : lets) text = std::regex_replace(text, std::regex("\\b" + from + "\\b"), to);
  return text;
}

std::string pipeline_hash(const std::string& canonical_text) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx",
                static_cast<unsigned long long>(XXH64(canonical_text.data(), canonical_text.size(), 0)));
  return buf;
}

}  // namespace fusekit
