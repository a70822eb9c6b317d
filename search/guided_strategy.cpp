// Model-guided search and the plateau stop (after Ansor and MetaSchedule:
// a cost model ranks the space, the GPU times its favourites plus a few
// random picks, and what was timed retrains the model before the next batch).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "search/interfaces.h"

namespace fusekit {
namespace {

class GuidedStrategy final : public SearchStrategy {
 public:
  GuidedStrategy(std::vector<Candidate> space, CostModel& model, std::vector<Problem> problems, size_t elem_bytes,
                 size_t explore, uint64_t seed)
      : space_(std::move(space)),
        proposed_(space_.size(), false),
        model_(model),
        problems_(std::move(problems)),
        elem_bytes_(elem_bytes),
        explore_(explore),
        rng_(seed) {}

  std::vector<Candidate> next_batch(size_t max) override {
    std::vector<size_t> open;
    for (size_t i = 0; i < space_.size(); ++i)
      if (!proposed_[i]) open.push_back(i);
    std::vector<Candidate> out;
    if (open.empty() || max == 0) return out;
    // Exploration only beside at least one ranked pick.
    const size_t explore = max > 1 ? std::min(explore_, max - 1) : 0;
    for (size_t i : ranked(open)) {
      if (out.size() + explore >= max) break;
      take(i, &out);
    }
    std::vector<size_t> rest;
    for (size_t i : open)
      if (!proposed_[i]) rest.push_back(i);
    std::shuffle(rest.begin(), rest.end(), rng_);
    for (size_t k = 0; k < rest.size() && out.size() < max; ++k) take(rest[k], &out);
    return out;
  }

  void notify(const std::vector<Candidate>& batch, const std::vector<MeasureResult>& results) override {
    // Per problem, the timed candidates: failures and prunes teach nothing
    // about time.
    for (size_t pi = 0; pi < problems_.size(); ++pi) {
      std::vector<Candidate> timed;
      std::vector<double> us;
      for (size_t i = 0; i < batch.size() && i < results.size(); ++i)
        if (results[i].status == RecordStatus::kOk && results[i].problem == static_cast<int>(pi) &&
            results[i].median_us > 0) {
          timed.push_back(batch[i]);
          us.push_back(results[i].median_us);
        }
      if (!timed.empty()) model_.update(problems_[pi], elem_bytes_, timed, us);
    }
  }

 private:
  void take(size_t i, std::vector<Candidate>* out) {
    proposed_[i] = true;
    out->push_back(space_[i]);
  }

  // `open` in the model's order: every problem's fastest, then every
  // problem's second, ..., each once.
  std::vector<size_t> ranked(const std::vector<size_t>& open) const {
    std::vector<Candidate> cands;
    for (size_t i : open) cands.push_back(space_[i]);
    std::vector<std::vector<size_t>> orders;
    for (const Problem& p : problems_) {
      const std::vector<double> t = model_.predict(p, elem_bytes_, cands);
      std::vector<size_t> order(open.size());
      for (size_t k = 0; k < order.size(); ++k) order[k] = k;
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return t[a] < t[b]; });
      orders.push_back(std::move(order));
    }
    std::vector<size_t> out;
    std::vector<bool> seen(open.size(), false);
    for (size_t rank = 0; rank < open.size(); ++rank)
      for (const auto& order : orders)
        if (!seen[order[rank]]) {
          seen[order[rank]] = true;
          out.push_back(open[order[rank]]);
        }
    return out;
  }

  std::vector<Candidate> space_;
  std::vector<bool> proposed_;
  CostModel& model_;
  std::vector<Problem> problems_;
  size_t elem_bytes_;
  size_t explore_;
  std::mt19937_64 rng_;
};

class PlateauStop final : public StopCondition {
 public:
  PlateauStop(size_t max, size_t min_batches, double min_gain) : max_(max), min_batches_(min_batches), min_gain_(min_gain) {}
  bool is_fulfilled() const override { return seen_ >= max_ || plateau_; }
  void update(const std::vector<MeasureResult>& results) override {
    seen_ += results.size();
    ++batches_;
    bool improved = false;
    for (const MeasureResult& m : results) {
      if (m.status != RecordStatus::kOk || m.median_us <= 0) continue;
      Best& b = best_[m.problem];
      // A first time at a shape is progress; after that only a gain beyond
      // the best's own run-to-run spread.
      const double spread = b.us > 0 ? std::max(min_gain_, (b.p80 - b.p20) / b.us) : 0.0;
      if (b.us <= 0 || m.median_us < b.us * (1.0 - spread)) improved = true;
      if (b.us <= 0 || m.median_us < b.us) b = {m.median_us, m.p20_us, m.p80_us};
    }
    if (batches_ > min_batches_ && !improved) plateau_ = true;
  }

 private:
  struct Best {
    double us = 0, p20 = 0, p80 = 0;
  };
  size_t max_, min_batches_;
  double min_gain_;
  size_t seen_ = 0, batches_ = 0;
  bool plateau_ = false;
  std::map<int, Best> best_;
};

}  // namespace

std::unique_ptr<SearchStrategy> make_guided_strategy(std::vector<Candidate> space, CostModel& model,
                                                     std::vector<Problem> problems, size_t bytes_per_element,
                                                     size_t explore, uint64_t seed) {
  return std::make_unique<GuidedStrategy>(std::move(space), model, std::move(problems), bytes_per_element, explore,
                                          seed);
}

std::unique_ptr<StopCondition> make_plateau_stop(size_t max_candidates, size_t min_batches, double min_gain) {
  return std::make_unique<PlateauStop>(max_candidates, min_batches, min_gain);
}

}  // namespace fusekit
