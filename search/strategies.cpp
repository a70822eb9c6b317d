// Exhaustive and random-sampling search strategies, and the count stop.
#include <algorithm>

#include "search/interfaces.h"

namespace fusekit {
namespace {

// Walks a fixed list in order; exhaustive and random differ only in the list.
class ListStrategy final : public SearchStrategy {
 public:
  explicit ListStrategy(std::vector<Candidate> order) : order_(std::move(order)) {}
  std::vector<Candidate> next_batch(size_t max) override {
    std::vector<Candidate> out;
    while (next_ < order_.size() && out.size() < max) out.push_back(order_[next_++]);
    return out;
  }
  void notify(const std::vector<Candidate>&, const std::vector<MeasureResult>&) override {}

 private:
  std::vector<Candidate> order_;
  size_t next_ = 0;
};

class CountStop final : public StopCondition {
 public:
  explicit CountStop(size_t max) : max_(max) {}
  bool is_fulfilled() const override { return seen_ >= max_; }
  void update(const std::vector<MeasureResult>& results) override { seen_ += candidates_in(results); }

 private:
  size_t max_;
  size_t seen_ = 0;
};

}  // namespace

size_t candidates_in(const std::vector<MeasureResult>& results) {
  std::vector<size_t> seen;
  for (size_t i = 0; i < results.size(); ++i) seen.push_back(candidate_index(results, i));
  std::sort(seen.begin(), seen.end());
  return static_cast<size_t>(std::unique(seen.begin(), seen.end()) - seen.begin());
}

std::unique_ptr<SearchStrategy> make_exhaustive_strategy(std::vector<Candidate> space) {
  return std::make_unique<ListStrategy>(std::move(space));
}

std::unique_ptr<SearchStrategy> make_random_strategy(std::vector<Candidate> space, size_t budget, uint64_t seed) {
  // Sampling without replacement: a seeded shuffle, truncated to the budget.
  std::mt19937_64 rng(seed);
  std::shuffle(space.begin(), space.end(), rng);
  if (space.size() > budget) space.resize(budget);
  return std::make_unique<ListStrategy>(std::move(space));
}

std::unique_ptr<SearchStrategy> make_seeded_random_strategy(std::vector<Candidate> space,
                                                            const std::vector<Candidate>& seeds, size_t budget,
                                                            uint64_t seed, const std::vector<Candidate>& ranked,
                                                            size_t ranked_budget) {
  std::vector<Candidate> order, rest;
  auto same = [](const Candidate& a, const Candidate& b) { return a.backend == b.backend && a.config == b.config; };
  auto take = [&](const std::vector<Candidate>& from, size_t limit) {
    for (const auto& s : from) {
      if (order.size() >= limit) break;
      const bool in_space = std::any_of(space.begin(), space.end(), [&](const Candidate& c) { return same(c, s); });
      const bool dup = std::any_of(order.begin(), order.end(), [&](const Candidate& c) { return same(c, s); });
      if (in_space && !dup) order.push_back(s);
    }
  };
  take(seeds, budget);
  take(ranked, std::min(budget, order.size() + ranked_budget));
  for (const auto& c : space)
    if (std::none_of(order.begin(), order.end(), [&](const Candidate& o) { return same(o, c); })) rest.push_back(c);
  std::mt19937_64 rng(seed);
  std::shuffle(rest.begin(), rest.end(), rng);
  for (size_t i = 0; i < rest.size() && order.size() < budget; ++i) order.push_back(rest[i]);
  return std::make_unique<ListStrategy>(std::move(order));
}

std::unique_ptr<StopCondition> make_count_stop(size_t max_candidates) {
  return std::make_unique<CountStop>(max_candidates);
}

void MeasureResult::summarize() {
  if (samples_us.empty()) return;
  std::vector<double> s = samples_us;
  std::sort(s.begin(), s.end());
  auto pct = [&](double q) { return s[static_cast<size_t>(q * static_cast<double>(s.size() - 1) + 0.5)]; };
  median_us = pct(0.5);
  p20_us = pct(0.2);
  p80_us = pct(0.8);
}

}  // namespace fusekit
