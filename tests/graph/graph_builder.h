// Hand-built graphs for the partitioner tests.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph/graph_ir.h"

namespace fusekit::graph::testing {

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name = "m", int64_t opset = 17) {
    g_.name = std::move(name);
    g_.opset = opset;
  }
  // A graph input; dims are ints or symbols.
  std::string input(const std::string& name, Shape shape, ElemType t = ElemType::kF32) {
    Tensor& x = g_.add_tensor(name);
    x.dtype = t;
    x.shape = std::move(shape);
    g_.inputs.push_back(name);
    return name;
  }
  std::string scalar(double v) {
    const std::string name = "c" + std::to_string(counter_++);
    Tensor& x = g_.add_tensor(name);
    x.dtype = ElemType::kF32;
    x.shape = Shape{};
    x.is_constant = true;
    x.values = {v};
    return name;
  }
  std::string ints(const std::vector<int64_t>& v) {
    const std::string name = "i" + std::to_string(counter_++);
    Tensor& x = g_.add_tensor(name);
    x.dtype = ElemType::kI64;
    x.shape = Shape{Dim::of(static_cast<int64_t>(v.size()))};
    x.is_constant = true;
    x.values.assign(v.begin(), v.end());
    return name;
  }
  // A node with one output of the given shape and dtype.
  std::string node(const std::string& op, std::vector<std::string> ins, Shape out_shape,
                   std::map<std::string, AttrValue> attrs = {}, ElemType t = ElemType::kF32) {
    Node n;
    n.name = "/layer/" + op + "_" + std::to_string(counter_);
    n.op = op;
    n.inputs = std::move(ins);
    const std::string out = op + "_out_" + std::to_string(counter_++);
    n.outputs = {out};
    n.attrs = std::move(attrs);
    Tensor& x = g_.add_tensor(out);
    x.dtype = t;
    x.shape = std::move(out_shape);
    g_.nodes.push_back(n);
    return out;
  }
  void output(const std::string& t) { g_.outputs.push_back(t); }
  Graph& graph() { return g_; }

 private:
  Graph g_;
  int counter_ = 0;
};

inline Shape S(std::initializer_list<Dim> d) { return Shape(d); }
inline Dim D(int64_t v) { return Dim::of(v); }
inline Dim D(const char* s) { return Dim::sym(s); }

}  // namespace fusekit::graph::testing
