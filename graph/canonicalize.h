// Canonicalization before partitioning: what the exporters add that is not
// computation is removed, and what they spell out is recognized.
//   - Identity and inference Dropout are removed (their uses read the input);
//   - a Cast to the dtype its input already has is removed (other Casts
//     between float storage types stay and lower to nothing: a region stores
//     its own dtype);
//   - elementwise nodes over scalar constants are folded into one constant;
//   - the erf form of GELU, x * 0.5 * (1 + erf(x / sqrt(2))) in any order of
//     its products, becomes one Gelu node (the tanh form stays primitive: the
//     language has tanh, and the two are kept apart);
//   - shape subgraphs (integer tensors) are left alone.
#pragma once

#include <string>
#include <vector>

#include "graph/graph_ir.h"

namespace fusekit::graph {

struct CanonicalizeReport {
  size_t removed = 0;     // Identity, Dropout, no-op Casts
  size_t folded = 0;      // scalar nodes folded into constants
  size_t gelus = 0;       // erf-GELU patterns matched
};

CanonicalizeReport canonicalize(Graph& graph);

}  // namespace fusekit::graph
