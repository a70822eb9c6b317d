// The fuzz corpus in CI: every expression of a seeded subset is compiled by
// both backends for sm_90 (NVRTC cubin, Halide PTX; no GPU needed) and its
// CPU reference evaluated. The full corpus runs in the GPU step
// (scripts/gpu/steps/halide.sh, with verification).
#include <gtest/gtest.h>

#include "tests/fuzz/fuzz_runner.h"

namespace fusekit {
namespace {

constexpr uint32_t kSeed = 27;
constexpr int kCiExpressions = 12;  // the full corpus's first entries

TEST(FuzzCorpus, GrammarIsSeededAndCoversEveryLayout) {
  const auto a = fuzz_expressions(kSeed, 300), b = fuzz_expressions(kSeed, 300);
  ASSERT_EQ(a.size(), 300u);
  int layouts[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].source, b[i].source);
    layouts[0] += a[i].layout == "flat";
    layouts[1] += a[i].layout == "rowcol";
    layouts[2] += a[i].layout == "nchw";
    layouts[3] += a[i].layout == "rows";
  }
  for (int n : layouts) EXPECT_GT(n, 30);
  EXPECT_NE(fuzz_expressions(kSeed + 1, 1)[0].source, a[0].source);
}

TEST(FuzzCorpus, BothBackendsCompileEveryDtype) {
  const ArchLimits& sm90 = require_arch("sm_90");
  FuzzTally tally;
  for (const auto& e : fuzz_expressions(kSeed, kCiExpressions)) {
    for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
      const FuzzOutcome o = run_fuzz_case(e, dt, sm90, nullptr);
      tally.add(dt, o);
      EXPECT_TRUE(o.parsed && o.reference_ok) << dtype_name(dt) << " " << e.source << "\n" << o.error;
      EXPECT_TRUE(o.nvrtc_built) << dtype_name(dt) << " " << e.source << "\n" << o.error;
      if (!o.halide_built) std::printf("halide %s failed: %s\n  %s\n", dtype_name(dt), e.source.c_str(), o.error.c_str());
    }
  }
  std::printf("compile rates: %s\n", tally.json().c_str());
  for (int d = 0; d < 3; ++d) {
    EXPECT_EQ(tally.nvrtc[d], tally.cases[d]) << "dtype slot " << d;
    EXPECT_GE(tally.halide[d] * 100, tally.cases[d] * 99) << "dtype slot " << d;
  }
}

}  // namespace
}  // namespace fusekit
