#include <gtest/gtest.h>

#include "fusekit/gemm.h"
#include "fusekit/gemm_launch.h"
#include "tests/runtime/fake_cublaslt.h"
#include "testing/fake_driver.h"

namespace fusekit {
namespace {

using fake_lt::driver;

GemmShape bert_up() {
  GemmShape s;
  s.m = 128;
  s.n = 3072;
  s.k = 768;
  s.dtype = DType::kF16;
  return s;
}

GemmOperands operands() { return {0x10000, 0x20000, 0x30000, 0, 0x40000}; }

cublasLtMatmulAlgo_t algo_with(uint64_t first) {
  cublasLtMatmulAlgo_t a{};
  a.data[0] = first;
  a.data[7] = 0xfeed;
  return a;
}

TEST(GemmAlgo, HexRoundTrip) {
  GemmAlgo a;
  for (int w = 0; w < 8; ++w) a.data[w] = 0x0123456789abcdefULL * (w + 1);
  const std::string hex = gemm_algo_hex(a);
  ASSERT_EQ(hex.size(), 128u);
  GemmAlgo b;
  ASSERT_TRUE(parse_gemm_algo_hex(hex, &b).ok());
  for (int w = 0; w < 8; ++w) EXPECT_EQ(a.data[w], b.data[w]);
  EXPECT_EQ(hex.substr(0, 16), "0123456789abcdef");
}

TEST(GemmAlgo, MalformedHexRefused) {
  GemmAlgo b;
  Status st = parse_gemm_algo_hex("abc", &b);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("has 3 hex digits"), std::string::npos) << st.message();
  st = parse_gemm_algo_hex(std::string(127, '0') + "G", &b);
  EXPECT_NE(st.message().find("'G' at digit 127"), std::string::npos) << st.message();
}

TEST(GemmEpilogue, NamesRoundTrip) {
  for (auto e : {GemmEpilogue::kDefault, GemmEpilogue::kRelu, GemmEpilogue::kBias, GemmEpilogue::kReluBias,
                 GemmEpilogue::kGelu, GemmEpilogue::kGeluBias}) {
    GemmEpilogue back;
    ASSERT_TRUE(parse_gemm_epilogue(gemm_epilogue_name(e), &back));
    EXPECT_EQ(back, e);
  }
  GemmEpilogue x;
  EXPECT_FALSE(parse_gemm_epilogue("gelu_erf_bias", &x));
  EXPECT_EQ(static_cast<uint32_t>(GemmEpilogue::kGeluBias), static_cast<uint32_t>(CUBLASLT_EPILOGUE_GELU_BIAS));
  EXPECT_EQ(static_cast<uint32_t>(GemmEpilogue::kReluBias), static_cast<uint32_t>(CUBLASLT_EPILOGUE_RELU_BIAS));
}

TEST(CheckGemmCall, RefusesBadShapesAndPointers) {
  GemmPlan plan;
  plan.epilogue = GemmEpilogue::kBias;
  GemmShape s = bert_up();
  EXPECT_TRUE(check_gemm_call(s, plan, operands()).ok());

  s.k = 0;
  Status st = check_gemm_call(s, plan, operands());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("K = 0"), std::string::npos) << st.message();

  s = bert_up();
  s.n = -3;
  EXPECT_NE(check_gemm_call(s, plan, operands()).message().find("N = -3"), std::string::npos);

  s = bert_up();
  s.k = 771;  // f16 rows of 1542 bytes
  st = check_gemm_call(s, plan, operands());
  EXPECT_NE(st.message().find("A rows of 771 elements"), std::string::npos) << st.message();

  GemmOperands ops = operands();
  ops.a += 2;
  st = check_gemm_call(bert_up(), plan, ops);
  EXPECT_NE(st.message().find("operand A at 0x10002 is not 16-byte aligned"), std::string::npos) << st.message();

  ops = operands();
  ops.bias = 0;
  st = check_gemm_call(bert_up(), plan, ops);
  EXPECT_NE(st.message().find("bias is a null pointer"), std::string::npos) << st.message();

  plan.epilogue = GemmEpilogue::kDefault;
  st = check_gemm_call(bert_up(), plan, operands());
  EXPECT_NE(st.message().find("takes no bias"), std::string::npos) << st.message();

  plan.residual = true;
  ops = operands();
  ops.bias = 0;
  st = check_gemm_call(bert_up(), plan, ops);
  EXPECT_NE(st.message().find("residual is a null pointer"), std::string::npos) << st.message();
}

TEST(GemmSessions, StoredAlgorithmRunsWithoutHeuristic) {
  fake_lt::reset();
  GemmSessions sessions(driver(), fake_lt::table());
  GemmPlan plan;
  plan.epilogue = GemmEpilogue::kGeluBias;
  plan.residual = true;
  plan.has_algo = true;
  plan.algo.data[0] = 42;
  plan.algo.data[7] = 7;
  plan.workspace_bytes = 4096;
  plan.cublaslt_version = fake_lt::state().version;
  plan.tuned = bert_up();
  GemmOperands ops = operands();
  ops.residual = 0x50000;
  CUstream stream = reinterpret_cast<CUstream>(0x99);
  Status st = sessions.launch(bert_up(), plan, ops, stream);
  ASSERT_TRUE(st.ok()) << st.to_string();
  EXPECT_EQ(fake_lt::state().heuristic_calls, 0);
  ASSERT_EQ(fake_lt::state().matmuls.size(), 1u);
  const auto& m = fake_lt::state().matmuls[0];
  EXPECT_EQ(m.algo.data[0], 42u);
  EXPECT_EQ(m.algo.data[7], 7u);
  EXPECT_EQ(m.epilogue, static_cast<uint32_t>(CUBLASLT_EPILOGUE_GELU_BIAS));
  EXPECT_EQ(m.bias, reinterpret_cast<const void*>(0x30000));
  // Row-major as column-major: cuBLASLt's A is our weight, transposed.
  EXPECT_EQ(m.a, reinterpret_cast<const void*>(0x20000));
  EXPECT_EQ(m.b, reinterpret_cast<const void*>(0x10000));
  EXPECT_EQ(m.trans_a, CUBLAS_OP_T);
  EXPECT_EQ(m.layouts[0], (std::vector<uint64_t>{768, 3072, 768}));
  EXPECT_EQ(m.layouts[3], (std::vector<uint64_t>{3072, 128, 3072}));
  EXPECT_EQ(m.c, reinterpret_cast<const void*>(0x50000));
  EXPECT_EQ(m.beta, 1.0f);
  EXPECT_EQ(m.stream, reinterpret_cast<cudaStream_t>(stream));
  EXPECT_EQ(fake_lt::state().live_descriptors, 0) << "descriptors leaked";
}

TEST(GemmSessions, OtherCublasVersionRequeriesHeuristicOncePerShape) {
  fake_lt::reset();
  fake_lt::state().answers = {algo_with(5), algo_with(6)};
  GemmSessions sessions(driver(), fake_lt::table());
  GemmPlan plan;
  plan.epilogue = GemmEpilogue::kBias;
  plan.has_algo = true;
  plan.algo.data[0] = 42;
  plan.cublaslt_version = fake_lt::state().version - 1;
  plan.tuned = bert_up();
  CUstream stream = reinterpret_cast<CUstream>(0x99);
  ASSERT_TRUE(sessions.launch(bert_up(), plan, operands(), stream).ok());
  ASSERT_TRUE(sessions.launch(bert_up(), plan, operands(), stream).ok());
  EXPECT_EQ(sessions.heuristic_queries(), 1);
  ASSERT_EQ(fake_lt::state().matmuls.size(), 2u);
  EXPECT_EQ(fake_lt::state().matmuls[1].algo.data[0], 5u) << "the heuristic's first answer, not the stale blob";
  EXPECT_EQ(fake_lt::state().matmuls[0].beta, 0.0f);

  // Another shape in the same bucket asks again; another stream gets its own handle.
  GemmShape s = bert_up();
  s.m = 256;
  ASSERT_TRUE(sessions.launch(s, plan, operands(), stream).ok());
  EXPECT_EQ(sessions.heuristic_queries(), 2);
  EXPECT_EQ(fake_lt::state().handles, 1);
  ASSERT_TRUE(sessions.launch(s, plan, operands(), reinterpret_cast<CUstream>(0x98)).ok());
  EXPECT_EQ(fake_lt::state().handles, 2);
}

TEST(GemmSessions, HeuristicTopK) {
  fake_lt::reset();
  fake_lt::state().answers = {algo_with(1), algo_with(2), algo_with(3)};
  GemmSessions sessions(driver(), fake_lt::table());
  GemmPlan plan;
  std::vector<GemmHeuristic> found;
  ASSERT_TRUE(sessions.heuristic(bert_up(), plan, 0, 1 << 20, 2, nullptr, &found).ok());
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[1].algo.data[0], 2u);
  EXPECT_EQ(sessions.heuristic(bert_up(), plan, 0, 1 << 20, 0, nullptr, &found).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(sessions.heuristic(bert_up(), plan, 0, size_t{1} << 40, 2, nullptr, &found).code(),
            StatusCode::kInvalidArgument);
  fake_lt::state().answers.clear();
  Status st = sessions.heuristic(bert_up(), plan, 0, 1 << 20, 2, nullptr, &found);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cublasLtMatmulAlgoGetHeuristic"), std::string::npos) << st.message();
}

TEST(GemmSessions, BadCallNeverReachesCublas) {
  fake_lt::reset();
  GemmSessions sessions(driver(), fake_lt::table());
  GemmShape s = bert_up();
  s.k = 0;
  EXPECT_EQ(sessions.launch(s, GemmPlan(), {0x10000, 0x20000, 0, 0, 0x40000}, nullptr).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(fake_lt::state().handles, 0);
  EXPECT_TRUE(fake_lt::state().matmuls.empty());
}

}  // namespace
}  // namespace fusekit

namespace fusekit {
namespace {

TEST(GemmPlanText, RoundTrip) {
  GemmPlan p;
  p.epilogue = GemmEpilogue::kGeluBias;
  p.residual = true;
  p.has_algo = true;
  for (int w = 0; w < 8; ++w) p.algo.data[w] = 0x1111111111111111ULL * w + 3;
  p.workspace_bytes = 1 << 20;
  p.cublaslt_version = 130100;
  p.tuned = {8192, 768, 3072, false, DType::kBF16};
  const std::string text = gemm_plan_text(p);
  EXPECT_NE(text.find("ep=gelu_tanh_bias res=1 shape=8192x768x3072 bt=0 dtype=bf16 ws=1048576 cublaslt=130100 algo="),
            std::string::npos)
      << text;
  GemmPlan q;
  ASSERT_TRUE(parse_gemm_plan_text(text, &q).ok());
  EXPECT_EQ(gemm_plan_text(q), text);
  EXPECT_TRUE(q.tuned == p.tuned);
  for (int w = 0; w < 8; ++w) EXPECT_EQ(q.algo.data[w], p.algo.data[w]);

  p.has_algo = false;
  ASSERT_TRUE(parse_gemm_plan_text(gemm_plan_text(p), &q).ok());
  EXPECT_FALSE(q.has_algo);
}

TEST(GemmPlanText, BadTextRefused) {
  GemmPlan q;
  EXPECT_NE(parse_gemm_plan_text("ep=bias", &q).message().find("lacks res="), std::string::npos);
  const std::string ok = "ep=bias res=0 shape=1x2x3 bt=1 dtype=f16 ws=0 cublaslt=1 algo=heuristic";
  ASSERT_TRUE(parse_gemm_plan_text(ok, &q).ok());
  std::string bad = ok;
  bad.replace(bad.find("ep=bias"), 7, "ep=gelu_bias");
  EXPECT_NE(parse_gemm_plan_text(bad, &q).message().find("epilogue 'gelu_bias' is unknown"), std::string::npos);
  bad = ok;
  bad.replace(bad.find("1x2x3"), 5, "1x2");
  EXPECT_NE(parse_gemm_plan_text(bad, &q).message().find("is not MxNxK"), std::string::npos);
  bad = ok;
  bad.replace(bad.find("heuristic"), 9, "00ff");
  EXPECT_NE(parse_gemm_plan_text(bad, &q).message().find("has 4 hex digits"), std::string::npos);
}

}  // namespace
}  // namespace fusekit
