// The CPU reference (the Halide pipeline JIT-compiled for the host) against
// values computed by hand: the oracle every GPU kernel is checked against
// must itself be right.
#include <gtest/gtest.h>

#include <cmath>

#include "common/errors.h"
#include "generator/candidate_workload.h"
#include "generator/candidates/catalog.h"
#include "generator/candidates/expr_parser.h"

namespace fusekit {
namespace {

HostTensor tensor(DType dt, std::vector<int64_t> dims, const std::vector<float>& values) {
  HostTensor t = HostTensor::make(dt, std::move(dims));
  for (size_t i = 0; i < values.size(); ++i) t.set(static_cast<int64_t>(i), values[i]);
  return t;
}

std::vector<float> run(const FusionCandidate& c, DType dt, std::vector<int64_t> domain,
                       const std::vector<std::vector<float>>& inputs, size_t output = 0) {
  auto wl = make_candidate_workload(c, dt);
  Problem p = wl->problem(domain);
  std::vector<HostTensor> in;
  for (size_t i = 0; i < inputs.size(); ++i) in.push_back(tensor(dt, p.input_dims[i], inputs[i]));
  std::vector<HostTensor> out;
  wl->reference(p, in, &out);
  std::vector<float> v;
  for (int64_t i = 0; i < out.at(output).elements(); ++i) v.push_back(out[output].get(i));
  return v;
}

TEST(Reference, ReluAdd) {
  auto v = run(find_pattern("relu_add"), DType::kF32, {4}, {{-1, 2, -3, 4}, {10, 20, 30, 40}});
  EXPECT_EQ(v, (std::vector<float>{10, 22, 30, 44}));
}

TEST(Reference, SigmoidMulTanhAdd) {
  auto v = run(find_pattern("sigmoid_mul_tanh_add"), DType::kF32, {2}, {{0, 1}, {2, -1}, {0.5f, 0}});
  EXPECT_NEAR(v[0], std::tanh(0.5f * 2) + 0.5f, 1e-6);
  EXPECT_NEAR(v[1], std::tanh(-1.0f / (1 + std::exp(-1.0f))), 1e-6);
}

TEST(Reference, BiasGeluBroadcastsAlongColumns) {
  // [rows=2, cols=3]; b has one value per column.
  auto v = run(find_pattern("bias_gelu"), DType::kF32, {3, 2}, {{0, 1, -1, 2, 0, 0.5f}, {1, -1, 0}});
  auto gelu = [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); };
  const double expect[] = {gelu(1), gelu(0), gelu(-1), gelu(3), gelu(-1), gelu(0.5)};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(v[i], expect[i], 2e-6) << i;
}

TEST(Reference, BnReluUsesOneScaleAndShiftPerChannel) {
  // domain {hw=2, c=2, n=2}: element (hw, c, n) at hw + 2c + 4n.
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};
  auto v = run(find_pattern("bn_relu"), DType::kF32, {2, 2, 2}, {x, {2, -1}, {0, 1}});
  EXPECT_EQ(v, (std::vector<float>{2, 4, 0, 0, 10, 12, 0, 0}));
}

TEST(Reference, ExpressionsWithParamsWhereAndPow) {
  FusionCandidate c = parse_expression("param a = 2\nout = where(x > 0, pow(x, 2) * a, -x)\nneg = -x");
  auto v = run(c, DType::kF32, {3}, {{3, -4, 0.5f}});
  EXPECT_EQ(v, (std::vector<float>{18, 4, 0.5f}));
  auto neg = run(c, DType::kF32, {3}, {{3, -4, 0.5f}}, 1);
  EXPECT_EQ(neg, (std::vector<float>{-3, 4, -0.5f}));
}

TEST(Reference, Bf16StorageRoundsToNearestEven) {
  // 1 + 2^-8 lies halfway between bf16 neighbours 1 and 1 + 2^-7: ties to even (1).
  auto v = run(find_pattern("relu_add"), DType::kBF16, {2}, {{1.0f, 1.0f}, {0.00390625f, 0.01171875f}});
  EXPECT_EQ(v[0], 1.0f);
  EXPECT_EQ(v[1], 1.015625f);
}

TEST(Reference, WhereMixesInputsAndConstantsInsideARowReduction) {
  // The row reference computes in double; where()'s f32 constant must follow.
  auto v = run(parse_expression("out = x - sum(where(x > 0, y, 2), col)"), DType::kF32, {3, 1}, {{1, -1, 2}, {5, 6, 7}});
  EXPECT_EQ(v, (std::vector<float>{-13, -15, -12}));
}

TEST(Reference, RejectsAShapeOfTheWrongRank) {
  auto wl = make_candidate_workload(find_pattern("bias_gelu"), DType::kF32);
  EXPECT_THROW(wl->problem({100}), UserError);
}

}  // namespace
}  // namespace fusekit
