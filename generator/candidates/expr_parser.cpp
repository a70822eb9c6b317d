// Recursive-descent parser from text to an AST, then a FusionCandidate whose
// algorithm turns the AST into Halide Exprs.
#include "generator/candidates/expr_parser.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>

#include <xxhash.h>

#include "common/errors.h"
#include "generator/candidates/axis_reduction.h"
#include "generator/candidates/math_ops.h"

namespace fusekit {
namespace {

constexpr int64_t kSizeCap = int64_t{1} << 40;  // sizes saturate here, far above any limit

struct Node;
using NodePtr = std::shared_ptr<const Node>;

struct Node {
  enum class Kind { kNumber, kInput, kParam, kUnary, kBinary, kCompare, kCall, kReduce };
  Kind kind;
  double number = 0;
  std::string name;          // input / param / output / call / operator
  std::vector<NodePtr> args;
  int line = 0, col = 0;
  int depth = 1;             // levels of the tree below and at this node
  unsigned axes = 0;         // kReduce: the reduced axes (bit k = axis k)
  int64_t size = 1;          // nodes of the tree with earlier outputs inlined (capped)
};

enum class Tok { kEnd, kName, kNumber, kOp, kSep };

struct Token {
  Tok kind = Tok::kEnd;
  std::string text;
  int line = 1, col = 1;
};

[[noreturn]] void fail(int line, int col, const std::string& msg) {
  throw UserError("expression:" + std::to_string(line) + ":" + std::to_string(col) + ": " + msg);
}

[[noreturn]] void fail_limit(int line, int col, const std::string& what, int64_t n, int64_t most) {
  fail(line, col, "expression too " + what + ": " + std::to_string(n) + (what == "deep" ? " levels" : "") +
                      ", at most " + std::to_string(most));
}

std::vector<Token> lex(const std::string& s) {
  if (s.size() > kMaxExpressionChars)
    throw UserError("expression too long: " + std::to_string(s.size()) + " characters, at most " +
                    std::to_string(kMaxExpressionChars));
  std::vector<Token> out;
  int line = 1, col = 1;
  size_t i = 0;
  auto advance = [&](size_t n) {
    for (size_t k = 0; k < n; ++k) {
      if (s[i] == '\n') { ++line; col = 1; } else { ++col; }
      ++i;
    }
  };
  while (i < s.size()) {
    char c = s[i];
    if (c == '#') {  // comment to end of line
      while (i < s.size() && s[i] != '\n') advance(1);
      continue;
    }
    if (c == '\n' || c == ';') {
      out.push_back({Tok::kSep, std::string(1, c), line, col});
      advance(1);
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) { advance(1); continue; }
    Token t;
    t.line = line;
    t.col = col;
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      t.kind = Tok::kName;
      t.text = s.substr(i, j - i);
      if (t.text.size() > kMaxNameChars)
        fail(line, col, "name '" + t.text.substr(0, 16) + "...' is " + std::to_string(t.text.size()) +
                            " characters long, at most " + std::to_string(kMaxNameChars));
      advance(j - i);
    } else if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      char* end = nullptr;
      std::strtod(s.c_str() + i, &end);
      size_t j = static_cast<size_t>(end - s.c_str());
      t.kind = Tok::kNumber;
      t.text = s.substr(i, j - i);
      const double v = std::strtod(t.text.c_str(), nullptr);
      if (!std::isfinite(static_cast<float>(v)))
        fail(line, col, "number " + t.text + " does not fit in f32 (at most about 3.4e38)");
      advance(j - i);
    } else {
      static const char* two[] = {"<=", ">=", "==", "!="};
      std::string op(1, c);
      for (const char* tw : two)
        if (s.compare(i, 2, tw) == 0) op = tw;
      if (std::string("+-*/()[],=<>").find(c) == std::string::npos && op.size() == 1)
        fail(line, col, std::string("unexpected character '") + c + "'");
      t.kind = Tok::kOp;
      t.text = op;
      advance(op.size());
    }
    out.push_back(t);
  }
  out.push_back({Tok::kEnd, "", line, col});
  return out;
}

struct CallInfo {
  const char* name;
  int arity;
};
constexpr CallInfo kCalls[] = {
    {"exp", 1}, {"log", 1},  {"tanh", 1}, {"sigmoid", 1}, {"relu", 1}, {"gelu", 1}, {"gelu_tanh", 1},
    {"silu", 1}, {"sqrt", 1}, {"rsqrt", 1}, {"abs", 1},   {"min", 2},  {"max", 2},  {"pow", 2},
    {"where", 3}, {"sum", 2},  {"mean", 2},
};

// Deepest nesting of '(' and '[' and where it first passes `most`; the
// recursive descent below never goes deeper than kMaxDepth.
void check_nesting(const std::vector<Token>& toks) {
  int depth = 0, deepest = 0;
  const Token* at = nullptr;
  for (const auto& t : toks) {
    if (t.kind != Tok::kOp) continue;
    if (t.text == "(" || t.text == "[") {
      deepest = std::max(deepest, ++depth);
      if (depth > kMaxDepth && !at) at = &t;
    } else if (t.text == ")" || t.text == "]") {
      --depth;
    }
  }
  if (at) fail_limit(at->line, at->col, "deep", deepest, kMaxDepth);
}

class Parser {
 public:
  explicit Parser(const std::string& src) : toks_(lex(src)) { check_nesting(toks_); }

  FusionCandidate parse(const std::string& src) {
    while (peek().kind != Tok::kEnd) {
      if (peek().kind == Tok::kSep) { next(); continue; }
      statement();
      if (peek().kind != Tok::kSep && peek().kind != Tok::kEnd)
        fail(peek().line, peek().col, "expected ';' or a new line after the statement, found '" + peek().text + "'");
    }
    if (outputs_.empty()) fail(1, 1, "no output: write e.g. 'out = relu(x) + y'");
    if (inputs_.size() > kMaxInputs)
      fail(1, 1, "too many inputs: " + std::to_string(inputs_.size()) + ", at most " + std::to_string(kMaxInputs));
    if (outputs_.size() > kMaxOutputs)
      fail(1, 1, "too many outputs: " + std::to_string(outputs_.size()) + ", at most " + std::to_string(kMaxOutputs));
    if (params_.size() > kMaxParams)
      fail(1, 1, "too many parameters: " + std::to_string(params_.size()) + ", at most " + std::to_string(kMaxParams));
    int64_t total = 0;
    for (const auto& o : outputs_) total = std::min(total + o.second->size, kSizeCap);
    if (total > kMaxNodes) fail_limit(1, 1, "large", total, kMaxNodes);
    // A general layout: a permuted input, or a reduction over anything but
    // the col axis of a col/row domain.
    bool general = false;
    for (const auto& in : inputs_) general |= in.permuted();
    for (const NodePtr& r : reductions_)
      general |= (layout_ != Layout::kRowCol && layout_ != Layout::kNd) || r->axes != 1u;
    FusionCandidate c;
    c.description = src;
    c.layout = general || !reduces_ ? layout_ : layout_ == Layout::kNd ? Layout::kNdRows : Layout::kRows;
    auto general_axes = std::make_shared<std::map<const Node*, std::pair<std::vector<int>, std::vector<int>>>>();
    if (general) {
      c.general = true;
      c.output_axes = general_output_axes(general_axes.get());
    }
    for (const auto& in : inputs_) c.inputs.push_back(in);
    for (const auto& p : params_) c.params.push_back(p);
    std::vector<NodePtr> roots;
    for (const auto& [name, node] : outputs_) {
      c.outputs.push_back(name);
      roots.push_back(node);
    }
    c.algorithm = [roots, general_axes](const AlgorithmContext& ctx) {
      std::vector<Halide::Expr> out;
      Lowered memo;  // a node shared by several outputs is lowered once
      for (const auto& r : roots) out.push_back(lower(*r, ctx, &memo, general_axes.get()));
      return out;
    };
    return c;
  }

 private:
  const Token& peek() const { return toks_[pos_]; }
  Token next() { return toks_[pos_++]; }
  bool accept_op(const char* op) {
    if (peek().kind == Tok::kOp && peek().text == op) { ++pos_; return true; }
    return false;
  }
  void expect_op(const char* op, const std::string& context) {
    if (!accept_op(op))
      fail(peek().line, peek().col,
           std::string("expected '") + op + "' " + context + ", found " +
               (peek().kind == Tok::kEnd ? std::string("end of input") : "'" + peek().text + "'"));
  }

  bool is_taken(const std::string& name) const {
    for (const auto& p : params_) if (p.name == name) return true;
    for (const auto& o : outputs_) if (o.first == name) return true;
    for (const auto& i : inputs_) if (i.name == name) return true;
    return false;
  }

  void statement() {
    Token t = next();
    if (t.kind != Tok::kName) fail(t.line, t.col, "expected a name at the start of a statement, found '" + t.text + "'");
    if (t.text == "param" && peek().kind == Tok::kName) {
      Token name = next();
      if (is_taken(name.text)) fail(name.line, name.col, "'" + name.text + "' is already defined");
      expect_op("=", "after the parameter name");
      bool neg = accept_op("-");
      Token num = next();
      if (num.kind != Tok::kNumber) fail(num.line, num.col, "a parameter needs a numeric value");
      float v = std::strtof(num.text.c_str(), nullptr);
      params_.push_back({name.text, neg ? -v : v});
      return;
    }
    for (const auto& c : kCalls)
      if (t.text == c.name) fail(t.line, t.col, "'" + t.text + "' is a function and cannot be assigned");
    if (is_taken(t.text)) fail(t.line, t.col, "'" + t.text + "' is already defined");
    expect_op("=", "after the output name");
    NodePtr e = expr();
    if (e->kind == Node::Kind::kCompare) fail(e->line, e->col, "a comparison is not a value; use where(cond, a, b)");
    for (const auto& in : inputs_)
      if (in.name == t.text)
        fail(t.line, t.col, "'" + t.text + "' is an input of this statement and cannot also be its output; "
                            "name the output otherwise, e.g. '" + t.text + "_out'");
    if (e->depth > kMaxDepth) fail_limit(t.line, t.col, "deep", e->depth, kMaxDepth);
    outputs_.push_back({t.text, e});
  }

  std::shared_ptr<Node> make(Node::Kind kind, const Token& at, std::string name, std::vector<NodePtr> args) {
    auto n = std::make_shared<Node>();
    n->kind = kind;
    n->name = std::move(name);
    n->args = std::move(args);
    n->line = at.line;
    n->col = at.col;
    for (const auto& a : n->args) {
      n->depth = std::max(n->depth, a->depth + 1);
      n->size = std::min(n->size + a->size, kSizeCap);
    }
    return n;
  }

  void require_value(const NodePtr& n) {
    if (n->kind == Node::Kind::kCompare)
      fail(n->line, n->col, "a comparison is not a value; use it as where()'s first argument");
  }

  NodePtr expr() {
    NodePtr lhs = additive();
    static const char* cmps[] = {"<", "<=", ">", ">=", "==", "!="};
    for (const char* op : cmps) {
      if (peek().kind == Tok::kOp && peek().text == op) {
        Token t = next();
        NodePtr rhs = additive();
        return make(Node::Kind::kCompare, t, op, {lhs, rhs});
      }
    }
    return lhs;
  }

  NodePtr additive() {
    NodePtr lhs = term();
    while (peek().kind == Tok::kOp && (peek().text == "+" || peek().text == "-")) {
      Token t = next();
      NodePtr rhs = term();
      require_value(lhs);
      require_value(rhs);
      lhs = make(Node::Kind::kBinary, t, t.text, {lhs, rhs});
    }
    return lhs;
  }

  NodePtr term() {
    NodePtr lhs = unary();
    while (peek().kind == Tok::kOp && (peek().text == "*" || peek().text == "/")) {
      Token t = next();
      NodePtr rhs = unary();
      lhs = make(Node::Kind::kBinary, t, t.text, {lhs, rhs});
    }
    return lhs;
  }

  // Negations chain without parentheses ("- - - x"): counted as levels too.
  NodePtr unary() {
    int minus = 0;
    std::vector<Token> signs;
    while (peek().kind == Tok::kOp && peek().text == "-") {
      signs.push_back(next());
      if (++minus > kMaxDepth) fail_limit(signs.back().line, signs.back().col, "deep", minus, kMaxDepth);
    }
    NodePtr e = primary();
    for (size_t k = signs.size(); k-- > 0;) e = make(Node::Kind::kUnary, signs[k], "-", {e});
    return e;
  }

  int axis_index(const Token& t) {
    static const std::vector<std::string> rowcol = layout_axes(Layout::kRowCol), nchw = layout_axes(Layout::kNchw),
                                          nd = layout_axes(Layout::kNd);
    for (auto [layout, axes] :
         {std::pair{Layout::kRowCol, &rowcol}, std::pair{Layout::kNchw, &nchw}, std::pair{Layout::kNd, &nd}}) {
      for (size_t k = 0; k < axes->size(); ++k) {
        if ((*axes)[k] != t.text) continue;
        if (layout_ != Layout::kFlat && layout_ != layout)
          fail(t.line, t.col, "axis '" + t.text + "' mixes the " + layout_name(layout) + " and " +
                                  layout_name(layout_) + " layouts; use " +
                                  (layout == Layout::kNd || layout_ == Layout::kNd ? "one of col/row, n/c/hw and d0..d3"
                                                                                    : "col/row or n/c/hw, not both"));
        layout_ = layout;
        return static_cast<int>(k);
      }
    }
    if (t.text.size() == 2 && t.text[0] == 'd' && std::isdigit(static_cast<unsigned char>(t.text[1])))
      fail(t.line, t.col, "axis '" + t.text + "' is out of range; nd expressions have at most four axes, d0 (the last) to d3");
    fail(t.line, t.col, "unknown axis '" + t.text + "'; axes are col, row (2-D) or n, c, hw (NCHW)" +
                            std::string(" or d0..d3 (up to 4-D, d0 the last axis)"));
  }

  static bool is_axis_name(const std::string& s) {
    for (Layout l : {Layout::kRowCol, Layout::kNchw, Layout::kNd})
      for (const auto& a : layout_axes(l))
        if (a == s) return true;
    return false;
  }

  // Whether the tokens from `at` are axis names (separated by spaces or
  // commas) up to a ')': a reduction's axis list.
  bool axis_list_at(size_t at) const {
    if (toks_[at].kind != Tok::kName) return false;
    for (;; ++at) {
      if (toks_[at].kind == Tok::kOp && toks_[at].text == ")") return true;
      if (toks_[at].kind == Tok::kOp && toks_[at].text == ",") continue;
      if (toks_[at].kind != Tok::kName || !is_axis_name(toks_[at].text)) return false;
      if (is_taken(toks_[at].text)) return false;
    }
  }

  // sum(e, AXES), mean(e, AXES), max(e, AXES): a reduction of e over the
  // listed axes (names separated by spaces or commas). Over col of a
  // col/row domain it is a row reduction; over any other axes (mean over
  // hw, statistics over n hw, a softmax's max over c) the candidate has a
  // general layout. Returns null for max(a, b) and other calls (nothing
  // consumed but the first argument, which it then keeps).
  NodePtr reduction(const Token& t) {
    if (t.text != "sum" && t.text != "mean" && t.text != "max") return nullptr;
    const size_t start = pos_, reductions = reductions_.size();
    NodePtr value = expr();
    if (!accept_op(",") || !axis_list_at(pos_)) {
      pos_ = start;  // an ordinary call: parse its arguments again
      reductions_.resize(reductions);  // and the reductions inside them
      if (t.text == "max") return nullptr;
      fail(t.line, t.col, t.text + "() reduces over axes: write " + t.text + "(e, col) along each row, or e.g. " +
                              t.text + "(e, hw) or " + t.text + "(e, n hw) over axes of an NCHW domain");
    }
    unsigned axes = 0;
    while (!accept_op(")")) {
      if (accept_op(",")) continue;
      const Token a = next();
      // In a d0..d3 expression `col` names d0, the row's last axis.
      const unsigned bit = 1u << (layout_ == Layout::kNd && a.text == "col" ? 0 : axis_index(a));
      if (axes & bit) fail(a.line, a.col, "axis '" + a.text + "' repeated");
      axes |= bit;
    }
    if (layout_ == Layout::kNd && axes != 1u)
      fail(t.line, t.col, "an nd reduction runs along d0, the last axis: write " + t.text + "(e, d0)");
    require_value(value);
    if (!reduces_) reduce_at_ = t;
    reduces_ = true;
    auto n = make(Node::Kind::kReduce, t, t.text, {value});
    n->axes = axes;
    reductions_.push_back(n);
    return n;
  }

  // The axes a node varies along (bit k = axis k of the final layout).
  unsigned node_axes(const Node& n, std::map<const Node*, unsigned>* memo) {
    if (auto it = memo->find(&n); it != memo->end()) return it->second;
    unsigned m = 0;
    const unsigned all = (1u << layout_axes(layout_).size()) - 1;
    if (n.kind == Node::Kind::kInput) {
      for (const auto& in : inputs_)
        if (in.name == n.name) {
          if (in.full()) m = all;
          for (int a : in.axes) m |= 1u << a;
        }
    } else {
      for (const auto& a : n.args) m |= node_axes(*a, memo);
      if (n.kind == Node::Kind::kReduce) {
        if ((m & n.axes) != n.axes) {
          std::string missing;
          for (size_t k = 0; k < layout_axes(layout_).size(); ++k)
            if ((n.axes >> k & 1u) && !(m >> k & 1u)) missing += (missing.empty() ? "" : " ") + layout_axes(layout_)[k];
          fail(n.line, n.col, n.name + "() over " + missing + " of a value that does not vary along " + missing);
        }
        m &= ~n.axes;
      }
    }
    memo->emplace(&n, m);
    return m;
  }

  static std::vector<int> bits(unsigned m) {
    std::vector<int> v;
    for (int k = 0; k < 32; ++k)
      if (m >> k & 1u) v.push_back(k);
    return v;
  }

  // A general layout's output axes (every output's must agree), and each
  // reduction's reduced and kept axes into `axes`.
  std::vector<int> general_output_axes(std::map<const Node*, std::pair<std::vector<int>, std::vector<int>>>* axes) {
    std::map<const Node*, unsigned> memo;
    unsigned first = 0;
    for (size_t o = 0; o < outputs_.size(); ++o) {
      const Node& root = *outputs_[o].second;
      const unsigned m = node_axes(root, &memo);
      if (m == 0)
        fail(root.line, root.col, "output '" + outputs_[o].first + "' is constant over the domain; a general layout's "
                                  "outputs are indexed by the axes they vary along");
      if (o > 0 && m != first)
        fail(root.line, root.col, "output '" + outputs_[o].first + "' varies along " +
                                      axis_list(layout_, bits(m), " ") + " but '" + outputs_[0].first + "' along " +
                                      axis_list(layout_, bits(first), " ") +
                                      "; outputs of one expression share their axes: write them as two expressions");
      if (o == 0) first = m;
    }
    for (const NodePtr& r : reductions_) {
      const unsigned inner = node_axes(*r->args[0], &memo);
      (*axes)[r.get()] = {bits(r->axes), bits(inner & ~r->axes)};
    }
    return bits(first);
  }

  NodePtr input_ref(const Token& t, std::vector<int> axes) {
    for (auto& in : inputs_) {
      if (in.name != t.text) continue;
      if (in.axes != axes)
        fail(t.line, t.col, "input '" + t.text + "' is used with different indexing; index it the same way everywhere");
      return make(Node::Kind::kInput, t, t.text, {});
    }
    inputs_.push_back({t.text, std::move(axes)});
    return make(Node::Kind::kInput, t, t.text, {});
  }

  NodePtr primary() {
    Token t = next();
    if (t.kind == Tok::kNumber) {
      auto n = make(Node::Kind::kNumber, t, "", {});
      n->number = std::strtod(t.text.c_str(), nullptr);
      return n;
    }
    if (t.kind == Tok::kOp && t.text == "(") {
      NodePtr e = expr();
      expect_op(")", "to close '('");
      return e;
    }
    if (t.kind != Tok::kName)
      fail(t.line, t.col, t.kind == Tok::kEnd ? "unexpected end of input, expected a value"
                                               : "expected a value, found '" + t.text + "'");
    if (accept_op("(")) {
      if (NodePtr r = reduction(t)) return r;
      const CallInfo* info = nullptr;
      for (const auto& c : kCalls)
        if (t.text == c.name) info = &c;
      if (!info) {
        std::string known;
        for (const auto& c : kCalls) known += std::string(known.empty() ? "" : " ") + c.name;
        fail(t.line, t.col, "unknown function '" + t.text + "'; known: " + known);
      }
      std::vector<NodePtr> args;
      if (!accept_op(")")) {
        do args.push_back(expr());
        while (accept_op(","));
        expect_op(")", "to close the arguments of " + t.text);
      }
      if (static_cast<int>(args.size()) != info->arity)
        fail(t.line, t.col, t.text + "() takes " + std::to_string(info->arity) + " argument" +
                                (info->arity == 1 ? "" : "s") + ", got " + std::to_string(args.size()));
      for (size_t k = 0; k < args.size(); ++k) {
        const bool is_cond = (t.text == "where" && k == 0);
        if (is_cond && args[k]->kind != Node::Kind::kCompare)
          fail(args[k]->line, args[k]->col, "where()'s first argument must be a comparison such as x > 0");
        if (!is_cond) require_value(args[k]);
      }
      if (t.text == "pow" && !(args[1]->kind == Node::Kind::kNumber ||
                               (args[1]->kind == Node::Kind::kUnary && args[1]->args[0]->kind == Node::Kind::kNumber)))
        fail(args[1]->line, args[1]->col, "pow()'s exponent must be a numeric constant");
      return make(Node::Kind::kCall, t, t.text, args);
    }
    if (accept_op("[")) {
      std::vector<int> axes;
      std::set<int> seen;
      do {
        Token a = next();
        if (a.kind != Tok::kName) fail(a.line, a.col, "expected an axis name inside [ ]");
        int k = axis_index(a);
        if (!seen.insert(k).second) fail(a.line, a.col, "axis '" + a.text + "' repeated");
        axes.push_back(k);
      } while (accept_op(","));
      expect_op("]", "to close the index");
      // Axes out of order read the input through a permutation: they are
      // its storage order, innermost first (x[row, col] is x transposed).
      // General broadcasting (d0..d3) takes no permutation.
      if (layout_ == Layout::kNd)
        for (size_t k = 1; k < axes.size(); ++k)
          if (axes[k] < axes[k - 1])
            fail(t.line, t.col, "list the axes of '" + t.text + "' innermost first (d0 before d1 before d2 before d3)");
      return input_ref(t, std::move(axes));
    }
    for (const auto& c : kCalls)
      if (t.text == c.name) fail(t.line, t.col, "'" + t.text + "' is a function; call it as " + t.text + "(...)");
    for (const auto& p : params_)
      if (p.name == t.text) return make(Node::Kind::kParam, t, t.text, {});
    for (const auto& o : outputs_)
      if (o.first == t.text) return o.second;  // inline the earlier output
    if (t.text == "param") fail(t.line, t.col, "'param' declares a parameter: param NAME = VALUE");
    return input_ref(t, {});
  }

  using Lowered = std::map<const Node*, Halide::Expr>;
  // A general layout's reductions: reduced and kept axes per node.
  using GeneralAxes = std::map<const Node*, std::pair<std::vector<int>, std::vector<int>>>;

  static Halide::Expr lower(const Node& n, const AlgorithmContext& ctx, Lowered* memo, const GeneralAxes* general) {
    if (auto it = memo->find(&n); it != memo->end()) return it->second;
    Halide::Expr e = lower_node(n, ctx, memo, general);
    memo->emplace(&n, e);
    return e;
  }

  static Halide::Expr lower_node(const Node& n, const AlgorithmContext& ctx, Lowered* memo, const GeneralAxes* general) {
    using Halide::Expr;
    switch (n.kind) {
      case Node::Kind::kNumber: return Expr(static_cast<float>(n.number));
      case Node::Kind::kInput: return ctx.in(n.name);
      case Node::Kind::kParam: return ctx.param(n.name);
      case Node::Kind::kUnary: return -lower(*n.args[0], ctx, memo, general);
      case Node::Kind::kBinary: {
        Expr a = lower(*n.args[0], ctx, memo, general), b = lower(*n.args[1], ctx, memo, general);
        if (n.name == "+") return a + b;
        if (n.name == "-") return a - b;
        if (n.name == "*") return a * b;
        return a / b;
      }
      case Node::Kind::kCompare: {
        Expr a = lower(*n.args[0], ctx, memo, general), b = lower(*n.args[1], ctx, memo, general);
        if (n.name == "<") return a < b;
        if (n.name == "<=") return a <= b;
        if (n.name == ">") return a > b;
        if (n.name == ">=") return a >= b;
        if (n.name == "==") return a == b;
        return a != b;
      }
      case Node::Kind::kReduce: {
        const Reduction kind = n.name == "sum" ? Reduction::kSum : n.name == "mean" ? Reduction::kMean : Reduction::kMax;
        if (auto it = general->find(&n); it != general->end())
          return ctx.reduce_axes(kind, lower(*n.args[0], ctx, memo, general), it->second.first, it->second.second);
        return ctx.reduce(kind, lower(*n.args[0], ctx, memo, general));
      }
      case Node::Kind::kCall: {
        std::vector<Expr> a;
        for (const auto& arg : n.args) a.push_back(lower(*arg, ctx, memo, general));
        const std::string& f = n.name;
        if (f == "exp") return Halide::exp(a[0]);
        if (f == "log") return Halide::log(a[0]);
        if (f == "tanh") return Halide::tanh(a[0]);
        if (f == "sigmoid") return fk_sigmoid(a[0]);
        if (f == "relu") return fk_relu(a[0]);
        if (f == "gelu") return fk_gelu(a[0]);
        if (f == "gelu_tanh") return fk_gelu_tanh(a[0]);
        if (f == "silu") return fk_silu(a[0]);
        if (f == "sqrt") return Halide::sqrt(a[0]);
        if (f == "rsqrt") return fk_rsqrt(a[0]);
        if (f == "abs") return Halide::abs(a[0]);
        if (f == "min") return Halide::min(a[0], a[1]);
        if (f == "max") return Halide::max(a[0], a[1]);
        if (f == "pow") return fk_pow(a[0], a[1]);
        if (f == "where") {
          // A double reference's inputs meet f32 constants: select takes one type.
          const Halide::Type t = a[1].type().bits() >= a[2].type().bits() ? a[1].type() : a[2].type();
          return Halide::select(a[0], Halide::cast(t, a[1]), Halide::cast(t, a[2]));
        }
        break;
      }
    }
    throw InternalError("unlowered expression node '" + n.name + "'");
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  Layout layout_ = Layout::kFlat;
  bool reduces_ = false;
  Token reduce_at_;  // the first reduction, for errors
  std::vector<NodePtr> reductions_;  // every reduction parsed, in order
  std::vector<InputSpec> inputs_;
  std::vector<ParamSpec> params_;
  std::vector<std::pair<std::string, NodePtr>> outputs_;
};

}  // namespace

FusionCandidate parse_expression(const std::string& source) {
  Parser p(source);
  FusionCandidate c = p.parse(source);
  char buf[9];
  std::snprintf(buf, sizeof(buf), "%08x", static_cast<unsigned>(XXH32(source.data(), source.size(), 0)));
  c.name = std::string("expr_") + buf;
  return c;
}

}  // namespace fusekit
