// The model-guided strategy and the plateau stop with a fake cost model
// (time = the candidate's `i`, or what update() was told) and a fake
// measurer (a table of times).
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "search/interfaces.h"

namespace fusekit {
namespace {

std::vector<Candidate> space(int n) {
  std::vector<Candidate> v;
  for (int i = 0; i < n; ++i) v.push_back({Backend::kNvrtc, Config::parse("i=" + std::to_string(i))});
  return v;
}

std::vector<int64_t> zero_to(int64_t last) {
  std::vector<int64_t> v;
  for (int64_t x = 0; x <= last; ++x) v.push_back(x);
  return v;
}

Problem problem(int64_t n) {
  Problem p;
  p.domain = {n};
  p.shape_text = std::to_string(n);
  p.input_dims = {{n}};
  p.output_dims = {{n}};
  return p;
}

// Predicts `i` microseconds, or the time update() gave for that candidate
// at that size; records every update.
class FakeModel final : public CostModel {
 public:
  std::vector<double> predict(const Problem& p, size_t, const std::vector<Candidate>& batch) const override {
    std::vector<double> out;
    predict_sizes.push_back(batch.size());
    predicted.clear();
    predicted_configs.clear();
    for (const auto& c : batch) {
      predicted.insert(c.config.get("i"));
      predicted_configs.insert(c.config.to_string());
      auto it = learned.find({p.shape_text, c.config.get("i")});
      out.push_back(it != learned.end() ? it->second : static_cast<double>(c.config.get("i")));
    }
    return out;
  }
  void update(const Problem& p, size_t, const std::vector<Candidate>& batch, const std::vector<double>& us) override {
    ++updates;
    for (size_t k = 0; k < batch.size(); ++k) learned[{p.shape_text, batch[k].config.get("i")}] = us[k];
  }
  std::map<std::pair<std::string, int64_t>, double> learned;
  int updates = 0;
  mutable std::vector<size_t> predict_sizes;  // candidates per predict call
  mutable std::set<int64_t> predicted;        // the last call's
  mutable std::set<std::string> predicted_configs;
};

std::vector<int64_t> ids(const std::vector<Candidate>& b) {
  std::vector<int64_t> out;
  for (const auto& c : b) out.push_back(c.config.get("i"));
  return out;
}

// Shared picks (each timed at every problem) with `explore` random ones.
GuidedOptions shared(size_t explore) {
  GuidedOptions o;
  o.explore = explore;
  o.picks_per_problem = 0;
  return o;
}

MeasureResult timed(double us, int problem, double spread = 0.0) {
  MeasureResult m;
  m.median_us = us;
  m.p20_us = us * (1 - spread / 2);
  m.p80_us = us * (1 + spread / 2);
  m.problem = problem;
  return m;
}

TEST(GuidedStrategy, BatchesTheModelsFavouritesAndSomeExploration) {
  FakeModel model;
  auto s = make_guided_strategy(space(20), model, {problem(1024)}, 4, shared(1), 7);
  const auto first = ids(s->next_batch(4));
  ASSERT_EQ(first.size(), 4u);
  EXPECT_EQ(std::vector<int64_t>(first.begin(), first.begin() + 3), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_GT(first[3], 2) << "the fourth is a random pick among the rest";
  std::set<int64_t> seen(first.begin(), first.end());
  size_t total = first.size();
  for (auto b = s->next_batch(4); !b.empty(); b = s->next_batch(4)) {
    for (int64_t i : ids(b)) EXPECT_TRUE(seen.insert(i).second) << "proposed twice: " << i;
    total += b.size();
  }
  EXPECT_EQ(total, 20u);
}

TEST(GuidedStrategy, RanksTheNextBatchByWhatWasMeasured) {
  FakeModel model;
  const Problem small = problem(1024), large = problem(1 << 20);
  auto s = make_guided_strategy(space(20), model, {small, large}, 4, shared(0), 7);
  const auto b1 = s->next_batch(3);
  EXPECT_EQ(ids(b1), (std::vector<int64_t>{0, 1, 2}));
  // Measured at the large size: 0 and 1 slow; 2 failed to verify; a pruned
  // result teaches nothing either.
  MeasureResult failed = timed(0.5, 1);
  failed.status = RecordStatus::kVerifyError;
  s->notify(b1, {timed(50, 1), timed(60, 1), failed});
  EXPECT_EQ(model.updates, 1) << "one update, for the one size that has times";
  EXPECT_EQ(model.learned.size(), 2u);
  EXPECT_EQ(model.learned.count({"1048576", 2}), 0u);
  // Nothing was learned about the others: 3, 4, 5 are next.
  EXPECT_EQ(ids(s->next_batch(3)), (std::vector<int64_t>{3, 4, 5}));
  MeasureResult pruned;
  pruned.status = RecordStatus::kPruned;
  s->notify(space(1), {pruned});
  EXPECT_EQ(model.updates, 1);
}

TEST(GuidedStrategy, TheModelsRankingChangesWithItsUpdates) {
  FakeModel model;
  model.learned[{"1024", 19}] = -1;  // as if a measurement had found 19 fastest
  auto s = make_guided_strategy(space(20), model, {problem(1024)}, 4, shared(0), 7);
  EXPECT_EQ(ids(s->next_batch(2)), (std::vector<int64_t>{19, 0}));
}

// i = 0..n-1 in groups of ten (k = i / 10): schedules of one group are
// one parameter apart.
std::vector<Candidate> grouped_space(int n) {
  std::vector<Candidate> v;
  for (int i = 0; i < n; ++i)
    v.push_back({Backend::kNvrtc, Config::parse("i=" + std::to_string(i) + " k=" + std::to_string(i / 10))});
  return v;
}

TEST(GuidedStrategy, ALargeSpaceIsRankedThroughItsPool) {
  FakeModel model;
  GuidedOptions o = shared(1);
  o.pool = 50, o.grow = 0, o.seeds_first = false;
  o.seeds = {Config::parse("i=77777")};
  auto s = make_guided_strategy(space(100000), model, {problem(1024), problem(4096)}, 4, o, 7);
  const auto b = s->next_batch(4);
  ASSERT_EQ(b.size(), 4u);
  ASSERT_EQ(model.predict_sizes.size(), 2u) << "one ranking per problem";
  for (size_t n : model.predict_sizes) EXPECT_EQ(n, 51u) << "the pool and the seed, not the 100000";
  EXPECT_EQ(model.predicted.count(77777), 1u) << "a seed is ranked whatever the draw";
  s->notify(b, {timed(5, 0), timed(6, 0), timed(7, 1), timed(8, 1)});
  model.predict_sizes.clear();
  s->next_batch(4);
  for (size_t n : model.predict_sizes) EXPECT_LE(n, 52u) << "the pool less the proposed, plus the explored one";
}

TEST(GuidedStrategy, ANewBestBringsItsNeighboursIntoThePool) {
  FakeModel model;
  GuidedOptions o = shared(0);
  o.pool = 5, o.grow = 64;
  auto s = make_guided_strategy(grouped_space(100), model, {problem(1024)}, 4, o, 3);
  const auto b = s->next_batch(2);
  ASSERT_EQ(b.size(), 2u);
  const int64_t best = b[1].config.get("i");
  s->notify(b, {timed(9, 0), timed(4, 0)});  // the second is the faster
  s->next_batch(1);
  for (int64_t i = best / 10 * 10; i < best / 10 * 10 + 10; ++i) {
    if (i != best && i != b[0].config.get("i")) {
      EXPECT_EQ(model.predicted.count(i), 1u) << i << " near " << best;
    }
  }
  EXPECT_LE(model.predicted.size(), 3u + 9u) << "the pool's other three and the new best's nine neighbours";
}

// Per-problem picks: each problem's favourite, timed at that problem only,
// beside one random pick timed everywhere.
TEST(GuidedStrategy, EachProblemTimesItsOwnFavourite) {
  FakeModel model;
  model.learned[{"4096", 5}] = -1;  // the second problem favours 5, the first 0
  GuidedOptions o;
  o.picks_per_problem = 1;
  auto s = make_guided_strategy(space(20), model, {problem(1024), problem(4096)}, 4, o, 7);
  const auto b = ids(s->next_batch(3));
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(std::vector<int64_t>(b.begin(), b.begin() + 2), (std::vector<int64_t>{0, 5}));
  EXPECT_EQ(s->batch_problems(), (std::vector<std::vector<int>>{{0}, {1}, {}}));
  // 0 was timed at the first problem only: it is the second's next favourite.
  const auto b2 = ids(s->next_batch(3));
  ASSERT_EQ(b2.size(), 3u);
  EXPECT_EQ(b2[0], b[2] == 1 ? 2 : 1) << "the first problem's next, past the random pick it timed";
  EXPECT_EQ(b2[1], 0);
  EXPECT_EQ(s->batch_problems()[0], std::vector<int>{0});
  EXPECT_EQ(s->batch_problems()[1], std::vector<int>{1});
}

// A favourite two problems share is one candidate timed at both.
TEST(GuidedStrategy, ASharedFavouriteIsTimedAtBothProblems) {
  FakeModel model;
  GuidedOptions o;
  o.picks_per_problem = 1, o.explore = 0;
  auto s = make_guided_strategy(space(20), model, {problem(1024), problem(4096)}, 4, o, 7);
  EXPECT_EQ(ids(s->next_batch(2)), std::vector<int64_t>{0});
  EXPECT_EQ(s->batch_problems(), (std::vector<std::vector<int>>{{0, 1}}));
}

// A problem retires after `patience` of its batches in a row that did not
// beat its best by more than the best's spread; the search ends when all have.
TEST(GuidedStrategy, AProblemThatStopsImprovingRetires) {
  FakeModel model;
  GuidedOptions o;
  o.picks_per_problem = 1, o.explore = 0, o.patience = 2;
  auto s = make_guided_strategy(space(20), model, {problem(1024), problem(4096)}, 4, o, 7);
  auto round = [&](double us0, double us1) {
    const auto b = s->next_batch(2);
    std::vector<MeasureResult> results;
    const auto where = s->batch_problems();
    for (size_t k = 0; k < b.size(); ++k)
      for (int p : where[k]) {
        MeasureResult m = timed(p == 0 ? us0 : us1, p, 0.02);
        m.candidate = static_cast<int>(k);
        results.push_back(m);
      }
    s->notify(b, results);
    return where;
  };
  round(10, 10);   // first times: progress at both
  round(9, 10.1);  // problem 0 improves beyond 2 %; problem 1 does not (1)
  round(9, 10);    // neither (0: 1, 1: 2, retired)
  const auto where = round(8.9, 1);
  ASSERT_EQ(where.size(), 1u) << "only problem 0 still picks";
  EXPECT_EQ(where[0], std::vector<int>{0});
  EXPECT_TRUE(s->next_batch(2).empty()) << "problem 0 had its second batch without a gain beyond its spread";
}

// A space too large to list: the pool is drawn (legal schedules only), the
// seeds join it, and a new best brings its legal neighbours.
TEST(GuidedStrategy, DrawsFromASpaceTooLargeToList) {
  ParamSpace space;
  const std::vector<int64_t> values = zero_to(99);
  space.add("i", values);
  space.add("k", values);
  space.require("i + k divisible by 3", [](const Config& c) { return (c.get("i") + c.get("k")) % 3 == 0; });
  FakeModel model;
  GuidedOptions o;
  o.pool = 40, o.grow = 1000, o.explore = 1, o.picks_per_problem = 1, o.seeds_first = false;
  o.seeds = {Config::parse("i=98 k=97")};
  auto s = make_guided_strategy(space, Backend::kNvrtc, model, {problem(1024)}, 4, o, 11);
  const auto b = s->next_batch(2);
  ASSERT_EQ(b.size(), 2u);
  ASSERT_EQ(model.predict_sizes.size(), 1u);
  EXPECT_EQ(model.predict_sizes[0], 41u) << "the drawn pool and the seed";
  EXPECT_EQ(model.predicted.count(98), 1u);
  for (const auto& c : b) EXPECT_TRUE(space.legal(c.config)) << c.config.to_string();
  s->notify(b, {timed(5, 0), timed(4, 0)});  // the random pick is the new best
  s->next_batch(2);
  const Config best = b[1].config;
  for (int v = 0; v < 100; ++v)
    for (const char* name : {"i", "k"}) {
      Config n = best;
      n.set(name, v);
      if (n == best || !space.legal(n) || n == b[0].config) continue;
      EXPECT_EQ(model.predicted_configs.count(n.to_string()), 1u) << n.to_string() << " near " << best.to_string();
    }
  for (const std::string& c : model.predicted_configs) EXPECT_TRUE(space.legal(Config::parse(c))) << c;
}

// A traded pair (a row's threads and split) moves together from a new best,
// before any one parameter does: 512 x 4 -> 1024 x 2 is one step.
TEST(GuidedStrategy, ANewBestsTradedPairMovesTogetherFirst) {
  ParamSpace space;
  space.add("i", zero_to(99));
  space.add("threads", {256, 512, 1024});
  space.add("split", {1, 2, 4, 8});
  space.trade("threads", "split");
  FakeModel model;
  GuidedOptions o;
  o.pool = 10, o.grow = 2, o.explore = 0, o.picks_per_problem = 1, o.seeds_first = true;
  o.seeds = {Config::parse("i=0 split=4 threads=512")};
  auto s = make_guided_strategy(space, Backend::kNvrtc, model, {problem(1024)}, 4, o, 5);
  const auto b = s->next_batch(1);
  ASSERT_EQ(b.size(), 1u);
  ASSERT_EQ(b[0].config.to_string(), "i=0 split=4 threads=512");
  s->notify(b, {timed(5, 0)});
  s->next_batch(1);
  EXPECT_EQ(model.predicted_configs.count("i=0 split=2 threads=1024"), 1u) << "threads up, split down";
  EXPECT_EQ(model.predicted_configs.count("i=0 split=8 threads=256"), 1u) << "threads down, split up";
  EXPECT_EQ(model.predicted_configs.count("i=1 split=4 threads=512"), 0u) << "grow=2: the trades came first";
}

// The first batch ranks the seeds alone, the later ones the whole pool (the
// seeds included); per problem, each problem's best-ranked seed.
TEST(GuidedStrategy, TheFirstBatchRanksTheSeedsAlone) {
  FakeModel model;
  GuidedOptions o = shared(0);
  o.seeds = {Config::parse("i=17"), Config::parse("i=12"), Config::parse("i=19")};
  auto s = make_guided_strategy(space(20), model, {problem(1024)}, 4, o, 7);
  EXPECT_EQ(ids(s->next_batch(2)), (std::vector<int64_t>{12, 17}));
  EXPECT_EQ(ids(s->next_batch(2)), (std::vector<int64_t>{0, 1}));
  model.learned[{"4096", 19}] = -1;  // the second problem's favourite seed
  o.picks_per_problem = 1;
  auto per = make_guided_strategy(space(20), model, {problem(1024), problem(4096)}, 4, o, 7);
  EXPECT_EQ(ids(per->next_batch(2)), (std::vector<int64_t>{12, 19}));
  EXPECT_EQ(per->batch_problems(), (std::vector<std::vector<int>>{{0}, {1}}));
  EXPECT_EQ(ids(per->next_batch(2)), std::vector<int64_t>{0}) << "both problems' next favourite in the pool";
  EXPECT_EQ(per->batch_problems(), (std::vector<std::vector<int>>{{0, 1}}));
}

// With rank_as, the model ranks each schedule as it will be timed in the end
// (here: i reversed, the problem's length added); the batch is the schedules.
TEST(GuidedStrategy, RanksEachScheduleAsItWillBeTimedInTheEnd) {
  FakeModel model;
  GuidedOptions o = shared(0);
  o.rank_as = [](const Config& c, const Problem& p) {
    Config built = c;
    built.set("i", 19 - c.get("i"));
    built.set("len", p.domain.front());
    return built;
  };
  auto s = make_guided_strategy(space(20), model, {problem(1024)}, 4, o, 7);
  const std::vector<Candidate> b = s->next_batch(2);
  EXPECT_EQ(ids(b), (std::vector<int64_t>{19, 18}));
  EXPECT_FALSE(b[0].config.values().count("len")) << "timed as itself";
  EXPECT_TRUE(model.predicted_configs.count("i=0 len=1024")) << "ranked as built";
}

TEST(PlateauStop, StopsAfterABatchThatImprovesNothingBeyondItsSpread) {
  auto stop = make_plateau_stop(100, 1, 0.01);
  stop->update({timed(10, 0, 0.04), timed(12, 0)});  // first times: progress
  EXPECT_FALSE(stop->is_fulfilled());
  stop->update({timed(9, 0, 0.02)});  // 10 % better than 10 +- 2 %
  EXPECT_FALSE(stop->is_fulfilled());
  stop->update({timed(8.95, 0), timed(20, 0)});  // within 9's 2 % spread
  EXPECT_TRUE(stop->is_fulfilled());
}

TEST(PlateauStop, AFirstTimeAtAnotherShapeIsProgressAndTheBudgetStillEnds) {
  auto stop = make_plateau_stop(6, 1, 0.01);
  stop->update({timed(10, 0)});
  stop->update({timed(10, 0), timed(100, 1)});  // shape 1's first time
  EXPECT_FALSE(stop->is_fulfilled());
  MeasureResult failed;
  failed.status = RecordStatus::kLaunchError;
  stop->update({failed, failed});
  EXPECT_TRUE(stop->is_fulfilled()) << "a batch of failures improves nothing";
  auto budget = make_plateau_stop(3, 1, 0.01);
  budget->update({timed(10, 0), timed(9, 0), timed(8, 0)});
  EXPECT_TRUE(budget->is_fulfilled());
}

TEST(PlateauStop, WaitsForItsMinimumOfBatches) {
  auto stop = make_plateau_stop(100, 3, 0.01);
  for (int i = 0; i < 3; ++i) {
    stop->update({timed(10, 0)});
    EXPECT_FALSE(stop->is_fulfilled()) << "batch " << i;
  }
  stop->update({timed(10, 0)});
  EXPECT_TRUE(stop->is_fulfilled());
}

}  // namespace
}  // namespace fusekit
