// Model-guided search and the plateau stop (after Ansor and MetaSchedule:
// a cost model ranks the space, the GPU times its favourites plus a few
// random picks, and what was timed retrains the model before the next batch).
//
// Map: Space (a listed space, or one drawn from), ProblemProgress (a
// problem's best and whether it still improves), GuidedStrategy (the pool,
// the picks, the pool's growth), PlateauStop.
#include <algorithm>
#include <map>
#include <optional>
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

// Where schedules come from: a list, or a ParamSpace too large to list,
// drawn from at random (a row space holds a million legal schedules, and
// listing it took seconds per workload).
class Space {
 public:
  explicit Space(std::vector<Candidate> listed) : listed_(std::move(listed)) {}
  Space(ParamSpace space, Backend backend) : drawn_(std::move(space)), backend_(backend) {}

  bool listed() const { return !drawn_; }
  const std::vector<Candidate>& list() const { return listed_; }
  Backend backend() const { return backend_; }

  // A legal schedule, uniformly among the legal ones (rejection); none if
  // `tries` draws in a row were illegal.
  std::optional<Candidate> draw(std::mt19937_64& rng, int tries) const {
    for (int t = 0; t < tries; ++t) {
      Config c = drawn_->sample(rng);
      if (drawn_->legal(c)) return Candidate{backend_, std::move(c)};
    }
    return std::nullopt;
  }

  // The legal schedules one step away from `c`, in a fixed order: a traded
  // pair moved together (ParamSpace::trade), then one parameter changed.
  std::vector<Candidate> neighbours(const Candidate& c) const {
    std::vector<Candidate> out;
    if (listed()) {
      for (const Candidate& o : listed_)
        if (one_apart(o.config, c.config)) out.push_back(o);
      return out;
    }
    for (const auto& [a, b] : drawn_->trades())
      for (const auto& [up, down] : {std::pair{a, b}, std::pair{b, a}}) {
        Config n = c.config;
        n.set(up, c.config.get_or(up, 1) * 2);
        n.set(down, c.config.get_or(down, 1) / 2);
        if (c.config.get_or(down, 1) % 2 == 0 && drawn_->legal(n)) out.push_back({backend_, std::move(n)});
      }
    for (const ParamDomain& d : drawn_->domains()) {
      if (!d.searched) continue;
      for (int64_t v : d.values) {
        if (v == c.config.get_or(d.name, v)) continue;
        Config n = c.config;
        n.set(d.name, v);
        if (drawn_->legal(n)) out.push_back({backend_, std::move(n)});
      }
    }
    return out;
  }

 private:
  std::vector<Candidate> listed_;
  std::optional<ParamSpace> drawn_;
  Backend backend_ = Backend::kNvrtc;
};

// One problem's best time so far, and how many of its batches in a row
// failed to improve it beyond its own spread.
struct ProblemProgress {
  double us = 0, p20 = 0, p80 = 0;
  size_t stale = 0;
  bool retired = false;

  // True when `m` is a first time or beats the best by more than its spread.
  bool improves(const MeasureResult& m, double min_gain) const {
    if (us <= 0) return true;
    const double spread = std::max(min_gain, (p80 - p20) / us);
    return m.median_us < us * (1.0 - spread);
  }
  void take(const MeasureResult& m) {
    if (us > 0 && m.median_us >= us) return;
    us = m.median_us;
    p20 = m.p20_us;
    p80 = m.p80_us;
  }
};

bool timed_ok(const MeasureResult& r) { return r.status == RecordStatus::kOk && r.problem >= 0 && r.median_us > 0; }

class GuidedStrategy final : public SearchStrategy {
 public:
  GuidedStrategy(Space space, CostModel& model, std::vector<Problem> problems, size_t elem_bytes,
                 const GuidedOptions& options, uint64_t seed)
      : space_(std::move(space)),
        model_(model),
        problems_(std::move(problems)),
        progress_(problems_.size()),
        elem_bytes_(elem_bytes),
        options_(options),
        rng_(seed) {
    for (const Candidate& c : space_.list()) know(c);
    draw_pool();
  }

  std::vector<Candidate> next_batch(size_t max) override {
    last_batch_.clear();
    targets_.clear();
    if (max == 0) return {};
    // Exploration only beside at least one ranked pick.
    const size_t explore = max > 1 ? std::min(options_.explore, max - 1) : 0;
    // The first batch ranks the template's seeds alone: for an op it never
    // saw, the model ranks schedules unlike its training data above them.
    const bool seeds = options_.seeds_first && batches_ == 0 && !seeds_.empty();
    const std::vector<size_t>& from = seeds ? seeds_ : pool_;
    if (options_.picks_per_problem > 0) {
      if (std::all_of(progress_.begin(), progress_.end(), [](const ProblemProgress& p) { return p.retired; }))
        return {};
      pick_per_problem(from, max - explore);
      explore_from_space(std::min(max, last_batch_.size() + explore));
    } else {
      pick_shared(from, max - explore);
      explore_from_space(max);
    }
    batches_ += !last_batch_.empty();
    std::vector<Candidate> out;
    for (size_t i : last_batch_) out.push_back(known_[i].candidate);
    return out;
  }

  std::vector<std::vector<int>> batch_problems() const override {
    return options_.picks_per_problem > 0 ? targets_ : std::vector<std::vector<int>>{};
  }

  void notify(const std::vector<Candidate>& batch, const std::vector<MeasureResult>& results) override {
    // Per problem, the timed candidates: failures and prunes teach nothing
    // about time.
    for (size_t pi = 0; pi < problems_.size(); ++pi) {
      std::vector<Candidate> timed;
      std::vector<double> us;
      for (size_t r = 0; r < results.size(); ++r) {
        const size_t k = candidate_index(results, r);
        if (timed_ok(results[r]) && results[r].problem == static_cast<int>(pi) && k < batch.size()) {
          timed.push_back(batch[k]);
          us.push_back(results[r].median_us);
        }
      }
      if (!timed.empty()) model_.update(problems_[pi], elem_bytes_, timed, us);
    }
    if (batch.size() != last_batch_.size()) return;  // not this strategy's last batch
    track_progress(results);
    grow_pool(results);
  }

 private:
  struct Known {
    Candidate candidate;
    bool pooled = false;
    std::vector<bool> proposed_at;  // per problem
  };

  // The index of `c` among the known schedules, adding it if new.
  size_t know(const Candidate& c) {
    const auto [it, fresh] = index_.emplace(c.config, known_.size());
    if (fresh) known_.push_back({c, false, std::vector<bool>(problems_.size(), false)});
    return it->second;
  }

  bool proposed_anywhere(size_t i) const {
    const auto& at = known_[i].proposed_at;
    return std::find(at.begin(), at.end(), true) != at.end();
  }

  void add_to_pool(size_t i) {
    if (known_[i].pooled) return;
    known_[i].pooled = true;
    pool_.push_back(i);
  }

  // Adds known schedule `i` to the batch, to be timed at `problem` (-1:
  // every problem).
  void take(size_t i, int problem) {
    auto at = std::find(last_batch_.begin(), last_batch_.end(), i);
    if (at == last_batch_.end()) {
      last_batch_.push_back(i);
      targets_.emplace_back();
      at = last_batch_.end() - 1;
    }
    std::vector<int>& where = targets_[static_cast<size_t>(at - last_batch_.begin())];
    if (problem < 0) {
      where.clear();
      known_[i].proposed_at.assign(problems_.size(), true);
      return;
    }
    where.push_back(problem);
    known_[i].proposed_at[static_cast<size_t>(problem)] = true;
  }

  // The whole space where it fits the pool, else a seeded draw and the
  // seeds: ranking a million-schedule row space every batch would cost
  // minutes of model time per workload.
  void draw_pool() {
    if (space_.listed()) {
      std::vector<size_t> all(known_.size());
      for (size_t i = 0; i < all.size(); ++i) all[i] = i;
      if (all.size() > options_.pool) {
        std::shuffle(all.begin(), all.end(), rng_);
        all.resize(options_.pool);
        std::sort(all.begin(), all.end());
      }
      for (size_t i : all) add_to_pool(i);
    } else {
      // Rejection draws: a row space is about a tenth legal, so a miss of a
      // thousand in a row means the space is nearly empty, not unlucky.
      for (size_t n = 0; n < options_.pool * 4 && pool_.size() < options_.pool; ++n) {
        const std::optional<Candidate> c = space_.draw(rng_, 1000);
        if (!c) break;
        add_to_pool(know(*c));
      }
    }
    for (const Config& s : options_.seeds) {
      const auto it = index_.find(s);
      if (it == index_.end() && space_.listed()) continue;  // not in the space
      const size_t i = it != index_.end() ? it->second : know({space_.backend(), s});
      add_to_pool(i);
      if (std::find(seeds_.begin(), seeds_.end(), i) == seeds_.end()) seeds_.push_back(i);
    }
  }

  // The favourites among `from` (pool entries) of every problem in turn,
  // each timed at every problem.
  void pick_shared(const std::vector<size_t>& from, size_t slots) {
    std::vector<size_t> open;
    for (size_t i : from)
      if (!proposed_anywhere(i)) open.push_back(i);
    std::vector<std::vector<size_t>> orders;
    for (size_t pi = 0; pi < problems_.size(); ++pi) orders.push_back(ranked(open, pi));
    for (size_t rank = 0; rank < open.size() && last_batch_.size() < slots; ++rank)
      for (const auto& order : orders)
        if (last_batch_.size() < slots && !proposed_anywhere(order[rank])) take(order[rank], -1);
  }

  // Each active problem's own favourites among `from`, timed there (and
  // wherever else they are a favourite).
  void pick_per_problem(const std::vector<size_t>& from, size_t slots) {
    std::vector<std::vector<size_t>> orders(problems_.size());
    for (size_t pi = 0; pi < problems_.size(); ++pi) {
      if (progress_[pi].retired) continue;
      std::vector<size_t> open;
      for (size_t i : from)
        if (!known_[i].proposed_at[pi]) open.push_back(i);
      orders[pi] = ranked(open, pi);
    }
    for (size_t rank = 0; rank < options_.picks_per_problem; ++rank)
      for (size_t pi = 0; pi < problems_.size(); ++pi)
        if (rank < orders[pi].size() &&
            (last_batch_.size() < slots ||
             std::find(last_batch_.begin(), last_batch_.end(), orders[pi][rank]) != last_batch_.end()))
          take(orders[pi][rank], static_cast<int>(pi));
  }

  // Random schedules proposed nowhere yet, timed at every problem, until
  // the batch holds `max`.
  void explore_from_space(size_t max) {
    if (space_.listed()) {
      size_t open = 0;
      for (size_t i = 0; i < known_.size(); ++i) open += !proposed_anywhere(i) && !in_batch(i);
      std::uniform_int_distribution<size_t> pick(0, known_.empty() ? 0 : known_.size() - 1);
      while (last_batch_.size() < max && open > 0) {
        const size_t i = pick(rng_);
        if (proposed_anywhere(i) || in_batch(i)) continue;
        add_to_pool(i);
        take(i, -1);
        --open;
      }
      return;
    }
    for (int misses = 0; last_batch_.size() < max && misses < 64;) {
      const std::optional<Candidate> c = space_.draw(rng_, 1000);
      if (!c) return;
      const size_t i = know(*c);
      if (proposed_anywhere(i) || in_batch(i)) {
        ++misses;
        continue;
      }
      add_to_pool(i);
      take(i, -1);
    }
  }

  bool in_batch(size_t i) const { return std::find(last_batch_.begin(), last_batch_.end(), i) != last_batch_.end(); }

  // Per problem picked in this batch: did it improve? A problem retires
  // after `patience` batches in a row that did not.
  void track_progress(const std::vector<MeasureResult>& results) {
    std::vector<bool> picked(problems_.size(), false), improved(problems_.size(), false);
    for (const auto& where : targets_)
      for (int p : where) picked[static_cast<size_t>(p)] = true;
    for (const MeasureResult& m : results) {
      if (!timed_ok(m) || m.problem >= static_cast<int>(problems_.size())) continue;
      ProblemProgress& p = progress_[static_cast<size_t>(m.problem)];
      if (p.improves(m, options_.min_gain)) improved[static_cast<size_t>(m.problem)] = true;
      p.take(m);
    }
    if (options_.picks_per_problem == 0) return;
    for (size_t pi = 0; pi < problems_.size(); ++pi) {
      if (!picked[pi]) continue;
      ProblemProgress& p = progress_[pi];
      p.stale = improved[pi] ? 0 : p.stale + 1;
      if (p.stale >= std::max<size_t>(1, options_.patience)) p.retired = true;
    }
  }

  // After a batch, the pool gains the schedules one parameter away from
  // each problem's fastest so far (as an evolutionary search mutates its
  // best), up to options_.grow per new best.
  void grow_pool(const std::vector<MeasureResult>& results) {
    if (space_.listed() && pool_.size() == known_.size()) return;
    best_at_.resize(problems_.size(), {0, 0.0});
    std::vector<size_t> fresh;
    for (size_t pi = 0; pi < problems_.size(); ++pi) {
      auto& best = best_at_[pi];
      const auto before = best;
      for (size_t r = 0; r < results.size(); ++r) {
        const size_t k = candidate_index(results, r);
        if (timed_ok(results[r]) && results[r].problem == static_cast<int>(pi) && k < last_batch_.size() &&
            (best.second <= 0 || results[r].median_us < best.second))
          best = {last_batch_[k], results[r].median_us};
      }
      if (best != before) fresh.push_back(best.first);
    }
    for (size_t b : fresh) {
      if (!expanded_.insert(b).second) continue;
      size_t added = 0;
      for (const Candidate& n : space_.neighbours(known_[b].candidate)) {
        if (added >= options_.grow) break;
        const size_t i = know(n);
        if (known_[i].pooled) continue;
        add_to_pool(i);
        ++added;
      }
    }
  }

  // `open` in the model's order for problem `pi`.
  std::vector<size_t> ranked(const std::vector<size_t>& open, size_t pi) const {
    std::vector<Candidate> cands;
    for (size_t i : open) {
      cands.push_back(known_[i].candidate);
      if (options_.rank_as) cands.back().config = options_.rank_as(cands.back().config, problems_[pi]);
    }
    const std::vector<double> t = model_.predict(problems_[pi], elem_bytes_, cands);
    std::vector<size_t> order(open.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return t[a] < t[b]; });
    for (size_t& k : order) k = open[k];
    return order;
  }

  Space space_;
  std::vector<Known> known_;          // every schedule seen: the listed space, or what was drawn
  std::map<Config, size_t> index_;    // config -> known_ index
  std::vector<size_t> pool_;          // known_ indices the model ranks
  std::vector<size_t> seeds_;         // known_ indices of options_.seeds
  size_t batches_ = 0;                // batches proposed
  std::vector<size_t> last_batch_;    // known_ indices of the last batch, in its order
  std::vector<std::vector<int>> targets_;  // per last_batch_ entry: its problems (empty: every one)
  std::vector<std::pair<size_t, double>> best_at_;  // per problem: (known_ index, us)
  std::set<size_t> expanded_;         // bests whose neighbours joined the pool
  CostModel& model_;
  std::vector<Problem> problems_;
  std::vector<ProblemProgress> progress_;
  size_t elem_bytes_;
  GuidedOptions options_;
  std::mt19937_64 rng_;
};

class PlateauStop final : public StopCondition {
 public:
  PlateauStop(size_t max, size_t min_batches, double min_gain) : max_(max), min_batches_(min_batches), min_gain_(min_gain) {}
  bool is_fulfilled() const override { return seen_ >= max_ || plateau_; }
  void update(const std::vector<MeasureResult>& results) override {
    seen_ += candidates_in(results);
    ++batches_;
    bool improved = false;
    for (const MeasureResult& m : results) {
      if (m.status != RecordStatus::kOk || m.median_us <= 0) continue;
      // A first time at a shape is progress; after that only a gain beyond
      // the best's own run-to-run spread.
      ProblemProgress& b = best_[m.problem];
      improved |= b.improves(m, min_gain_);
      b.take(m);
    }
    if (batches_ > min_batches_ && !improved) plateau_ = true;
  }

 private:
  size_t max_, min_batches_;
  double min_gain_;
  size_t seen_ = 0, batches_ = 0;
  bool plateau_ = false;
  std::map<int, ProblemProgress> best_;
};

}  // namespace

std::unique_ptr<SearchStrategy> make_guided_strategy(std::vector<Candidate> space, CostModel& model,
                                                     std::vector<Problem> problems, size_t bytes_per_element,
                                                     const GuidedOptions& options, uint64_t seed) {
  return std::make_unique<GuidedStrategy>(Space(std::move(space)), model, std::move(problems), bytes_per_element,
                                          options, seed);
}

std::unique_ptr<SearchStrategy> make_guided_strategy(const ParamSpace& space, Backend backend, CostModel& model,
                                                     std::vector<Problem> problems, size_t bytes_per_element,
                                                     const GuidedOptions& options, uint64_t seed) {
  return std::make_unique<GuidedStrategy>(Space(space, backend), model, std::move(problems), bytes_per_element,
                                          options, seed);
}

std::unique_ptr<StopCondition> make_plateau_stop(size_t max_candidates, size_t min_batches, double min_gain) {
  return std::make_unique<PlateauStop>(max_candidates, min_batches, min_gain);
}

}  // namespace fusekit
