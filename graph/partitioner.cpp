// Map: fusibility per node, then a union-find over groups merged along
// edges in topological order (space rule, convexity, limits), then regions
// with their inputs and outputs, then boundaries with reasons.
#include "graph/partitioner.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "graph/op_table.h"

namespace fusekit::graph {
namespace {

Shape row_form(Shape s) {
  if (!s.empty()) s.back() = Dim::of(1);
  return s;
}

bool is_composite(const std::string& op) {
  return op == "Softmax" || op == "LogSoftmax" || op == "LayerNormalization" || op == "BatchNormalization" ||
         op == "Gelu";
}

class Partitioner {
 public:
  Partitioner(const Graph& g, const PartitionLimits& limits) : g_(g), limits_(limits) {
    const size_t n = g.nodes.size();
    parent_.resize(n);
    std::iota(parent_.begin(), parent_.end(), 0);
    fusible_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      for (const auto& o : g.nodes[i].outputs) producer_[o] = i;
      for (const auto& in : g.nodes[i].inputs)
        if (!in.empty()) uses_[in].push_back(i);
    }
    for (const auto& o : g.outputs) graph_outputs_.insert(o);
    reason_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      reason_[i] = unfusible_reason(g, g.nodes[i]);
      // A boolean read from outside cannot be a kernel input (inputs are float).
      for (const auto& in : g.nodes[i].inputs) {
        const Tensor* t = in.empty() ? nullptr : g.tensor(in);
        if (!reason_[i].empty() || !t || t->dtype != ElemType::kBool) continue;
        auto p = producer_.find(in);
        if (p == producer_.end() || !fusible_[p->second])
          reason_[i] = "boolean input " + in + " from outside a region (kernels read float tensors)";
      }
      if (reason_[i].empty() && find_op(g.nodes[i].op)->cls == OpClass::kReduction) {
        unsupported_[i] = lowering_problem(g.nodes[i]);
        if (!unsupported_[i].empty()) reason_[i] = unsupported_[i];
      }
      fusible_[i] = reason_[i].empty();
      if (!fusible_[i]) continue;
      members_[i] = {i};
      space_[i] = node_space(g.nodes[i]);
      reduces_[i] = find_op(g.nodes[i].op)->cls == OpClass::kReduction;
      hw_[i] = reduces_[i] && reduces_over_hw(g, g.nodes[i]);
    }
  }

  Partition run() {
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (!fusible_[i]) continue;
      for (const auto& in : g_.nodes[i].inputs) {
        auto p = producer_.find(in);
        if (p == producer_.end() || !fusible_[p->second]) continue;
        try_merge(find(p->second), find(i));
      }
    }
    return collect();
  }

 private:
  // Why the node's lowering fails on its own (placeholder arguments), or "".
  std::string lowering_problem(const Node& n) const {
    std::vector<LoweredValue> args;
    for (const auto& in : n.inputs) args.push_back(in.empty() ? LoweredValue{} : LoweredValue::value("x"));
    try {
      find_op(n.op)->lower(LoweringContext{g_, n}, args);
    } catch (const Unsupported& e) {
      return e.what();
    }
    return "";
  }

  Shape node_space(const Node& n) const {
    const OpInfo* info = find_op(n.op);
    const std::string& from = info->cls == OpClass::kReduction ? n.inputs.at(0) : n.outputs.at(0);
    return *g_.tensor(from)->shape;
  }

  size_t find(size_t i) { return parent_[i] == i ? i : parent_[i] = find(parent_[i]); }

  // Whether a group reduces along its rows (not over H and W).
  bool row_reduces(size_t g) const { return reduces_.at(g) && !hw_.at(g); }

  // The union's space, or nullopt when the spaces do not fit together. A
  // reduction over H and W joins only groups over its input's space (its
  // prologue, an epilogue over whole images), never a row reduction: one
  // kernel has one layout.
  std::optional<Shape> joint_space(size_t a, size_t b) const {
    const Shape &sa = space_.at(a), &sb = space_.at(b);
    const bool hw = hw_.at(a) || hw_.at(b);
    const bool rows = row_reduces(a) || row_reduces(b);
    if (hw && rows) return {};
    if (shapes_equal(sa, sb)) return sa;
    if (!rows) return {};
    if (shapes_equal(sa, row_form(sb))) return sb;
    if (shapes_equal(sb, row_form(sa))) return sa;
    return {};
  }

  // A path from the union through a node outside it back into the union.
  bool creates_cycle(const std::set<size_t>& group) const {
    const size_t last = *group.rbegin();
    std::vector<size_t> stack;
    std::set<size_t> seen;
    auto push_consumers = [&](size_t node, bool from_inside) {
      for (const auto& o : g_.nodes[node].outputs) {
        auto it = uses_.find(o);
        if (it == uses_.end()) continue;
        for (size_t c : it->second) {
          if (c > last || seen.count(c)) continue;
          if (group.count(c)) {
            if (!from_inside) return true;
            continue;
          }
          seen.insert(c);
          stack.push_back(c);
        }
      }
      return false;
    };
    for (size_t m : group) push_consumers(m, true);
    while (!stack.empty()) {
      const size_t n = stack.back();
      stack.pop_back();
      if (push_consumers(n, false)) return true;
    }
    return false;
  }

  std::pair<std::vector<std::string>, std::vector<std::string>> interface(const std::set<size_t>& group) const {
    std::set<std::string> produced;
    for (size_t m : group)
      for (const auto& o : g_.nodes[m].outputs) produced.insert(o);
    std::vector<std::string> ins, outs;
    for (size_t m : group)
      for (const auto& in : g_.nodes[m].inputs)
        if (!in.empty() && !produced.count(in) && !g_.tensor(in)->is_index_constant() &&
            std::find(ins.begin(), ins.end(), in) == ins.end())
          ins.push_back(in);
    for (size_t m : group)
      for (const auto& o : g_.nodes[m].outputs) {
        if (o.empty()) continue;
        bool outside = graph_outputs_.count(o) > 0;
        auto it = uses_.find(o);
        if (it != uses_.end())
          for (size_t c : it->second) outside |= !group.count(c);
        if (outside) outs.push_back(o);
      }
    return {ins, outs};
  }

  // Whether every output of the group has one shape: a kernel over H and W
  // stores either pooled values or whole images, not both.
  bool one_output_shape(const std::set<size_t>& group) const {
    const std::vector<std::string> outs = interface(group).second;
    for (const auto& o : outs)
      if (!shapes_equal(*g_.tensor(o)->shape, *g_.tensor(outs.front())->shape)) return false;
    return true;
  }

  size_t arg_count(const std::set<size_t>& group) const {
    auto [ins, outs] = interface(group);
    size_t n = outs.size();
    for (const auto& in : ins) n += !g_.tensor(in)->is_scalar_constant();
    return n;
  }

  void try_merge(size_t a, size_t b) {
    if (a == b) return;
    auto space = joint_space(a, b);
    if (!space) return;
    std::set<size_t> group = members_[a];
    group.insert(members_[b].begin(), members_[b].end());
    if (group.size() > limits_.max_ops) return;
    if (arg_count(group) > limits_.max_args) return;
    if (creates_cycle(group)) return;
    if ((hw_[a] || hw_[b]) && !one_output_shape(group)) return;
    parent_[a] = b;
    members_[b] = std::move(group);
    members_.erase(a);
    space_[b] = *space;
    reduces_[b] = reduces_[a] || reduces_[b];
    hw_[b] = hw_[a] || hw_[b];
  }

  Partition collect() {
    Partition p;
    std::set<size_t> in_region;
    for (const auto& [root, group] : members_) {
      const Node& first = g_.nodes[*group.begin()];
      if (group.size() == 1 && !reduces_[root] && !is_composite(first.op)) continue;
      Region r;
      r.nodes.assign(group.begin(), group.end());
      r.space = space_[root];
      r.reduces = reduces_[root];
      r.reduces_hw = hw_[root];
      std::tie(r.inputs, r.outputs) = interface(group);
      in_region.insert(group.begin(), group.end());
      p.regions.push_back(std::move(r));
    }
    std::sort(p.regions.begin(), p.regions.end(),
              [](const Region& x, const Region& y) { return x.nodes.front() < y.nodes.front(); });
    for (size_t i = 0; i < g_.nodes.size(); ++i) {
      if (in_region.count(i)) continue;
      if (unsupported_.count(i) && !unsupported_[i].empty()) {
        p.unsupported.push_back({i, unsupported_[i]});
        continue;
      }
      std::string why = reason_[i];
      if (why.empty()) why = "a single cheap op: left alone";
      p.boundaries.push_back({i, why});
    }
    return p;
  }

  const Graph& g_;
  PartitionLimits limits_;
  std::vector<size_t> parent_;
  std::vector<bool> fusible_;
  std::vector<std::string> reason_;
  std::map<size_t, std::string> unsupported_;
  std::map<std::string, size_t> producer_;
  std::map<std::string, std::vector<size_t>> uses_;
  std::set<std::string> graph_outputs_;
  std::map<size_t, std::set<size_t>> members_;   // root -> group
  std::map<size_t, Shape> space_;
  std::map<size_t, bool> reduces_;
  std::map<size_t, bool> hw_;   // the group reduces over H and W
};

}  // namespace

std::string unfusible_reason(const Graph& g, const Node& n) {
  const OpInfo* info = find_op(n.op);
  if (!info) return "unknown op '" + n.op + "'";
  switch (info->cls) {
    case OpClass::kInjective: return "injective (" + n.op + "): not fused";
    case OpClass::kAnchor: return "anchor (" + n.op + "): not fused";
    case OpClass::kOpaque: return n.op == "Opaque" ? "opaque (" + n.attr_string("target").value_or("?") + ")" : "opaque (" + n.op + ")";
    default: break;
  }
  for (const auto& o : n.outputs) {
    if (o.empty()) continue;
    const Tensor* t = g.tensor(o);
    if (!t || !t->shape || !shape_known(*t->shape)) return "no shape after inference";
    if (!is_storage_float(t->dtype) && t->dtype != ElemType::kBool)
      return std::string(elem_type_name(t->dtype)) + " output (shape or index computation): left alone";
  }
  for (const auto& in : n.inputs) {
    if (in.empty()) continue;
    const Tensor* t = g.tensor(in);
    if (!t || !t->shape) return "no shape after inference (an input)";
    if (!is_storage_float(t->dtype) && t->dtype != ElemType::kBool && !t->has_values())
      return std::string(elem_type_name(t->dtype)) + " input " + in + " (kernels read float tensors)";
  }
  if (info->cls == OpClass::kReduction && n.inputs.empty()) return "reduction without input";
  return "";
}

Partition partition(const Graph& graph, const PartitionLimits& limits) {
  return Partitioner(graph, limits).run();
}

}  // namespace fusekit::graph
