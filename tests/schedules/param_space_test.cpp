#include "schedules/param_space.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "common/errors.h"
#include "schedules/pointwise_template.h"

namespace fusekit {
namespace {

TEST(Config, PrintsCanonicallyAndParsesBack) {
  Config c;
  c.set("vec", 4);
  c.set("threads", 256);
  c.set("ept", 2);
  EXPECT_EQ(c.to_string(), "ept=2 threads=256 vec=4");
  EXPECT_EQ(Config::parse("threads=256 vec=4 ept=2"), c);
  EXPECT_EQ(Config::parse(c.to_string()).hash(), c.hash());
  c.set("vec", 8);
  EXPECT_NE(Config::parse("threads=256 vec=4 ept=2").hash(), c.hash());
}

TEST(Config, RejectsMalformedText) {
  EXPECT_THROW(Config::parse("threads"), UserError);
  EXPECT_THROW(Config::parse("threads=abc"), UserError);
  EXPECT_THROW(Config::parse("=4"), UserError);
}

TEST(ParamSpace, EnumeratesOnlyLegalConfigs) {
  ParamSpace s;
  s.add("a", {1, 2, 3});
  s.add("b", {10, 20});
  s.require("a*b <= 40", [](const Config& c) { return c.get("a") * c.get("b") <= 40; });
  EXPECT_EQ(s.raw_size(), 6u);
  auto all = s.enumerate();
  EXPECT_EQ(all.size(), 5u);  // (3, 20) is out
  for (const auto& c : all) EXPECT_TRUE(s.legal(c));
  EXPECT_EQ(s.violation(Config::parse("a=3 b=20")), "a*b <= 40");
  EXPECT_NE(s.violation(Config::parse("a=4 b=10")).find("outside its domain"), std::string::npos);
  EXPECT_NE(s.violation(Config::parse("a=1")).find("missing"), std::string::npos);
}

TEST(ParamSpace, CompleteSpellsAbsentParametersOut) {
  ParamSpace s;
  s.add("threads", {64, 128});
  s.add("split", {1, 2}, 1);
  EXPECT_EQ(s.complete(Config::parse("threads=64")).to_string(), "split=1 threads=64");
  EXPECT_EQ(s.complete(Config::parse("split=2 threads=64")).to_string(), "split=2 threads=64");
  const auto all = s.enumerate();
  EXPECT_NE(std::find(all.begin(), all.end(), s.complete(Config::parse("threads=128"))), all.end());
}

// An unsearched parameter: every value legal, only its absent one visited.
TEST(ParamSpace, UnsearchedParametersAreLegalButNotVisited) {
  ParamSpace s;
  s.add("threads", {64, 128});
  s.add_unsearched("minb", {0, 2, 4}, 0);
  EXPECT_EQ(s.raw_size(), 2u);
  const auto all = s.enumerate();
  ASSERT_EQ(all.size(), 2u);
  for (const auto& c : all) EXPECT_EQ(c.get("minb"), 0);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(s.sample(rng).get("minb"), 0);
  EXPECT_TRUE(s.legal(Config::parse("minb=4 threads=64")));
  EXPECT_FALSE(s.legal(Config::parse("minb=3 threads=64")));
  EXPECT_EQ(s.complete(Config::parse("threads=64")).to_string(), "minb=0 threads=64");
}

TEST(PointwiseTemplate, PrunesAccessesWiderThan16Bytes) {
  const ArchLimits& sm90 = require_arch("sm_90");
  ParamSpace f32 = PointwiseTemplate::space(sm90, Backend::kNvrtc, 4);
  ParamSpace bf16 = PointwiseTemplate::space(sm90, Backend::kNvrtc, 2);
  EXPECT_FALSE(f32.legal(Config::parse("threads=256 vec=8 ept=1 grid=0 fast=0")));
  EXPECT_TRUE(bf16.legal(Config::parse("threads=256 vec=8 ept=1 grid=0 fast=0")));
  for (const auto& c : f32.enumerate()) EXPECT_LE(c.get("vec") * 4, 16);
}

TEST(PointwiseTemplate, GridStrideRespectsResidentThreadsPerArch) {
  // sm_75 holds 1024 threads per SM, sm_80 2048: 2 blocks of 1024 fit only on sm_80.
  const Config c = Config::parse("threads=1024 vec=4 ept=1 grid=2 fast=0");
  EXPECT_FALSE(PointwiseTemplate::space(require_arch("sm_75"), Backend::kNvrtc, 4).legal(c));
  EXPECT_TRUE(PointwiseTemplate::space(require_arch("sm_80"), Backend::kNvrtc, 4).legal(c));
  // sm_86: 1536 threads per SM, so 8 blocks of 256 (2048 threads) do not fit.
  EXPECT_FALSE(PointwiseTemplate::space(require_arch("sm_86"), Backend::kNvrtc, 4)
                   .legal(Config::parse("threads=256 vec=4 ept=1 grid=8 fast=0")));
  EXPECT_TRUE(PointwiseTemplate::space(require_arch("sm_90"), Backend::kNvrtc, 4)
                  .legal(Config::parse("threads=256 vec=4 ept=1 grid=8 fast=0")));
}

TEST(PointwiseTemplate, HalideSpaceHasNoGridParameterAndNeedsAFullTile) {
  ParamSpace s = PointwiseTemplate::space(require_arch("sm_90"), Backend::kHalide, 4);
  for (const auto& d : s.domains()) EXPECT_NE(d.name, "grid");
  const Config c = Config::parse("threads=256 vec=4 ept=4");
  EXPECT_EQ(PointwiseTemplate::tile_elements(c), 4096);
  EXPECT_TRUE(PointwiseTemplate::size_violation(c, Backend::kHalide, 4096).empty());
  EXPECT_FALSE(PointwiseTemplate::size_violation(c, Backend::kHalide, 4095).empty());
  EXPECT_TRUE(PointwiseTemplate::size_violation(c, Backend::kNvrtc, 1).empty());
}

}  // namespace
}  // namespace fusekit
