// Map: make_plan (partition, lower, group by expression + dtype, name,
// sizes), the report, then the JSON writer and the checking reader.
#include "graph/plan.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

#include "common/errors.h"
#include "common/shape_text.h"
#include "generator/candidates/expr_parser.h"
#include "graph/region_lowering.h"

namespace fusekit::graph {
namespace {

// The common '/'-separated prefix of the node names, else the first name.
std::string common_prefix(const std::vector<std::string>& names) {
  auto split = [](const std::string& s) {
    std::vector<std::string> parts;
    std::stringstream ss(s);
    std::string p;
    while (std::getline(ss, p, '/'))
      if (!p.empty()) parts.push_back(p);
    return parts;
  };
  std::vector<std::string> common = split(names.front());
  for (const auto& n : names) {
    auto parts = split(n);
    size_t k = 0;
    while (k < common.size() && k < parts.size() && common[k] == parts[k]) ++k;
    common.resize(k);
  }
  std::string out;
  for (const auto& p : common) out += (out.empty() ? "" : "_") + p;
  return out;
}

std::string ops_summary(const Graph& g, const Region& r) {
  std::vector<std::string> ops;
  for (size_t i : r.nodes) {
    std::string op = g.nodes[i].op;
    std::transform(op.begin(), op.end(), op.begin(), [](unsigned char c) { return std::tolower(c); });
    if (std::find(ops.begin(), ops.end(), op) == ops.end()) ops.push_back(op);
  }
  if (ops.size() > 4) ops.resize(4);
  std::string s;
  for (const auto& o : ops) s += (s.empty() ? "" : "_") + o;
  return s;
}

std::string digits_to_n(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(s[i]))) {
      while (i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]))) ++i;
      out += 'N';
    } else {
      out += s[i];
    }
  }
  return out;
}

int64_t dim_value(const Dim& d, const std::map<std::string, int64_t>& at) {
  return d.concrete() ? d.value : at.at(d.symbol);
}

// The `--sizes` text of a concrete iteration shape in a layout.
std::string size_text(const std::string& layout, const std::vector<int64_t>& s) {
  int64_t all = 1;
  for (int64_t v : s) all *= v;
  if (layout == "flat") return std::to_string(all);
  if (layout == "nchw") return shape_text({s[0], s[1], s[2] * s[3]});
  if (layout == "nd" || layout == "ndrows") return shape_text(s);  // up to four dims, as they are
  const int64_t cols = s.empty() ? 1 : s.back();
  return shape_text({all / cols, cols});
}

// Every assignment of the given dims' values to the symbols of a shape.
std::vector<std::map<std::string, int64_t>> assignments(const Shape& s,
                                                        const std::map<std::string, std::vector<int64_t>>& dims,
                                                        std::set<std::string>* missing) {
  std::vector<std::map<std::string, int64_t>> out = {{}};
  std::set<std::string> seen;
  for (const auto& d : s) {
    if (d.concrete() || !seen.insert(d.symbol).second) continue;
    auto it = dims.find(d.symbol);
    if (it == dims.end()) {
      missing->insert(d.symbol);
      return {};
    }
    std::vector<std::map<std::string, int64_t>> next;
    for (const auto& a : out)
      for (int64_t v : it->second) {
        auto b = a;
        b[d.symbol] = v;
        next.push_back(b);
      }
    out = next;
  }
  return out;
}

std::vector<std::string> node_names(const Graph& g, const Region& r) {
  std::vector<std::string> out;
  for (size_t i : r.nodes) out.push_back(g.nodes[i].name);
  return out;
}

nlohmann::ordered_json pairs_json(const std::vector<std::pair<std::string, std::string>>& ps) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [k, v] : ps) j[k] = v;
  return j;
}

nlohmann::ordered_json shape_json(const Shape& s) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const auto& d : s) {
    if (d.concrete()) j.push_back(d.value);
    else if (!d.symbol.empty()) j.push_back(d.symbol);
    else j.push_back(nullptr);
  }
  return j;
}

}  // namespace

std::string safe_identifier(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) && static_cast<unsigned char>(c) < 128;
    if (ok) out += c;
    else if (!out.empty() && out.back() != '_') out += '_';
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  if (out.empty() || !std::isalpha(static_cast<unsigned char>(out[0]))) out = "r_" + out;
  if (out.size() > 80) out.resize(80);
  while (out.back() == '_') out.pop_back();
  return out;
}

Plan make_plan(const Graph& graph, const std::string& source, const std::map<std::string, std::vector<int64_t>>& dims,
               const PartitionLimits& limits) {
  const std::vector<std::string> symbols = graph.symbols();
  for (const auto& [name, values] : dims) {
    if (std::find(symbols.begin(), symbols.end(), name) == symbols.end()) {
      std::string known;
      for (const auto& s : symbols) known += " " + s;
      throw UserError("--dim " + name + ": " + source + " has no dim named '" + name + "'; its symbolic dims:" +
                      (known.empty() ? " none" : known));
    }
  }
  Plan plan;
  plan.model = graph.name;
  plan.source = source;
  plan.dims = dims;
  plan.nodes = graph.nodes.size();
  const Partition part = partition(graph, limits);
  std::map<std::pair<std::string, std::string>, size_t> by_key;  // (expr, dtype) -> entry
  std::vector<std::string> prefixes;                              // per entry, of its first occurrence
  std::set<std::string> missing;
  std::vector<std::set<std::string>> prefix_sets;
  for (const Region& r : part.regions) {
    LoweredRegion low = lower_region(graph, r);
    if (!low.supported) {
      plan.unsupported.push_back({node_names(graph, r), low.reason});
      continue;
    }
    const std::pair<std::string, std::string> key{low.expr, elem_type_name(low.dtype)};
    auto it = by_key.find(key);
    if (it == by_key.end()) {
      PlanEntry e;
      e.expr = low.expr;
      e.dtype = elem_type_name(low.dtype);
      e.layout = low.layout;
      it = by_key.emplace(key, plan.entries.size()).first;
      plan.entries.push_back(e);
      prefix_sets.emplace_back();
      prefixes.push_back(common_prefix(node_names(graph, r)) + "_" + ops_summary(graph, r));
    }
    PlanEntry& e = plan.entries[it->second];
    Occurrence o{node_names(graph, r), low.inputs, low.outputs, r.space};
    prefix_sets[it->second].insert(common_prefix(o.nodes));
    for (const auto& a : assignments(r.space, dims, &missing)) {
      std::vector<int64_t> s;
      for (const auto& d : r.space) s.push_back(dim_value(d, a));
      const std::string t = size_text(e.layout, s);
      if (std::find(e.sizes.begin(), e.sizes.end(), t) == e.sizes.end()) e.sizes.push_back(t);
    }
    e.occurrences.push_back(std::move(o));
    plan.nodes_in_regions += r.nodes.size();
    ++plan.regions;
  }
  for (const auto& s : missing) plan.notes.push_back("dim '" + s + "' has no --dim value: sizes using it are not listed");
  std::set<std::string> taken;
  for (size_t i = 0; i < plan.entries.size(); ++i) {
    std::string base = prefixes[i];
    if (prefix_sets[i].size() > 1) base = digits_to_n(base);
    std::string name = safe_identifier(graph.name + "_" + base);
    std::string unique = name;
    for (int k = 2; taken.count(unique); ++k) unique = name + "_" + std::to_string(k);
    taken.insert(unique);
    plan.entries[i].name = unique;
  }
  for (const Boundary& u : part.unsupported) plan.unsupported.push_back({{graph.nodes[u.node].name}, u.reason});
  for (const Boundary& b : part.boundaries)
    plan.boundaries.push_back({graph.nodes[b.node].name, graph.nodes[b.node].op, b.reason});
  return plan;
}

std::string coverage_report(const Plan& p) {
  std::ostringstream s;
  s << p.model << " (" << p.source << "): " << p.nodes << " nodes, " << p.nodes_in_regions << " in " << p.regions
    << " regions, " << p.entries.size() << " distinct kernels, " << p.unsupported.size()
    << " regions found but unsupported, " << p.boundaries.size() << " boundaries\n";
  for (const auto& e : p.entries)
    s << "  kernel " << e.name << " (" << e.dtype << ", " << e.layout << ", " << e.occurrences.size() << "x, "
      << e.occurrences.front().nodes.size() << " ops)\n";
  std::map<std::string, size_t> unsupported;
  for (const auto& u : p.unsupported) ++unsupported[u.reason];
  for (const auto& [why, n] : unsupported) s << "  unsupported x" << n << ": " << why << "\n";
  std::map<std::string, size_t> reasons;
  for (const auto& b : p.boundaries) ++reasons[b.reason];
  for (const auto& [why, n] : reasons) s << "  boundary x" << n << ": " << why << "\n";
  for (const auto& n : p.notes) s << "  note: " << n << "\n";
  return s.str();
}

nlohmann::ordered_json plan_to_json(const Plan& p) {
  nlohmann::ordered_json j;
  j["format"] = "fusekit-plan";
  j["version"] = 1;
  j["model"] = p.model;
  j["source"] = p.source;
  j["dims"] = nlohmann::ordered_json::object();
  for (const auto& [k, v] : p.dims) j["dims"][k] = v;
  j["entries"] = nlohmann::ordered_json::array();
  for (const auto& e : p.entries) {
    nlohmann::ordered_json je = {{"name", e.name}, {"expr", e.expr}, {"dtype", e.dtype}, {"layout", e.layout}, {"sizes", e.sizes}};
    je["occurrences"] = nlohmann::ordered_json::array();
    for (const auto& o : e.occurrences)
      je["occurrences"].push_back({{"nodes", o.nodes}, {"inputs", pairs_json(o.inputs)},
                                   {"outputs", pairs_json(o.outputs)},
                                   {"shape", shape_json(o.shape)}});
    j["entries"].push_back(je);
  }
  j["unsupported"] = nlohmann::ordered_json::array();
  for (const auto& u : p.unsupported) j["unsupported"].push_back({{"nodes", u.nodes}, {"reason", u.reason}});
  j["boundaries"] = nlohmann::ordered_json::array();
  for (const auto& b : p.boundaries) j["boundaries"].push_back({{"node", b.node}, {"op", b.op}, {"reason", b.reason}});
  j["coverage"] = {{"nodes", p.nodes}, {"nodes_in_regions", p.nodes_in_regions}, {"regions", p.regions},
                   {"kernels", p.entries.size()}, {"unsupported", p.unsupported.size()},
                   {"boundaries", p.boundaries.size()}};
  j["notes"] = p.notes;
  return j;
}

Plan plan_from_json(const nlohmann::ordered_json& j, const std::string& file) {
  auto bad = [&](const std::string& what) -> UserError { return UserError(file + ": " + what); };
  if (!j.is_object() || j.value("format", "") != "fusekit-plan")
    throw bad("not a fusekit plan (no \"format\": \"fusekit-plan\"); write one with `fusekit plan MODEL --out " + file + "`");
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"].get<int>() != 1)
    throw bad("unsupported plan version (this fusekit reads version 1)");
  if (!j.contains("entries") || !j["entries"].is_array()) throw bad("\"entries\" must be an array");
  Plan p;
  p.model = j.value("model", "");
  p.source = j.value("source", "");
  std::set<std::string> names;
  size_t index = 0;
  for (const auto& je : j["entries"]) {
    const std::string at = "entry " + std::to_string(index++);
    if (!je.is_object()) throw bad(at + " is not an object");
    PlanEntry e;
    for (const char* key : {"name", "expr", "dtype"})
      if (!je.contains(key) || !je[key].is_string()) throw bad(at + " has no string \"" + key + "\"");
    e.name = je["name"];
    e.expr = je["expr"];
    e.dtype = je["dtype"];
    const std::string where = at + " ('" + e.name + "')";
    if (safe_identifier(e.name) != e.name) throw bad(where + ": the name is not a safe C identifier");
    if (!names.insert(e.name).second) throw bad(where + ": the name is used twice");
    if (e.dtype != "f32" && e.dtype != "f16" && e.dtype != "bf16") throw bad(where + ": unknown dtype '" + e.dtype + "'; known: f32 f16 bf16");
    FusionCandidate c;
    try {
      c = parse_expression(e.expr);
    } catch (const UserError& err) {
      throw bad(where + ": " + err.what());
    }
    e.layout = layout_name(c.layout);
    if (!je.contains("sizes") || !je["sizes"].is_array()) throw bad(where + ": \"sizes\" must be an array");
    const size_t rank = layout_axes(c.layout).size();
    for (const auto& s : je["sizes"]) {
      if (!s.is_string()) throw bad(where + ": sizes are strings such as \"4096x768\"");
      auto dims = parse_shape_text(s.get<std::string>());
      const bool nd = c.layout == Layout::kNd || c.layout == Layout::kNdRows;
      if (!dims || (dims->size() != 1 && dims->size() != rank && !(nd && dims->size() < rank)))
        throw bad(where + ": malformed size '" + s.dump() + "' for a " + e.layout + " op (e.g. \"4096x768\")");
      e.sizes.push_back(s);
    }
    if (je.contains("occurrences") && je["occurrences"].is_array())
      for (const auto& jo : je["occurrences"]) {
        Occurrence o;
        if (jo.contains("nodes") && jo["nodes"].is_array())
          for (const auto& n : jo["nodes"]) if (n.is_string()) o.nodes.push_back(n);
        for (const char* key : {"inputs", "outputs"})
          if (jo.contains(key) && jo[key].is_object())
            for (auto it = jo[key].begin(); it != jo[key].end(); ++it)
              if (it.value().is_string()) (key[0] == 'i' ? o.inputs : o.outputs).push_back({it.key(), it.value()});
        e.occurrences.push_back(o);
      }
    p.entries.push_back(e);
  }
  if (j.contains("dims") && j["dims"].is_object())
    for (auto it = j["dims"].begin(); it != j["dims"].end(); ++it)
      if (it.value().is_array())
        for (const auto& v : it.value()) if (v.is_number_integer()) p.dims[it.key()].push_back(v);
  return p;
}

Plan read_plan_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw UserError("cannot read plan '" + path + "'; check the path");
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(f);
  } catch (const nlohmann::json::exception& e) {
    throw UserError(path + ": not valid JSON (" + std::string(e.what()) + ")");
  }
  return plan_from_json(j, path);
}

}  // namespace fusekit::graph
