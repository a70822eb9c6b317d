// Hostile expressions: deep, long, wide or oddly named ones get a message
// naming the limit, never a crash; a constant output prints.
#include <gtest/gtest.h>

#include "generator/candidates/expr_parser.h"
#include "generator/nvrtc/kernel_printer.h"
#include "tests/generator/parse_error.h"

namespace fusekit {
namespace {

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

std::string sum_of(int terms, bool distinct) {
  std::string s = "out = x0";
  for (int i = 1; i < terms; ++i) s += " + x" + (distinct ? std::to_string(i) : std::string("0"));
  return s;
}

TEST(ExprLimits, DeepNestingNamesTheDepthAndTheLimit) {
  EXPECT_NE(parse_error("out = " + repeat("(", 6000) + "x" + repeat(")", 6000))
                .find("expression too deep: 6000 levels, at most 256"),
            std::string::npos);
  EXPECT_NE(parse_error("out = " + repeat("exp(", 300) + "x" + repeat(")", 300)).find("too deep: 300 levels"),
            std::string::npos);
  EXPECT_NE(parse_error("out = " + repeat("-", 100000) + "x").find("too deep"), std::string::npos);
  EXPECT_EQ(parse_error("out = " + repeat("(", 200) + "x" + repeat(")", 200)), "(no error)");
}

TEST(ExprLimits, LongChainsAndManyInputsAreRefusedByName) {
  EXPECT_NE(parse_error(sum_of(10000, false)).find("expression too deep: 10000 levels, at most 256"),
            std::string::npos);
  const std::string wide = parse_error(sum_of(10000, true));
  EXPECT_NE(wide.find("at most"), std::string::npos) << wide;
  EXPECT_EQ(parse_error(sum_of(200, false)), "(no error)");
  // 65 distinct inputs in a shallow tree: the input limit.
  std::string many = "out = 0";
  for (int g = 0; g < 13; ++g) {
    many += " + (v" + std::to_string(5 * g);
    for (int k = 1; k < 5; ++k) many += " + v" + std::to_string(5 * g + k);
    many += ")";
  }
  EXPECT_NE(parse_error(many).find("too many inputs: 65, at most 64"), std::string::npos) << parse_error(many);
}

TEST(ExprLimits, InlinedOutputsCountTowardDepthAndSize) {
  // Each output doubles the inlined tree: 40 of them would be 2^40 nodes.
  std::string s = "a0 = x";
  for (int i = 1; i <= 40; ++i) s += "; a" + std::to_string(i) + " = a" + std::to_string(i - 1) + " * a" + std::to_string(i - 1);
  const std::string msg = parse_error(s);
  EXPECT_NE(msg.find("too many outputs"), std::string::npos) << msg;
  std::string big = "t = x";
  for (int i = 0; i < 15; ++i) big += "; t" + std::to_string(i) + " = " + (i ? "t" + std::to_string(i - 1) : "t") + " + " + (i ? "t" + std::to_string(i - 1) : "t");
  EXPECT_NE(parse_error(big).find("expression too large"), std::string::npos) << parse_error(big);
}

TEST(ExprLimits, NamesNumbersAndSelfReferenceAreChecked) {
  EXPECT_NE(parse_error("out = " + std::string(65, 'a')).find("at most 64"), std::string::npos);
  EXPECT_NE(parse_error("out = x * 1e39").find("does not fit in f32"), std::string::npos);
  EXPECT_NE(parse_error("out = out + x").find("'out' is an input of this statement"), std::string::npos);
  EXPECT_NE(parse_error("out = x\" + y").find("unexpected character '\"'"), std::string::npos);
  EXPECT_NE(parse_error("out = x */ y").find("expected a value"), std::string::npos);
  EXPECT_NE(parse_error("out = x \\ y").find("unexpected character"), std::string::npos);
  EXPECT_NE(parse_error("#include <x>\nout = y").find("(no error)"), std::string::npos);  // a comment
}

TEST(ExprLimits, ConstantOutputPrintsInEveryDtype) {
  const FusionCandidate c = parse_expression("out = 0.832\nother = x");
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
    Pipeline p = instantiate(c, dt);
    const PrintedKernel k = print_nvrtc_kernel(c, p, Config::parse("ept=1 fast=0 grid=0 threads=128 vec=4"), "k");
    EXPECT_NE(k.source.find(dt == DType::kF32 ? "o0 = 0.832000017f" : "o0 = 0.83203125f"), std::string::npos)
        << dtype_name(dt);
  }
}

}  // namespace
}  // namespace fusekit
