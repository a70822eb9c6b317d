#include "graph/graph_ir.h"

#include <set>

namespace fusekit::graph {
namespace {

constexpr std::pair<ElemType, const char*> kNames[] = {
    {ElemType::kF32, "f32"}, {ElemType::kF16, "f16"}, {ElemType::kBF16, "bf16"}, {ElemType::kF64, "f64"},
    {ElemType::kI64, "i64"}, {ElemType::kI32, "i32"}, {ElemType::kI8, "i8"},     {ElemType::kU8, "u8"},
    {ElemType::kBool, "bool"}};

template <typename T>
std::optional<T> get(const Node& n, const std::string& key) {
  auto it = n.attrs.find(key);
  if (it == n.attrs.end()) return {};
  if (const T* v = std::get_if<T>(&it->second)) return *v;
  return {};
}

}  // namespace

const char* elem_type_name(ElemType t) {
  for (const auto& [k, n] : kNames)
    if (k == t) return n;
  return "unknown";
}

std::optional<ElemType> parse_elem_type(const std::string& text) {
  for (const auto& [k, n] : kNames)
    if (text == n) return k;
  return {};
}

bool is_float(ElemType t) { return is_storage_float(t) || t == ElemType::kF64; }
bool is_storage_float(ElemType t) { return t == ElemType::kF32 || t == ElemType::kF16 || t == ElemType::kBF16; }

bool Dim::operator==(const Dim& o) const {
  if (concrete() || o.concrete()) return value == o.value;
  return !symbol.empty() && symbol == o.symbol;
}

std::string Dim::text() const { return concrete() ? std::to_string(value) : symbol.empty() ? "?" : symbol; }

bool shapes_equal(const Shape& a, const Shape& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}

bool shape_known(const Shape& s) {
  for (const auto& d : s)
    if (!d.known()) return false;
  return true;
}

std::string shape_string(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + s[i].text();
  return out + "]";
}

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const Dim* da = i < rank - a.size() ? nullptr : &a[i - (rank - a.size())];
    const Dim* db = i < rank - b.size() ? nullptr : &b[i - (rank - b.size())];
    if (!da || (da->concrete() && da->value == 1)) out[i] = db ? *db : Dim::of(1);
    else if (!db || (db->concrete() && db->value == 1)) out[i] = *da;
    else if (*da == *db) out[i] = *da;
    else return {};
  }
  return out;
}

bool Tensor::is_scalar_constant() const {
  if (!is_constant || values.size() != 1 || !shape) return false;
  for (const auto& d : *shape)
    if (!(d.concrete() && d.value == 1)) return false;
  return true;
}

std::optional<int64_t> Node::attr_int(const std::string& key) const { return get<int64_t>(*this, key); }
std::optional<double> Node::attr_float(const std::string& key) const {
  if (auto d = get<double>(*this, key)) return d;
  if (auto i = get<int64_t>(*this, key)) return static_cast<double>(*i);
  return {};
}
std::optional<std::string> Node::attr_string(const std::string& key) const { return get<std::string>(*this, key); }
std::optional<std::vector<int64_t>> Node::attr_ints(const std::string& key) const {
  return get<std::vector<int64_t>>(*this, key);
}

const Tensor* Graph::tensor(const std::string& name) const {
  auto it = tensors.find(name);
  return it == tensors.end() ? nullptr : &it->second;
}

Tensor& Graph::add_tensor(const std::string& name) {
  Tensor& t = tensors[name];
  t.name = name;
  return t;
}

std::vector<std::string> Graph::symbols() const {
  std::set<std::string> s;
  for (const auto& [name, t] : tensors)
    if (t.shape)
      for (const auto& d : *t.shape)
        if (!d.concrete() && !d.symbol.empty()) s.insert(d.symbol);
  return {s.begin(), s.end()};
}

}  // namespace fusekit::graph
