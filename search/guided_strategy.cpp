// Model-guided search and the plateau stop (after Ansor and MetaSchedule:
// a cost model ranks the space, the GPU times its favourites plus a few
// random picks, and what was timed retrains the model before the next batch).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "search/interfaces.h"

namespace fusekit {
namespace {

// Differs from `b` in exactly one parameter's value (same names).
bool one_apart(const Config& a, const Config& b) {
  if (a.values().size() != b.values().size()) return false;
  int differ = 0;
  for (auto x = a.values().begin(), y = b.values().begin(); x != a.values().end(); ++x, ++y)
    if (x->first != y->first || (x->second != y->second && ++differ > 1)) return false;
  return differ == 1;
}

class GuidedStrategy final : public SearchStrategy {
 public:
  GuidedStrategy(std::vector<Candidate> space, CostModel& model, std::vector<Problem> problems, size_t elem_bytes,
                 const GuidedOptions& options, uint64_t seed)
      : space_(std::move(space)),
        proposed_(space_.size(), false),
        pooled_(space_.size(), false),
        model_(model),
        problems_(std::move(problems)),
        elem_bytes_(elem_bytes),
        options_(options),
        rng_(seed) {
    draw_pool();
  }

  std::vector<Candidate> next_batch(size_t max) override {
    std::vector<size_t> open;
    for (size_t i : pool_)
      if (!proposed_[i]) open.push_back(i);
    last_batch_.clear();
    std::vector<Candidate> out;
    if (max == 0 || (open.empty() && pool_.size() == space_.size())) return out;
    // Exploration only beside at least one ranked pick.
    const size_t explore = max > 1 ? std::min(options_.explore, max - 1) : 0;
    for (size_t i : ranked(open)) {
      if (out.size() + explore >= max) break;
      take(i, &out);
    }
    explore_from_space(max, &out);
    return out;
  }

  void notify(const std::vector<Candidate>& batch, const std::vector<MeasureResult>& results) override {
    // Per problem, the timed candidates: failures and prunes teach nothing
    // about time.
    for (size_t pi = 0; pi < problems_.size(); ++pi) {
      std::vector<Candidate> timed;
      std::vector<double> us;
      for (size_t i = 0; i < batch.size() && i < results.size(); ++i)
        if (timed_at(results[i], pi)) {
          timed.push_back(batch[i]);
          us.push_back(results[i].median_us);
        }
      if (!timed.empty()) model_.update(problems_[pi], elem_bytes_, timed, us);
    }
    grow_pool(batch, results);
  }

 private:
  static bool timed_at(const MeasureResult& r, size_t problem) {
    return r.status == RecordStatus::kOk && r.problem == static_cast<int>(problem) && r.median_us > 0;
  }

  void take(size_t i, std::vector<Candidate>* out) {
    proposed_[i] = true;
    last_batch_.push_back(i);
    out->push_back(space_[i]);
  }

  void add_to_pool(size_t i) {
    if (pooled_[i]) return;
    pooled_[i] = true;
    pool_.push_back(i);
  }

  // The whole space where it fits the pool, else a seeded draw of pool
  // indices and the seeds: ranking a million-schedule row space every
  // batch would cost minutes of model time per workload.
  void draw_pool() {
    std::vector<size_t> all(space_.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    if (all.size() > options_.pool) {
      std::shuffle(all.begin(), all.end(), rng_);
      all.resize(options_.pool);
      std::sort(all.begin(), all.end());
    }
    for (size_t i : all) add_to_pool(i);
    const std::set<Config> seeds(options_.seeds.begin(), options_.seeds.end());
    for (size_t i = 0; i < space_.size() && !seeds.empty(); ++i)
      if (seeds.count(space_[i].config)) add_to_pool(i);
  }

  // Random unproposed picks from the whole space (pooled or not) until the
  // batch is full.
  void explore_from_space(size_t max, std::vector<Candidate>* out) {
    size_t open = 0;
    for (bool p : proposed_) open += !p;
    std::uniform_int_distribution<size_t> pick(0, space_.empty() ? 0 : space_.size() - 1);
    while (out->size() < max && open > 0) {
      const size_t i = pick(rng_);
      if (proposed_[i]) continue;
      add_to_pool(i);
      take(i, out);
      --open;
    }
  }

  // After a batch, the pool gains the schedules one parameter away from
  // each problem's fastest so far (as an evolutionary search mutates its
  // best), up to options_.grow per new best.
  void grow_pool(const std::vector<Candidate>& batch, const std::vector<MeasureResult>& results) {
    if (batch.size() != last_batch_.size() || pool_.size() == space_.size()) return;
    std::vector<size_t> fresh;
    for (size_t pi = 0; pi < problems_.size(); ++pi) {
      auto& best = best_[pi];
      const auto before = best;
      for (size_t i = 0; i < batch.size() && i < results.size(); ++i)
        if (timed_at(results[i], pi) && batch[i].config == space_[last_batch_[i]].config &&
            (best.second <= 0 || results[i].median_us < best.second))
          best = {last_batch_[i], results[i].median_us};
      if (best != before) fresh.push_back(best.first);
    }
    for (size_t b : fresh) {
      if (!expanded_.insert(b).second) continue;
      size_t added = 0;
      for (size_t i = 0; i < space_.size() && added < options_.grow; ++i)
        if (!pooled_[i] && one_apart(space_[i].config, space_[b].config)) {
          add_to_pool(i);
          ++added;
        }
    }
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
  std::vector<bool> proposed_, pooled_;
  std::vector<size_t> pool_;         // indices into space_ the model ranks
  std::vector<size_t> last_batch_;   // space_ indices of the last batch, in its order
  std::map<size_t, std::pair<size_t, double>> best_;  // per problem: (space_ index, us)
  std::set<size_t> expanded_;        // bests whose neighbours joined the pool
  CostModel& model_;
  std::vector<Problem> problems_;
  size_t elem_bytes_;
  GuidedOptions options_;
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
                                                     const GuidedOptions& options, uint64_t seed) {
  return std::make_unique<GuidedStrategy>(std::move(space), model, std::move(problems), bytes_per_element, options,
                                          seed);
}

std::unique_ptr<StopCondition> make_plateau_stop(size_t max_candidates, size_t min_batches, double min_gain) {
  return std::make_unique<PlateauStop>(max_candidates, min_batches, min_gain);
}

}  // namespace fusekit
