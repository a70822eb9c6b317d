#include "graph/graph_json.h"

#include <fstream>

#include "common/errors.h"

namespace fusekit::graph {
namespace {

Shape shape_from(const nlohmann::json& j, const std::string& where, const std::string& file) {
  if (!j.is_array()) throw UserError(file + ": " + where + ": \"shape\" must be an array");
  Shape s;
  for (const auto& d : j) {
    if (d.is_number_integer() && d.get<int64_t>() >= 0) s.push_back(Dim::of(d.get<int64_t>()));
    else if (d.is_string() && !d.get<std::string>().empty()) s.push_back(Dim::sym(d.get<std::string>()));
    else if (d.is_null()) s.push_back(Dim{});
    else throw UserError(file + ": " + where + ": a dim is a non-negative integer, a symbol or null, not " + d.dump());
  }
  return s;
}

void read_tensor(Tensor& t, const nlohmann::json& j, const std::string& where, const std::string& file) {
  if (!j.is_object()) throw UserError(file + ": " + where + " is not an object");
  const std::string dt = j.value("dtype", "");
  auto e = parse_elem_type(dt);
  if (!e) throw UserError(file + ": " + where + ": unknown dtype '" + dt + "'; known: f32 f16 bf16 f64 i64 i32 i8 u8 bool");
  t.dtype = *e;
  if (j.contains("shape") && !j["shape"].is_null()) t.shape = shape_from(j["shape"], where, file);
}

AttrValue attr_from(const nlohmann::json& v) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    bool ints = true;
    for (const auto& x : v) ints &= x.is_number_integer();
    if (ints) return v.get<std::vector<int64_t>>();
    std::vector<double> d;
    for (const auto& x : v) if (x.is_number()) d.push_back(x.get<double>());
    return d;
  }
  return v.dump();
}

std::vector<std::string> names(const nlohmann::json& j, const char* key, const std::string& where, const std::string& file) {
  if (!j.contains(key)) return {};
  if (!j[key].is_array()) throw UserError(file + ": " + where + ": \"" + key + "\" must be an array of names");
  std::vector<std::string> out;
  for (const auto& n : j[key]) {
    if (n.is_null()) out.push_back("");
    else if (n.is_string()) out.push_back(n);
    else throw UserError(file + ": " + where + ": \"" + key + "\" holds " + n.dump() + ", not a name");
  }
  return out;
}

nlohmann::ordered_json shape_json(const Shape& s) {
  auto j = nlohmann::ordered_json::array();
  for (const auto& d : s) {
    if (d.concrete()) j.push_back(d.value);
    else if (!d.symbol.empty()) j.push_back(d.symbol);
    else j.push_back(nullptr);
  }
  return j;
}

}  // namespace

Graph graph_from_json(const nlohmann::json& j, const std::string& file) {
  if (!j.is_object() || j.value("format", "") != "fusekit-graph")
    throw UserError(file + ": not a fusekit graph (no \"format\": \"fusekit-graph\")");
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<int>() != 1)
    throw UserError(file + ": unsupported graph version (this fusekit reads version 1)");
  Graph g;
  g.name = j.value("name", "model");
  g.opset = j.contains("opset") && j["opset"].is_number_integer() ? j["opset"].get<int64_t>() : 17;
  g.inputs = names(j, "inputs", "graph", file);
  g.outputs = names(j, "outputs", "graph", file);
  if (j.contains("tensors") && j["tensors"].is_object())
    for (auto it = j["tensors"].begin(); it != j["tensors"].end(); ++it)
      read_tensor(g.add_tensor(it.key()), it.value(), "tensor " + it.key(), file);
  if (j.contains("constants") && j["constants"].is_object())
    for (auto it = j["constants"].begin(); it != j["constants"].end(); ++it) {
      Tensor& t = g.add_tensor(it.key());
      read_tensor(t, it.value(), "constant " + it.key(), file);
      t.is_constant = true;
      if (!t.shape) t.shape = Shape{};
      if (it.value().contains("values") && it.value()["values"].is_array())
        for (const auto& v : it.value()["values"]) {
          if (v.is_number()) t.values.push_back(v.get<double>());
          else if (v.is_boolean()) t.values.push_back(v.get<bool>() ? 1.0 : 0.0);
        }
    }
  if (!j.contains("nodes") || !j["nodes"].is_array()) throw UserError(file + ": \"nodes\" must be an array");
  size_t index = 0;
  for (const auto& jn : j["nodes"]) {
    const std::string where = "node " + std::to_string(index++);
    if (!jn.is_object() || !jn.contains("op") || !jn["op"].is_string())
      throw UserError(file + ": " + where + " has no string \"op\"");
    Node n;
    n.op = jn["op"];
    n.name = jn.contains("name") && jn["name"].is_string() ? jn["name"].get<std::string>() : n.op + "_" + std::to_string(index - 1);
    n.inputs = names(jn, "inputs", where, file);
    n.outputs = names(jn, "outputs", where, file);
    if (jn.contains("attrs") && jn["attrs"].is_object())
      for (auto it = jn["attrs"].begin(); it != jn["attrs"].end(); ++it) n.attrs[it.key()] = attr_from(it.value());
    if (n.op == "Cast")
      if (auto to = n.attr_string("to"))
        if (!parse_elem_type(*to)) throw UserError(file + ": " + where + ": Cast to unknown dtype '" + *to + "'");
    for (const auto& t : n.inputs) if (!t.empty()) g.add_tensor(t);
    for (const auto& t : n.outputs) if (!t.empty()) g.add_tensor(t);
    g.nodes.push_back(std::move(n));
  }
  return g;
}

Graph read_graph_json(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw UserError("cannot read graph '" + path + "'; check the path");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    throw UserError(path + ": not valid JSON (" + std::string(e.what()) + ")");
  }
  return graph_from_json(j, path);
}

nlohmann::ordered_json graph_to_json(const Graph& g) {
  nlohmann::ordered_json j;
  j["format"] = "fusekit-graph";
  j["version"] = 1;
  j["name"] = g.name;
  j["opset"] = g.opset;
  j["inputs"] = g.inputs;
  j["outputs"] = g.outputs;
  j["tensors"] = nlohmann::ordered_json::object();
  j["constants"] = nlohmann::ordered_json::object();
  for (const auto& [name, t] : g.tensors) {
    nlohmann::ordered_json jt = {{"dtype", elem_type_name(t.dtype)}};
    jt["shape"] = t.shape ? shape_json(*t.shape) : nlohmann::ordered_json();
    if (t.is_constant) {
      if (!t.values.empty()) jt["values"] = t.values;
      j["constants"][name] = jt;
    } else {
      j["tensors"][name] = jt;
    }
  }
  j["nodes"] = nlohmann::ordered_json::array();
  for (const auto& n : g.nodes) {
    nlohmann::ordered_json jn = {{"name", n.name}, {"op", n.op}, {"inputs", n.inputs}, {"outputs", n.outputs}};
    jn["attrs"] = nlohmann::ordered_json::object();
    for (const auto& [k, v] : n.attrs) std::visit([&, &k = k](const auto& x) { jn["attrs"][k] = x; }, v);
    j["nodes"].push_back(jn);
  }
  return j;
}

}  // namespace fusekit::graph
