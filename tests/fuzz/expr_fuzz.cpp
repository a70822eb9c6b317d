// Map: Grammar picks a layout and its leaves, then grows a random tree of
// unary calls, binary ops, min/max, where() and pow with constant exponents.
// Domain-limited functions take guarded arguments (log(abs(e) + 1)), so the
// corpus tests codegen, not NaN handling.
#include "tests/fuzz/expr_fuzz.h"

#include <random>
#include <sstream>

namespace fusekit {
namespace {

class Grammar {
 public:
  Grammar(std::mt19937& rng, std::vector<std::string> leaves, bool reduce)
      : rng_(rng), leaves_(std::move(leaves)), reduce_(reduce) {}

  std::string expr(int depth) {
    if (depth <= 0 || pick(4) == 0) return leaf();
    switch (pick(reduce_ && depth >= 2 ? 7 : 6)) {
      case 0: return unary(depth - 1);
      case 1: return unary(depth - 1);
      case 2: return binary(depth - 1);
      case 3: return binary(depth - 1);
      case 4: return (pick(2) ? "min(" : "max(") + expr(depth - 1) + ", " + expr(depth - 1) + ")";
      case 5: return "where(" + expr(depth - 1) + cmp() + expr(depth - 1) + ", " + expr(depth - 1) + ", " +
                     expr(depth - 1) + ")";
      default: return reduction(depth - 1);
    }
  }
  // A row reduction somewhere in the tree, so every `rows` expression reduces.
  std::string reduction(int depth) {
    static const char* kinds[] = {"sum", "mean", "max"};
    return std::string(kinds[pick(3)]) + "(" + expr(depth) + ", col)";
  }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  std::string number() {
    static const char* nums[] = {"0.5", "2", "1.5", "0.1", "3", "0.25", "1"};
    return nums[pick(7)];
  }
  std::string leaf() { return pick(6) == 0 ? number() : leaves_[pick(static_cast<int>(leaves_.size()))]; }
  std::string cmp() {
    static const char* ops[] = {" > ", " < ", " >= ", " <= "};
    return ops[pick(4)];
  }
  std::string unary(int depth) {
    const std::string e = expr(depth);
    switch (pick(15)) {
      case 0: return "exp(min(" + e + ", 10))";
      case 1: return "log(abs(" + e + ") + 1)";
      case 2: return "tanh(" + e + ")";
      case 3: return "sigmoid(" + e + ")";
      case 4: return "relu(" + e + ")";
      case 5: return "gelu(" + e + ")";
      case 6: return "gelu_tanh(" + e + ")";
      case 7: return "silu(" + e + ")";
      case 8: return "sqrt(abs(" + e + "))";
      case 9: return "rsqrt(abs(" + e + ") + 1)";
      case 10: return "abs(" + e + ")";
      case 11: return "-" + e;
      case 12: return "pow(abs(" + e + ") + 0.5, " + std::string(pick(2) ? "2" : "0.5") + ")";
      case 13: return "(" + e + ")";
      default: return "gelu(" + e + ") * 0.5";
    }
  }
  std::string binary(int depth) {
    const std::string a = expr(depth), b = expr(depth);
    switch (pick(5)) {
      case 0: return "(" + a + " + " + b + ")";
      case 1: return "(" + a + " - " + b + ")";
      case 2: return "(" + a + " * " + b + ")";
      case 3: return "(" + a + " / (abs(" + b + ") + 1))";
      default: return "(" + a + " * " + number() + " + " + b + ")";
    }
  }

  std::mt19937& rng_;
  std::vector<std::string> leaves_;
  bool reduce_;
};

FuzzExpression one(std::mt19937& rng) {
  static const char* layouts[] = {"flat", "rowcol", "nchw", "rows"};
  FuzzExpression f;
  f.layout = layouts[std::uniform_int_distribution<int>(0, 3)(rng)];
  std::vector<std::string> leaves = {"x", "y"};
  if (f.layout == "flat") leaves.push_back("z");
  if (f.layout == "rowcol" || f.layout == "rows") leaves.push_back("b[col]");
  if (f.layout == "rowcol") leaves.push_back("s[row]");
  if (f.layout == "nchw") {
    leaves.push_back("g[c]");
    leaves.push_back("h[c]");
  }
  std::ostringstream src;
  const bool with_param = std::uniform_int_distribution<int>(0, 2)(rng) == 0;
  if (with_param) {
    src << "param a = 0.75\n";
    leaves.push_back("a");
  }
  // The first leaf is always used, so every expression has a full-shape input.
  Grammar g(rng, leaves, f.layout == "rows");
  const int depth = std::uniform_int_distribution<int>(1, 4)(rng);
  std::string body = f.layout == "rows" ? g.reduction(depth) : g.expr(depth);
  if (f.layout == "rows") body = "x - " + body;
  else body = "x * 0.5 + " + body;
  src << "out = " << body;
  if (std::uniform_int_distribution<int>(0, 4)(rng) == 0) src << "\nout2 = " << g.expr(2) << " + y";
  f.source = src.str();
  return f;
}

}  // namespace

std::vector<FuzzExpression> fuzz_expressions(uint32_t seed, int count) {
  std::mt19937 rng(seed);
  std::vector<FuzzExpression> out;
  for (int i = 0; i < count; ++i) out.push_back(one(rng));
  return out;
}

}  // namespace fusekit
