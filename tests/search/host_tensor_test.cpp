#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "search/workload.h"

namespace fusekit {
namespace {

TEST(HostTensor, StoresEachDtype) {
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
    HostTensor t = HostTensor::make(dt, {3, 2});
    EXPECT_EQ(t.bytes.size(), 6 * dtype_bytes(dt));
    t.set(5, 1.5f);
    EXPECT_EQ(t.get(5), 1.5f);
  }
  HostTensor h = HostTensor::make(DType::kF16, {1});
  h.set(0, 1.0f + 1.0f / 4096);  // below half an f16 ulp: rounds to 1
  EXPECT_EQ(h.get(0), 1.0f);
}

// make() zeroes even where the allocator hands back memory just written
// (a freed unfilled tensor of the same size), small and huge-page sized.
TEST(HostTensor, MakeIsZeroedAndUnfilledHasItsSize) {
  for (int64_t n : {int64_t{7}, int64_t{3} << 20}) {
    {
      HostTensor u = HostTensor::unfilled(DType::kF32, {n});
      ASSERT_EQ(u.bytes.size(), static_cast<size_t>(4 * n));
      std::fill(u.bytes.begin(), u.bytes.end(), uint8_t{0xab});
    }
    const HostTensor z = HostTensor::make(DType::kF32, {n});
    ASSERT_EQ(z.bytes.size(), static_cast<size_t>(4 * n));
    EXPECT_EQ(std::count(z.bytes.begin(), z.bytes.end(), uint8_t{0}), 4 * n) << n;
  }
}

TEST(FillUniform, IsSeededInRangeAndNeverAllZero) {
  HostTensor a = HostTensor::make(DType::kF32, {1000}), b = a, c = a;
  fill_uniform(&a, 1, -3, 3);
  fill_uniform(&b, 1, -3, 3);
  fill_uniform(&c, 2, -3, 3);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_NE(a.bytes, c.bytes);
  int zeros = 0;
  for (int i = 0; i < 1000; ++i) {
    EXPECT_GE(a.get(i), -3.0f);
    EXPECT_LT(a.get(i), 3.0f);
    zeros += a.get(i) == 0.0f;
  }
  EXPECT_LT(zeros, 5);
}

TEST(CompareOutputs, UsesDtypeTolerances) {
  HostTensor ref = HostTensor::make(DType::kF32, {2}), got = ref;
  ref.set(0, 1.0f);
  ref.set(1, -2.0f);
  got.set(0, 1.0f + 5e-6f);
  got.set(1, -2.0f);
  EXPECT_TRUE(compare_outputs({got}, {ref}, tolerance_for(DType::kF32)).passed());
  got.set(0, 1.001f);
  Comparison c = compare_outputs({got}, {ref}, tolerance_for(DType::kF32));
  EXPECT_FALSE(c.passed());
  EXPECT_NE(c.detail.find("element 0"), std::string::npos);
  // The same error is within two bf16 ulps.
  EXPECT_TRUE(compare_outputs({got}, {ref}, tolerance_for(DType::kBF16)).passed());
}

TEST(CompareOutputs, LargeTensorsReportTheFirstFailingElement) {
  // Large enough to be compared in parallel chunks.
  HostTensor ref = HostTensor::make(DType::kF32, {(int64_t{1} << 22) + 7});
  fill_uniform(&ref, 3, -1, 1);
  HostTensor got = ref;
  const int64_t bad[] = {3000001, 123457, 4000000};
  for (int64_t i : bad) got.set(i, ref.get(i) + 0.5f);
  Comparison c = compare_outputs({got}, {ref}, tolerance_for(DType::kF32));
  EXPECT_FALSE(c.passed());
  EXPECT_NE(c.detail.find("element 123457:"), std::string::npos) << c.detail;
  EXPECT_GT(c.max_ratio, 1000.0);
  HostTensor again = HostTensor::make(DType::kF32, ref.dims);
  fill_uniform(&again, 3, -1, 1);  // chunked filling is deterministic
  EXPECT_EQ(again.bytes, ref.bytes);
}

TEST(CompareOutputs, NanOnlyMatchesNan) {
  HostTensor ref = HostTensor::make(DType::kF32, {1}), got = ref;
  ref.set(0, 1.0f);
  got.set(0, NAN);
  EXPECT_FALSE(compare_outputs({got}, {ref}, tolerance_for(DType::kF32)).passed());
  ref.set(0, NAN);
  EXPECT_TRUE(compare_outputs({got}, {ref}, tolerance_for(DType::kF32)).passed());
  got.set(0, INFINITY);
  EXPECT_FALSE(compare_outputs({got}, {ref}, tolerance_for(DType::kF32)).passed());
}

}  // namespace
}  // namespace fusekit

namespace fusekit {
namespace {

TEST(CompareOutputs, PoisonNeverMatchesEvenANanReference) {
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
    HostTensor ref = HostTensor::make(dt, {2}), got = ref;
    ref.set(0, NAN);
    ref.set(1, 1.0f);
    got.set(1, 1.0f);
    std::fill(got.bytes.begin(), got.bytes.begin() + static_cast<long>(dtype_bytes(dt)), kPoisonByte);
    const Comparison c = compare_outputs({got}, {ref}, tolerance_for(dt));
    EXPECT_FALSE(c.passed()) << dtype_name(dt);
    EXPECT_NE(c.detail.find("never written"), std::string::npos) << c.detail;
  }
}

TEST(CompareOutputs, AtolFollowsTheScaleOfEachRow) {
  // Two rows: one of small values (a wide softmax's), one of ordinary ones.
  HostTensor ref = HostTensor::make(DType::kF32, {4, 2}), got = ref;
  for (int i = 0; i < 4; ++i) {
    ref.set(i, 1e-5f * static_cast<float>(i + 1));
    ref.set(4 + i, static_cast<float>(i + 1));
    got.set(4 + i, static_cast<float>(i + 1));
  }
  Tolerance tol = tolerance_for(DType::kF32);
  tol.atol *= 17;
  tol.rtol *= 17;  // as wide as a 65536-column row's
  // Over the whole tensor the small row hides under the large row's scale;
  // held to its own scale, the zero row fails.
  EXPECT_TRUE(compare_outputs({got}, {ref}, tol).passed());
  tol.row_length = 4;
  EXPECT_FALSE(compare_outputs({got}, {ref}, tol).passed());
  got = ref;
  got.set(0, 1e-5f * 1.0001f);
  EXPECT_TRUE(compare_outputs({got}, {ref}, tol).passed());
}

}  // namespace
}  // namespace fusekit
