// Map: read and parse, check the opset, infer shapes, then tensors
// (inputs, value_info, outputs, initializers, Constant nodes) and nodes.
#include "graph/onnx_import.h"

#include <cstring>
#include <filesystem>
#include <set>
#include <fstream>
#include <sstream>

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include "common/errors.h"

namespace fusekit::graph {
namespace {

constexpr size_t kMaxConstantValues = 64;   // larger constants keep their shape only

ElemType elem_type(int32_t t) {
  switch (t) {
    case onnx::TensorProto::FLOAT: return ElemType::kF32;
    case onnx::TensorProto::FLOAT16: return ElemType::kF16;
    case onnx::TensorProto::BFLOAT16: return ElemType::kBF16;
    case onnx::TensorProto::DOUBLE: return ElemType::kF64;
    case onnx::TensorProto::INT64: return ElemType::kI64;
    case onnx::TensorProto::INT32: return ElemType::kI32;
    case onnx::TensorProto::INT8: return ElemType::kI8;
    case onnx::TensorProto::UINT8: return ElemType::kU8;
    case onnx::TensorProto::BOOL: return ElemType::kBool;
    default: return ElemType::kUnknown;
  }
}

Shape shape_of(const onnx::TensorShapeProto& s) {
  Shape out;
  for (const auto& d : s.dim()) {
    if (d.has_dim_value()) out.push_back(Dim::of(d.dim_value()));
    else if (d.has_dim_param() && !d.dim_param().empty()) out.push_back(Dim::sym(d.dim_param()));
    else out.push_back(Dim{});
  }
  return out;
}

void add_value_info(Graph& g, const onnx::ValueInfoProto& v) {
  Tensor& t = g.add_tensor(v.name());
  if (!v.type().has_tensor_type()) return;
  const auto& tt = v.type().tensor_type();
  if (tt.elem_type()) t.dtype = elem_type(tt.elem_type());
  if (tt.has_shape()) t.shape = shape_of(tt.shape());
}

template <typename T>
void read_raw(const std::string& raw, std::vector<double>* out) {
  const size_t n = raw.size() / sizeof(T);
  for (size_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
    out->push_back(static_cast<double>(v));
  }
}

// The values of a small tensor, when stored in the model (not external).
std::vector<double> values_of(const onnx::TensorProto& p) {
  std::vector<double> v;
  int64_t count = 1;
  for (int64_t d : p.dims()) count *= d;
  if (count > static_cast<int64_t>(kMaxConstantValues) || count < 1) return v;
  for (float f : p.float_data()) v.push_back(f);
  for (double d : p.double_data()) v.push_back(d);
  for (int64_t i : p.int64_data()) v.push_back(static_cast<double>(i));
  if (p.data_type() != onnx::TensorProto::FLOAT16 && p.data_type() != onnx::TensorProto::BFLOAT16)
    for (int32_t i : p.int32_data()) v.push_back(i);
  if (v.empty() && p.has_raw_data()) {
    switch (p.data_type()) {
      case onnx::TensorProto::FLOAT: read_raw<float>(p.raw_data(), &v); break;
      case onnx::TensorProto::DOUBLE: read_raw<double>(p.raw_data(), &v); break;
      case onnx::TensorProto::INT64: read_raw<int64_t>(p.raw_data(), &v); break;
      case onnx::TensorProto::INT32: read_raw<int32_t>(p.raw_data(), &v); break;
      case onnx::TensorProto::BOOL:
      case onnx::TensorProto::UINT8: read_raw<uint8_t>(p.raw_data(), &v); break;
      default: break;
    }
  }
  if (static_cast<int64_t>(v.size()) != count) v.clear();
  return v;
}

void add_constant(Graph& g, const std::string& name, const onnx::TensorProto& p) {
  Tensor& t = g.add_tensor(name);
  t.dtype = elem_type(p.data_type());
  Shape s;
  for (int64_t d : p.dims()) s.push_back(Dim::of(d));
  t.shape = s;
  t.is_constant = true;
  t.values = values_of(p);
}

// Constant's value_* attributes.
bool add_constant_node(Graph& g, const onnx::NodeProto& n) {
  if (n.op_type() != "Constant" || n.output_size() != 1) return false;
  for (const auto& a : n.attribute()) {
    if (a.name() == "value" && a.has_t()) {
      add_constant(g, n.output(0), a.t());
      return true;
    }
    if (a.name() == "value_float" || a.name() == "value_int") {
      Tensor& t = g.add_tensor(n.output(0));
      t.dtype = a.name() == "value_float" ? ElemType::kF32 : ElemType::kI64;
      t.shape = Shape{};
      t.is_constant = true;
      t.values = {a.name() == "value_float" ? a.f() : static_cast<double>(a.i())};
      return true;
    }
  }
  return false;
}

AttrValue attr_value(const onnx::AttributeProto& a) {
  switch (a.type()) {
    case onnx::AttributeProto::INT: return a.i();
    case onnx::AttributeProto::FLOAT: return static_cast<double>(a.f());
    case onnx::AttributeProto::STRING: return a.s();
    case onnx::AttributeProto::INTS: return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    case onnx::AttributeProto::FLOATS: return std::vector<double>(a.floats().begin(), a.floats().end());
    default: return std::string("<unsupported attribute type>");
  }
}

std::string model_name(const std::string& path) {
  std::string stem = std::filesystem::path(path).filename().string();
  const size_t dot = stem.find('.');
  return dot == std::string::npos ? stem : stem.substr(0, dot);
}

}  // namespace

int64_t onnx_library_opset() {
  return onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map().at(onnx::ONNX_DOMAIN).second;
}

Graph import_onnx(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UserError("cannot read model '" + path + "'; check the path");
  std::stringstream buf;
  buf << f.rdbuf();
  const std::string bytes = buf.str();
  onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromString(bytes))
    throw UserError(path + ": not an ONNX model (the protobuf does not parse: truncated, or another format)");
  if (!model.has_graph() || model.graph().node_size() == 0 || model.ir_version() <= 0)
    throw UserError(path + ": not an ONNX model (no graph, no nodes or no IR version)");
  int64_t opset = -1;
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  if (opset < 1) throw UserError(path + ": imports no ONNX opset (opset_import lacks the default domain)");
  if (opset > onnx_library_opset())
    throw UserError(path + ": opset " + std::to_string(opset) + " is newer than this fusekit's ONNX library knows (" +
                    std::to_string(onnx_library_opset()) + "); convert it, e.g. onnx.version_converter.convert_version(m, " +
                    std::to_string(onnx_library_opset()) + ")");
  try {
    onnx::ShapeInferenceOptions options(false, 0, true);
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception&) {
    // error_mode 0 infers what it can; a throw leaves the shapes the model had.
  }
  const onnx::GraphProto& gp = model.graph();
  Graph g;
  g.name = model_name(path);
  g.opset = opset;
  for (const auto& v : gp.input()) add_value_info(g, v);
  for (const auto& v : gp.value_info()) add_value_info(g, v);
  for (const auto& v : gp.output()) add_value_info(g, v);
  for (const auto& init : gp.initializer()) add_constant(g, init.name(), init);
  std::set<std::string> initializers;
  for (const auto& init : gp.initializer()) initializers.insert(init.name());
  for (const auto& v : gp.input())
    if (!initializers.count(v.name())) g.inputs.push_back(v.name());
  for (const auto& v : gp.output()) g.outputs.push_back(v.name());
  for (int i = 0; i < gp.node_size(); ++i) {
    const onnx::NodeProto& np = gp.node(i);
    if (add_constant_node(g, np)) continue;
    Node n;
    n.name = np.name().empty() ? np.op_type() + "_" + std::to_string(i) : np.name();
    const bool onnx_domain = np.domain().empty() || np.domain() == "ai.onnx";
    n.op = onnx_domain ? np.op_type() : np.domain() + ":" + np.op_type();
    n.inputs.assign(np.input().begin(), np.input().end());
    n.outputs.assign(np.output().begin(), np.output().end());
    for (const auto& a : np.attribute()) n.attrs[a.name()] = attr_value(a);
    for (const auto& t : n.inputs) if (!t.empty()) g.add_tensor(t);
    for (const auto& t : n.outputs) if (!t.empty()) g.add_tensor(t);
    g.nodes.push_back(std::move(n));
  }
  return g;
}

}  // namespace fusekit::graph
