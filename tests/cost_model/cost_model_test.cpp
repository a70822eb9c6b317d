// The learned cost model on CPU: its features of known candidates, training
// on a small slice of the H200 records (tests/data/h200_cost_model_sample:
// three pointwise and three row ops, f32, NVRTC) that ranks held-out ops
// better than chance, the saved file, and updates.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "cost_model/features.h"
#include "cost_model/learned_cost_model.h"
#include "cost_model/model_eval.h"
#include "cost_model/schedule_prior.h"
#include "cost_model/training_set.h"
#include "generator/candidate_workload.h"
#include "generator/candidates/catalog.h"
#include "tests/support/sample_record.h"
#include "tunedb/tune_db.h"

namespace fusekit {
namespace {

const std::string kSample = std::string(FUSEKIT_SOURCE_DIR) + "/tests/data/h200_cost_model_sample.jsonl.gz";

double feature(const std::vector<float>& f, const std::string& name) {
  const auto& names = cost_feature_names();
  const size_t at = std::find(names.begin(), names.end(), name) - names.begin();
  EXPECT_LT(at, names.size()) << name;
  return at < f.size() ? f[at] : NAN;
}

// Equal, NaN (a missing feature) matching NaN.
bool same_values(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

Problem problem_of(const std::string& op, DType dt, std::vector<int64_t> domain) {
  for (const auto& c : catalog())
    if (c.name == op) return make_candidate_workload(c, dt)->problem(domain);
  ADD_FAILURE() << op;
  return {};
}

TEST(CostFeatures, DescribeAPointwiseSchedule) {
  const ArchLimits& h200 = require_arch("sm_90");
  const Problem p = problem_of("relu_add", DType::kF32, {65536});
  const Candidate c{Backend::kNvrtc, Config::parse("ept=1 fast=1 grid=0 threads=256 vec=4")};
  const auto f = cost_features(p, 4, c, h200);
  ASSERT_EQ(f.size(), cost_feature_names().size());
  EXPECT_EQ(feature(f, "param_threads"), 256);
  EXPECT_TRUE(std::isnan(feature(f, "param_rows"))) << "a pointwise schedule has no rows parameter";
  EXPECT_EQ(feature(f, "row_kind"), 0);
  EXPECT_EQ(feature(f, "access_bytes"), 16);       // 4 f32 per access
  EXPECT_EQ(feature(f, "elems_per_block_pass"), 1024);
  EXPECT_EQ(feature(f, "log2_blocks"), 6);         // 65536 / 1024
  EXPECT_EQ(feature(f, "blocks_per_sm"), 8);       // 2048 threads per SM / 256
  EXPECT_FLOAT_EQ(feature(f, "occupancy"), 1.0f);
  EXPECT_FLOAT_EQ(feature(f, "log2_bytes"), std::log2(3.0f * 65536 * 4));  // two inputs, one output
  EXPECT_EQ(feature(f, "sm_count"), 132);
}

TEST(CostFeatures, DescribeARowSchedule) {
  const ArchLimits& h200 = require_arch("sm_90");
  const Problem p = problem_of("softmax", DType::kBF16, {1024, 4096});
  const Candidate c{Backend::kNvrtc, Config::parse("cache=2 fast=1 keep=1 rows=2 split=1 threads=128 vec=4")};
  const auto f = cost_features(p, 2, c, h200);
  EXPECT_EQ(feature(f, "row_kind"), 1);
  EXPECT_EQ(feature(f, "block_threads"), 256);     // 2 rows of 128 threads
  EXPECT_EQ(feature(f, "chunks"), 2);              // 1024 columns in passes of 512
  EXPECT_EQ(feature(f, "cached_row"), 1);          // 2 cached vectors hold the row
  EXPECT_EQ(feature(f, "utilization"), 1);
  EXPECT_EQ(feature(f, "log2_blocks"), 11);        // 4096 rows, 2 per block
  EXPECT_EQ(feature(f, "log2_cols"), 10);
  EXPECT_EQ(feature(f, "elem_bytes"), 2);
}

TEST(CostFeatures, EstimateWhatAThreadHoldsAndTheResidencyItAllows) {
  const ArchLimits& h200 = require_arch("sm_90");
  const Problem p = problem_of("relu_add", DType::kF32, {65536});
  const Candidate c{Backend::kNvrtc, Config::parse("ept=2 fast=1 grid=0 threads=256 vec=4")};
  const auto f = cost_features(p, 4, c, h200);
  EXPECT_EQ(feature(f, "elems_per_thread"), 8);   // vec 4 x ept 2
  EXPECT_EQ(feature(f, "est_registers"), 40);     // 16 + 8 x (2 inputs x 4 bytes / 4 + 1)
  EXPECT_EQ(feature(f, "reg_blocks_per_sm"), 6);  // 65536 registers / (40 x 256 threads)
  EXPECT_FLOAT_EQ(feature(f, "reg_occupancy"), 0.75f);
  EXPECT_FLOAT_EQ(feature(f, "log2_reg_waves"), std::log2(32.0f / (132 * 6)));  // 32 blocks of 2048
  EXPECT_FLOAT_EQ(feature(f, "log2_bytes_over_l2"), std::log2(786432.0f / static_cast<float>(h200.l2_bytes)));
  EXPECT_EQ(feature(f, "misaligned_vec"), 0);
  EXPECT_TRUE(std::isnan(feature(f, "log2_rows_per_sm"))) << "pointwise has no rows";
  const auto odd = cost_features(problem_of("relu_add", DType::kF32, {65537}), 4, c, h200);
  EXPECT_EQ(feature(odd, "misaligned_vec"), 1) << "65537 elements in vectors of 4";
}

TEST(CostFeatures, CapRegistersAsTheLaunchBoundsAsk) {
  const ArchLimits& h200 = require_arch("sm_90");
  const Problem p = problem_of("silu_mul", DType::kF32, {1 << 26});
  const auto free = cost_features(p, 4, {Backend::kNvrtc, Config::parse("ept=8 fast=1 grid=0 occ=0 threads=1024 vec=4")}, h200);
  EXPECT_EQ(feature(free, "bound_blocks"), 0);
  EXPECT_EQ(feature(free, "register_cap"), 64);  // 65536 registers for one block of 1024 threads
  const auto full = cost_features(p, 4, {Backend::kNvrtc, Config::parse("ept=8 fast=1 grid=0 occ=1 threads=1024 vec=4")}, h200);
  EXPECT_EQ(feature(full, "bound_blocks"), 2);   // occ=1: 2048 threads per SM / 1024
  EXPECT_EQ(feature(full, "register_cap"), 32);
  EXPECT_FLOAT_EQ(feature(full, "spill_ratio"), feature(full, "est_registers") / 32.0f);
  EXPECT_EQ(feature(full, "reg_blocks_per_sm"), 2) << "capped registers let the SM hold what was asked";
  const Problem rows = problem_of("softmax", DType::kF32, {4096, 1024});
  const auto minb = cost_features(rows, 4, {Backend::kNvrtc, Config::parse("cache=4 fast=1 minb=4 rows=1 threads=256 vec=4")}, h200);
  EXPECT_EQ(feature(minb, "bound_blocks"), 4);
  EXPECT_EQ(feature(minb, "register_cap"), 64);  // 65536 / (4 x 256)
  const auto persist = cost_features(rows, 4, {Backend::kNvrtc, Config::parse("cache=4 fast=1 persist=2 rows=1 threads=256 vec=4")}, h200);
  EXPECT_EQ(feature(persist, "bound_blocks"), 2) << "a persistent kernel's bound is its blocks per SM";
  EXPECT_EQ(feature(persist, "register_cap"), 128);
}

TEST(CostFeatures, CountWhatTheOpComputesPerElement) {
  const ArchLimits& h200 = require_arch("sm_90");
  const Candidate c{Backend::kNvrtc, Config::parse("cache=4 fast=1 rows=1 threads=256 vec=4")};
  // softmax: max and sum over the row, exp twice (once per pass), x - max twice and one divide.
  const auto softmax = cost_features(problem_of("softmax", DType::kBF16, {1024, 64}), 2, c, h200);
  EXPECT_EQ(feature(softmax, "op_reductions"), 2);
  EXPECT_EQ(feature(softmax, "op_math_calls"), 2) << "bf16 conversions are no math calls";
  EXPECT_EQ(feature(softmax, "op_arith"), 3);
  const auto rmsnorm = cost_features(problem_of("rmsnorm", DType::kF32, {1024, 64}), 4, c, h200);
  EXPECT_EQ(feature(rmsnorm, "op_reductions"), 1);
  EXPECT_EQ(feature(rmsnorm, "op_math_calls"), 1);  // sqrt
  Problem unknown = problem_of("rmsnorm", DType::kF32, {1024, 64});
  unknown.mix = {};
  EXPECT_TRUE(std::isnan(feature(cost_features(unknown, 4, c, h200), "op_arith")))
      << "a workload that does not count its op leaves the features missing";
  const Problem relu_add = problem_of("relu_add", DType::kF32, {4096});
  EXPECT_EQ(relu_add.mix.arith, 2);  // max and +
  EXPECT_EQ(relu_add.mix.math_calls, 0);
  const Candidate pw{Backend::kNvrtc, Config::parse("ept=1 fast=1 grid=0 threads=256 vec=4")};
  EXPECT_TRUE(std::isnan(feature(cost_features(relu_add, 4, pw, h200), "op_arith"))) << "row ops only";
  EXPECT_EQ(problem_of("sigmoid_mul_tanh_add", DType::kBF16, {4096}).mix.math_calls, 2);  // tanh, exp
}

TEST(CostFeatures, ReadAnOldRecordsMissingParametersAsTheirAbsentValues) {
  const ArchLimits& h200 = require_arch("sm_90");
  const Candidate old{Backend::kHalide, Config::parse("threads=256")};
  EXPECT_EQ(complete_config(old, 4, h200).to_string(), "lanes=0 threads=256 vec=1");
  const Problem p = problem_of("softmax", DType::kF32, {1024, 64});
  EXPECT_TRUE(same_values(cost_features(p, 4, old, h200),
                          cost_features(p, 4, {Backend::kHalide, Config::parse("lanes=0 threads=256 vec=1")}, h200)));
}

TEST(SchedulePrior, AveragesOtherGroupsOfTheSameScheduleAtEachLevel) {
  const ArchLimits& h200 = require_arch("sm_90");
  const Candidate c{Backend::kNvrtc, Config::parse("cache=2 fast=1 keep=1 rows=2 split=1 threads=128 vec=4")};
  const ScheduleKeys at_4096 = schedule_keys(problem_of("softmax", DType::kF32, {1024, 4096}), 4, c, h200);
  const ScheduleKeys rows_of_2048 = schedule_keys(problem_of("softmax", DType::kF32, {2048, 4096}), 4, c, h200);
  const ScheduleKeys other_rows = schedule_keys(problem_of("softmax", DType::kF32, {1024, 64}), 4, c, h200);
  EXPECT_EQ(at_4096.any, other_rows.any);
  EXPECT_EQ(at_4096.cols, other_rows.cols) << "the same row length";
  EXPECT_NE(at_4096.size, other_rows.size);
  SchedulePrior prior;
  prior.add("softmax 4096x1024", at_4096, 0.1);
  prior.add("layernorm 4096x1024", at_4096, 0.3);
  prior.add("softmax 64x1024", other_rows, 0.5);
  // size, size groups, cols, cols groups, any, any groups
  auto expect = [](const std::vector<float>& f, const std::vector<float>& want) {
    ASSERT_EQ(f.size(), want.size());
    for (size_t i = 0; i < f.size(); ++i)
      if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(f[i])) << i;
      else EXPECT_NEAR(f[i], want[i], 1e-6) << i;
  };
  const float nan = NAN;
  expect(prior.features(at_4096), {0.2f, 2, 0.3f, 3, 0.3f, 3});
  expect(prior.features(at_4096, "softmax 4096x1024"), {0.3f, 1, 0.4f, 2, 0.4f, 2});
  expect(prior.features(rows_of_2048), {nan, 0, nan, 0, 0.3f, 3});
  const Candidate unseen{Backend::kNvrtc, Config::parse("cache=4 fast=1 keep=1 rows=2 split=1 threads=128 vec=4")};
  expect(prior.features(schedule_keys(problem_of("softmax", DType::kF32, {1024, 4096}), 4, unseen, h200)),
         {nan, 0, nan, 0, nan, 0});
  const SchedulePrior back = SchedulePrior::from_json(prior.to_json());
  expect(back.features(at_4096, "softmax 4096x1024"), {0.3f, 1, 0.4f, 2, 0.4f, 2});
  EXPECT_THROW(SchedulePrior::from_json(nlohmann::json::array()), UserError);
}

TEST(SchedulePrior, PointwiseSchedulesPoolBySizeWithoutARowLength) {
  const ArchLimits& h200 = require_arch("sm_90");
  const Candidate c{Backend::kNvrtc, Config::parse("ept=1 fast=1 grid=0 threads=256 vec=4")};
  const ScheduleKeys a = schedule_keys(problem_of("relu_add", DType::kF32, {65536}), 4, c, h200);
  const ScheduleKeys b = schedule_keys(problem_of("silu_mul", DType::kF32, {65536}), 4, c, h200);
  EXPECT_EQ(a.size, b.size);
  EXPECT_TRUE(a.cols.empty());
  EXPECT_NE(a.any, schedule_keys(problem_of("relu_add", DType::kBF16, {65536}), 2, c, h200).any)
      << "element sizes apart";
}

TEST(MeasuredSchedules, OneScheduleUnderTwoSpellingsIsOneSampleAtItsFastest) {
  TuningRecord r = testing::sample_record("halide", 10);
  r.pattern = "softmax";
  r.shape = "64x1024";
  r.shape_bucket = "rows<=2^6";
  r.params = "threads=256";
  TuningRecord spelled = r;
  spelled.params = "lanes=0 threads=256 vec=1";
  spelled.median_us = 12;
  TuningRecord other = r;
  other.params = "lanes=1 threads=256 vec=4";
  other.median_us = 8;
  const auto s = measured_schedules({spelled, r, other});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].params, "lanes=0 threads=256 vec=1");
  EXPECT_EQ(s[0].us, 10);
  EXPECT_EQ(s[1].params, "lanes=1 threads=256 vec=4");
}

struct Split {
  std::vector<MeasuredSchedule> train, held;
};

// The sample with two ops (one of each kind) held out.
Split held_out_split() {
  Split s;
  for (auto& m : measured_schedules(read_jsonl(kSample)))
    (m.pattern == "residual_add_relu" || m.pattern == "layernorm" ? s.held : s.train).push_back(m);
  return s;
}

std::unique_ptr<LearnedCostModel> train_on(const std::vector<MeasuredSchedule>& schedules, ProblemCache& problems,
                                           const std::string& objective = "time", int members = 2, uint64_t seed = 1) {
  const SchedulePrior prior = schedule_prior(schedules, problems);
  std::vector<CostSample> samples;
  for (const auto& m : schedules) samples.push_back(cost_sample(problems, m, prior));
  assign_groups(schedules, &samples);
  CostModelInfo info;
  describe_training(schedules, &info);
  info.training_records = schedules.size();
  CostTrainOptions o;
  o.rounds = 60;
  o.objective = objective;
  o.members = members;
  o.seed = seed;
  return LearnedCostModel::train(samples, info, o, prior);
}

std::vector<float> features_of(const LearnedCostModel& model, ProblemCache& problems, const MeasuredSchedule& m) {
  return model.features(problems.problem(m), problems.bytes_per_element(m), candidate_of(m));
}

// Over the held-out groups: the share of pairs the model orders as measured,
// and its summed top-1 regret over a random pick's.
std::pair<double, double> held_out_ranking(const LearnedCostModel& model, const std::vector<MeasuredSchedule>& held,
                                           ProblemCache& problems) {
  std::map<std::string, std::vector<std::pair<double, double>>> groups;  // predicted, measured
  for (const auto& m : held) groups[m.group()].push_back({model.predict_rows({features_of(model, problems, m)})[0], m.us});
  EXPECT_EQ(groups.size(), 10u);  // 4 pointwise sizes, 6 row shapes
  size_t agree = 0, pairs = 0;
  double pick_regret = 0, random_regret = 0;
  for (const auto& [name, g] : groups) {
    double best = 1e300, mean = 0;
    for (const auto& x : g) best = std::min(best, x.second), mean += x.second;
    mean /= static_cast<double>(g.size());
    for (size_t i = 0; i < g.size(); ++i)
      for (size_t j = i + 1; j < g.size(); ++j)
        if (g[i].second != g[j].second) {
          ++pairs;
          agree += (g[i].first < g[j].first) == (g[i].second < g[j].second);
        }
    const auto pick = std::min_element(g.begin(), g.end());
    pick_regret += pick->second / best - 1.0;
    random_regret += mean / best - 1.0;
  }
  return {static_cast<double>(agree) / static_cast<double>(pairs), pick_regret / random_regret};
}

// One model trained on the split's training ops, shared by the tests.
class LearnedCostModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    split_ = new Split(held_out_split());
    problems_ = new ProblemCache;
    model_ = train_on(split_->train, *problems_).release();
  }
  static void TearDownTestSuite() {
    delete model_;
    delete problems_;
    delete split_;
  }
  static Split* split_;
  static ProblemCache* problems_;
  static LearnedCostModel* model_;
};
Split* LearnedCostModelTest::split_ = nullptr;
ProblemCache* LearnedCostModelTest::problems_ = nullptr;
LearnedCostModel* LearnedCostModelTest::model_ = nullptr;

TEST_F(LearnedCostModelTest, RanksHeldOutOpsBetterThanChance) {
  ASSERT_GT(split_->train.size(), 300u);
  ASSERT_GT(split_->held.size(), 150u);
  const auto [agree, regret] = held_out_ranking(*model_, split_->held, *problems_);
  EXPECT_GT(agree, 0.65) << "pairs ordered as measured";
  EXPECT_LT(regret, 0.5) << "summed top-1 regret against a random pick's";
}

TEST_F(LearnedCostModelTest, APairwiseObjectiveRanksHeldOutOpsAndKeepsItsObjective) {
  auto pairwise = train_on(split_->train, *problems_, "pairwise");
  const auto [agree, regret] = held_out_ranking(*pairwise, split_->held, *problems_);
  EXPECT_GT(agree, 0.65) << "pairs ordered as measured";
  EXPECT_LT(regret, 0.5) << "summed top-1 regret against a random pick's";
  const std::string path = ::testing::TempDir() + "/cost_model_pairwise.json";
  pairwise->save(path);
  const auto loaded = LearnedCostModel::load(path);
  const std::vector<float> row = features_of(*pairwise, *problems_, split_->held[0]);
  EXPECT_EQ(loaded->predict_rows({row}), pairwise->predict_rows({row})) << "the score's sign comes from the objective";
  std::filesystem::remove(path);
}

TEST_F(LearnedCostModelTest, SavesAndLoadsWithItsProvenance) {
  const Split& split = *split_;
  ProblemCache& problems = *problems_;
  LearnedCostModel* model = model_;
  const std::string path = ::testing::TempDir() + "/cost_model_roundtrip.json";
  model->save(path);
  auto loaded = LearnedCostModel::load(path);
  EXPECT_EQ(loaded->info().feature_schema, kCostFeatureSchema);
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(path)).at("boosters").size(), 2u) << "both members saved";
  EXPECT_EQ(loaded->info().xgboost_version, xgboost_version());
  EXPECT_EQ(loaded->info().training_records, split.train.size());
  EXPECT_EQ(loaded->info().training_samples, split.train.size());
  EXPECT_EQ(loaded->info().archs, std::vector<std::string>{"sm_90"});
  EXPECT_EQ(loaded->info().gpus, std::vector<std::string>{"NVIDIA H200"});
  EXPECT_EQ(loaded->info().domains, (std::vector<std::string>{"nvrtc pointwise", "nvrtc rows"}));
  std::vector<std::vector<float>> rows;
  for (size_t i = 0; i < split.held.size(); i += 7) {
    rows.push_back(features_of(*model, problems, split.held[i]));
    EXPECT_TRUE(same_values(features_of(*loaded, problems, split.held[i]), rows.back())) << "the prior came back";
  }
  EXPECT_EQ(loaded->predict_rows(rows), model->predict_rows(rows));
  std::filesystem::remove(path);
}

TEST_F(LearnedCostModelTest, PredictsTheMeanOfItsMembers) {
  auto first = train_on(split_->train, *problems_, "time", 1, 1);
  auto second = train_on(split_->train, *problems_, "time", 1, 2);
  std::vector<std::vector<float>> rows;
  for (size_t i = 0; i < split_->held.size(); i += 11) rows.push_back(features_of(*model_, *problems_, split_->held[i]));
  const std::vector<float> both = model_->predict_rows(rows), a = first->predict_rows(rows), b = second->predict_rows(rows);
  ASSERT_EQ(both.size(), rows.size());
  bool members_differ = false;
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_NEAR(both[i], 0.5f * (a[i] + b[i]), 1e-5f) << "row " << i;
    members_differ = members_differ || a[i] != b[i];
  }
  EXPECT_TRUE(members_differ) << "two seeds trained the same trees";
}

TEST(LearnedCostModel, RefusesFilesThatAreNotItsOwn) {
  const std::string dir = ::testing::TempDir();
  EXPECT_THROW(LearnedCostModel::load(dir + "/no_such_model.json"), UserError);
  const std::string other = dir + "/not_a_model.json";
  std::ofstream(other) << R"({"format": "something else"})";
  EXPECT_THROW(LearnedCostModel::load(other), UserError);
  const std::string old_schema = dir + "/old_schema.json";
  std::ofstream(old_schema) << R"({"format": "fusekit-cost-model", "feature_schema": 0, "booster": {}})";
  try {
    LearnedCostModel::load(old_schema);
    ADD_FAILURE() << "an old feature schema loaded";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("retrain"), std::string::npos) << e.what();
  }
  const std::string empty = dir + "/no_boosters.json";
  std::ofstream(empty) << R"({"format": "fusekit-cost-model", "feature_schema": )" << kCostFeatureSchema
                       << R"(, "xgboost_version": "1.7.4", "training_records": 1, "training_samples": 1, "archs": ["sm_90"], "boosters": []})";
  try {
    LearnedCostModel::load(empty);
    ADD_FAILURE() << "a model without boosters loaded";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("holds no boosters"), std::string::npos) << e.what();
  }
}

TEST_F(LearnedCostModelTest, UpdateMovesPredictionsTowardWhatWasMeasured) {
  const Split& split = *split_;
  ProblemCache& problems = *problems_;
  LearnedCostModel* model = model_;
  // One held-out row group: its schedule the model likes least, measured
  // as fast as the group's best.
  std::vector<MeasuredSchedule> group;
  for (const auto& m : split.held)
    if (m.group() == split.held.front().group()) group.push_back(m);
  const Problem& p = problems.problem(group[0]);
  std::vector<Candidate> cands;
  double best = 1e300;
  for (const auto& m : group) cands.push_back(candidate_of(m)), best = std::min(best, m.us);
  const std::vector<double> before = model->predict(p, 4, cands);
  const size_t worst = std::max_element(before.begin(), before.end()) - before.begin();
  auto copy = model->clone();
  copy->update(p, 4, {cands[worst]}, {best});
  EXPECT_LT(copy->predict(p, 4, {cands[worst]})[0], before[worst]);
  EXPECT_EQ(model->predict(p, 4, cands), before) << "a clone's update left the original as it was";
  auto other = model->clone();
  other->update(p, 4, {{Backend::kHalide, Config::parse("lanes=1 threads=128 vec=4")}}, {best});
  EXPECT_EQ(other->predict(p, 4, cands), before) << "a time outside the model's domains is not learned from";
}

TEST_F(LearnedCostModelTest, FallsBackToTheAnalyticModelForAnArchWithoutRecords) {
  const Split& split = *split_;
  ProblemCache& problems = *problems_;
  LearnedCostModel* model = model_;
  const ArchLimits& a100 = require_arch("sm_80");
  auto copy = model->clone();
  copy->set_arch(a100);
  EXPECT_FALSE(copy->knows_arch());
  const Problem& p = problems.problem(split.held[0]);
  const std::vector<Candidate> c{candidate_of(split.held[0])};
  EXPECT_EQ(copy->predict(p, 4, c), make_analytic_cost_model(a100)->predict(p, 4, c));
  EXPECT_TRUE(model->knows_arch());
}

TEST(CostDomain, NamesTheBackendAndTheTemplate) {
  EXPECT_EQ(cost_domain({Backend::kNvrtc, Config::parse("ept=1 threads=256 vec=4")}), "nvrtc pointwise");
  EXPECT_EQ(cost_domain({Backend::kHalide, Config::parse("lanes=1 threads=128 vec=4")}), "halide rows");
  EXPECT_EQ(cost_domain({Backend::kNvrtc, Config::parse("rsplit=1 threads=128")}), "nvrtc general");
}

TEST_F(LearnedCostModelTest, RanksADomainItHasNoRecordsOfByTheAnalyticModel) {
  const MeasuredSchedule& row = *std::find_if(split_->held.begin(), split_->held.end(),
                                              [](const MeasuredSchedule& m) { return m.rows; });
  const Problem& p = problems_->problem(row);
  const size_t bpe = problems_->bytes_per_element(row);
  const Candidate nvrtc = candidate_of(row);
  const Candidate halide{Backend::kHalide, Config::parse("lanes=1 threads=128 vec=4")};
  ASSERT_TRUE(model_->covers(nvrtc));
  ASSERT_FALSE(model_->covers(halide)) << "the sample holds NVRTC records only";
  const auto analytic = make_analytic_cost_model(require_arch("sm_90"))->predict(p, bpe, {nvrtc, halide});
  const auto mixed = model_->predict(p, bpe, {nvrtc, halide});
  EXPECT_EQ(mixed[1], analytic[1]) << "Halide rows: the analytic model's time";
  EXPECT_NE(mixed[0], analytic[0]) << "NVRTC rows: the learned model's";
  EXPECT_EQ(mixed[0], model_->predict(p, bpe, {nvrtc})[0]) << "a neighbour's domain does not change a prediction";
  EXPECT_EQ(model_->predict(p, bpe, {halide}), std::vector<double>{analytic[1]});
}

TEST(LearnedCostModel, AFileWithoutDomainsCoversEveryDomain) {
  const std::string path = ::testing::TempDir() + "/cost_model_no_domains.json";
  {
    ProblemCache problems;
    auto schedules = measured_schedules(read_jsonl(kSample));
    schedules.resize(200);
    train_on(schedules, problems, "time", 1)->save(path);
  }
  nlohmann::json j = nlohmann::json::parse(std::ifstream(path));
  j.erase("domains");  // as files before 2026-12-07 were written
  std::ofstream(path) << j.dump();
  const auto loaded = LearnedCostModel::load(path);
  EXPECT_TRUE(loaded->info().domains.empty());
  EXPECT_TRUE(loaded->covers({Backend::kHalide, Config::parse("lanes=1 threads=128 vec=4")}));
  std::filesystem::remove(path);
}

// The generic pick passes over builds for one row length.
TEST(ModelEval, TheGenericPickPassesOverBuildsForOneRowLength) {
  auto row = [](const std::string& params) { return Candidate{Backend::kHalide, Config::parse(params)}; };
  const std::vector<Candidate> cands = {row("lanes=1 len=1024 threads=64 vec=4"), row("lanes=1 threads=128 vec=4"),
                                        row("lanes=1 threads=64 vec=4")};
  EXPECT_EQ(generic_pick(cands, {1.0, 3.0, 2.0}), 2u);
  EXPECT_EQ(generic_pick(cands, {1.0, 2.0, 3.0}), 1u);
  EXPECT_EQ(generic_pick({cands[0], row("lanes=1 len=1024 threads=128 vec=4")}, {2.0, 1.0}), 1u)
      << "all built for one length";
}

TEST(ModelEval, ReportsHeldOutRegretAndGuidedSearches) {
  // Two ops of each kind: quick, and every fold still has training data.
  std::vector<MeasuredSchedule> few;
  for (auto& m : measured_schedules(read_jsonl(kSample)))
    if (m.pattern == "relu_add" || m.pattern == "silu_mul" || m.pattern == "softmax" || m.pattern == "rmsnorm")
      few.push_back(m);
  ModelEvalOptions o;
  o.train.rounds = 20;
  const std::vector<GroupEval> groups = evaluate_held_out(few, o);
  size_t by_workload = 0;
  for (const GroupEval& g : groups) {
    by_workload += g.holdout == "workload";
    EXPECT_GE(g.learned_top8, 0.0);
    EXPECT_LE(g.learned_top8, g.learned_top1) << g.group;
    EXPECT_GE(g.learned_top1_beyond_spread, 0.0);
    EXPECT_LT(g.learned_top1_beyond_spread, g.learned_top1 + 1e-12) << "a spread only narrows the regret: " << g.group;
    if (g.learned_pick == g.best) {
      EXPECT_EQ(g.learned_top1_beyond_spread, 0.0) << g.group;
    }
    EXPECT_EQ(g.generic_pick, g.learned_pick) << "no row-length builds in the sample: " << g.group;
    EXPECT_EQ(g.generic_top1, g.learned_top1) << g.group;
    EXPECT_GE(g.guided, 1.0) << g.group;
    EXPECT_LE(g.guided, static_cast<double>(g.schedules)) << g.group;
    EXPECT_GE(g.stop_after, 4.0) << "the plateau stop waits for a second batch: " << g.group;
  }
  EXPECT_EQ(by_workload, 20u);  // 2 ops x 4 sizes + 2 ops x 6 shapes
  const auto summary = summarize_eval(groups);
  EXPECT_EQ(summary["workload"]["rows f32"]["groups"].get<size_t>(), 12u);
  EXPECT_TRUE(summary["shape"]["pointwise f32 nvrtc"]["regret"]["learned_top1"].contains("p90"));
  EXPECT_TRUE(summary["workload"]["rows f32"]["regret"]["learned_top1_beyond_spread"].contains("median"));
  EXPECT_FALSE(summary.contains("gpu NVIDIA H200")) << "one GPU: nothing to train its holdout on";
}

// A second GPU of the same arch, 1.5x slower and alike in its ranking: each
// GPU is held out in turn and ranked by a model of the other's records, in
// groups of its own.
TEST(ModelEval, HoldsOutEachGpuAndTrainsOnTheOthers) {
  std::vector<MeasuredSchedule> two;
  for (auto& m : measured_schedules(read_jsonl(kSample))) {
    if (m.pattern != "relu_add" && m.pattern != "softmax") continue;
    two.push_back(m);
    MeasuredSchedule other = m;
    other.gpu = "Other GPU";
    other.us *= 1.5, other.p20_us *= 1.5, other.p80_us *= 1.5;
    two.push_back(other);
  }
  ModelEvalOptions o;
  o.train.rounds = 20;
  o.holdouts = {"gpu"};
  const std::vector<GroupEval> groups = evaluate_held_out(two, o);
  std::map<std::string, size_t> per_fold;
  for (const GroupEval& g : groups) {
    EXPECT_EQ(g.holdout, "gpu");
    EXPECT_EQ(g.group.substr(g.group.size() - g.fold.size()), g.fold) << "a group is one GPU's: " << g.group;
    ++per_fold[g.fold];
  }
  ASSERT_EQ(per_fold.size(), 2u);
  EXPECT_EQ(per_fold["Other GPU"], per_fold.begin()->second);
  EXPECT_EQ(per_fold["Other GPU"], 10u);  // relu_add at 4 sizes, softmax at 6 shapes
  const auto summary = summarize_eval(groups);
  for (const char* fold : {"gpu Other GPU", "gpu NVIDIA H200"}) {
    SCOPED_TRACE(fold);
    ASSERT_TRUE(summary.contains(fold)) << summary.dump();
    // The other GPU's ranking is this one's: its schedules' slowdowns transfer.
    EXPECT_LE(summary[fold]["pointwise f32"]["regret"]["learned_top1"]["median"].get<double>(),
              summary[fold]["pointwise f32"]["regret"]["analytic_top1"]["median"].get<double>());
  }
}

}  // namespace
}  // namespace fusekit
