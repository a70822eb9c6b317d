// GemmPackage against fake driver and cuBLASLt tables: which entry a call
// takes, the fused entry's one cublasLtMatmul, the tail entry's product into
// scratch and its tail kernel, and the refusals.
#include <gtest/gtest.h>

#include "fusekit/gemm_package.h"
#include "tests/runtime/fake_cublaslt.h"
#include "testing/fake_driver.h"

namespace fusekit {
namespace {

using fake_lt::driver;

std::string plan_text(uint64_t algo_word, int64_t m, int64_t n, int64_t k, GemmEpilogue ep, bool residual) {
  GemmPlan p;
  p.epilogue = ep;
  p.residual = residual;
  p.has_algo = true;
  p.algo.data[0] = algo_word;
  p.cublaslt_version = fake_lt::state().version;
  p.tuned = {m, n, k, true, DType::kF16};
  return gemm_plan_text(p);
}

// The tail kernel: (acc, bias, out, n).
const fusekit_param_desc kTailParams[] = {{0, 0, 0, ""}, {0, 0, 1, ""}, {1, 0, 0, ""}, {3, 3, 0, "n"}};
const unsigned char kImage[] = {0};
const fusekit_variant_desc kKernels[] = {
    {"bert_up_tail", 1, -1, 90, 0, kImage, 1, "tail", {256, 1, 1}, {"(max 1 (div (add n 255) 256))", "1", "1"}, 0, 16,
     kTailParams, 4, "nvrtc", "vec=8", "", 1, 0, -1, 0, 0},
};
const int kTailInputs[] = {-1, 0};

class GemmPackageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake::state() = fake::State{};
    fake::state().expected_args = 4;
    fake_lt::reset();
    fake_lt::state().answers = {cublasLtMatmulAlgo_t{{77}}};
    down_small_ = plan_text(11, 128, 768, 3072, GemmEpilogue::kBias, true);
    down_large_ = plan_text(22, 8192, 768, 3072, GemmEpilogue::kBias, true);
    up_ = plan_text(33, 128, 3072, 768, GemmEpilogue::kDefault, false);
    table_ = {
        {"bert_down", 1, 90, 7, 768, 3072, 1, 1, down_small_.c_str(), "", nullptr, 0, nullptr, 0, 0, 1, "r1"},
        {"bert_down", 1, 90, 13, 768, 3072, 1, 1, down_large_.c_str(), "", nullptr, 0, nullptr, 0, 0, 1, "r2"},
        {"bert_up", 1, 90, 7, 3072, 768, 1, 1, up_.c_str(), "bert_up_tail", kTailInputs, 2, nullptr, 0, -1, -1, "r3"},
    };
  }
  static GemmCall down(int64_t m) {
    GemmCall c;
    c.m = m;
    c.n = 768;
    c.k = 3072;
    c.a = 0x10000000;
    c.b = 0x20000000;
    c.out = 0x30000000;
    c.operands = {0x40000000, 0x50000000};
    c.operand_dims = {{768}, {768, m}};
    return c;
  }
  std::string down_small_, down_large_, up_;
  std::vector<fusekit_gemm_desc> table_;
};

TEST_F(GemmPackageTest, FusedEntryIsOneMatmulWithBiasAndResidual) {
  Package kernels(kKernels, 1, &driver());
  GemmPackage p(table_.data(), table_.size(), &kernels, &driver(), &fake_lt::table());
  ASSERT_TRUE(p.launch("bert_down", DType::kF16, down(128), nullptr).ok());
  ASSERT_EQ(fake_lt::state().matmuls.size(), 1u);
  const auto& m = fake_lt::state().matmuls[0];
  EXPECT_EQ(m.algo.data[0], 11u);
  EXPECT_EQ(m.epilogue, static_cast<uint32_t>(CUBLASLT_EPILOGUE_BIAS));
  EXPECT_EQ(m.bias, reinterpret_cast<const void*>(0x40000000));
  EXPECT_EQ(m.c, reinterpret_cast<const void*>(0x50000000));
  EXPECT_EQ(m.beta, 1.0f);
  EXPECT_TRUE(fake::state().launches.empty());
}

TEST_F(GemmPackageTest, NearestBucketOfM) {
  Package kernels(kKernels, 1, &driver());
  GemmPackage p(table_.data(), table_.size(), &kernels, &driver(), &fake_lt::table());
  const fusekit_gemm_desc* e = nullptr;
  ASSERT_TRUE(p.select("bert_down", DType::kF16, 6000, 768, 3072, &e).ok());
  EXPECT_STREQ(e->record_id, "r2");
  ASSERT_TRUE(p.select("bert_down", DType::kF16, 100, 768, 3072, &e).ok());
  EXPECT_STREQ(e->record_id, "r1");
  // M = 8192 is the large entry's tuned shape: its stored algorithm, no heuristic.
  ASSERT_TRUE(p.launch("bert_down", DType::kF16, down(8192), nullptr).ok());
  EXPECT_EQ(fake_lt::state().matmuls.back().algo.data[0], 22u);
  EXPECT_EQ(fake_lt::state().heuristic_calls, 0);
  // M = 6000 takes that entry too, but its algorithm was chosen for 8192 rows.
  ASSERT_TRUE(p.launch("bert_down", DType::kF16, down(6000), nullptr).ok());
  EXPECT_EQ(fake_lt::state().matmuls.back().algo.data[0], 77u);
  EXPECT_EQ(fake_lt::state().heuristic_calls, 1);
}

TEST_F(GemmPackageTest, TailEntryRunsProductThenTailKernel) {
  Package kernels(kKernels, 1, &driver());
  GemmPackage p(table_.data(), table_.size(), &kernels, &driver(), &fake_lt::table());
  GemmCall c;
  c.m = 128;
  c.n = 3072;
  c.k = 768;
  c.a = 0x10000000;
  c.b = 0x20000000;
  c.out = 0x30000000;
  c.operands = {0x40000000};
  c.operand_dims = {{3072}};
  CUstream stream = reinterpret_cast<CUstream>(0x42);
  Status st = p.launch("bert_up", DType::kF16, c, stream);
  ASSERT_TRUE(st.ok()) << st.to_string();
  ASSERT_EQ(fake_lt::state().matmuls.size(), 1u);
  EXPECT_EQ(fake_lt::state().matmuls[0].epilogue, static_cast<uint32_t>(CUBLASLT_EPILOGUE_DEFAULT));
  EXPECT_EQ(fake_lt::state().matmuls[0].d, reinterpret_cast<void*>(0x7000000)) << "the product goes to scratch";
  ASSERT_EQ(fake::state().launches.size(), 1u);
  const fake::Launch& l = fake::state().launches[0];
  EXPECT_EQ(l.args, (std::vector<uint64_t>{0x7000000, 0x40000000, 0x30000000, 128 * 3072}));
  EXPECT_EQ(l.stream, stream);
}

TEST_F(GemmPackageTest, OtherArchAsksHeuristic) {
  fake::state().sm = 80;
  Package kernels(kKernels, 1, &driver());
  GemmPackage p(table_.data(), table_.size(), &kernels, &driver(), &fake_lt::table());
  ASSERT_TRUE(p.launch("bert_down", DType::kF16, down(128), nullptr).ok());
  EXPECT_EQ(fake_lt::state().matmuls.back().algo.data[0], 77u);
}

TEST_F(GemmPackageTest, Refusals) {
  Package kernels(kKernels, 1, &driver());
  GemmPackage p(table_.data(), table_.size(), &kernels, &driver(), &fake_lt::table());
  GemmCall c = down(128);
  c.n = 1024;
  Status st = p.launch("bert_down", DType::kF16, c, nullptr);
  EXPECT_EQ(st.code(), StatusCode::kNotSupported);
  EXPECT_NE(st.message().find("tuned for N=768 K=3072"), std::string::npos) << st.message();
  EXPECT_EQ(p.launch("bert_down", DType::kBF16, down(128), nullptr).code(), StatusCode::kNotFound);
  c = down(128);
  c.operands.pop_back();
  c.operand_dims.pop_back();
  st = p.launch("bert_down", DType::kF16, c, nullptr);
  EXPECT_NE(st.message().find("takes 2 operands"), std::string::npos) << st.message();
  c = down(128);
  c.k = 0;
  EXPECT_EQ(p.launch("bert_down", DType::kF16, c, nullptr).code(), StatusCode::kNotSupported);
  c = down(128);
  c.a += 8;
  st = p.launch("bert_down", DType::kF16, c, nullptr);
  EXPECT_NE(st.message().find("not 16-byte aligned"), std::string::npos) << st.message();
  EXPECT_TRUE(fake_lt::state().matmuls.empty());
}

}  // namespace
}  // namespace fusekit
