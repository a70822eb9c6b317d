// A region as a program of the `--expr` language: its text (which
// parse_expression accepts), its layout, and which graph tensor each of the
// program's inputs and outputs is.
//
// The iteration space maps onto a layout: a region with a reduction is
// `rows` (rows = product of the leading dims, cols = the last dim), one
// reducing over H and W of NCHW (a global pool) is the general `nchw`
// layout (`mean(x, hw)`, outputs [N, C, 1, 1] stored as [n, c]), one
// whose inputs broadcast per column or per row is `rowcol`, one with
// per-channel inputs of a 4-D space is `nchw`, the rest `flat`. Each input
// is full-shape, x[col], x[row], x[c], x[n] or x[hw] by how its shape
// broadcasts to the space. Any other numpy broadcast over a space of up to
// four dims (a [B,1,1,S] mask over [B,H,S,S], a [1,S,D] table over [B,S,D])
// puts the region in `nd` (`ndrows` with a reduction) and indexes every
// input by the d-axes it varies along (x[d0,d3]); a shape that does not
// broadcast, or a general broadcast over more than four dims, is reported.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "graph/graph_ir.h"
#include "graph/partitioner.h"

namespace fusekit::graph {

struct LoweredRegion {
  bool supported = false;
  std::string reason;                                      // when not supported
  std::string expr;                                        // the program text
  std::string layout;                                      // flat rowcol nchw rows nd ndrows
  ElemType dtype = ElemType::kF32;                         // storage dtype
  std::vector<std::pair<std::string, std::string>> inputs;   // expr name -> graph tensor, parser order
  std::vector<std::pair<std::string, std::string>> outputs;  // expr name -> graph tensor, statement order
};

LoweredRegion lower_region(const Graph& graph, const Region& region);

}  // namespace fusekit::graph
