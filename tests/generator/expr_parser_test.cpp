#include "generator/candidates/expr_parser.h"

#include <gtest/gtest.h>

#include "common/errors.h"
#include "tests/generator/parse_error.h"

namespace fusekit {
namespace {

TEST(ExprParser, CollectsInputsParamsAndOutputsInOrder) {
  FusionCandidate c = parse_expression("param alpha = 0.5\nt = sigmoid(x) * y; out = tanh(t) + z * alpha\nout2 = t");
  EXPECT_EQ(c.layout, Layout::kFlat);
  ASSERT_EQ(c.inputs.size(), 3u);
  EXPECT_EQ(c.inputs[0].name, "x");
  EXPECT_EQ(c.inputs[1].name, "y");
  EXPECT_EQ(c.inputs[2].name, "z");
  ASSERT_EQ(c.params.size(), 1u);
  EXPECT_EQ(c.params[0].name, "alpha");
  EXPECT_FLOAT_EQ(c.params[0].value, 0.5f);
  EXPECT_EQ(c.outputs, (std::vector<std::string>{"t", "out", "out2"}));
  EXPECT_EQ(c.name.rfind("expr_", 0), 0u);
}

TEST(ExprParser, BroadcastIndexingPicksTheLayout) {
  FusionCandidate rc = parse_expression("out = gelu(x + b[col])");
  EXPECT_EQ(rc.layout, Layout::kRowCol);
  ASSERT_EQ(rc.inputs.size(), 2u);
  EXPECT_TRUE(rc.inputs[0].full());
  EXPECT_EQ(rc.inputs[1].axes, std::vector<int>{0});
  FusionCandidate nc = parse_expression("out = relu(x * s[c] + t[c])");
  EXPECT_EQ(nc.layout, Layout::kNchw);
  EXPECT_EQ(nc.inputs[1].axes, std::vector<int>{1});
  FusionCandidate both = parse_expression("out = x + m[col, row]");
  EXPECT_EQ(both.inputs[1].axes, (std::vector<int>{0, 1}));
}

TEST(ExprParser, AcceptsEveryFunctionOfTheGrammar) {
  EXPECT_NO_THROW(parse_expression(
      "out = exp(a) + log(a) + tanh(a) + sigmoid(a) + relu(a) + gelu(a) + gelu_tanh(a) + silu(a) + sqrt(a) + "
      "rsqrt(a) + abs(a) + min(a, b) + max(a, b) + pow(a, 3) + pow(a, -0.5) + where(a >= b, a, -b) + "
      "where(a != 1.5e-3, 1, 2) - -a / 2"));
}

TEST(ExprParser, ErrorsNameLineAndColumn) {
  EXPECT_EQ(parse_error("out = x +"), "expression:1:10: unexpected end of input, expected a value");
  EXPECT_EQ(parse_error("out = x\nbad = (y * 2"), "expression:2:13: expected ')' to close '(', found end of input");
  EXPECT_EQ(parse_error("out = frob(x)"),
            "expression:1:7: unknown function 'frob'; known: exp log tanh sigmoid relu gelu gelu_tanh silu sqrt rsqrt "
            "abs min max pow where sum mean");
  EXPECT_EQ(parse_error("out = min(x)"), "expression:1:7: min() takes 2 arguments, got 1");
  EXPECT_EQ(parse_error("out = x $ y"), "expression:1:9: unexpected character '$'");
  EXPECT_EQ(parse_error("out = x[k]"), "expression:1:9: unknown axis 'k'; axes are col, row (2-D) or n, c, hw (NCHW) or d0..d3 (up to 4-D, d0 "
            "the last axis)");
  EXPECT_EQ(parse_error("out = x[col] + y[c]"),
            "expression:1:18: axis 'c' mixes the nchw and rowcol layouts; use col/row or n/c/hw, not both");
  EXPECT_EQ(parse_error("out = x + x[col]"),
            "expression:1:11: input 'x' is used with different indexing; index it the same way everywhere");
  EXPECT_EQ(parse_error("out = x > 0"), "expression:1:9: a comparison is not a value; use where(cond, a, b)");
  EXPECT_EQ(parse_error("out = where(x, 1, 2)"),
            "expression:1:13: where()'s first argument must be a comparison such as x > 0");
  EXPECT_EQ(parse_error("out = pow(x, y)"), "expression:1:14: pow()'s exponent must be a numeric constant");
  EXPECT_EQ(parse_error("out = x; out = y"), "expression:1:10: 'out' is already defined");
  EXPECT_EQ(parse_error("param a = b"), "expression:1:11: a parameter needs a numeric value");
  EXPECT_EQ(parse_error("out = x y"), "expression:1:9: expected ';' or a new line after the statement, found 'y'");
  EXPECT_EQ(parse_error("  # only a comment\n"), "expression:1:1: no output: write e.g. 'out = relu(x) + y'");
  EXPECT_EQ(parse_error("out = exp"), "expression:1:7: 'exp' is a function; call it as exp(...)");
  EXPECT_EQ(parse_error("out = x[row, row]"), "expression:1:14: axis 'row' repeated");
  // Axes out of order are a permuted input (a general layout), not an error.
  EXPECT_TRUE(parse_expression("out = x[row, col]").general);
}

}  // namespace
}  // namespace fusekit
