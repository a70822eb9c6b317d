// The ranking every store shares, on hand-made rows (in the stores' order).
#include "tunedb/winner_selection.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace fusekit {
namespace {

TuningRecord timed(const std::string& params, double us, const std::string& gpu = "NVIDIA H200",
                   const std::string& cuda = "13.0", RecordStatus status = RecordStatus::kOk) {
  TuningRecord r;
  r.id = new_record_id();
  r.backend = "nvrtc";
  r.shape = "4096";
  r.params = params;
  r.median_us = us;
  r.status = status;
  r.gpu_name = gpu;
  r.sm_count = gpu == "NVIDIA H200" ? 132 : 108;
  r.driver_version = "580.95.05";
  r.cuda_version = cuda;
  r.halide_version = "14.0.0";
  r.fusekit_version = "0.1.0";
  r.timestamp = "2026-12-01T00:00:00Z";
  return r;
}

// The stores' order: measured first, then fastest.
std::vector<TuningRecord> ordered(std::vector<TuningRecord> rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    if ((a.status == RecordStatus::kOk) != (b.status == RecordStatus::kOk)) return a.status == RecordStatus::kOk;
    return a.median_us < b.median_us;
  });
  return rows;
}

RecordOrigin h200() { return {"NVIDIA H200", 132, "580", "13.0", "14.0.0", "0.1.0", ""}; }

TEST(WinnerSelection, StalenessNamesEveryFieldThatDiffers) {
  EXPECT_EQ(driver_major("580.95.05"), "580");
  EXPECT_EQ(staleness(timed("a", 1), h200()), "");
  EXPECT_EQ(staleness(timed("a", 1, "NVIDIA A100", "12.4"), h200()),
            "GPU NVIDIA A100 (not NVIDIA H200), 108 SMs (not 132), CUDA 12.4 (not 13.0)");
  // An empty target field matches anything.
  EXPECT_EQ(staleness(timed("a", 1, "NVIDIA A100", "12.4"), RecordOrigin{}), "");
  // Modeled records ran on no GPU: only the toolchain counts.
  EXPECT_EQ(staleness(timed("a", 1, "model", "13.0", RecordStatus::kModeled), h200()), "");
}

// A faster stale record never beats a matching one, nor joins its median.
TEST(WinnerSelection, MatchingRecordsRankAboveStaleOnes) {
  const auto rows = ordered({timed("threads=128", 9.0, "NVIDIA A100"), timed("threads=256", 12.0),
                             timed("threads=256", 8.0, "NVIDIA A100"), timed("threads=64", 11.0)});
  const Selection sel = select_winner(rows, h200());
  ASSERT_TRUE(sel.best.has_value());
  EXPECT_EQ(sel.best->params, "threads=64");
  EXPECT_EQ(sel.used.size(), 2u);
  ASSERT_EQ(sel.passed_over.size(), 2u);
  for (const auto& p : sel.passed_over) EXPECT_NE(p.reason.find("GPU NVIDIA A100"), std::string::npos) << p.reason;
  // Without a target all four compete: threads=256's median of 8 and 12 is 8.
  EXPECT_EQ(select_winner(rows).best->params, "threads=256");
  EXPECT_DOUBLE_EQ(select_winner(rows).best->median_us, 8.0);
}

// With nothing matching, the closest single origin ranks, others pass over.
TEST(WinnerSelection, OnlyTheClosestStaleOriginRanks) {
  const auto rows = ordered({timed("threads=128", 5.0, "NVIDIA A100", "12.4"), timed("threads=256", 7.0, "NVIDIA H200", "12.4")});
  const Selection sel = select_winner(rows, h200());
  ASSERT_TRUE(sel.best.has_value());
  EXPECT_EQ(sel.best->params, "threads=256");  // one field off, not three
  ASSERT_EQ(sel.passed_over.size(), 1u);
  EXPECT_NE(sel.passed_over[0].reason.find("closer origin"), std::string::npos) << sel.passed_over[0].reason;
}

TEST(WinnerSelection, MeasuredBeatsModeledAndModeledAnswersAlone) {
  const auto rows = ordered({timed("threads=128", 1.0, "model", "13.0", RecordStatus::kModeled), timed("threads=256", 7.0)});
  Selection sel = select_winner(rows, h200());
  EXPECT_EQ(sel.best->params, "threads=256");
  ASSERT_EQ(sel.passed_over.size(), 1u);
  EXPECT_NE(sel.passed_over[0].reason.find("modeled"), std::string::npos);
  sel = select_winner(ordered({timed("threads=128", 2.0, "model", "13.0", RecordStatus::kModeled),
                               timed("threads=64", 1.0, "model", "13.0", RecordStatus::kModeled)}), h200());
  EXPECT_EQ(sel.best->params, "threads=64");
  EXPECT_FALSE(select_winner({}).best.has_value());
}

TuningRecord gemm(const std::string& cublas, double us) {
  TuningRecord r = timed("rank=0 ep=bias res=0 shape=128x768x3072 bt=1 dtype=f16 ws=0 cublaslt=" + cublas + " algo=heuristic",
                         us, "NVIDIA H200", "13.0 cublasLt " + cublas);
  r.backend = "cublaslt";
  return r;
}

// A GEMM record's cuda_version carries the cuBLASLt version: the toolkit
// still matches, and the cuBLASLt version is compared on its own.
TEST(WinnerSelection, CublasVersionIsPartOfAGemmRecordsOrigin) {
  RecordOrigin target = h200();
  target.cublas_version = "130100";
  const RecordOrigin o = origin_of(gemm("130000", 1));
  EXPECT_EQ(o.cuda_version, "13.0");
  EXPECT_EQ(o.cublas_version, "130000");
  EXPECT_EQ(staleness(gemm("130100", 1), target), "");
  EXPECT_EQ(staleness(gemm("130000", 1), target), "cuBLASLt 130000 (not 130100)");
  // A record whose cuda_version lacks it still has its plan's `cublaslt=`.
  TuningRecord old = gemm("120400", 1);
  old.cuda_version = "13.0";
  EXPECT_EQ(origin_of(old).cublas_version, "120400");
  EXPECT_EQ(staleness(old, target), "cuBLASLt 120400 (not 130100)");
  // Kernels that never call cuBLASLt are not stale for its version.
  EXPECT_EQ(staleness(timed("threads=128", 1), target), "");
  // A tail GEMM (cublaslt+nvrtc) counts too.
  TuningRecord tail = gemm("130000", 1);
  tail.backend = "cublaslt+nvrtc";
  EXPECT_EQ(staleness(tail, target), "cuBLASLt 130000 (not 130100)");
}

// A faster GEMM record of another cuBLASLt never beats a matching one.
TEST(WinnerSelection, GemmRecordsOfAnotherCublasRankBelowMatchingOnes) {
  RecordOrigin target = h200();
  target.cublas_version = "130100";
  const TuningRecord here = gemm("130100", 12.0), other = gemm("130000", 9.0);
  const Selection sel = select_winner(ordered({here, other}), target);
  ASSERT_TRUE(sel.best.has_value());
  EXPECT_EQ(sel.best->id, here.id);
  ASSERT_EQ(sel.used.size(), 1u);
  ASSERT_EQ(sel.passed_over.size(), 1u);
  EXPECT_EQ(sel.passed_over[0].record.id, other.id);
  EXPECT_EQ(sel.passed_over[0].reason, "stale: cuBLASLt 130000 (not 130100)");
  // Without a cuBLASLt in the target both compete and the faster wins.
  EXPECT_EQ(select_winner(ordered({here, other}), h200()).best->id, other.id);
  // With only other versions, the closest one origin ranks, never a pool of two.
  const TuningRecord older = gemm("120400", 8.0);
  const Selection stale = select_winner(ordered({other, older}), target);
  ASSERT_EQ(stale.used.size(), 1u);
  ASSERT_EQ(stale.passed_over.size(), 1u);
}

TuningRecord revoked(const TuningRecord& winner, const std::string& when) {
  TuningRecord r = winner;
  r.id = new_record_id();
  r.status = RecordStatus::kRevoked;
  r.error = "verify_error at 1001: output 0 element 3: got nan";
  r.median_us = 0.0;
  r.timestamp = when;
  return r;
}

// `fusekit verify --db` revokes a winner whose kernel fails on its GPU: the
// kernel's records up to then stop ranking there, later ones rank again.
TEST(WinnerSelection, ARevokedKernelStopsRankingOnItsGpu) {
  TuningRecord fast = timed("threads=128", 5.0), slow = timed("threads=256", 9.0);
  fast.kernel_hash = slow.kernel_hash = "k1";
  const TuningRecord revocation = revoked(fast, "2026-12-02T00:00:00Z");
  Selection sel = select_winner(ordered({fast, slow, revocation}), h200());
  ASSERT_TRUE(sel.best.has_value());
  EXPECT_EQ(sel.best->params, "threads=256");
  ASSERT_EQ(sel.passed_over.size(), 2u);
  EXPECT_NE(sel.passed_over[0].reason.find("failed `fusekit verify --db` on NVIDIA H200"), std::string::npos)
      << sel.passed_over[0].reason;
  EXPECT_NE(sel.passed_over[1].reason.find("revoked: verify_error"), std::string::npos) << sel.passed_over[1].reason;
  // A record of a rebuilt kernel, or measured after the revocation, ranks.
  TuningRecord rebuilt = fast, later = fast;
  rebuilt.id = new_record_id();
  rebuilt.kernel_hash = "k2";
  later.id = new_record_id();
  later.timestamp = "2026-12-03T00:00:00Z";
  EXPECT_EQ(select_winner(ordered({fast, slow, revocation, rebuilt}), h200()).best->id, rebuilt.id);
  EXPECT_EQ(select_winner(ordered({fast, slow, revocation, later}), h200()).best->id, later.id);
  // Another GPU's revocation leaves this GPU's records alone.
  TuningRecord elsewhere = revocation;
  elsewhere.gpu_name = "NVIDIA A100";
  EXPECT_EQ(select_winner(ordered({fast, slow, elsewhere}), h200()).best->id, fast.id);
  // A revocation alone answers no winner.
  EXPECT_FALSE(select_winner({revocation}, h200()).best.has_value());
}

}  // namespace
}  // namespace fusekit
