#include "graph/canonicalize.h"

#include <cmath>
#include <map>
#include <optional>
#include <set>

namespace fusekit::graph {
namespace {

// Consumers of every tensor, by node index.
std::map<std::string, std::vector<size_t>> consumers(const Graph& g) {
  std::map<std::string, std::vector<size_t>> out;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const auto& in : g.nodes[i].inputs)
      if (!in.empty()) out[in].push_back(i);
  return out;
}

bool is_graph_output(const Graph& g, const std::string& t) {
  for (const auto& o : g.outputs)
    if (o == t) return true;
  return false;
}

void rename_uses(Graph& g, const std::string& from, const std::string& to) {
  for (auto& n : g.nodes)
    for (auto& in : n.inputs)
      if (in == from) in = to;
}

// Nodes that only forward their first input.
size_t remove_forwarders(Graph& g) {
  std::vector<Node> kept;
  size_t removed = 0;
  for (auto& n : g.nodes) {
    bool forward = n.op == "Identity" || n.op == "Dropout";
    if (n.op == "Cast" && !n.inputs.empty()) {
      const Tensor* in = g.tensor(n.inputs[0]);
      const Tensor* out = g.tensor(n.outputs.at(0));
      forward = in && out && in->dtype == out->dtype && in->dtype != ElemType::kUnknown;
    }
    if (n.op == "Dropout")
      for (size_t i = 1; i < n.outputs.size(); ++i) forward &= n.outputs[i].empty();
    if (forward && !n.inputs.empty() && !is_graph_output(g, n.outputs[0])) {
      rename_uses(g, n.outputs[0], n.inputs[0]);
      g.tensors.erase(n.outputs[0]);
      ++removed;
      continue;
    }
    kept.push_back(std::move(n));
  }
  g.nodes = std::move(kept);
  return removed;
}

std::optional<double> fold_scalar(const Node& n, const std::vector<double>& v) {
  const std::string& op = n.op;
  if (v.size() == 1) {
    if (op == "Sqrt") return std::sqrt(v[0]);
    if (op == "Neg") return -v[0];
    if (op == "Reciprocal") return 1.0 / v[0];
    if (op == "Cast" || op == "Identity") return v[0];
    if (op == "Exp") return std::exp(v[0]);
    if (op == "Log") return std::log(v[0]);
  }
  if (v.size() == 2) {
    if (op == "Add") return v[0] + v[1];
    if (op == "Sub") return v[0] - v[1];
    if (op == "Mul") return v[0] * v[1];
    if (op == "Div") return v[0] / v[1];
    if (op == "Pow") return std::pow(v[0], v[1]);
  }
  return {};
}

size_t fold_scalars(Graph& g) {
  std::vector<Node> kept;
  size_t folded = 0;
  for (auto& n : g.nodes) {
    std::vector<double> vals;
    bool all = n.outputs.size() == 1 && !n.inputs.empty();
    for (const auto& in : n.inputs) {
      const Tensor* t = in.empty() ? nullptr : g.tensor(in);
      if (!t || !t->is_scalar_constant()) { all = false; break; }
      vals.push_back(t->values[0]);
    }
    std::optional<double> r = all ? fold_scalar(n, vals) : std::nullopt;
    if (r && !is_graph_output(g, n.outputs[0])) {
      Tensor& out = g.add_tensor(n.outputs[0]);
      out.is_constant = true;
      out.values = {*r};
      if (!out.shape) out.shape = Shape{};
      if (out.dtype == ElemType::kUnknown) out.dtype = g.tensor(n.inputs[0])->dtype;
      ++folded;
      continue;
    }
    kept.push_back(std::move(n));
  }
  g.nodes = std::move(kept);
  return folded;
}

// The erf-GELU matcher.
class GeluMatcher {
 public:
  explicit GeluMatcher(Graph& g) : g_(g), uses_(consumers(g)), producer_() {
    for (size_t i = 0; i < g.nodes.size(); ++i)
      for (const auto& o : g.nodes[i].outputs) producer_[o] = i;
  }

  size_t run() {
    size_t matched = 0;
    for (size_t i = 0; i < g_.nodes.size(); ++i)
      if (g_.nodes[i].op == "Erf" && match(i)) ++matched;
    if (matched) {
      std::vector<Node> kept;
      for (size_t i = 0; i < g_.nodes.size(); ++i)
        if (!dead_.count(i)) kept.push_back(std::move(g_.nodes[i]));
      g_.nodes = std::move(kept);
    }
    return matched;
  }

 private:
  bool scalar_is(const std::string& t, double want) const {
    const Tensor* c = g_.tensor(t);
    return c && c->is_scalar_constant() && std::fabs(c->values[0] - want) < 1e-4 * std::fabs(want);
  }
  // The other input of a binary node, when one input is `t`.
  std::optional<std::string> other(const Node& n, const std::string& t) const {
    if (n.inputs.size() != 2) return {};
    if (n.inputs[0] == t) return n.inputs[1];
    if (n.inputs[1] == t) return n.inputs[0];
    return {};
  }
  std::optional<size_t> sole_consumer(const std::string& t) const {
    auto it = uses_.find(t);
    if (it == uses_.end() || it->second.size() != 1 || is_graph_output(g_, t)) return {};
    return it->second[0];
  }
  bool is_half_of(const std::string& t, const std::string& x) const {  // t = x * 0.5
    auto p = producer_.find(t);
    if (p == producer_.end()) return false;
    const Node& n = g_.nodes[p->second];
    auto o = n.op == "Mul" ? other(n, x) : std::nullopt;
    return o && scalar_is(*o, 0.5);
  }

  bool match(size_t erf) {
    const Node& e = g_.nodes[erf];
    auto pre = producer_.find(e.inputs.at(0));
    if (pre == producer_.end()) return false;
    const Node& scale = g_.nodes[pre->second];
    std::string x;
    if (scale.op == "Div" && scalar_is(scale.inputs[1], std::sqrt(2.0))) x = scale.inputs[0];
    else if (scale.op == "Mul" && other(scale, e.inputs[0]).has_value()) {
      for (size_t k = 0; k < 2; ++k)
        if (scalar_is(scale.inputs[k], 1.0 / std::sqrt(2.0))) x = scale.inputs[1 - k];
    }
    if (x.empty() || !sole_consumer(scale.outputs[0])) return false;
    auto add = sole_consumer(e.outputs[0]);
    if (!add || g_.nodes[*add].op != "Add") return false;
    auto one = other(g_.nodes[*add], e.outputs[0]);
    if (!one || !scalar_is(*one, 1.0)) return false;
    // (1 + erf) times x and 0.5, as two Muls in either order or one Mul by x*0.5.
    std::set<size_t> chain = {pre->second, erf, *add};
    std::string value = g_.nodes[*add].outputs[0];
    bool have_x = false, have_half = false;
    std::optional<size_t> half_node;
    while (!(have_x && have_half)) {
      auto m = sole_consumer(value);
      if (!m || g_.nodes[*m].op != "Mul") return false;
      auto f = other(g_.nodes[*m], value);
      if (!f) return false;
      if (!have_x && *f == x) have_x = true;
      else if (!have_half && scalar_is(*f, 0.5)) have_half = true;
      else if (!have_x && !have_half && is_half_of(*f, x)) {
        have_x = have_half = true;
        half_node = producer_.at(*f);
      } else return false;
      chain.insert(*m);
      value = g_.nodes[*m].outputs[0];
    }
    // x * 0.5 may feed only this product.
    if (half_node && !sole_consumer(g_.nodes[*half_node].outputs[0])) return false;
    if (half_node) chain.insert(*half_node);
    for (size_t k : chain) if (dead_.count(k)) return false;
    const size_t last = producer_.at(value);
    Node gelu;
    gelu.name = g_.nodes[erf].name;
    gelu.op = "Gelu";
    gelu.inputs = {x};
    gelu.outputs = {value};
    gelu.attrs["approximate"] = std::string("none");
    for (size_t k : chain)
      if (k != last) dead_.insert(k);
    g_.nodes[last] = gelu;
    return true;
  }

  Graph& g_;
  std::map<std::string, std::vector<size_t>> uses_;
  std::map<std::string, size_t> producer_;
  std::set<size_t> dead_;
};

}  // namespace

CanonicalizeReport canonicalize(Graph& graph) {
  CanonicalizeReport r;
  r.removed = remove_forwarders(graph);
  r.folded = fold_scalars(graph);
  r.gelus = GeluMatcher(graph).run();
  return r;
}

}  // namespace fusekit::graph
