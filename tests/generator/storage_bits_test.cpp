// The integer widening and rounding of 16-bit storage against Halide's own
// float16_t / bfloat16_t conversions (round to nearest even), JIT-compiled
// for the host: every one of the 65536 bit patterns widens exactly, and f32
// values across the whole range (subnormal, normal, overflow, ties, NaN)
// round to the same bits.
#include "generator/candidates/storage_bits.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

namespace fusekit {
namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t halide_bits(float v, DType dt) {
  return dt == DType::kF16 ? Halide::float16_t(v).to_bits() : Halide::bfloat16_t(v).to_bits();
}

float halide_value(uint16_t b, DType dt) {
  return dt == DType::kF16 ? static_cast<float>(Halide::float16_t::make_from_bits(b))
                           : static_cast<float>(Halide::bfloat16_t::make_from_bits(b));
}

class StorageBits : public ::testing::TestWithParam<DType> {};

TEST_P(StorageBits, WidensEveryBitPatternExactly) {
  const DType dt = GetParam();
  Halide::Buffer<uint16_t> in(65536);
  for (int i = 0; i < 65536; ++i) in(i) = static_cast<uint16_t>(i);
  Halide::Var i;
  Halide::Func f;
  f(i) = widen_storage_bits(in(i), dt);
  f.vectorize(i, 8);
  Halide::Buffer<float> out = f.realize({65536});
  for (int k = 0; k < 65536; ++k) {
    const float want = halide_value(static_cast<uint16_t>(k), dt);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(out(k))) << k;
    } else {
      ASSERT_EQ(bits_of(out(k)), bits_of(want)) << "bits 0x" << std::hex << k;
    }
  }
}

TEST_P(StorageBits, RoundsToNearestEvenLikeHalide) {
  const DType dt = GetParam();
  std::vector<float> values = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.0f, 65520.0f, 1e30f, -1e30f,
                               INFINITY, -INFINITY, NAN, 5.96e-8f, 2.98e-8f, 2.99e-8f, 6.1e-5f, 6.09e-5f,
                               3.0e38f, 1e-40f};
  // Exact ties of the 16-bit format: the midpoints between neighbours.
  for (uint32_t b : {0x3f808000u, 0x3f818000u, 0x3f801000u, 0x3f803000u}) values.push_back(float_of(b));
  std::mt19937 rng(3);
  for (int k = 0; k < 200000; ++k) values.push_back(float_of(static_cast<uint32_t>(rng())));
  const int n = static_cast<int>(values.size());
  Halide::Buffer<float> in(n);
  for (int k = 0; k < n; ++k) in(k) = values[k];
  Halide::Var i;
  Halide::Func f;
  f(i) = round_to_storage_bits(in(i), dt);
  f.vectorize(i, 8);
  Halide::Buffer<uint16_t> out = f.realize({n});
  for (int k = 0; k < n; ++k) {
    const uint16_t want = halide_bits(values[k], dt);
    if (std::isnan(values[k])) {
      EXPECT_TRUE(std::isnan(halide_value(out(k), dt))) << k;
    } else {
      ASSERT_EQ(out(k), want) << "value " << values[k] << " (0x" << std::hex << bits_of(values[k]) << ")";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(HalfTypes, StorageBits, ::testing::Values(DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace fusekit
