// The graph IR both importers (ONNX, the torch capture's graph JSON) produce
// and the partitioner reads: tensors with a dtype and a shape whose dims are
// concrete, symbolic or unknown, and nodes in topological order carrying ONNX
// op types and attribute semantics.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace fusekit::graph {

enum class ElemType { kF32, kF16, kBF16, kF64, kI64, kI32, kI8, kU8, kBool, kUnknown };
const char* elem_type_name(ElemType t);                  // "f32", ..., "bool", "unknown"
std::optional<ElemType> parse_elem_type(const std::string& text);
bool is_float(ElemType t);                               // f32 f16 bf16 f64
bool is_storage_float(ElemType t);                       // what kernels store: f32 f16 bf16

// One dimension: a value, a symbol ("batch") or unknown.
struct Dim {
  int64_t value = -1;    // >= 0 when concrete
  std::string symbol;    // non-empty when symbolic
  static Dim of(int64_t v) { return {v, ""}; }
  static Dim sym(std::string s) { return {-1, std::move(s)}; }
  bool concrete() const { return value >= 0; }
  bool known() const { return concrete() || !symbol.empty(); }
  // Symbolic equality: equal values or equal symbols; unknown equals nothing.
  bool operator==(const Dim& o) const;
  bool operator!=(const Dim& o) const { return !(*this == o); }
  std::string text() const;  // "768", "batch", "?"
};
using Shape = std::vector<Dim>;   // outermost first
bool shapes_equal(const Shape& a, const Shape& b);
bool shape_known(const Shape& s);                        // every dim concrete or symbolic
std::string shape_string(const Shape& s);                // "[batch, seq, 768]"
// The numpy broadcast of two shapes, or nullopt when a pair of dims cannot
// be shown to broadcast symbolically.
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b);

struct Tensor {
  std::string name;
  ElemType dtype = ElemType::kUnknown;
  std::optional<Shape> shape;            // nullopt: rank unknown
  bool is_constant = false;              // an initializer
  std::vector<double> values;            // constants: the values when stored (scalars, small ones)
  bool has_values() const { return is_constant && !values.empty(); }
  bool is_scalar_constant() const;       // one value, any rank of ones
  // Integer values known (a Reduce* node's axes, a shape): an operand that
  // is an attribute in disguise, never a kernel input.
  bool is_index_constant() const { return has_values() && !is_float(dtype) && dtype != ElemType::kBool; }
};

using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>>;

struct Node {
  std::string name;
  std::string op;                        // ONNX op type
  std::vector<std::string> inputs;       // "" = an omitted optional input
  std::vector<std::string> outputs;
  std::map<std::string, AttrValue> attrs;

  std::optional<int64_t> attr_int(const std::string& key) const;
  std::optional<double> attr_float(const std::string& key) const;
  std::optional<std::string> attr_string(const std::string& key) const;
  std::optional<std::vector<int64_t>> attr_ints(const std::string& key) const;
};

struct Graph {
  std::string name;
  int64_t opset = 17;
  std::vector<std::string> inputs, outputs;
  std::map<std::string, Tensor> tensors;
  std::vector<Node> nodes;               // topological order

  const Tensor* tensor(const std::string& name) const;
  Tensor& add_tensor(const std::string& name);   // existing or new
  // Every symbol any shape names.
  std::vector<std::string> symbols() const;
};

}  // namespace fusekit::graph
