#include <gtest/gtest.h>

#include <set>

#include "schedules/pointwise_template.h"
#include "schedules/row_reduction_template.h"
#include "search/interfaces.h"

namespace fusekit {
namespace {

std::vector<Candidate> space(int n) {
  std::vector<Candidate> v;
  for (int i = 0; i < n; ++i) v.push_back({Backend::kNvrtc, Config::parse("i=" + std::to_string(i))});
  return v;
}

TEST(ExhaustiveStrategy, ProposesEverythingOnceInOrder) {
  auto s = make_exhaustive_strategy(space(10));
  std::vector<int64_t> seen;
  for (auto b = s->next_batch(3); !b.empty(); b = s->next_batch(3))
    for (const auto& c : b) seen.push_back(c.config.get("i"));
  EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
}

TEST(RandomStrategy, SamplesWithoutReplacementUnderTheBudgetAndIsSeeded) {
  auto draw = [](uint64_t seed) {
    auto s = make_random_strategy(space(100), 12, seed);
    std::vector<int64_t> out;
    for (auto b = s->next_batch(5); !b.empty(); b = s->next_batch(5))
      for (const auto& c : b) out.push_back(c.config.get("i"));
    return out;
  };
  auto a = draw(7);
  EXPECT_EQ(a.size(), 12u);
  EXPECT_EQ(std::set<int64_t>(a.begin(), a.end()).size(), 12u);
  EXPECT_EQ(draw(7), a);
  EXPECT_NE(draw(8), a);
}

TEST(CountStop, FulfilledAfterTheBudget) {
  auto stop = make_count_stop(5);
  EXPECT_FALSE(stop->is_fulfilled());
  stop->update(std::vector<MeasureResult>(3));
  EXPECT_FALSE(stop->is_fulfilled());
  stop->update(std::vector<MeasureResult>(2));
  EXPECT_TRUE(stop->is_fulfilled());
}

TEST(MeasureResult, SummarizesMedianAndSpread) {
  MeasureResult r;
  for (int i = 10; i >= 1; --i) r.samples_us.push_back(i);
  r.summarize();
  EXPECT_DOUBLE_EQ(r.median_us, 6);  // index round(0.5 * 9) = 5 of 1..10
  EXPECT_DOUBLE_EQ(r.p20_us, 3);
  EXPECT_DOUBLE_EQ(r.p80_us, 8);
}

TEST(AnalyticCostModel, PrefersWideAccessesAndPenalizesTinyTails) {
  auto model = make_analytic_cost_model(require_arch("sm_90"));
  Problem p;
  p.domain = {1 << 26};
  p.input_dims = {{1 << 26}, {1 << 26}};
  p.output_dims = {{1 << 26}};
  auto t = model->predict(p, 4, {{Backend::kNvrtc, Config::parse("threads=256 vec=4 ept=2 grid=0")},
                                 {Backend::kNvrtc, Config::parse("threads=256 vec=1 ept=1 grid=0")}});
  EXPECT_LT(t[0], t[1]);
  // Never faster than the datasheet bandwidth allows.
  EXPECT_GT(t[0], p.bytes_moved(4) / (3350e9) * 1e6);
}

}  // namespace
}  // namespace fusekit

namespace fusekit {
namespace {

TEST(SeededRandomStrategy, TriesLegalSeedsFirstThenSamplesTheRest) {
  auto s = make_seeded_random_strategy(space(50),
                                       {{Backend::kNvrtc, Config::parse("i=7")}, {Backend::kNvrtc, Config::parse("i=99")},
                                        {Backend::kNvrtc, Config::parse("i=3")}, {Backend::kNvrtc, Config::parse("i=7")}},
                                       10, 1);
  std::vector<int64_t> seen;
  for (auto b = s->next_batch(4); !b.empty(); b = s->next_batch(4))
    for (const auto& c : b) seen.push_back(c.config.get("i"));
  ASSERT_EQ(seen.size(), 10u);
  EXPECT_EQ(seen[0], 7);   // seeds in order; i=99 is not in the space; the repeat is dropped
  EXPECT_EQ(seen[1], 3);
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 10u);
}

TEST(SeededRandomStrategy, ThenTheRankedFavouritesThenSamples) {
  const Candidate seed{Backend::kNvrtc, Config::parse("i=7")};
  std::vector<Candidate> ranked;
  for (int i : {7, 40, 41, 42, 43}) ranked.push_back({Backend::kNvrtc, Config::parse("i=" + std::to_string(i))});
  auto s = make_seeded_random_strategy(space(50), {seed}, 8, 1, ranked, 3);
  std::vector<int64_t> seen;
  for (auto b = s->next_batch(3); !b.empty(); b = s->next_batch(3))
    for (const auto& c : b) seen.push_back(c.config.get("i"));
  ASSERT_EQ(seen.size(), 8u);
  // The seed; three favourites (7 is already taken); four random others.
  EXPECT_EQ(std::vector<int64_t>(seen.begin(), seen.begin() + 4), (std::vector<int64_t>{7, 40, 41, 42}));
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 8u);
}

TEST(PointwiseSeeds, AreLegalOnEveryArch) {
  for (const auto& arch : known_arch_limits())
    for (Backend b : {Backend::kNvrtc, Backend::kHalide})
      for (int bytes : {2, 4}) {
        // An op with per-plane inputs (bn_relu) takes every seed; any other
        // op every seed but the plane tiles.
        OpTraits planes;
        planes.plane_inputs = 2;
        ParamSpace sp = PointwiseTemplate::space(arch, b, bytes, planes);
        ParamSpace flat = PointwiseTemplate::space(arch, b, bytes);
        for (const auto& c : PointwiseTemplate::seeds(b, bytes)) {
          EXPECT_TRUE(sp.legal(c)) << arch.arch.name() << " " << c.to_string() << ": " << sp.violation(c);
          EXPECT_EQ(flat.legal(c), c.get_or("plane", 0) == 0) << arch.arch.name() << " " << c.to_string();
        }
      }
  // Full-occupancy twins (nvrtc only) at 128 and 256 threads.
  for (Backend b : {Backend::kNvrtc, Backend::kHalide}) {
    int twins = 0;
    for (const auto& c : PointwiseTemplate::seeds(b, 2)) {
      if (c.get_or("occ", 0) == 0) continue;
      ++twins;
      EXPECT_LE(c.get("threads"), 256) << c.to_string();
    }
    EXPECT_EQ(twins, b == Backend::kNvrtc ? 4 : 0);
  }
}

}  // namespace
}  // namespace fusekit
