#include "schedules/arch_limits.h"

#include <gtest/gtest.h>

#include "common/errors.h"
#include "schedules/pointwise_template.h"

namespace fusekit {
namespace {

TEST(ArchLimits, KnowsTheSixSupportedArchs) {
  EXPECT_EQ(known_arch_names(), "sm_70 sm_75 sm_80 sm_86 sm_89 sm_90");
  for (const auto& a : known_arch_limits()) {
    EXPECT_EQ(a.max_threads_per_block, 1024);
    EXPECT_GT(a.sm_count, 0);
    EXPECT_GT(a.dram_gbps, 0);
    EXPECT_LE(a.halide_cuda_capability, 86);  // Halide 14 knows nothing newer
  }
}

TEST(ArchLimits, UnknownArchNamesTheValueAndTheKnownOnes) {
  try {
    require_arch("sm_85");
    FAIL() << "sm_85 accepted";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "unknown arch 'sm_85'; known: sm_70 sm_75 sm_80 sm_86 sm_89 sm_90");
  }
  EXPECT_THROW(require_arch("banana"), UserError);
  EXPECT_EQ(require_arch("sm90").arch.number(), 90);
}

TEST(Backend, ParsesKnownNamesOnly) {
  EXPECT_EQ(parse_backend("nvrtc"), Backend::kNvrtc);
  EXPECT_EQ(parse_backend("halide"), Backend::kHalide);
  EXPECT_THROW(parse_backend("triton"), UserError);
}

}  // namespace
}  // namespace fusekit
