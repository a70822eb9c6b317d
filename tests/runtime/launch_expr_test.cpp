#include "fusekit/launch_expr.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace fusekit {
namespace {

int64_t eval(const std::string& text, const std::map<std::string, int64_t>& env = {}) {
  LaunchExpr e;
  Status st = LaunchExpr::parse(text, &e);
  EXPECT_TRUE(st.ok()) << st.to_string();
  int64_t v = 0;
  st = e.evaluate([&](const std::string& n, int64_t* out) {
    auto it = env.find(n);
    if (it == env.end()) return false;
    *out = it->second;
    return true;
  }, &v);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return v;
}

TEST(LaunchExpr, RoundTripsThroughText) {
  const std::string text = "(max 1 (div (add n 1023) 1024))";
  LaunchExpr e;
  ASSERT_TRUE(LaunchExpr::parse(text, &e).ok());
  EXPECT_EQ(e.to_string(), text);
  EXPECT_EQ(ceil_div(LaunchExpr::symbol("n"), 1024).to_string(), "(div (add n 1023) 1024)");
}

TEST(LaunchExpr, DivisionRoundsTowardNegativeInfinity) {
  EXPECT_EQ(eval("(div -7 2)"), -4);
  EXPECT_EQ(eval("(mod -7 2)"), 1);
  EXPECT_EQ(eval("(div 7 2)"), 3);
  EXPECT_EQ(eval("(mod 7 -2)"), -1);
}

// The kernels divide coordinates as (a * m) >> s in unsigned 64-bit
// arithmetic; check that equals a / d for divisors of every bit length and
// dividends up to 2^31 - 1, the extremes included.
TEST(LaunchExpr, DivMagicDividesExactlyBelowTwoToThe31) {
  std::vector<int64_t> divisors = {1, 2, 3, 5, 7, 1000, 1023, 1024, 1025, 3001, 65535, 65537, 0x7ffffffe, 0x7fffffff};
  for (int b = 1; b < 31; ++b) {
    divisors.push_back((int64_t{1} << b) - 1);
    divisors.push_back((int64_t{1} << b) + 1);
  }
  uint64_t rng = 12345;
  for (int64_t d : divisors) {
    const std::map<std::string, int64_t> env = {{"d", d}};
    const uint64_t m = static_cast<uint64_t>(eval("(divmagic d)", env));
    const int64_t s = eval("(divshift d)", env);
    ASSERT_LT(m, uint64_t{1} << 32) << d;
    std::vector<uint64_t> dividends = {0, 1, static_cast<uint64_t>(d) - 1, static_cast<uint64_t>(d), 0x7fffffff,
                                       0x7ffffffe, (0x7fffffffull / d) * d, (0x7fffffffull / d) * d - 1};
    for (int i = 0; i < 2000; ++i) {
      rng = rng * 6364136223846793005ull + 1442695040888963407ull;
      dividends.push_back((rng >> 33) & 0x7fffffff);
    }
    for (uint64_t a : dividends) {
      if (a > 0x7fffffff) continue;
      ASSERT_EQ((a * m) >> s, a / static_cast<uint64_t>(d)) << a << " / " << d;
    }
  }
  EXPECT_EQ(eval("(divmagic 0)"), 0);
  EXPECT_EQ(eval("(divmagic 2147483648)"), 0);
}

TEST(LaunchExpr, EvaluatesSymbolsAndLogic) {
  std::map<std::string, int64_t> env{{"n", 100003}, {"in0.extent.1", 7}};
  EXPECT_EQ(eval("(max 1 (div (add n 1023) 1024))", env), 98);
  EXPECT_EQ(eval("(select (lt n 5) 1 (mul in0.extent.1 2))", env), 14);
  EXPECT_EQ(eval("(and (le 1 2) (not (eq 3 4)))"), 1);
  LaunchExpr e;
  ASSERT_TRUE(LaunchExpr::parse("(add n (mul sm_count 2))", &e).ok());
  EXPECT_EQ(e.symbols(), (std::vector<std::string>{"n", "sm_count"}));
}

TEST(LaunchExpr, RejectsMalformedText) {
  LaunchExpr e;
  EXPECT_FALSE(LaunchExpr::parse("(frob 1 2)", &e).ok());
  EXPECT_FALSE(LaunchExpr::parse("(add 1)", &e).ok());
  EXPECT_FALSE(LaunchExpr::parse("(add 1 2", &e).ok());
  EXPECT_FALSE(LaunchExpr::parse("(add 1 2) 3", &e).ok());
  Status st = LaunchExpr::parse("(add 1 #)", &e);
  EXPECT_NE(st.message().find("unexpected '#'"), std::string::npos) << st.message();
}

TEST(LaunchExpr, ReportsUnboundSymbolAndDivisionByZero) {
  LaunchExpr e;
  ASSERT_TRUE(LaunchExpr::parse("(div n 0)", &e).ok());
  int64_t v;
  auto n_only = [](const std::string& s, int64_t* out) { *out = 5; return s == "n"; };
  EXPECT_EQ(e.evaluate(n_only, &v).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(LaunchExpr::parse("(add m 1)", &e).ok());
  Status st = e.evaluate(n_only, &v);
  EXPECT_NE(st.message().find("'m'"), std::string::npos);
}

}  // namespace
}  // namespace fusekit
