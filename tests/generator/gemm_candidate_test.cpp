// GEMM candidates: what the epilogue parser accepts, and the CPU reference
// (the Halide pipeline with the product as an RDom sum) against products and
// epilogues computed here in double.
#include <gtest/gtest.h>

#include <cmath>

#include "common/errors.h"
#include "generator/candidates/gemm_candidate.h"
#include "generator/gemm_workload.h"

namespace fusekit {
namespace {

template <typename Fn>
void expect_user_error(Fn fn, const std::string& fragment) {
  try {
    fn();
    ADD_FAILURE() << "no UserError; expected one containing '" << fragment << "'";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

struct GemmRun {
  Problem problem;
  std::vector<HostTensor> inputs;
  std::vector<HostTensor> outputs;
};

GemmRun run(const GemmCandidate& c, DType dt, GemmDims d, uint64_t seed = 7) {
  auto wl = make_gemm_workload(c, dt);
  GemmRun r;
  r.problem = wl->problem(gemm_domain(d));
  for (size_t i = 0; i < r.problem.input_dims.size(); ++i) {
    r.inputs.push_back(HostTensor::make(dt, r.problem.input_dims[i]));
    wl->fill_input(i, seed + i, &r.inputs.back());
  }
  wl->reference(r.problem, r.inputs, &r.outputs);
  return r;
}

// Element (row, col) of A @ B with B [N, K] or [K, N] row-major.
double product(const GemmRun& r, const GemmDims& d, bool b_transposed, int64_t row, int64_t col, size_t b = 1) {
  double s = 0;
  for (int64_t k = 0; k < d.k; ++k) {
    const float bv = b_transposed ? r.inputs[b].get(col * d.k + k) : r.inputs[b].get(k * d.n + col);
    s += static_cast<double>(r.inputs[0].get(row * d.k + k)) * bv;
  }
  return s;
}

double gelu_tanh(double x) { return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }

TEST(GemmCandidate, BiasGeluTanhResidualReference) {
  for (bool bt : {true, false}) {
    GemmCandidate c = make_gemm_candidate("out = gelu_tanh(acc + b[col]) + r", bt);
    const GemmDims d{5, 7, 33};
    GemmRun r = run(c, DType::kF32, d);
    ASSERT_EQ(r.inputs.size(), 4u);  // A, B, b, r
    EXPECT_EQ(r.problem.shape_text, "5x7x33");
    EXPECT_EQ(r.problem.input_dims[1], bt ? (std::vector<int64_t>{33, 7}) : (std::vector<int64_t>{7, 33}));
    EXPECT_EQ(r.problem.input_dims[2], (std::vector<int64_t>{7}));
    for (int64_t row = 0; row < d.m; ++row)
      for (int64_t col = 0; col < d.n; ++col) {
        const double want = gelu_tanh(product(r, d, bt, row, col) + r.inputs[2].get(col)) +
                            r.inputs[3].get(row * d.n + col);
        EXPECT_NEAR(r.outputs[0].get(row * d.n + col), want, 2e-6) << row << "," << col << " bt=" << bt;
      }
  }
}

TEST(GemmCandidate, TwoProductsSiluMultiply) {
  GemmCandidate c = make_gemm_candidate("out = silu(acc) * acc2", true, "llama_gate_up");
  EXPECT_EQ(c.accumulators, 2);
  EXPECT_EQ(c.name, "llama_gate_up");
  const GemmDims d{3, 16, 40};
  GemmRun r = run(c, DType::kBF16, d);
  ASSERT_EQ(r.inputs.size(), 3u);  // A, B, B2
  for (int64_t row = 0; row < d.m; ++row)
    for (int64_t col = 0; col < d.n; ++col) {
      const double g = product(r, d, true, row, col, 1), u = product(r, d, true, row, col, 2);
      const double want = g / (1 + std::exp(-g)) * u;
      EXPECT_NEAR(r.outputs[0].get(row * d.n + col), want, 0.01 * std::abs(want) + 1e-3) << row << "," << col;
    }
}

TEST(GemmCandidate, InputsKeepProductNearUnitSize) {
  // B is scaled by 1/sqrt(K), so the product stays O(1) at K = 3072 and an
  // activation sees both of its sides.
  GemmCandidate c = make_gemm_candidate("out = acc", true);
  const GemmDims d{4, 32, 3072};
  GemmRun r = run(c, DType::kF16, d);
  double sq = 0, neg = 0;
  for (int64_t i = 0; i < r.outputs[0].elements(); ++i) {
    sq += r.outputs[0].get(i) * r.outputs[0].get(i);
    neg += r.outputs[0].get(i) < 0;
  }
  const double rms = std::sqrt(sq / r.outputs[0].elements());
  EXPECT_GT(rms, 0.2);
  EXPECT_LT(rms, 2.0);
  EXPECT_GT(neg, 10);
  EXPECT_LT(neg, 118);
}

TEST(GemmCandidate, ToleranceWidensWithK) {
  GemmCandidate c = make_gemm_candidate("out = acc", true);
  auto wl = make_gemm_workload(c, DType::kF16);
  const Tolerance small = wl->tolerance(wl->problem(gemm_domain({8, 8, 16})));
  const Tolerance large = wl->tolerance(wl->problem(gemm_domain({8, 8, 4096})));
  EXPECT_GT(large.atol, 3 * small.atol);
  EXPECT_GT(large.rtol, 3 * small.rtol);
}

TEST(GemmCandidate, KeyNamesLayoutOfB) {
  const std::string nk = gemm_canonical_text(make_gemm_candidate("out = relu(acc)", true), DType::kF16);
  const std::string kn = gemm_canonical_text(make_gemm_candidate("out = relu(acc)", false), DType::kF16);
  EXPECT_NE(nk, kn);
  EXPECT_EQ(nk.rfind("gemm B[N,K] acc=1; layout rowcol; dtype f16;", 0), 0u) << nk;
  EXPECT_EQ(make_gemm_candidate("out = relu(acc)", true).name, make_gemm_candidate("out = relu(acc)", true).name);
}

TEST(GemmCandidate, BadEpiloguesRefused) {
  expect_user_error([] { make_gemm_candidate("out = relu(x)", true); }, "never reads 'acc'");
  expect_user_error([] { make_gemm_candidate("out = acc[col] + 1", true); }, "write it bare");
  expect_user_error([] { make_gemm_candidate("out = acc - max(acc, col)", true); }, "reduces along a row");
  expect_user_error([] { make_gemm_candidate("out = acc * s[c]", true); }, "NCHW");
  expect_user_error([] { make_gemm_candidate("out = acc\ny = relu(acc)", true); }, "has 2 outputs");
  expect_user_error([] { gemm_domain({128, 3072, 0}); }, "128x3072x0 has an extent below 1");
  expect_user_error([] { parse_gemm_flag("out = gelu(acc)"); }, "is not NAME:EXPR");
  expect_user_error([] { parse_gemm_flag("Bert Up:out = acc"); }, "is not NAME:EXPR");
  EXPECT_TRUE(parse_gemm_flag("bert_up:out = gelu(acc + b[col])").b_transposed);
  EXPECT_FALSE(parse_gemm_flag("proj:kn:out = acc").b_transposed);
  EXPECT_EQ(parse_gemm_flag("proj:kn:out = acc").name, "proj");
  GemmCandidate c = make_gemm_candidate("out = acc", true);
  auto wl = make_gemm_workload(c, DType::kF32);
  expect_user_error([&] { wl->problem({8, 8}); }, "3 extents (MxNxK)");
}

}  // namespace
}  // namespace fusekit
