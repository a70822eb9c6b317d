#include "cli/cmd_plan.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "common/errors.h"
#include "common/shape_text.h"
#include "generator/candidates/expr_parser.h"
#include "graph/canonicalize.h"
#include "graph/graph_json.h"
#include "graph/onnx_import.h"

namespace fusekit {
namespace {

// "batch=1,8" -> {"batch", {1, 8}}.
std::pair<std::string, std::vector<int64_t>> parse_dim(const std::string& text) {
  const std::string bad = "malformed --dim '" + text + "'; write NAME=V[,V...] with positive integers, e.g. --dim batch=1,8";
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) throw UserError(bad);
  std::vector<int64_t> values;
  size_t start = eq + 1;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    auto v = parse_shape_text(text.substr(start, end - start));
    if (!v || v->size() != 1) throw UserError(bad);
    values.push_back(v->front());
    start = end + 1;
  }
  return {text.substr(0, eq), values};
}

bool looks_like_json(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char c = 0;
  while (f.get(c))
    if (!std::isspace(static_cast<unsigned char>(c))) return c == '{';
  return false;
}

}  // namespace

FusionCandidate plan_candidate(const graph::PlanEntry& entry) {
  FusionCandidate c = parse_expression(entry.expr);
  c.name = entry.name;
  return c;
}

std::vector<int64_t> plan_domain(const FusionCandidate& c, const std::string& size) {
  auto dims = parse_shape_text(size);
  if (!dims) throw UserError("malformed size '" + size + "' for " + c.name);
  if (c.layout == Layout::kNd || c.layout == Layout::kNdRows) return c.domain_for_shape(*dims);
  if (dims->size() == 1) return c.domain_for_elements(dims->front());
  if (dims->size() != layout_axes(c.layout).size())
    throw UserError("size '" + size + "' does not fit " + c.name + " (" + layout_name(c.layout) + ")");
  return std::vector<int64_t>(dims->rbegin(), dims->rend());
}

boost::program_options::options_description cmd_plan_options() {
  namespace po = boost::program_options;
  po::options_description o("plan options (fusekit plan MODEL.onnx|GRAPH.json)");
  o.add_options()
      ("dim", po::value<std::vector<std::string>>()->composing(), "sizes of a symbolic dim to tune, e.g. batch=1,8")
      ("out", po::value<std::string>(), "where to write the plan (default: only the coverage report)");
  return o;
}

int cmd_plan(const boost::program_options::variables_map& vm, const std::vector<std::string>& args) {
  if (args.size() != 1) throw UserError("plan needs one model: fusekit plan MODEL.onnx|GRAPH.json [--dim batch=1,8] [--out plan.json]");
  const std::string& path = args[0];
  if (!std::filesystem::is_regular_file(path)) throw UserError("cannot read model '" + path + "'; check the path");
  std::map<std::string, std::vector<int64_t>> dims;
  if (vm.count("dim"))
    for (const auto& d : vm["dim"].as<std::vector<std::string>>()) {
      auto [name, values] = parse_dim(d);
      if (dims.count(name)) throw UserError("--dim " + name + " given twice; list its values once: --dim " + name + "=1,8");
      dims[name] = values;
    }
  graph::Graph g = looks_like_json(path) ? graph::read_graph_json(path) : graph::import_onnx(path);
  graph::canonicalize(g);
  graph::Plan plan = graph::make_plan(g, path, dims);
  std::fputs(graph::coverage_report(plan).c_str(), stdout);
  if (vm.count("out")) {
    const std::string out = vm["out"].as<std::string>();
    const std::string tmp = out + ".tmp";
    {
      std::ofstream f(tmp);
      if (!f) throw UserError("cannot write '" + out + "'; check the folder exists and is writable");
      f << graph::plan_to_json(plan).dump(1) << "\n";
      if (!f) throw UserError("cannot write '" + out + "'");
    }
    std::filesystem::rename(tmp, out);
    std::printf("wrote %s: %zu entries\n", out.c_str(), plan.entries.size());
  }
  return 0;
}

}  // namespace fusekit
