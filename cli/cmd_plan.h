// `fusekit plan MODEL.onnx|GRAPH.json [--dim NAME=V,V ...] [--out plan.json]`:
// imports the model, partitions it, prints the coverage report and writes
// the plan.
#pragma once

#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "generator/candidates/fusion_candidate.h"
#include "graph/plan.h"

namespace fusekit {

boost::program_options::options_description cmd_plan_options();
int cmd_plan(const boost::program_options::variables_map& vm, const std::vector<std::string>& args);

// A plan entry as a candidate named by the entry (the package op name).
FusionCandidate plan_candidate(const graph::PlanEntry& entry);

// A `--sizes` text as an iteration domain (innermost first) of a candidate.
std::vector<int64_t> plan_domain(const FusionCandidate& candidate, const std::string& size);

}  // namespace fusekit
