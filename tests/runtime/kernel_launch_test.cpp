#include "fusekit/kernel_launch.h"

#include <gtest/gtest.h>

#include "fusekit/arch.h"
#include "fusekit/cuda_driver.h"
#include "fusekit/shape_bucket.h"
#include "testing/fake_driver.h"

namespace fusekit {
namespace {

TEST(LaunchShape, BindsDomainAndTensorSymbols) {
  LaunchShape s;
  s.domain = {1001, 97};
  s.inputs = {{1001, 97}, {1001}};
  s.outputs = {{1001, 97}};
  s.sm_count = 132;
  int64_t v = -1;
  ASSERT_TRUE(lookup_shape_symbol(s, "n", &v));
  EXPECT_EQ(v, 1001 * 97);
  ASSERT_TRUE(lookup_shape_symbol(s, "d1", &v));
  EXPECT_EQ(v, 97);
  ASSERT_TRUE(lookup_shape_symbol(s, "in1.extent.0", &v));
  EXPECT_EQ(v, 1001);
  ASSERT_TRUE(lookup_shape_symbol(s, "out0.stride.1", &v));
  EXPECT_EQ(v, 1001);
  ASSERT_TRUE(lookup_shape_symbol(s, "in0.min.1", &v));
  EXPECT_EQ(v, 0);
  ASSERT_TRUE(lookup_shape_symbol(s, "sm_count", &v));
  EXPECT_EQ(v, 132);
  // Not known: no bound (a persistent grid takes its other limits).
  ASSERT_TRUE(lookup_shape_symbol(s, "resident_blocks", &v));
  EXPECT_EQ(v, 2147483647LL);
  s.resident_blocks = 120;
  ASSERT_TRUE(lookup_shape_symbol(s, "resident_blocks", &v));
  EXPECT_EQ(v, 120);
  EXPECT_FALSE(lookup_shape_symbol(s, "in1.extent.1", &v));   // in1 is 1-D
  EXPECT_FALSE(lookup_shape_symbol(s, "in2.extent.0", &v));   // no third input
  EXPECT_FALSE(lookup_shape_symbol(s, "d2", &v));
  EXPECT_FALSE(lookup_shape_symbol(s, "out0.size.0", &v));
}

TEST(ShapeBucket, IsThePowerOfTwoCeiling) {
  EXPECT_EQ(shape_bucket_name(4096), "n<=2^12");
  EXPECT_EQ(shape_bucket_name(4097), "n<=2^13");
  EXPECT_EQ(shape_bucket_name(1), "n<=2^0");
  EXPECT_EQ(shape_bucket_log2(67108864), 26);
}

TEST(Arch, ParsesTheUsualSpellings) {
  EXPECT_EQ(parse_arch("sm_86")->number(), 86);
  EXPECT_EQ(parse_arch("sm90")->number(), 90);
  EXPECT_EQ(parse_arch("8.9")->name(), "sm_89");
  EXPECT_FALSE(parse_arch("sm_").has_value());
  EXPECT_FALSE(parse_arch("gfx90a").has_value());
}

TEST(CudaDriver, ReportsAMissingDriverAsAStatus) {
  const CudaDriver* d = nullptr;
  Status st = load_cuda_driver(&d);
  if (st.ok()) GTEST_SKIP() << "a CUDA driver is installed here; the no-driver path is not reachable";
  EXPECT_EQ(d, nullptr);
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_NE(st.message().find("libcuda"), std::string::npos);
}

TEST(LoadedKernel, OptsIntoItsDynamicSharedMemory) {
  KernelArtifact a;
  a.image = "fake";
  a.entry = "k";
  LoadedKernel k;
  fake::state().max_dynamic_shared = -1;
  ASSERT_TRUE(k.load(fake::driver(), a).ok());
  EXPECT_EQ(fake::state().max_dynamic_shared, -1) << "no dynamic shared memory, no opt-in";
  // Opted in even under 48 KiB: the kernel's static shared memory counts too.
  a.shared_bytes = 48 * 1024;
  ASSERT_TRUE(k.load(fake::driver(), a).ok());
  EXPECT_EQ(fake::state().max_dynamic_shared, 48 * 1024);
  a.shared_bytes = 160 * 1024;
  ASSERT_TRUE(k.load(fake::driver(), a).ok());
  EXPECT_EQ(fake::state().max_dynamic_shared, 160 * 1024);
  // A driver table without the call: a Status naming the bytes, no module left.
  CudaDriver old = fake::driver();
  old.cuFuncSetAttribute = nullptr;
  const Status st = k.load(old, a);
  EXPECT_EQ(st.code(), StatusCode::kNotSupported);
  EXPECT_NE(st.message().find("163840 bytes"), std::string::npos) << st.message();
  EXPECT_EQ(k.function(), nullptr);
  a.shared_bytes = 1024;  // within the default: loads, the launch decides
  EXPECT_TRUE(k.load(old, a).ok());
}

TEST(LoadedKernel, AsksTheDriverHowManyOfItsBlocksAreResident) {
  KernelArtifact a;
  a.image = "fake";
  a.entry = "k";
  a.block[0] = 1024;
  LoadedKernel k;
  fake::state().cluster_width = 0;
  fake::state().blocks_per_sm = 2;
  ASSERT_TRUE(k.load(fake::driver(), a).ok());
  EXPECT_EQ(k.resident_blocks(), 2 * 132);
  // A cluster kernel: whole clusters, as the cluster query counts them
  // (asked with a grid of one cluster).
  fake::state().cluster_width = 4;
  fake::state().active_clusters = 30;
  ASSERT_TRUE(k.load(fake::driver(), a).ok());
  EXPECT_EQ(k.resident_blocks(), 120);
  EXPECT_EQ(fake::state().occupancy_grid, 4u);
  // A driver without the cluster query: not known, so nothing is bounded.
  CudaDriver old = fake::driver();
  old.cuOccupancyMaxActiveClusters = nullptr;
  ASSERT_TRUE(k.load(old, a).ok());
  EXPECT_EQ(k.resident_blocks(), 0);
  fake::state().cluster_width = 0;
  k.unload();
  EXPECT_EQ(k.resident_blocks(), 0);
}

}  // namespace
}  // namespace fusekit
