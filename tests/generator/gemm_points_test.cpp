// What a GEMM record keeps: the point's params (the algorithm blob among
// them) through a record's JSON and back, and which point wins.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "generator/cublaslt/gemm_points.h"

namespace fusekit {
namespace {

GemmPoint point(bool tail, int rank) {
  GemmPoint p;
  p.tail = tail;
  p.rank = rank;
  p.plan.epilogue = tail ? GemmEpilogue::kDefault : GemmEpilogue::kGeluBias;
  p.plan.has_algo = true;
  for (int w = 0; w < 8; ++w) p.plan.algo.data[w] = 0x9e3779b97f4a7c15ULL * (w + 1) + rank;
  p.plan.workspace_bytes = 4 << 20;
  p.plan.cublaslt_version = 130100;
  p.plan.tuned = {128, 3072, 768, true, DType::kF16};
  if (tail) p.tail_config = Config::parse("threads=256 vec=8 ept=1 grid=0 fast=0");
  return p;
}

MeasureResult timed(double median, double p20, double p80) {
  MeasureResult r;
  r.median_us = median;
  r.p20_us = p20;
  r.p80_us = p80;
  return r;
}

TEST(GemmPoints, RecordRoundTripKeepsAlgorithm) {
  const GemmCandidate c = make_gemm_candidate("out = gelu_tanh(acc + b[col])", true);
  DeviceInfo dev;
  dev.gpu_name = "NVIDIA H200";
  dev.arch = Arch{9, 0};
  dev.sm_count = 132;
  Provenance prov;
  prov.cuda_version = "13.0";
  // A heuristic answer, a tail point and a configuration of the algorithm-space walk.
  const std::vector<GemmPoint> points = {point(false, 0), point(true, 3), point(false, kGemmSpaceRank + 47)};
  auto records = gemm_records(c, DType::kF16, {128, 3072, 768}, points,
                              {timed(10, 9, 11), timed(12, 11, 13), timed(9, 8, 10)}, dev, prov);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].backend, "cublaslt");
  EXPECT_EQ(records[1].backend, "cublaslt+nvrtc");
  EXPECT_EQ(records[0].shape, "128x3072x768");
  EXPECT_EQ(records[0].shape_bucket, "m<=2^7 n=3072 k=768");
  EXPECT_EQ(records[0].cuda_version, "13.0 cublasLt 130100");
  EXPECT_EQ(records[0].pipeline_hash, records[1].pipeline_hash) << "both backends compete under one key";
  for (size_t i = 0; i < records.size(); ++i) {
    nlohmann::json j = records[i];
    TuningRecord back = j.get<TuningRecord>();
    GemmPoint p = parse_gemm_point(back.backend, back.params);
    EXPECT_EQ(p.tail, points[i].tail);
    EXPECT_EQ(p.rank, points[i].rank);
    EXPECT_EQ(p.plan.epilogue, points[i].plan.epilogue);
    EXPECT_EQ(p.plan.cublaslt_version, 130100u);
    EXPECT_TRUE(p.plan.tuned == points[i].plan.tuned);
    for (int w = 0; w < 8; ++w) EXPECT_EQ(p.plan.algo.data[w], points[i].plan.algo.data[w]) << w;
    EXPECT_EQ(p.tail_config.to_string(), points[i].tail_config.to_string());
  }
}

TEST(GemmPoints, MalformedParamsRefused) {
  EXPECT_THROW(parse_gemm_point("nvrtc", "rank=0"), UserError);
  EXPECT_THROW(parse_gemm_point("cublaslt", "algo=0"), UserError);
  EXPECT_THROW(parse_gemm_point("cublaslt", "rank=10000 ep=default"), UserError);
  const std::string fused = gemm_point_params(point(false, 0));
  EXPECT_THROW(parse_gemm_point("cublaslt+nvrtc", fused), UserError);  // a tail record without its schedule
  std::string bad = fused;
  bad.replace(bad.find("ep=gelu_tanh_bias"), 17, "ep=gelu_erf_bias");
  try {
    parse_gemm_point("cublaslt", bad);
    ADD_FAILURE();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("'gelu_erf_bias' is unknown"), std::string::npos) << e.what();
  }
}

TEST(GemmPoints, FirstHeuristicAnswerKeptWithinSpread) {
  const std::vector<GemmPoint> points = {point(false, 0), point(false, 1), point(false, 2)};
  // Rank 2 is faster by 0.3 us, inside the 1 us spread: rank 0 stays.
  EXPECT_EQ(choose_gemm_winner(points, {timed(10, 9.5, 10.5), timed(11, 10, 12), timed(9.7, 9.2, 10.2)}), 0);
  // By 2 us with a spread of 1 us: rank 2 wins.
  EXPECT_EQ(choose_gemm_winner(points, {timed(10, 9.5, 10.5), timed(11, 10, 12), timed(8.0, 7.5, 8.5)}), 2);
  // Rank 0 failed verification: the fastest verified point.
  std::vector<MeasureResult> r = {timed(1, 1, 1), timed(11, 10, 12), timed(9.7, 9.2, 10.2)};
  r[0].status = RecordStatus::kVerifyError;
  EXPECT_EQ(choose_gemm_winner(points, r), 2);
  for (auto& x : r) x.status = RecordStatus::kLaunchError;
  EXPECT_EQ(choose_gemm_winner(points, r), -1);
}

TEST(GemmPoints, BackendsRaceOnTime) {
  // A tail beats the fused epilogue clearly: the rank-0 rule is within one
  // backend, so the tail wins.
  const std::vector<GemmPoint> points = {point(false, 0), point(true, 1)};
  EXPECT_EQ(choose_gemm_winner(points, {timed(10, 9.5, 10.5), timed(9.9, 9.4, 10.4)}), 1);
}

}  // namespace
}  // namespace fusekit
