// ONNX import (Debian's libonnx 1.12): parse the ModelProto (external data
// is not read: the partitioner needs shapes, not weights), run the library's
// shape inference (never its checker, which rejects the IR versions current
// exporters write), and map every node, initializer and Constant node to the
// graph IR. Constant nodes become constant tensors. An op the library does
// not know keeps its node; without an inferred shape it is a boundary.
#pragma once

#include <string>

#include "graph/graph_ir.h"

namespace fusekit::graph {

// The newest ONNX opset the linked library knows (17 for 1.12).
int64_t onnx_library_opset();

// UserError naming the file for a file that is not ONNX, a truncated one,
// or one whose opset is newer than onnx_library_opset().
Graph import_onnx(const std::string& path);

}  // namespace fusekit::graph
