// GPU tests of GEMM entries (ctest label `gpu`): every point the racer
// builds verified against the CPU reference, cuBLASLt's fused epilogues
// (residual as C included), the tail path for erf-GELU and two products,
// and a stored plan launched directly and from a captured CUDA graph.
// Skipped, with the reason, where no GPU or no cuBLASLt exists.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

#include "common/errors.h"
#include "fusekit/cuda_driver.h"
#include "fusekit/gemm_launch.h"
#include "generator/cublaslt/gemm_racer.h"
#include "generator/gemm_workload.h"

namespace fusekit {
namespace {

std::string skip_reason() {
  const CudaDriver* drv = nullptr;
  Status st = load_cuda_driver(&drv);
  if (!st.ok()) return st.message();
  int count = 0;
  if (drv->cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) return "no CUDA device";
  const CublasLt* lt = nullptr;
  st = load_cublaslt(&lt);
  return st.ok() ? "" : st.message();
}

class GemmGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    static const std::string reason = skip_reason();
    if (!reason.empty()) GTEST_SKIP() << reason;
  }

  GemmRace race(const std::string& src, bool bt, DType dt, GemmDims dims, bool* fused = nullptr, int space_points = 6) {
    GemmRaceOptions o;
    o.rounds = 2;
    o.tail_schedules = 2;
    o.space_points = space_points;
    auto racer = make_gemm_racer(make_gemm_candidate(src, bt), dt, o);
    if (fused) *fused = racer->mapping().fused;
    return racer->race(dims);
  }
};

// Every heuristic answer verifies; a configuration of the algorithm-space
// walk may fail (cuBLASLt's check does not promise it runs, and a split-K
// reduced in f16 may miss the tolerance) but is recorded either way.
void expect_all_verified(const GemmRace& r, const std::string& what) {
  ASSERT_FALSE(r.points.empty()) << what;
  for (size_t i = 0; i < r.points.size(); ++i)
    if (r.points[i].rank < kGemmSpaceRank) {
      EXPECT_EQ(r.results[i].status, RecordStatus::kOk)
          << what << " " << gemm_point_params(r.points[i]) << ": " << r.results[i].error;
    }
  EXPECT_GE(r.winner, 0) << what;
  EXPECT_GE(r.heuristic_first, 0) << what;
}

TEST_F(GemmGpu, FusedGeluTanhBiasAndTail) {
  bool fused = false;
  GemmRace r = race("out = gelu_tanh(acc + b[col])", true, DType::kF16, {96, 256, 192}, &fused);
  ASSERT_TRUE(fused);
  expect_all_verified(r, "gelu_tanh f16");
  bool any_fused = false, any_tail = false;
  for (const auto& p : r.points) (p.tail ? any_tail : any_fused) = true;
  EXPECT_TRUE(any_fused && any_tail);
  EXPECT_FALSE(r.points[r.heuristic_first].tail) << "the fused epilogue's first answer is the baseline";
}

// The walk beyond the heuristic: ids and configurations found, some
// timed and verified, every space point carrying a measurement or a reason.
TEST_F(GemmGpu, AlgorithmSpaceBeyondTheHeuristic) {
  GemmRace r = race("out = relu(acc + b[col])", true, DType::kF16, {1000, 1024, 1536}, nullptr, 16);
  expect_all_verified(r, "relu bias f16");
  std::cout << "fused walk: " << r.space[0].ids << " ids, " << r.space[0].accepted << "/" << r.space[0].built
            << " accepted, " << r.space_timed[0] << " timed\n"
            << r.space[0].notes << "tail walk: " << r.space[1].ids << " ids, " << r.space[1].accepted << "/"
            << r.space[1].built << " accepted, " << r.space_timed[1] << " timed\n"
            << r.space[1].notes;
  EXPECT_GT(r.space[0].ids, 0);
  EXPECT_GT(r.space[0].accepted, 0u);
  EXPECT_EQ(r.space_timed[0], 16);
  int verified = 0;
  for (size_t i = 0; i < r.points.size(); ++i) {
    if (r.points[i].rank < kGemmSpaceRank) continue;
    if (r.results[i].status == RecordStatus::kOk) {
      ++verified;
      EXPECT_GT(r.results[i].median_us, 0);
    } else {
      EXPECT_FALSE(r.results[i].error.empty()) << gemm_point_params(r.points[i]);
    }
  }
  EXPECT_GT(verified, 0) << "no configuration beyond the heuristic verified";
  ASSERT_GE(r.best_heuristic, 0);
  EXPECT_LT(r.points[r.best_heuristic].rank, kGemmSpaceRank);
}

TEST_F(GemmGpu, BiasResidualAsC) {
  for (DType dt : {DType::kF32, DType::kBF16}) {
    bool fused = false;
    GemmRace r = race("out = acc + b[col] + r", false, dt, {200, 128, 320}, &fused);
    ASSERT_TRUE(fused);
    expect_all_verified(r, std::string("bias+residual ") + dtype_name(dt));
  }
}

TEST_F(GemmGpu, ErfGeluOnlyThroughTheTail) {
  bool fused = true;
  GemmRace r = race("out = gelu(acc + b[col])", true, DType::kBF16, {130, 384, 768}, &fused);
  EXPECT_FALSE(fused);
  expect_all_verified(r, "erf gelu bf16");
  for (const auto& p : r.points) EXPECT_TRUE(p.tail);
}

TEST_F(GemmGpu, TwoProductsSiluMultiply) {
  GemmRace r = race("out = silu(acc) * acc2", true, DType::kF16, {64, 512, 256});
  expect_all_verified(r, "silu(acc) * acc2 f16");
}

// A stored plan's launch, then the same call captured in a graph and
// replayed, both against products computed here.
TEST_F(GemmGpu, StoredPlanDirectAndInGraph) {
  const CudaDriver* drv = nullptr;
  const CublasLt* lt = nullptr;
  ASSERT_TRUE(load_cuda_driver(&drv).ok());
  ASSERT_TRUE(load_cublaslt(&lt).ok());
  CUdevice dev;
  CUcontext ctx;
  ASSERT_EQ(drv->cuDeviceGet(&dev, 0), CUDA_SUCCESS);
  ASSERT_EQ(drv->cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
  ASSERT_EQ(drv->cuCtxSetCurrent(ctx), CUDA_SUCCESS);
  CUstream stream;
  ASSERT_EQ(drv->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  const GemmShape shape{48, 64, 80, true, DType::kF32};
  std::vector<float> a(shape.m * shape.k), b(shape.n * shape.k), bias(shape.n), out(shape.m * shape.n);
  for (size_t i = 0; i < a.size(); ++i) a[i] = std::sin(0.37 * i);
  for (size_t i = 0; i < b.size(); ++i) b[i] = std::cos(0.11 * i) * 0.2f;
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = 0.05f * i - 1.0f;
  CUdeviceptr da, db, dbias, dout;
  ASSERT_EQ(drv->cuMemAlloc(&da, a.size() * 4), CUDA_SUCCESS);
  ASSERT_EQ(drv->cuMemAlloc(&db, b.size() * 4), CUDA_SUCCESS);
  ASSERT_EQ(drv->cuMemAlloc(&dbias, bias.size() * 4), CUDA_SUCCESS);
  ASSERT_EQ(drv->cuMemAlloc(&dout, out.size() * 4), CUDA_SUCCESS);
  drv->cuMemcpyHtoD(da, a.data(), a.size() * 4);
  drv->cuMemcpyHtoD(db, b.data(), b.size() * 4);
  drv->cuMemcpyHtoD(dbias, bias.data(), bias.size() * 4);
  auto check = [&](const char* what) {
    drv->cuMemcpyDtoH(out.data(), dout, out.size() * 4);
    for (int64_t m = 0; m < shape.m; ++m)
      for (int64_t n = 0; n < shape.n; ++n) {
        double s = bias[n];
        for (int64_t k = 0; k < shape.k; ++k) s += static_cast<double>(a[m * shape.k + k]) * b[n * shape.k + k];
        ASSERT_NEAR(out[m * shape.n + n], std::max(s, 0.0), 1e-4) << what << " " << m << "," << n;
      }
  };
  {
    GemmSessions sessions(*drv, *lt);
    GemmPlan plan;
    plan.epilogue = GemmEpilogue::kReluBias;
    std::vector<GemmHeuristic> found;
    Status st = sessions.heuristic(shape, plan, dbias, sessions.workspace_bytes(), 4, stream, &found);
    ASSERT_TRUE(st.ok()) << st.to_string();
    plan.has_algo = true;
    plan.algo = found.back().algo;
    plan.workspace_bytes = found.back().workspace_bytes;
    plan.cublaslt_version = lt->cublasLtGetVersion();
    plan.tuned = shape;
    const GemmOperands ops{da, db, dbias, 0, dout};
    st = sessions.launch(shape, plan, ops, stream);
    ASSERT_TRUE(st.ok()) << st.to_string();
    ASSERT_EQ(drv->cuStreamSynchronize(stream), CUDA_SUCCESS);
    EXPECT_EQ(sessions.heuristic_queries(), 0);
    check("direct");

    drv->cuMemsetD8(dout, 0, out.size() * 4);
    CUgraph graph;
    CUgraphExec exec;
    ASSERT_EQ(drv->cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    st = sessions.launch(shape, plan, ops, stream);
    ASSERT_EQ(drv->cuStreamEndCapture(stream, &graph), CUDA_SUCCESS);
    ASSERT_TRUE(st.ok()) << st.to_string();
    ASSERT_EQ(drv->cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
    ASSERT_EQ(drv->cuGraphLaunch(exec, stream), CUDA_SUCCESS);
    ASSERT_EQ(drv->cuStreamSynchronize(stream), CUDA_SUCCESS);
    check("graph");
    drv->cuGraphExecDestroy(exec);
    drv->cuGraphDestroy(graph);
  }
  for (CUdeviceptr p : {da, db, dbias, dout}) drv->cuMemFree(p);
  drv->cuStreamDestroy(stream);
  drv->cuDevicePrimaryCtxRelease(dev);
}

}  // namespace
}  // namespace fusekit
