// Plans: one entry per distinct region (same expression and dtype), with
// every place it occurs, the concrete sizes to tune, what was found but
// cannot be expressed, and every boundary with its reason. The JSON form is
// docs/graph_ir.md's "Plan JSON".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "graph/graph_ir.h"
#include "graph/partitioner.h"

namespace fusekit::graph {

struct Occurrence {
  std::vector<std::string> nodes;
  std::vector<std::pair<std::string, std::string>> inputs;    // expr name -> graph tensor
  std::vector<std::pair<std::string, std::string>> outputs;
  Shape shape;                                                // iteration shape, symbolic
};

struct PlanEntry {
  std::string name;        // a safe C identifier, unique in the plan
  std::string expr;
  std::string dtype;       // f32 f16 bf16
  std::string layout;      // flat rowcol nchw rows
  std::vector<std::string> sizes;   // `tune --sizes` syntax
  std::vector<Occurrence> occurrences;
};

struct Unfused {
  std::vector<std::string> nodes;
  std::string reason;
};

struct PlanBoundary {
  std::string node, op, reason;
};

struct Plan {
  std::string model, source;
  std::map<std::string, std::vector<int64_t>> dims;
  std::vector<PlanEntry> entries;
  std::vector<Unfused> unsupported;
  std::vector<PlanBoundary> boundaries;
  size_t nodes = 0, nodes_in_regions = 0, regions = 0;
  std::vector<std::string> notes;   // e.g. a symbol with no --dim value
};

// Partitions, lowers and deduplicates. `dims` gives the sizes of symbolic
// dims; a name the graph does not have is a UserError naming it.
Plan make_plan(const Graph& graph, const std::string& source, const std::map<std::string, std::vector<int64_t>>& dims,
               const PartitionLimits& limits = {});

nlohmann::ordered_json plan_to_json(const Plan& plan);
// Checks everything a hand edit can break (format, names, expressions that
// parse, dtypes, sizes that fit the layout); UserError naming `file` and the
// entry otherwise.
Plan plan_from_json(const nlohmann::ordered_json& j, const std::string& file);
Plan read_plan_file(const std::string& path);

// "bert.encoder.layer.0/Add" -> "bert_encoder_layer_0_Add": letters, digits
// and single underscores, starting with a letter, at most 80 characters.
std::string safe_identifier(const std::string& text);

// The text of the coverage report `fusekit plan` prints.
std::string coverage_report(const Plan& plan);

}  // namespace fusekit::graph
