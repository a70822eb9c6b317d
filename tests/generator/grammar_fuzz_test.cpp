// A seeded grammar fuzzer of the expression language: random programs from
// the grammar, and the same programs cut and spliced at random, must parse
// or fail with a UserError; those that parse must instantiate and print
// their NVRTC kernel. Any other exception or a crash fails the suite.
#include <gtest/gtest.h>

#include <random>

#include "common/errors.h"
#include "generator/candidates/expr_parser.h"
#include "generator/nvrtc/kernel_printer.h"

namespace fusekit {
namespace {

class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  std::string program() {
    std::string s;
    if (pick(3) == 0) s += "param a = " + number() + "\n";
    const int outs = 1 + pick(3);
    for (int o = 0; o < outs; ++o) s += "o" + std::to_string(o) + " = " + expr(0) + (pick(2) ? ";" : "\n");
    return s;
  }

  // Cut, duplicate or splice characters: mostly invalid programs.
  std::string mutate(std::string s) {
    static const char* bits[] = {"(", ")", "[", "]", ",", "=", "*/", "\"", "\\", "\n", "#include <x>", "1e40",
                                 "col", "row", "c", "sum(", "where(", "param", "-", "--", ";;", "x[col, c]", "\0"};
    const int edits = 1 + pick(4);
    for (int k = 0; k < edits && !s.empty(); ++k) {
      const size_t at = static_cast<size_t>(pick(static_cast<int>(s.size())));
      switch (pick(3)) {
        case 0: s.erase(at, static_cast<size_t>(1 + pick(5))); break;
        case 1: s.insert(at, bits[pick(static_cast<int>(std::size(bits)))]); break;
        default: s.insert(at, s.substr(static_cast<size_t>(pick(static_cast<int>(s.size())))));
      }
    }
    return s;
  }

 private:
  std::string number() {
    static const char* n[] = {"0", "1", "0.5", "2.5e-3", "3", "1e-6", "100"};
    return n[pick(static_cast<int>(std::size(n)))];
  }
  std::string leaf() {
    static const char* l[] = {"x", "y", "z", "b[col]", "m[col, row]", "s[c]", "a"};
    return pick(4) == 0 ? number() : l[pick(static_cast<int>(std::size(l)))];
  }
  std::string expr(int depth) {
    if (depth > 4 || pick(3) == 0) return leaf();
    static const char* unary[] = {"exp", "log", "tanh", "sigmoid", "relu", "gelu", "gelu_tanh", "silu", "sqrt",
                                  "rsqrt", "abs"};
    static const char* ops[] = {" + ", " - ", " * ", " / "};
    switch (pick(7)) {
      case 0: return std::string(unary[pick(static_cast<int>(std::size(unary)))]) + "(" + expr(depth + 1) + ")";
      case 1: return std::string(pick(2) ? "min(" : "max(") + expr(depth + 1) + ", " + expr(depth + 1) + ")";
      case 2: return "pow(" + expr(depth + 1) + ", " + number() + ")";
      case 3: return "where(" + expr(depth + 1) + (pick(2) ? " > " : " <= ") + expr(depth + 1) + ", " + expr(depth + 1) +
                     ", " + expr(depth + 1) + ")";
      case 4: return std::string(pick(2) ? "sum(" : "mean(") + expr(depth + 1) + ", col)";
      case 5: return "-" + expr(depth + 1);
      default: return "(" + expr(depth + 1) + ops[pick(4)] + expr(depth + 1) + ")";
    }
  }
  std::mt19937_64 rng_;
};

TEST(GrammarFuzz, ParsesOrRefusesAndPrintsWhatParses) {
  Gen g(20261201);
  int parsed = 0, refused = 0, printed = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string src = g.program();
    if (i % 2) src = g.mutate(src);
    FusionCandidate c;
    try {
      c = parse_expression(src);
    } catch (const UserError& e) {
      ++refused;
      EXPECT_EQ(std::string(e.what()).rfind("expression", 0), 0u) << e.what();
      continue;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not a UserError for:\n" << src << "\n" << e.what();
      continue;
    }
    ++parsed;
    if (i % 6) continue;  // instantiate and print a share of them (Halide lowering is the slow part)
    try {
      const DType dt = i % 12 ? DType::kF32 : DType::kBF16;
      Pipeline p = instantiate(c, dt);
      const Config cfg = Config::parse(c.template_kind() == TemplateKind::kRowReduction
                                           ? "cache=4 fast=0 rows=1 threads=256 vec=4"
                                           : "ept=1 fast=0 grid=0 threads=128 vec=4");
      EXPECT_FALSE(print_nvrtc_kernel(c, p, cfg, "k").source.empty());
      ++printed;
    } catch (const UserError&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << "printing failed for:\n" << src << "\n" << e.what();
    }
  }
  EXPECT_GT(parsed, 100);
  EXPECT_GT(refused, 100);
  EXPECT_GT(printed, 50);
}

}  // namespace
}  // namespace fusekit
