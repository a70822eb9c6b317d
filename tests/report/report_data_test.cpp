// The report's data extraction on hand-built records: winners, runner-up
// margins, failures, sampling, plan coverage.
#include <gtest/gtest.h>

#include "common/errors.h"
#include "report/plan_coverage.h"
#include "report/report_data.h"

namespace fusekit {
namespace {

using nlohmann::json;

TuningRecord rec(const std::string& shape, const std::string& backend, const std::string& params, double us,
                 RecordStatus status = RecordStatus::kOk) {
  static int next = 0;
  TuningRecord r;
  r.id = "id" + std::to_string(next++);
  r.pattern = "relu_add";
  r.pipeline_hash = "0d92cb110f4d138c";
  r.dtype = "f32";
  r.shape = shape;
  r.shape_bucket = shape == "4096" ? "n<=2^12" : "n<=2^16";
  r.arch = "sm_90";
  r.gpu_name = "NVIDIA H200";
  r.sm_count = 132;
  r.backend = backend;
  r.params = params;
  r.status = status;
  r.median_us = us;
  r.p20_us = us * 0.9;
  r.p80_us = us * 1.2;
  r.bandwidth_gbps = us > 0 ? 1000.0 / us : 0;
  r.error = status == RecordStatus::kOk ? "" : "\n  ptxas fatal: too many registers\nsecond line";
  r.timestamp = "2026-11-30T00:00:" + std::to_string(10 + next % 50) + "Z";
  return r;
}

const json& shape_of(const json& op, const std::string& shape) {
  for (const json& s : op["shapes"])
    if (s["shape"] == shape) return s;
  throw std::runtime_error("no shape " + shape);
}

TEST(ReportData, EmptyRecordsAreAUserError) {
  EXPECT_THROW(extract_report_data({}), UserError);
}

TEST(ReportData, WinnerRunnerUpAndMarginPerShape) {
  std::vector<TuningRecord> rs = {rec("4096", "nvrtc", "threads=256 vec=4", 5.0),
                                  rec("4096", "nvrtc", "threads=128 vec=4", 4.0),
                                  rec("4096", "halide", "ept=1 threads=256 vec=4", 4.4),
                                  rec("65536", "nvrtc", "threads=256 vec=4", 9.0),
                                  rec("65536", "halide", "ept=1 threads=256 vec=4", 8.0)};
  json d = extract_report_data(rs);
  ASSERT_EQ(d["ops"].size(), 1u);
  const json& op = d["ops"][0];
  EXPECT_EQ(op["op"], "relu_add");
  ASSERT_EQ(op["shapes"].size(), 2u);
  EXPECT_EQ(op["shapes"][0]["shape"], "4096");  // smallest first
  const json& small = shape_of(op, "4096");
  EXPECT_EQ(small["winner"]["backend"], "nvrtc");
  EXPECT_EQ(small["winner"]["params"], "threads=128 vec=4");
  EXPECT_EQ(small["runner_up"]["backend"], "halide");
  EXPECT_NEAR(small["margin"].get<double>(), 0.1, 1e-9);
  EXPECT_DOUBLE_EQ(small["best"]["nvrtc"]["median_us"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(small["best"]["halide"]["median_us"].get<double>(), 4.4);
  EXPECT_DOUBLE_EQ(small["winner"]["p80_us"].get<double>(), 4.8);
  EXPECT_EQ(shape_of(op, "65536")["winner"]["backend"], "halide");
  EXPECT_EQ(small["schedules"], 3);
}

// Timed three times, a schedule ranks by its median record, not its luckiest.
TEST(ReportData, ScheduleTimedSeveralTimesRanksByItsMedian) {
  std::vector<TuningRecord> rs = {rec("4096", "nvrtc", "threads=256 vec=4", 3.0),
                                  rec("4096", "nvrtc", "threads=256 vec=4", 6.0),
                                  rec("4096", "nvrtc", "threads=256 vec=4", 6.5),
                                  rec("4096", "halide", "ept=1 threads=256 vec=4", 5.0)};
  const json d = extract_report_data(rs);
  const json& s = shape_of(d["ops"][0], "4096");
  EXPECT_EQ(s["winner"]["backend"], "halide");
  EXPECT_DOUBLE_EQ(s["runner_up"]["median_us"].get<double>(), 6.0);
  EXPECT_EQ(s["runner_up"]["records"], 3);
}

TEST(ReportData, MeasuredBeatsModeledAndFailuresHaveNoTime) {
  std::vector<TuningRecord> rs = {rec("4096", "nvrtc", "threads=256 vec=4", 1.0, RecordStatus::kModeled),
                                  rec("4096", "halide", "ept=1 threads=256 vec=4", 5.0),
                                  rec("4096", "nvrtc", "threads=1024 vec=8", 0, RecordStatus::kCompileError)};
  json d = extract_report_data(rs);
  const json& s = shape_of(d["ops"][0], "4096");
  EXPECT_EQ(s["winner"]["backend"], "halide");
  EXPECT_EQ(s["timed"], "ok");
  EXPECT_EQ(s["failed"], 1);
  EXPECT_TRUE(s["runner_up"].is_null());
  const json& p = d["ops"][0]["points"];
  ASSERT_EQ(p["us"].size(), 3u);
  EXPECT_TRUE(p["us"][2].is_null());
  EXPECT_DOUBLE_EQ(p["rel"][1].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(p["values"]["threads"][2].get<double>(), 1024);
  EXPECT_TRUE(p["values"]["ept"][0].is_null());  // nvrtc schedules have no ept
}

TEST(ReportData, OverviewAndFailures) {
  std::vector<TuningRecord> rs = {rec("4096", "nvrtc", "threads=256 vec=4", 4.0),
                                  rec("4096", "halide", "ept=1 vec=4", 0, RecordStatus::kCompileError),
                                  rec("65536", "halide", "ept=2 vec=4", 0, RecordStatus::kCompileError)};
  rs.back().dtype = "bf16";
  ReportLimits limits;
  limits.first_messages = 1;
  limits.message_chars = 12;
  json d = extract_report_data(rs, limits);
  EXPECT_EQ(d["overview"]["records"], 3);
  EXPECT_EQ(d["overview"]["statuses"]["ok"], 1);
  EXPECT_EQ(d["overview"]["statuses"]["compile_error"], 2);
  EXPECT_EQ(d["overview"]["statuses"]["timeout"], 0);
  EXPECT_EQ(d["overview"]["dtypes"], json({"bf16", "f32"}));
  EXPECT_EQ(d["overview"]["gpus"][0]["name"], "NVIDIA H200");
  EXPECT_EQ(d["ops"].size(), 2u);  // f32 and bf16 are two ops
  const json& f = d["failures"]["by_status"];
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0]["status"], "compile_error");
  EXPECT_EQ(f[0]["count"], 2);
  ASSERT_EQ(f[0]["first"].size(), 1u);
  EXPECT_EQ(f[0]["first"][0]["message"], "ptxas fatal:...");  // first non-empty line, cut
  EXPECT_EQ(f[0]["first"][0]["id"], rs[1].id);
  EXPECT_EQ(d["failures"]["by_op"].size(), 2u);
  EXPECT_FALSE(d["peers"]["present"].get<bool>());
}

TEST(ReportData, ManyRecordsAreSampledButEveryBestIsShown) {
  std::vector<TuningRecord> rs;
  for (int i = 0; i < 1000; ++i) rs.push_back(rec("65536", i % 2 ? "nvrtc" : "halide", "threads=" + std::to_string(i), 100.0 - i * 0.05));
  rs.push_back(rec("4096", "nvrtc", "threads=7", 3.0));  // the last record, a stride would skip it
  json op = summarize_op([&] {
    std::vector<const TuningRecord*> ptrs;
    for (const auto& r : rs) ptrs.push_back(&r);
    return ptrs;
  }(), 100);
  const json& p = op["points"];
  EXPECT_EQ(p["of"], 1001);
  EXPECT_LE(p["shown"].get<size_t>(), 103u);
  EXPECT_GE(p["shown"].get<size_t>(), 90u);
  // The fastest of each backend (records 998 and 999) and the lone 4096 are drawn.
  bool fastest = false, lone = false;
  for (size_t i = 0; i < p["us"].size(); ++i) {
    fastest |= p["us"][i].get<double>() == rs[999].median_us;
    lone |= p["us"][i].get<double>() == 3.0;
  }
  EXPECT_TRUE(fastest);
  EXPECT_TRUE(lone);
}

TEST(ReportData, ExpressionsAreToldApartByHash) {
  TuningRecord a = rec("4096", "nvrtc", "threads=256", 1.0), b = a;
  a.pattern = b.pattern = "expr";
  b.pipeline_hash = "ffffffff00000000";
  EXPECT_EQ(op_label(a), "expr 0d92cb11");
  EXPECT_EQ(extract_report_data({a, b})["ops"].size(), 2u);
}

TEST(PlanCoverage, MatchesEntriesByNameDtypeAndShape) {
  json plan = json::parse(R"J({"format": "fusekit-plan", "version": 1, "model": "m",
    "entries": [{"name": "relu_add", "expr": "out = max(x, 0) + y", "dtype": "f32", "sizes": ["4096", "999"],
                 "occurrences": [{"nodes": ["a", "b"]}, {"nodes": ["c", "d"]}]},
                {"name": "gelu_tail", "expr": "out = gelu(x)", "dtype": "f16", "sizes": ["4096"]}],
    "unsupported": [{"nodes": ["x"], "reason": "r"}], "coverage": {"nodes": 9}})J");
  std::vector<TuningRecord> rs = {rec("4096", "nvrtc", "threads=256", 4.0), rec("4096", "halide", "vec=4", 3.0),
                                  rec("999", "nvrtc", "threads=256", 0, RecordStatus::kTimeout)};
  json c = plan_coverage(plan, rs);
  ASSERT_EQ(c["entries"].size(), 2u);
  EXPECT_EQ(c["entries"][0]["covered"], 1);
  EXPECT_EQ(c["entries"][0]["sizes"][0]["records"], 2);
  EXPECT_DOUBLE_EQ(c["entries"][0]["sizes"][0]["best_us"].get<double>(), 3.0);
  EXPECT_EQ(c["entries"][0]["sizes"][1]["records"], 0);  // only a timeout there
  EXPECT_EQ(c["entries"][0]["occurrences"], 2);
  EXPECT_EQ(c["entries"][1]["covered"], 0);
  EXPECT_EQ(c["sizes"], 3);
  EXPECT_EQ(c["sizes_tuned"], 1);
  EXPECT_EQ(c["unsupported"], 1);
  EXPECT_EQ(c["coverage"]["nodes"], 9);
}

}  // namespace
}  // namespace fusekit
