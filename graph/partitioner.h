// The one partitioner: groups fusible nodes (elementwise, broadcast and
// reductions along the last axis or over H and W of NCHW, with known shapes
// and float or boolean values) into convex regions.
//
// Two groups merge along a producer -> consumer edge when
//   - their iteration spaces are equal (symbolically), or one is the other's
//     row form (last dim 1) and the union holds a reduction: a reduction's
//     prologue, its per-row values (variance + eps, sqrt) and its epilogue
//     over the same space join it, as softmax and the norms need; a
//     reduction over H and W (a global pool) takes what shares its input's
//     space, never a row reduction, and keeps one shape for all outputs;
//   - the union stays convex: no path leaves it through an unfused node and
//     comes back;
//   - the union stays within the limits on ops and on inputs plus outputs.
// Every value a region produces that is used outside it, or is a graph
// output, is one of its outputs. A region of one cheap op is left alone.
#pragma once

#include <string>
#include <vector>

#include "graph/graph_ir.h"

namespace fusekit::graph {

struct PartitionLimits {
  size_t max_ops = 64;
  size_t max_args = 16;   // inputs plus outputs of one kernel
};

struct Region {
  std::vector<size_t> nodes;          // node indices, topological order
  Shape space;                        // the iteration space
  bool reduces = false;
  bool reduces_hw = false;            // its reduction is over H and W of NCHW (a global pool)
  std::vector<std::string> inputs;    // tensors read from outside (scalar constants included)
  std::vector<std::string> outputs;   // tensors used outside, or graph outputs
};

struct Boundary {
  size_t node;
  std::string reason;
};

struct Partition {
  std::vector<Region> regions;
  std::vector<Boundary> boundaries;   // every node in no region, with why
  // Reductions found but not expressible on their own (a non-last axis,
  // keepdims=0, ...): kept out of regions so their neighbours still fuse.
  std::vector<Boundary> unsupported;
};

Partition partition(const Graph& graph, const PartitionLimits& limits = {});

// The reason a node cannot be in any region, or "" when it can.
std::string unfusible_reason(const Graph& graph, const Node& node);

}  // namespace fusekit::graph
