// The algorithm space beyond cuBLASLt's heuristic: the configurations
// built from capabilities (neighbours, grid, split-K factors), the pick of
// those to time, and the walk through a fake cuBLASLt whose blobs are
// their configurations.
#include <gtest/gtest.h>

#include <set>

#include "generator/cublaslt/algo_search.h"
#include "generator/cublaslt/algo_space.h"
#include "tests/runtime/fake_cublaslt.h"

namespace fusekit {
namespace {

AlgoCaps caps(int id) {
  AlgoCaps c;
  c.id = id;
  c.tiles = {1, 2, 3};
  c.stages = {7, 8};
  c.split_k = true;
  c.reduction_mask = 1 | 4;
  c.swizzle = true;
  c.custom_max = 5;
  return c;
}

AlgoSpaceOptions options() {
  AlgoSpaceOptions o;
  o.split_k = {1, 2, 4};
  o.min_k_per_split = 256;
  o.max_custom = 1;
  o.clusters = {0, 3};
  return o;
}

TEST(AlgoSpace, SplitKFactorsLeaveEnoughK) {
  EXPECT_EQ(split_k_factors(4096, options()), (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(split_k_factors(768, options()), (std::vector<int>{1, 2})) << "768 / 4 = 192 < 256";
  EXPECT_EQ(split_k_factors(64, options()), (std::vector<int>{1}));
}

TEST(AlgoSpace, NeighboursChangeOneAttributeWithinTheCaps) {
  AlgoConfig seed;
  seed.id = 5, seed.tile = 2, seed.stages = 7;
  const std::vector<AlgoConfig> n = algo_neighbours(seed, caps(5), 4096, options());
  // tiles 1, 3; stages 8; split 2 and 4 with reductions 1 and 4; swizzle 1; custom 1; cluster 3.
  EXPECT_EQ(n.size(), 2u + 1 + 4 + 1 + 1 + 1);
  for (const AlgoConfig& c : n) {
    EXPECT_FALSE(c == seed);
    int changed = (c.tile != seed.tile) + (c.stages != seed.stages) + (c.split_k != seed.split_k) +
                  (c.swizzle != seed.swizzle) + (c.custom != seed.custom) + (c.cluster != seed.cluster);
    EXPECT_EQ(changed, 1) << algo_config_text(c);
    EXPECT_EQ(c.split_k > 1, c.reduction != 0) << "a reduction scheme with each split, none without";
    EXPECT_NE(c.reduction, 2u) << "scheme 2 is not in the mask";
  }
  AlgoCaps plain = caps(5);
  plain.split_k = false, plain.swizzle = false, plain.custom_max = 0;
  for (const AlgoConfig& c : algo_neighbours(seed, plain, 4096, options())) {
    EXPECT_EQ(c.split_k, 1) << "no split-K where the id lacks it";
    EXPECT_EQ(c.swizzle, 0u);
    EXPECT_EQ(c.custom, 0u);
  }
}

TEST(AlgoSpace, GridCoversEveryIdUnderItsCap) {
  const std::vector<AlgoCaps> all = {caps(1), caps(2), caps(3)};
  AlgoSpaceOptions o = options();
  const std::vector<AlgoConfig> whole = algo_grid(all, 4096, o);
  // Per id: 3 tiles x 2 stages x (1 + 2 splits x 2 reductions) x 2 swizzles x 2 customs x 2 clusters.
  EXPECT_EQ(whole.size(), 3u * 3 * 2 * 5 * 2 * 2 * 2);
  EXPECT_EQ(std::set<AlgoConfig>(whole.begin(), whole.end()).size(), whole.size()) << "no repeats";
  o.max_grid = 30;
  const std::vector<AlgoConfig> capped = algo_grid(all, 4096, o);
  ASSERT_EQ(capped.size(), 30u);
  std::map<int, std::set<uint32_t>> tiles;
  for (const AlgoConfig& c : capped) tiles[c.id].insert(c.tile);
  for (int id : {1, 2, 3}) EXPECT_EQ(tiles[id].size(), 3u) << "id " << id << " keeps all its tiles under the cap";
  EXPECT_EQ(capped[0].id, 1);
  EXPECT_EQ(capped[1].id, 2) << "ids interleaved";
}

TEST(AlgoSpace, UndefinedTilesAndStagesStillGiveAConfiguration) {
  AlgoCaps bare;
  bare.id = 9;
  const std::vector<AlgoConfig> g = algo_grid({bare}, 4096, options());
  ASSERT_EQ(g.size(), 2u) << "one per cluster shape";
  EXPECT_EQ(g[0].tile, 0u);
  EXPECT_EQ(g[0].stages, 0u);
}

TEST(AlgoSpace, WaveEfficiency) {
  EXPECT_DOUBLE_EQ(wave_efficiency(2.0f), 1.0);
  EXPECT_DOUBLE_EQ(wave_efficiency(1.25f), 1.25 / 2);
  EXPECT_DOUBLE_EQ(wave_efficiency(0.5f), 0.5);
  EXPECT_DOUBLE_EQ(wave_efficiency(0.0f), 0.0);
}

TEST(AlgoSpace, SelectionPutsNeighboursFirstAndSpansTiles) {
  std::vector<CheckedAlgo> checked;
  auto add = [&](int id, uint32_t tile, uint32_t custom, bool neighbour, float waves) {
    CheckedAlgo c;
    c.config.id = id, c.config.tile = tile, c.config.custom = custom;
    c.neighbour = neighbour, c.waves = waves;
    checked.push_back(c);
  };
  add(1, 1, 0, false, 4.0f);
  add(1, 1, 1, false, 4.0f);
  add(1, 2, 0, false, 3.5f);
  add(2, 1, 0, false, 1.1f);
  add(3, 1, 0, true, 1.1f);
  const std::vector<CheckedAlgo> s = select_for_timing(checked, 4);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].config.id, 3) << "a neighbour of the heuristic's answers first, however its waves";
  EXPECT_EQ(s[1].config.id, 1);
  EXPECT_EQ(s[1].config.custom, 0u);
  // One per (id, tile, stages) before a second of any: custom=1 of (1, 1) comes last and is cut.
  for (const CheckedAlgo& c : s) EXPECT_FALSE(c.config.id == 1 && c.config.tile == 1 && c.config.custom == 1);
  EXPECT_EQ(select_for_timing(checked, 10).size(), checked.size());
}

class AlgoSearch : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_lt::reset();
    fake_lt::State::Caps c;
    c.tiles = {2, 3, 4};
    c.stages = {7};
    c.split_k = 1;
    c.reduction_mask = 1;
    fake_lt::state().caps[5] = c;
    c.epilogue_mask = 1;  // CUBLASLT_EPILOGUE_DEFAULT only
    fake_lt::state().caps[6] = c;
    shape.m = 128, shape.n = 768, shape.k = 3072, shape.dtype = DType::kF16;
  }

  GemmHeuristic seed() const {
    GemmHeuristic h;
    h.algo.data[CUBLASLT_ALGO_CONFIG_ID] = 5;
    h.algo.data[CUBLASLT_ALGO_CONFIG_TILE_ID] = 2;
    h.algo.data[CUBLASLT_ALGO_CONFIG_SPLITK_NUM] = 1;
    h.algo.data[CUBLASLT_ALGO_CONFIG_STAGES_ID] = 7;
    return h;
  }

  GemmShape shape;
};

TEST_F(AlgoSearch, ChecksBuiltConfigurationsAndSkipsTheHeuristicsOwn) {
  // The check refuses tile 4 with a split.
  fake_lt::state().refuse = [](const cublasLtMatmulAlgo_t& a) {
    return a.data[CUBLASLT_ALGO_CONFIG_TILE_ID] == 4 && a.data[CUBLASLT_ALGO_CONFIG_SPLITK_NUM] > 1;
  };
  GemmSessions sessions(fake_lt::driver(), fake_lt::table());
  GemmPlan plan;
  plan.epilogue = GemmEpilogue::kBias;
  AlgoSearchStats stats;
  const std::vector<GemmHeuristic> found = search_algo_space(
      fake_lt::table(), sessions, shape, plan, 0x30000, size_t{32} << 20, nullptr, {seed()}, options(), 100, &stats);
  EXPECT_EQ(stats.ids, 1) << "id 6 lacks the bias epilogue";
  EXPECT_EQ(static_cast<int>(stats.built), fake_lt::state().checks);
  EXPECT_LT(stats.accepted, stats.built) << "the refused ones are dropped";
  ASSERT_EQ(found.size(), stats.accepted);
  for (const GemmHeuristic& h : found) {
    EXPECT_EQ(h.algo.data[CUBLASLT_ALGO_CONFIG_ID], 5u);
    EXPECT_FALSE(h.algo.data[CUBLASLT_ALGO_CONFIG_TILE_ID] == 2 && h.algo.data[CUBLASLT_ALGO_CONFIG_SPLITK_NUM] == 1 &&
                 h.algo.data[CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING] == 0 && h.algo.data[CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION] == 0 &&
                 h.algo.data[7] == 0)
        << "the heuristic's own answer is not timed twice";
    EXPECT_FALSE(h.algo.data[CUBLASLT_ALGO_CONFIG_TILE_ID] == 4 && h.algo.data[CUBLASLT_ALGO_CONFIG_SPLITK_NUM] > 1);
    EXPECT_EQ(h.workspace_bytes, h.algo.data[CUBLASLT_ALGO_CONFIG_SPLITK_NUM] > 1 ? size_t{1} << 20 : 0u);
  }
  EXPECT_TRUE(stats.notes.empty()) << stats.notes;
}

TEST_F(AlgoSearch, WorkspaceLimitAndBudgetHold) {
  GemmSessions sessions(fake_lt::driver(), fake_lt::table());
  AlgoSearchStats stats;
  std::vector<GemmHeuristic> found = search_algo_space(fake_lt::table(), sessions, shape, GemmPlan(), 0, 0, nullptr,
                                                       {seed()}, options(), 100, &stats);
  EXPECT_EQ(stats.ids, 2);
  for (const GemmHeuristic& h : found)
    EXPECT_EQ(h.algo.data[CUBLASLT_ALGO_CONFIG_SPLITK_NUM], 1u) << "split-K needs workspace; the limit is 0";
  found = search_algo_space(fake_lt::table(), sessions, shape, GemmPlan(), 0, size_t{32} << 20, nullptr, {seed()},
                            options(), 5, &stats);
  EXPECT_EQ(found.size(), 5u);
  // The first picks are neighbours of the seed (id 5): one attribute away.
  EXPECT_EQ(found[0].algo.data[CUBLASLT_ALGO_CONFIG_ID], 5u);
}

TEST_F(AlgoSearch, NoIdsLeavesANoteNotAThrow) {
  fake_lt::state().caps.clear();
  GemmSessions sessions(fake_lt::driver(), fake_lt::table());
  AlgoSearchStats stats;
  EXPECT_TRUE(search_algo_space(fake_lt::table(), sessions, shape, GemmPlan(), 0, 0, nullptr, {seed()}, options(), 8,
                                &stats)
                  .empty());
  EXPECT_EQ(stats.ids, 0);
}

}  // namespace
}  // namespace fusekit
