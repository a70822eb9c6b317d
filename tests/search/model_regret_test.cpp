// The analytic cost model against the H200 measurements committed in
// bench/results: what tuning with `--model` instead of the GPU would have
// cost. The bounds hold the model where it was last measured (see
// bench/model_regret); a change that ranks worse fails here.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "bench/model_regret_lib.h"

namespace fusekit {
namespace {

const std::string kResults = std::string(FUSEKIT_SOURCE_DIR) + "/bench/results/2026-11-30-h200-";

double median_regret(std::vector<RegretCase> cases) {
  std::sort(cases.begin(), cases.end(), [](const auto& a, const auto& b) { return a.regret() < b.regret(); });
  return cases[cases.size() / 2].regret();
}

int within(const std::vector<RegretCase>& cases, double bound) {
  return static_cast<int>(std::count_if(cases.begin(), cases.end(), [&](const auto& c) { return c.regret() <= bound; }));
}

TEST(ModelRegret, RanksTheH200RowReductions) {
  const auto kinds = model_regret(read_measured_records(
      {kResults + "bb06126-rows-records.jsonl.gz", kResults + "4817c18-rows-records.jsonl.gz"}));
  const auto& f32 = kinds.at("rows f32 nvrtc");
  ASSERT_EQ(f32.size(), 42u);  // 7 ops x 6 shapes
  EXPECT_LE(median_regret(f32), 0.02);
  EXPECT_GE(within(f32, 0.10), 38) << "f32 row shapes whose model pick is within 10 % of the best";
  const auto& halide = kinds.at("rows f32 halide");
  EXPECT_LE(median_regret(halide), 0.10);
  // bf16 is ranked poorly (its kernels are bound by something the model
  // does not describe; docs/performance.md); held to what it is.
  EXPECT_LE(median_regret(kinds.at("rows bf16 nvrtc")), 0.40);
}

// The row-reduction regret of one run's records: medians at most the given
// bounds, and at least `f32_close` / `bf16_close` of the `shapes` op and
// shape pairs each (42: 7 ops x 6 shapes) with the model's pick within 10 %
// of the best.
void expect_row_regret(const std::string& run, double f32_median, int f32_close, double bf16_median, int bf16_close,
                       size_t shapes = 42) {
  SCOPED_TRACE("run " + run);
  const auto kinds = model_regret(read_measured_records({kResults + run + "-rows-records.jsonl.gz"}));
  const auto& f32 = kinds.at("rows f32 nvrtc");
  const auto& bf16 = kinds.at("rows bf16 nvrtc");
  ASSERT_EQ(f32.size(), shapes);
  ASSERT_EQ(bf16.size(), shapes);
  EXPECT_LE(median_regret(f32), f32_median);
  EXPECT_GE(within(f32, 0.10), f32_close) << "f32 row shapes whose model pick is within 10 % of the best";
  EXPECT_LE(median_regret(bf16), bf16_median);
  EXPECT_GE(within(bf16, 0.10), bf16_close) << "bf16 row shapes whose model pick is within 10 % of the best";
}

// Run 66ed6e3: bf16 rows held packed, the keep parameter, and the model's
// favourites measured beside the seeds (cache=16 with 8-32 threads per row,
// which the model overrates: its worst picks). Held to what it is.
TEST(ModelRegret, RanksThePackedRowKernels) { expect_row_regret("66ed6e3", 0.07, 32, 0.21, 16); }

// Run 3b98f01: rows staged in shared memory (smem=1) beside the register
// rows; the model charges a staged row one load latency per further batch
// of four vectors (without that its picks there were 1.5-4.6x slow).
TEST(ModelRegret, RanksTheStagedRowKernels) { expect_row_regret("3b98f01", 0.07, 30, 0.10, 22); }
// Run 927c29e: persistent blocks (persist=1/2) beside the rest, at 8192x4096,
// 4096x16384 and 1024x65536 for six ops (bias_add_softmax was cut by the
// tune's time limit). Charged a load latency per row group like any staged
// row (without it the model's picks were persistent, 71 % slow at the bf16
// median).
TEST(ModelRegret, RanksThePersistentRowKernels) { expect_row_regret("927c29e", 0.05, 14, 0.07, 10, 18); }

TEST(ModelRegret, RanksTheH200PointwiseKernels) {
  const auto kinds = model_regret(read_measured_records(
      {kResults + "a11723e-records.jsonl.gz", kResults + "a2a0ff6-64m-records.jsonl.gz"}));
  for (const char* kind : {"pointwise f32 nvrtc", "pointwise bf16 nvrtc", "pointwise f32 halide"}) {
    SCOPED_TRACE(kind);
    EXPECT_LE(median_regret(kinds.at(kind)), 0.08);
  }
}

}  // namespace
}  // namespace fusekit
