// The graph JSON (`*.fkgraph.json`) the PyTorch capture writes: format
// "fusekit-graph", version 1; see docs/graph_ir.md.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "graph/graph_ir.h"

namespace fusekit::graph {

// UserError naming `file` and the offending field.
Graph graph_from_json(const nlohmann::json& j, const std::string& file);
Graph read_graph_json(const std::string& path);
nlohmann::ordered_json graph_to_json(const Graph& g);

}  // namespace fusekit::graph
