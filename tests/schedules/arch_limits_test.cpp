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

// Residency per SM on sm_90 (64 K registers in units of 256 per warp, 2048
// threads, 32 blocks, 227 KiB + 1 KiB per block of shared memory).
TEST(ArchLimits, ResidentWarpsFollowRegistersThreadsAndSharedMemory) {
  const ArchLimits& h = require_arch("sm_90");
  EXPECT_EQ(resident_warps_per_sm(h, 256, 74, 0), 24);    // 80 per thread allocated: 3 blocks
  EXPECT_EQ(resident_warps_per_sm(h, 256, 58, 0), 32);    // 64: 4 blocks
  EXPECT_EQ(resident_warps_per_sm(h, 1024, 56, 0), 32);   // one block
  EXPECT_EQ(resident_warps_per_sm(h, 1024, 32, 0), 64);   // two: every warp slot
  EXPECT_EQ(resident_warps_per_sm(h, 1024, 33, 0), 32);   // one register more, one block fewer
  EXPECT_EQ(resident_warps_per_sm(h, 128, 16, 0), 64);    // threads decide
  EXPECT_EQ(resident_warps_per_sm(h, 32, 16, 0), 32);     // 32 blocks at most
  EXPECT_EQ(resident_warps_per_sm(h, 512, 32, 100 * 1024), 32);  // shared memory: 2 blocks
  EXPECT_EQ(resident_warps_per_sm(h, 512, 0, 0), 64);     // registers unknown: not a limit
  EXPECT_EQ(resident_warps_per_sm(h, 512, 256, 0), 0);    // no such kernel
  EXPECT_EQ(resident_warps_per_sm(h, 512, 32, 228 * 1024), 0);
  EXPECT_EQ(resident_warps_per_sm(h, 2048, 32, 0), 0);
  // sm_86: 1536 threads and 16 blocks per SM.
  EXPECT_EQ(resident_warps_per_sm(require_arch("sm_86"), 1024, 32, 0), 32);
}

TEST(Backend, ParsesKnownNamesOnly) {
  EXPECT_EQ(parse_backend("nvrtc"), Backend::kNvrtc);
  EXPECT_EQ(parse_backend("halide"), Backend::kHalide);
  EXPECT_THROW(parse_backend("triton"), UserError);
}

}  // namespace
}  // namespace fusekit
