#include "fusekit/launch_expr.h"

#include <cctype>
#include <cstdlib>

namespace fusekit {

struct LaunchExpr::Node {
  Op op = Op::kConst;
  int64_t value = 0;
  std::string name;
  std::vector<LaunchExpr> args;
};

namespace {

struct OpName {
  LaunchExpr::Op op;
  const char* name;
  int arity;  // -1: any >= 1
};

constexpr OpName kOps[] = {
    {LaunchExpr::Op::kAdd, "add", 2},   {LaunchExpr::Op::kSub, "sub", 2},
    {LaunchExpr::Op::kMul, "mul", 2},   {LaunchExpr::Op::kDiv, "div", 2},
    {LaunchExpr::Op::kMod, "mod", 2},   {LaunchExpr::Op::kMin, "min", 2},
    {LaunchExpr::Op::kMax, "max", 2},   {LaunchExpr::Op::kSelect, "select", 3},
    {LaunchExpr::Op::kLt, "lt", 2},     {LaunchExpr::Op::kLe, "le", 2},
    {LaunchExpr::Op::kEq, "eq", 2},     {LaunchExpr::Op::kNe, "ne", 2},
    {LaunchExpr::Op::kAnd, "and", 2},   {LaunchExpr::Op::kOr, "or", 2},
    {LaunchExpr::Op::kNot, "not", 1},   {LaunchExpr::Op::kDivMagic, "divmagic", 1},
    {LaunchExpr::Op::kDivShift, "divshift", 1},
};

// Round-up magic number for 31-bit dividends (Granlund & Montgomery): with
// l = ceil(log2 d) and s = 31 + l, m = ceil(2^s / d) = (2^s + e) / d where
// 0 <= e < d <= 2^l, so for a < 2^31 the error a * e / (d * 2^s) < 1 / d
// never carries floor(a * m / 2^s) past floor(a / d); m < 2^32.
void div_magic(int64_t d, int64_t* magic, int64_t* shift) {
  *magic = *shift = 0;
  if (d < 1 || d > 0x7fffffff) return;
  int l = 0;
  while ((int64_t{1} << l) < d) ++l;
  const uint64_t s = 31 + static_cast<uint64_t>(l);
  *magic = static_cast<int64_t>(((uint64_t{1} << s) + static_cast<uint64_t>(d) - 1) / static_cast<uint64_t>(d));
  *shift = static_cast<int64_t>(s);
}

const OpName* find_op(LaunchExpr::Op op) {
  for (const auto& o : kOps)
    if (o.op == op) return &o;
  return nullptr;
}

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

bool is_symbol_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$';
}

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  Status parse_all(LaunchExpr* out) {
    Status st = parse(out);
    if (!st.ok()) return st;
    skip_ws();
    if (pos_ != s_.size()) return error("trailing text");
    return Status();
  }

 private:
  Status error(const std::string& what) const {
    return Status(StatusCode::kInvalidArgument,
                  "launch expression '" + s_ + "': " + what + " at offset " + std::to_string(pos_));
  }
  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  Status parse(LaunchExpr* out) {
    skip_ws();
    if (pos_ >= s_.size()) return error("unexpected end");
    char c = s_[pos_];
    if (c == '(') {
      ++pos_;
      size_t start = pos_;
      while (pos_ < s_.size() && std::isalpha(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      std::string op_name = s_.substr(start, pos_ - start);
      const OpName* op = nullptr;
      for (const auto& o : kOps)
        if (op_name == o.name) op = &o;
      if (!op) return error("unknown operator '" + op_name + "'");
      std::vector<LaunchExpr> args;
      for (;;) {
        skip_ws();
        if (pos_ >= s_.size()) return error("missing ')'");
        if (s_[pos_] == ')') { ++pos_; break; }
        LaunchExpr a;
        Status st = parse(&a);
        if (!st.ok()) return st;
        args.push_back(a);
      }
      if (static_cast<int>(args.size()) != op->arity)
        return error("'" + op_name + "' takes " + std::to_string(op->arity) + " arguments");
      *out = LaunchExpr::make(op->op, std::move(args));
      return Status();
    }
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      size_t start = pos_++;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      std::string digits = s_.substr(start, pos_ - start);
      if (digits == "-") return error("lone '-'");
      *out = LaunchExpr(static_cast<int64_t>(std::strtoll(digits.c_str(), nullptr, 10)));
      return Status();
    }
    if (is_symbol_char(c)) {
      size_t start = pos_;
      while (pos_ < s_.size() && is_symbol_char(s_[pos_])) ++pos_;
      *out = LaunchExpr::symbol(s_.substr(start, pos_ - start));
      return Status();
    }
    return error(std::string("unexpected '") + c + "'");
  }

  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace

LaunchExpr::LaunchExpr(int64_t value) {
  auto n = std::make_shared<Node>();
  n->op = Op::kConst;
  n->value = value;
  node_ = n;
}

LaunchExpr LaunchExpr::symbol(std::string name) {
  auto n = std::make_shared<Node>();
  n->op = Op::kSymbol;
  n->name = std::move(name);
  return LaunchExpr(std::shared_ptr<const Node>(n));
}

LaunchExpr LaunchExpr::make(Op op, std::vector<LaunchExpr> args) {
  auto n = std::make_shared<Node>();
  n->op = op;
  n->args = std::move(args);
  return LaunchExpr(std::shared_ptr<const Node>(n));
}

LaunchExpr::Op LaunchExpr::op() const { return node_->op; }
int64_t LaunchExpr::value() const { return node_->value; }
const std::string& LaunchExpr::name() const { return node_->name; }
const std::vector<LaunchExpr>& LaunchExpr::args() const { return node_->args; }

std::string LaunchExpr::to_string() const {
  switch (node_->op) {
    case Op::kConst: return std::to_string(node_->value);
    case Op::kSymbol: return node_->name;
    default: break;
  }
  std::string s = "(";
  s += find_op(node_->op)->name;
  for (const auto& a : node_->args) s += " " + a.to_string();
  return s + ")";
}

Status LaunchExpr::parse(const std::string& text, LaunchExpr* out) {
  return Parser(text).parse_all(out);
}

Status LaunchExpr::evaluate(const Lookup& lookup, int64_t* result) const {
  const Node& n = *node_;
  if (n.op == Op::kConst) { *result = n.value; return Status(); }
  if (n.op == Op::kSymbol) {
    if (!lookup(n.name, result))
      return Status(StatusCode::kInvalidArgument, "launch expression uses unbound symbol '" + n.name + "'");
    return Status();
  }
  int64_t v[3] = {0, 0, 0};
  for (size_t i = 0; i < n.args.size() && i < 3; ++i) {
    Status st = n.args[i].evaluate(lookup, &v[i]);
    if (!st.ok()) return st;
  }
  switch (n.op) {
    case Op::kAdd: *result = v[0] + v[1]; break;
    case Op::kSub: *result = v[0] - v[1]; break;
    case Op::kMul: *result = v[0] * v[1]; break;
    case Op::kDiv:
    case Op::kMod:
      if (v[1] == 0) return Status(StatusCode::kInvalidArgument, "division by zero in " + to_string());
      *result = n.op == Op::kDiv ? floor_div(v[0], v[1]) : floor_mod(v[0], v[1]);
      break;
    case Op::kMin: *result = v[0] < v[1] ? v[0] : v[1]; break;
    case Op::kMax: *result = v[0] > v[1] ? v[0] : v[1]; break;
    case Op::kSelect: *result = v[0] ? v[1] : v[2]; break;
    case Op::kLt: *result = v[0] < v[1]; break;
    case Op::kLe: *result = v[0] <= v[1]; break;
    case Op::kEq: *result = v[0] == v[1]; break;
    case Op::kNe: *result = v[0] != v[1]; break;
    case Op::kAnd: *result = v[0] && v[1]; break;
    case Op::kOr: *result = v[0] || v[1]; break;
    case Op::kNot: *result = !v[0]; break;
    case Op::kDivMagic:
    case Op::kDivShift: {
      int64_t magic, shift;
      div_magic(v[0], &magic, &shift);
      *result = n.op == Op::kDivMagic ? magic : shift;
      break;
    }
    default: return Status(StatusCode::kInternal, "bad launch expression node");
  }
  return Status();
}

std::vector<std::string> LaunchExpr::symbols() const {
  std::vector<std::string> out;
  std::function<void(const LaunchExpr&)> walk = [&](const LaunchExpr& e) {
    if (e.op() == Op::kSymbol) {
      for (const auto& s : out)
        if (s == e.name()) return;
      out.push_back(e.name());
    }
    for (const auto& a : e.args()) walk(a);
  };
  walk(*this);
  return out;
}

LaunchExpr ceil_div(const LaunchExpr& a, int64_t b) {
  return LaunchExpr::make(LaunchExpr::Op::kDiv,
                          {LaunchExpr::make(LaunchExpr::Op::kAdd, {a, LaunchExpr(b - 1)}), LaunchExpr(b)});
}

}  // namespace fusekit
