// Map: storage dtype, each outside tensor's indexing form, the layout, then
// a memoized walk from every output to the text, then input names given in
// order of first appearance (the parser's order), then a parse to check.
#include "graph/region_lowering.h"

#include <algorithm>
#include <map>
#include <set>

#include "common/errors.h"
#include "generator/candidates/expr_parser.h"
#include "graph/op_table.h"

namespace fusekit::graph {
namespace {

constexpr size_t kMaxExprChars = 60000;
constexpr char kOpen = '\x01', kClose = '\x02';  // input placeholders until names are given

// How an outside tensor is indexed over the space. kNd: by the axes in
// `nd_axes_` (any numpy broadcast), which puts the region in the nd layouts.
enum class Form { kScalar, kFull, kCol, kRow, kC, kN, kHw, kNd };

constexpr size_t kMaxNdRank = 4;  // the nd layouts' axes d0..d3

const char* suffix(Form f) {
  switch (f) {
    case Form::kCol: return "[col]";
    case Form::kRow: return "[row]";
    case Form::kC: return "[c]";
    case Form::kN: return "[n]";
    case Form::kHw: return "[hw]";
    default: return "";
  }
}

// Which axes of the space the tensor varies along, right-aligned as numpy
// broadcasts; nullopt when a dim neither matches nor is 1.
std::optional<std::vector<bool>> varying_axes(const Shape& t, const Shape& s) {
  if (t.size() > s.size()) return {};
  std::vector<bool> v(s.size(), false);
  const size_t off = s.size() - t.size();
  for (size_t i = 0; i < t.size(); ++i) {
    const Dim& d = t[i];
    const Dim& sd = s[off + i];
    if (d.concrete() && d.value == 1) continue;
    if (d != sd) return {};
    v[off + i] = !(sd.concrete() && sd.value == 1);
  }
  return v;
}

// The form a pattern of varying axes takes; axes of extent 1 in the space
// fit either way.
std::optional<Form> form_of(const std::vector<bool>& v, const Shape& s) {
  const size_t r = s.size();
  auto is_one = [&](size_t i) { return s[i].concrete() && s[i].value == 1; };
  auto only = [&](std::set<size_t> axes) {
    for (size_t i = 0; i < r; ++i)
      if (v[i] != (axes.count(i) > 0) && !is_one(i)) return false;
    return true;
  };
  std::set<size_t> all, leading;
  for (size_t i = 0; i < r; ++i) all.insert(i);
  for (size_t i = 0; i + 1 < r; ++i) leading.insert(i);
  if (only(all)) return Form::kFull;
  if (r >= 1 && only({r - 1})) return Form::kCol;
  if (r >= 2 && only(leading)) return Form::kRow;
  if (r == 4 && only({1})) return Form::kC;
  if (r == 4 && only({0})) return Form::kN;
  if (r == 4 && only({2, 3})) return Form::kHw;
  return {};
}

class Lowerer {
 public:
  Lowerer(const Graph& g, const Region& r) : g_(g), r_(r) {
    for (size_t i : r.nodes)
      for (const auto& o : g.nodes[i].outputs) producer_[o] = i;
  }

  LoweredRegion run() {
    LoweredRegion out;
    out.dtype = storage_dtype();
    classify_inputs();
    out.layout = layout();
    std::string program;
    std::vector<std::pair<std::string, std::string>> outs;
    size_t pooled_outputs = 0;  // outputs of shape [N, C, 1, 1] (a reduction over H and W)
    for (size_t k = 0; k < r_.outputs.size(); ++k) {
      const std::string& t = r_.outputs[k];
      LoweredValue v = value(t);
      const Shape& shape = *g_.tensor(t)->shape;
      const bool pooled = r_.reduces_hw && shapes_equal(shape, pooled_space());
      if (!shapes_equal(shape, r_.space) && !pooled)
        throw Unsupported("output " + t + " has shape " + shape_string(shape) + ", not the region's " +
                          shape_string(r_.space) + " (outputs span the iteration space)");
      pooled_outputs += pooled;
      if (v.is_condition) throw Unsupported("output " + t + " is boolean (kernels store float)");
      const std::string name = r_.outputs.size() == 1 ? "out" : "out" + std::to_string(k);
      program += (program.empty() ? "" : "\n") + name + " = " + v.text;
      outs.push_back({name, t});
      if (program.size() > kMaxExprChars) throw Unsupported("the expression exceeds " + std::to_string(kMaxExprChars) + " characters");
    }
    out.expr = name_inputs(program, &out.inputs);
    out.outputs = outs;
    FusionCandidate parsed;
    try {
      parsed = parse_expression(out.expr);
    } catch (const UserError& e) {
      throw Unsupported(std::string("the expression does not parse: ") + e.what());
    }
    if (r_.reduces_hw) check_pooled_axes(parsed, pooled_outputs > 0);
    out.supported = true;
    return out;
  }

 private:
  ElemType storage_dtype() const {
    std::set<ElemType> seen;
    for (const auto& t : r_.inputs) {
      const Tensor* x = g_.tensor(t);
      if (!x->has_values() && x->dtype != ElemType::kBool) seen.insert(x->dtype);
    }
    for (const auto& t : r_.outputs) seen.insert(g_.tensor(t)->dtype);
    if (seen.size() != 1) {
      std::string names;
      for (ElemType e : seen) names += std::string(names.empty() ? "" : ", ") + elem_type_name(e);
      throw Unsupported("mixed storage dtypes (" + names + ")");
    }
    if (!is_storage_float(*seen.begin()))
      throw Unsupported(std::string("storage dtype ") + elem_type_name(*seen.begin()) + " (kernels store f32, f16, bf16)");
    return *seen.begin();
  }

  void classify_inputs() {
    // BatchNormalization's statistics are per channel (axis 1), not numpy-broadcast.
    std::set<std::string> per_channel;
    for (size_t i : r_.nodes)
      if (g_.nodes[i].op == "BatchNormalization")
        for (size_t k = 1; k < g_.nodes[i].inputs.size(); ++k) per_channel.insert(g_.nodes[i].inputs[k]);
    for (const auto& t : r_.inputs) {
      const Tensor* x = g_.tensor(t);
      if (x->is_scalar_constant()) { form_[t] = Form::kScalar; continue; }
      if (per_channel.count(t)) {
        if (r_.space.size() != 4) throw Unsupported("BatchNormalization over a " + std::to_string(r_.space.size()) + "-D input (NCHW only)");
        form_[t] = Form::kC;
        continue;
      }
      auto v = varying_axes(*x->shape, r_.space);
      if (!v)
        throw Unsupported("input " + t + " of shape " + shape_string(*x->shape) + " does not broadcast to " +
                          shape_string(r_.space) + " (numpy broadcasting: each dim equal or 1, aligned on the right)");
      varying_[t] = *v;
      std::optional<Form> f = form_of(*v, r_.space);
      if (!f && std::none_of(v->begin(), v->end(), [](bool b) { return b; }))
        throw Unsupported("input " + t + " of shape " + shape_string(*x->shape) +
                          " is one value that is not a constant (kernels take single values as folded constants only)");
      form_[t] = f ? *f : Form::kNd;
    }
    bool general = false;
    for (const auto& [t, f] : form_) general |= f == Form::kNd;
    if (!general) return;
    // Some input needs the nd layout: every input is then indexed by d-axes.
    if (r_.space.size() > kMaxNdRank)
      throw Unsupported("a general broadcast over the " + std::to_string(r_.space.size()) + "-D space " +
                        shape_string(r_.space) + " (the nd layouts have at most " + std::to_string(kMaxNdRank) + " axes)");
    for (auto& [t, f] : form_) {
      if (f == Form::kScalar || f == Form::kFull) continue;
      std::vector<bool> v = per_channel.count(t) ? channel_axes() : varying_[t];
      std::string axes;
      const size_t r = r_.space.size();
      for (size_t k = 0; k < r; ++k)  // d0 is the last axis: innermost first
        if (v[r - 1 - k]) axes += (axes.empty() ? "" : ",") + ("d" + std::to_string(k));
      if (axes.empty())
        throw Unsupported("input " + t + " of shape " + shape_string(*g_.tensor(t)->shape) +
                          " is one value that is not a constant (kernels take single values as folded constants only)");
      nd_axes_[t] = "[" + axes + "]";
      f = Form::kNd;
    }
  }

  // BatchNormalization's statistics vary along axis 1 of the space.
  std::vector<bool> channel_axes() const {
    std::vector<bool> v(r_.space.size(), false);
    v.at(1) = true;
    return v;
  }

  // The space with H and W pooled: [N, C, 1, 1].
  Shape pooled_space() const {
    Shape s = r_.space;
    s.at(2) = Dim::of(1);
    s.at(3) = Dim::of(1);
    return s;
  }

  // The general nchw candidate stores pooled outputs by (c, n) and whole
  // ones by every axis; anything else would not be the graph's tensor.
  static void check_pooled_axes(const FusionCandidate& c, bool pooled) {
    const std::vector<int> want = pooled ? std::vector<int>{1, 2} : std::vector<int>{0, 1, 2};
    if (c.layout != Layout::kNchw || !c.general || c.output_axes != want)
      throw Unsupported(std::string("a reduction over H and W whose outputs are not ") +
                        (pooled ? "[N, C, 1, 1]" : "whole images") + " in the general nchw layout");
  }

  std::string layout() const {
    if (r_.reduces_hw) {
      if (!nd_axes_.empty()) throw Unsupported("a reduction over H and W with a general-broadcast input (x[d..])");
      for (const auto& [t, f] : form_)
        if (f == Form::kCol || f == Form::kRow)
          throw Unsupported("a reduction over H and W with input " + t + " per row or column (not per channel, image or H*W)");
      return "nchw";
    }
    if (!nd_axes_.empty()) return r_.reduces ? "ndrows" : "nd";
    bool rowcol = false, nchw = false;
    for (const auto& [t, f] : form_) {
      rowcol |= f == Form::kCol || f == Form::kRow;
      nchw |= f == Form::kC || f == Form::kN || f == Form::kHw;
    }
    if (nchw && (rowcol || r_.reduces))
      throw Unsupported("per-channel inputs mixed with per-column inputs or a row reduction");
    if (r_.reduces) return "rows";
    if (nchw) return "nchw";
    return rowcol ? "rowcol" : "flat";
  }

  LoweredValue value(const std::string& t) {
    if (t.empty()) return {};
    auto memo = memo_.find(t);
    if (memo != memo_.end()) return memo->second;
    LoweredValue v;
    auto p = producer_.find(t);
    if (p == producer_.end()) {
      const Tensor* x = g_.tensor(t);
      if (!form_.count(t) && x->is_index_constant()) return {};  // axes: the op reads them itself
      if (form_.at(t) == Form::kScalar) v = LoweredValue::value(number_text(x->values[0]));
      else if (x->dtype == ElemType::kBool) throw Unsupported("boolean input " + t + " (kernels read float tensors)");
      else if (form_.at(t) == Form::kNd) v = LoweredValue::value(std::string(1, kOpen) + t + kClose + nd_axes_.at(t));
      else v = LoweredValue::value(std::string(1, kOpen) + t + kClose + suffix(form_.at(t)));
    } else {
      const Node& n = g_.nodes[p->second];
      if (n.outputs.at(0) != t) throw Unsupported(n.op + "'s output " + t + " used (only the first output lowers)");
      std::vector<LoweredValue> args;
      for (const auto& in : n.inputs) args.push_back(value(in));
      LoweringContext ctx{g_, n};
      v = find_op(n.op)->lower(ctx, args);
      if (v.text.size() > kMaxExprChars) throw Unsupported("the expression exceeds " + std::to_string(kMaxExprChars) + " characters");
    }
    memo_[t] = v;
    return v;
  }

  // Placeholders become in0, in1, ... in order of first appearance.
  static std::string name_inputs(const std::string& text, std::vector<std::pair<std::string, std::string>>* inputs) {
    std::map<std::string, std::string> names;
    std::string out;
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] != kOpen) { out += text[i]; continue; }
      const size_t end = text.find(kClose, i);
      const std::string tensor = text.substr(i + 1, end - i - 1);
      auto it = names.find(tensor);
      if (it == names.end()) {
        it = names.emplace(tensor, "in" + std::to_string(names.size())).first;
        inputs->push_back({it->second, tensor});
      }
      out += it->second;
      i = end;
    }
    return out;
  }

  const Graph& g_;
  const Region& r_;
  std::map<std::string, size_t> producer_;
  std::map<std::string, Form> form_;
  std::map<std::string, std::vector<bool>> varying_;  // per input: the space's axes it varies along
  std::map<std::string, std::string> nd_axes_;        // nd layouts: each broadcast input's "[d0,d3]"
  std::map<std::string, LoweredValue> memo_;
};

}  // namespace

LoweredRegion lower_region(const Graph& graph, const Region& region) {
  try {
    return Lowerer(graph, region).run();
  } catch (const Unsupported& e) {
    LoweredRegion r;
    r.reason = e.what();
    return r;
  }
}

}  // namespace fusekit::graph
