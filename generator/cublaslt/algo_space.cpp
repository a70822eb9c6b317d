#include "generator/cublaslt/algo_space.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

namespace fusekit {
namespace {

auto key(const AlgoConfig& c) {
  return std::tie(c.id, c.tile, c.stages, c.split_k, c.reduction, c.swizzle, c.custom, c.cluster);
}

std::vector<uint32_t> or_undefined(const std::vector<uint32_t>& ids) {
  return ids.empty() ? std::vector<uint32_t>{0} : ids;
}

// The reduction schemes of a split: none for split 1, else each bit of the mask.
std::vector<uint32_t> reductions(int split, uint32_t mask) {
  if (split == 1) return {0};
  std::vector<uint32_t> out;
  for (uint32_t bit = 1; bit <= 4; bit <<= 1)
    if (mask & bit) out.push_back(bit);
  return out;
}

std::vector<uint32_t> customs(const AlgoCaps& caps, const AlgoSpaceOptions& o) {
  std::vector<uint32_t> out;
  for (int c = 0; c <= std::min(caps.custom_max, o.max_custom); ++c) out.push_back(static_cast<uint32_t>(c));
  return out;
}

// Every configuration of one id, tiles outermost.
std::vector<AlgoConfig> id_grid(const AlgoCaps& caps, const std::vector<int>& splits, const AlgoSpaceOptions& o) {
  std::vector<AlgoConfig> out;
  AlgoConfig c;
  c.id = caps.id;
  for (uint32_t tile : or_undefined(caps.tiles))
    for (uint32_t stages : or_undefined(caps.stages))
      for (int split : caps.split_k ? splits : std::vector<int>{1})
        for (uint32_t red : reductions(split, caps.reduction_mask))
          for (uint32_t swz = 0; swz <= (caps.swizzle ? 1u : 0u); ++swz)
            for (uint32_t custom : customs(caps, o))
              for (uint16_t cluster : o.clusters) {
                c.tile = tile, c.stages = stages, c.split_k = split, c.reduction = red;
                c.swizzle = swz, c.custom = custom, c.cluster = cluster;
                out.push_back(c);
              }
  return out;
}

}  // namespace

bool AlgoConfig::operator==(const AlgoConfig& o) const { return key(*this) == key(o); }
bool AlgoConfig::operator<(const AlgoConfig& o) const { return key(*this) < key(o); }

std::string algo_config_text(const AlgoConfig& c) {
  return "id=" + std::to_string(c.id) + " tile=" + std::to_string(c.tile) + " stages=" + std::to_string(c.stages) +
         " splitk=" + std::to_string(c.split_k) + " red=" + std::to_string(c.reduction) +
         " swz=" + std::to_string(c.swizzle) + " custom=" + std::to_string(c.custom) +
         " cluster=" + std::to_string(c.cluster);
}

std::vector<int> split_k_factors(int64_t k, const AlgoSpaceOptions& o) {
  std::vector<int> out = {1};
  for (int s : o.split_k)
    if (s > 1 && k / s >= o.min_k_per_split) out.push_back(s);
  return out;
}

std::vector<AlgoConfig> algo_neighbours(const AlgoConfig& seed, const AlgoCaps& caps, int64_t k,
                                        const AlgoSpaceOptions& o) {
  std::set<AlgoConfig> out;
  auto vary = [&](auto&& set_value, const auto& values) {
    for (const auto& v : values) {
      AlgoConfig c = seed;
      set_value(c, v);
      out.insert(c);
    }
  };
  vary([](AlgoConfig& c, uint32_t v) { c.tile = v; }, or_undefined(caps.tiles));
  vary([](AlgoConfig& c, uint32_t v) { c.stages = v; }, or_undefined(caps.stages));
  if (caps.split_k)
    for (int split : split_k_factors(k, o))
      vary([split](AlgoConfig& c, uint32_t red) { c.split_k = split, c.reduction = red; },
           reductions(split, caps.reduction_mask));
  if (caps.swizzle) vary([](AlgoConfig& c, uint32_t v) { c.swizzle = v; }, std::vector<uint32_t>{0, 1});
  vary([](AlgoConfig& c, uint32_t v) { c.custom = v; }, customs(caps, o));
  vary([](AlgoConfig& c, uint16_t v) { c.cluster = v; }, o.clusters);
  out.erase(seed);
  return {out.begin(), out.end()};
}

std::vector<AlgoConfig> algo_grid(const std::vector<AlgoCaps>& caps, int64_t k, const AlgoSpaceOptions& o) {
  const std::vector<int> splits = split_k_factors(k, o);
  std::vector<std::vector<AlgoConfig>> per_id;
  for (const AlgoCaps& c : caps) per_id.push_back(id_grid(c, splits, o));
  // Each id's share picked evenly through its list (all of it where it
  // fits), then the ids interleaved.
  const size_t share = per_id.empty() ? 0 : std::max<size_t>(1, o.max_grid / per_id.size());
  std::vector<std::vector<AlgoConfig>> picks;
  size_t longest = 0;
  for (const auto& g : per_id) {
    std::vector<AlgoConfig> p;
    const size_t n = std::min(share, g.size());
    for (size_t j = 0; j < n; ++j) p.push_back(g[j * g.size() / n]);
    longest = std::max(longest, p.size());
    picks.push_back(std::move(p));
  }
  std::vector<AlgoConfig> out;
  for (size_t j = 0; j < longest; ++j)
    for (const auto& p : picks)
      if (j < p.size() && out.size() < o.max_grid) out.push_back(p[j]);
  return out;
}

double wave_efficiency(float waves) {
  if (waves <= 0) return 0;
  if (waves < 1) return waves;
  return waves / std::ceil(waves);
}

std::vector<CheckedAlgo> select_for_timing(std::vector<CheckedAlgo> checked, size_t budget) {
  std::stable_sort(checked.begin(), checked.end(), [](const CheckedAlgo& a, const CheckedAlgo& b) {
    if (a.neighbour != b.neighbour) return a.neighbour;
    return wave_efficiency(a.waves) > wave_efficiency(b.waves);
  });
  std::vector<CheckedAlgo> out, rest;
  std::set<std::tuple<int, uint32_t, uint32_t>> tiles;
  for (const CheckedAlgo& c : checked) {
    if (out.size() < budget && tiles.insert({c.config.id, c.config.tile, c.config.stages}).second)
      out.push_back(c);
    else
      rest.push_back(c);
  }
  for (const CheckedAlgo& c : rest)
    if (out.size() < budget) out.push_back(c);
  return out;
}

}  // namespace fusekit
