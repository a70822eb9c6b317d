// Package::launch against a fake driver: arguments, grid, module caching per
// context and the fallbacks, without a GPU.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "fusekit/package.h"
#include "testing/fake_driver.h"

namespace fusekit {
namespace {

// relu_add-shaped variants: (in0, in1, out0, n), 128 threads, 4 elements each.
const fusekit_param_desc kParams[] = {{0, 0, 0, ""}, {0, 0, 1, ""}, {1, 0, 0, ""}, {3, 3, 0, "n"}};
const fusekit_param_desc kParams32[] = {{0, 0, 0, ""}, {0, 0, 1, ""}, {1, 0, 0, ""}, {3, 2, 0, "d0"}};
const unsigned char kImage[] = {0};

const fusekit_variant_desc kTable[] = {
    {"relu_add", 0, 20, 90, 0, kImage, 1, "tuned", {128, 1, 1}, {"(max 1 (div (add n 511) 512))", "1", "1"}, 0, 16,
     kParams, 4, "nvrtc", "vec=4", "r1", 1, 0, -1, 0, 0},
    {"relu_add", 0, -1, 90, 0, kImage, 1, "generic", {256, 1, 1}, {"(max 1 (div (add n 255) 256))", "1", "1"}, 0, 4,
     kParams, 4, "nvrtc", "vec=1", "", 0, 0, -1, 0, 0},
    {"relu_add", 0, -1, 0, 1, kImage, 1, "ptx", {64, 1, 1}, {"(max 1 (div (add n 63) 64))", "1", "1"}, 0, 4,
     kParams32, 4, "nvrtc", "vec=1", "", 0, 0, -1, 0, 0},
};

class PackageLaunch : public ::testing::Test {
 protected:
  void SetUp() override {
    fake::state() = fake::State{};
    fake::state().expected_args = 4;
  }
  static LaunchShape shape(int64_t n) {
    LaunchShape s;
    s.domain = {n};
    s.inputs = {{n}, {n}};
    s.outputs = {{n}};
    return s;
  }
  static LaunchArgs args(CUdeviceptr base) {
    LaunchArgs a;
    a.inputs = {base, base + 0x100000};
    a.outputs = {base + 0x200000};
    return a;
  }
};

TEST_F(PackageLaunch, PassesPointersAndShapeInKernelOrder) {
  Package p(kTable, 3, &fake::driver());
  CUstream stream = reinterpret_cast<CUstream>(0x77);
  ASSERT_TRUE(p.launch("relu_add", DType::kF32, shape(1000003), args(0x10000000), stream).ok());
  ASSERT_EQ(fake::state().launches.size(), 1u);
  const fake::Launch& l = fake::state().launches[0];
  EXPECT_EQ(l.args, (std::vector<uint64_t>{0x10000000, 0x10100000, 0x10200000, 1000003}));
  EXPECT_EQ(l.grid[0], (1000003u + 511) / 512);
  EXPECT_EQ(l.block[0], 128u);
  EXPECT_EQ(l.stream, stream);
}

TEST_F(PackageLaunch, LoadsEachModuleOncePerContext) {
  Package p(kTable, 3, &fake::driver());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(p.launch("relu_add", DType::kF32, shape(1 << 20), args(0x1000), nullptr).ok());
  EXPECT_EQ(fake::state().modules_loaded, 1);
  fake::state().current = reinterpret_cast<CUcontext>(0x2);  // another context
  ASSERT_TRUE(p.launch("relu_add", DType::kF32, shape(1 << 20), args(0x1000), nullptr).ok());
  EXPECT_EQ(fake::state().modules_loaded, 2);
  EXPECT_EQ(fake::state().launches.size(), 4u);
}

TEST_F(PackageLaunch, MisalignedPointersTakeTheGenericKernel) {
  Package p(kTable, 3, &fake::driver());
  ASSERT_TRUE(p.launch("relu_add", DType::kF32, shape(1 << 20), args(0x1004), nullptr).ok());
  EXPECT_EQ(fake::state().launches.at(0).block[0], 256u);  // the generic variant
}

// Repeated calls reuse the last selection per (context, op, dtype, bucket,
// alignment); a change in any of them selects again.
TEST_F(PackageLaunch, ReusedSelectionsFollowAlignmentBucketAndContext) {
  Package p(kTable, 3, &fake::driver());
  const int64_t n = 1 << 20;
  ASSERT_TRUE(p.launch("relu_add", DType::kF32, shape(n), args(0x1000), nullptr).ok());
  ASSERT_TRUE(p.launch("relu_add", DType::kF32, shape(n), args(0x1004), nullptr).ok());
  ASSERT_TRUE(p.launch("relu_add", DType::kF32, shape(n), args(0x1000), nullptr).ok());
  ASSERT_TRUE(p.launch("relu_add", DType::kF32, shape(n + 1), args(0x1000), nullptr).ok());  // same bucket, new shape
  fake::state().current = reinterpret_cast<CUcontext>(0x2);
  fake::state().sm = 75;  // the new context's device has no cubin: PTX
  ASSERT_TRUE(p.launch("relu_add", DType::kF32, shape(n), args(0x1000), nullptr).ok());
  const auto& l = fake::state().launches;
  ASSERT_EQ(l.size(), 5u);
  EXPECT_EQ(l[0].block[0], 128u);
  EXPECT_EQ(l[1].block[0], 256u);  // misaligned: generic, not the reused tuned kernel
  EXPECT_EQ(l[2].block[0], 128u);
  EXPECT_EQ(l[3].args[3], static_cast<uint64_t>(n + 1));
  EXPECT_EQ(l[3].grid[0], static_cast<unsigned>((n + 1 + 511) / 512));
  EXPECT_EQ(l[4].block[0], 64u);
  // An op or dtype the package lacks is still a status after a reuse.
  EXPECT_EQ(p.launch("relu_ad", DType::kF32, shape(n), args(0x1000), nullptr).code(), StatusCode::kNotFound);
  EXPECT_EQ(p.launch("relu_add", DType::kBF16, shape(n), args(0x1000), nullptr).code(), StatusCode::kNotSupported);
}

TEST_F(PackageLaunch, UnknownArchFallsBackToPtxWith32BitShape) {
  fake::state().sm = 75;
  Package p(kTable, 3, &fake::driver());
  ASSERT_TRUE(p.launch("relu_add", DType::kF32, shape(5000), args(0x1000), nullptr).ok());
  const fake::Launch& l = fake::state().launches.at(0);
  EXPECT_EQ(l.block[0], 64u);
  EXPECT_EQ(l.args[3] & 0xffffffffu, 5000u);
  // A 32-bit shape argument cannot carry 2^31 elements: a status, no launch.
  Status st = p.launch("relu_add", DType::kF32, shape(int64_t{1} << 31), args(0x1000), nullptr);
  EXPECT_EQ(st.code(), StatusCode::kNotSupported);
  EXPECT_EQ(fake::state().launches.size(), 1u);
}

TEST_F(PackageLaunch, ManyThreadsShareOneModuleAndEveryCallLaunches) {
  fake::state().record = false;  // the recorder is not thread-safe; count loads and statuses
  Package p(kTable, 3, &fake::driver());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        const int64_t n = (i % 2) ? (1 << 20) : 4096 + t;  // alternate shapes: re-prepares under the lock
        if (!p.launch("relu_add", DType::kF32, shape(n), args(0x1000), nullptr).ok()) ++failures;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(fake::state().modules_loaded, 1);  // one variant, one context
}

TEST_F(PackageLaunch, NoContextIsAStatus) {
  fake::state().current = nullptr;
  Package p(kTable, 3, &fake::driver());
  Status st = p.launch("relu_add", DType::kF32, shape(10), args(0x1000), nullptr);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("no current CUDA context"), std::string::npos);
  Selection s;
  EXPECT_EQ(p.explain("relu_add", DType::kF32, 10, 10, 256, &s).code(), StatusCode::kInvalidArgument);
}

TEST_F(PackageLaunch, ExplainUsesTheCurrentDevice) {
  fake::state().sm = 90;
  Package p(kTable, 3, &fake::driver());
  Selection s;
  ASSERT_TRUE(p.explain("relu_add", DType::kF32, 1 << 20, 1 << 20, 256, &s).ok());
  EXPECT_STREQ(s.variant->entry, "tuned");
  EXPECT_EQ(fake::state().launches.size(), 0u);
}

}  // namespace
}  // namespace fusekit

namespace fusekit {
namespace {

const unsigned char kCubinImage[] = {0xCB};
const unsigned char kPtxImage[] = {'.'};
const fusekit_variant_desc kCubinAndPtx[] = {
    {"relu_add", 0, 20, 90, 0, kCubinImage, 1, "tuned", {128, 1, 1}, {"(max 1 (div (add n 511) 512))", "1", "1"}, 0,
     16, kParams, 4, "nvrtc", "vec=4", "r1", 1, 0, -1, 0, 0},
    {"relu_add", 0, -1, 0, 1, kPtxImage, 1, "ptx", {64, 1, 1}, {"(max 1 (div (add n 63) 64))", "1", "1"}, 0, 4,
     kParams32, 4, "nvrtc", "vec=1", "", 0, 0, -1, 0, 0},
};

TEST_F(PackageLaunch, ACubinThatDoesNotLoadFallsBackToThePortablePtxAndSaysSo) {
  fake::state().failing_image_byte = 0xCB;
  Package p(kCubinAndPtx, 2, &fake::driver());
  ASSERT_TRUE(p.launch("relu_add", DType::kF32, shape(1000), args(0x10000000), nullptr).ok());
  ASSERT_EQ(fake::state().launches.size(), 1u);
  EXPECT_EQ(fake::state().launches[0].block[0], 64u);  // the PTX's launch
  std::vector<std::string> notes = p.load_notes();
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("cubin tuned did not load"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("CUDA_ERROR_FAKE"), std::string::npos) << notes[0];
  EXPECT_NE(notes[0].find("portable PTX ptx"), std::string::npos) << notes[0];
  // Another bucket goes straight to the PTX: the cubin is not tried again.
  ASSERT_TRUE(p.launch("relu_add", DType::kF32, shape(1 << 22), args(0x10000000), nullptr).ok());
  EXPECT_EQ(p.load_notes().size(), 1u);
  EXPECT_EQ(fake::state().modules_loaded, 1);
  Selection sel;
  ASSERT_TRUE(p.explain("relu_add", DType::kF32, 1000, -1, 256, &sel).ok());
  EXPECT_STREQ(sel.variant->entry, "ptx");
  EXPECT_STREQ(sel.arch_step, "ptx jit (cubin failed to load)");
}

TEST_F(PackageLaunch, ACubinThatDoesNotLoadWithoutPtxIsAStatusNamingBoth) {
  fake::state().failing_image_byte = 0xCB;
  Package p(kCubinAndPtx, 1, &fake::driver());
  const Status st = p.launch("relu_add", DType::kF32, shape(1000), args(0x10000000), nullptr);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cuModuleLoadDataEx"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("no portable PTX for op 'relu_add'"), std::string::npos) << st.message();
  EXPECT_TRUE(fake::state().launches.empty());
}

}  // namespace
}  // namespace fusekit
