#include "cost_model/model_eval.h"

#include <algorithm>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "cost_model/features.h"
#include "schedules/row_reduction_template.h"

namespace fusekit {
namespace {

// Forwards predictions and learns nothing: the guided search without updates.
class FrozenModel final : public CostModel {
 public:
  explicit FrozenModel(const CostModel& m) : m_(m) {}
  std::vector<double> predict(const Problem& p, size_t bpe, const std::vector<Candidate>& batch) const override {
    return m_.predict(p, bpe, batch);
  }
  void update(const Problem&, size_t, const std::vector<Candidate>&, const std::vector<double>&) override {}

 private:
  const CostModel& m_;
};

// Regret of the best of the `k` first by `predicted`.
double top_k_regret(const std::vector<double>& predicted, const std::vector<double>& us, size_t k) {
  std::vector<size_t> order(us.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return predicted[a] < predicted[b]; });
  double best_pick = us[order[0]];
  for (size_t i = 0; i < k && i < order.size(); ++i) best_pick = std::min(best_pick, us[order[i]]);
  return best_pick / *std::min_element(us.begin(), us.end()) - 1.0;
}

// How much slower `pick` is than `best` beyond both their run-to-run
// spreads: its p20 over the best's p80, minus one, at least 0 (a record
// without percentiles counts its median for both).
double beyond_spread(const MeasuredSchedule& pick, const MeasuredSchedule& best) {
  const double low = pick.p20_us > 0 ? pick.p20_us : pick.us;
  const double high = best.p80_us > 0 ? best.p80_us : best.us;
  return std::max(0.0, (low - high) / best.us);
}

// Candidates timed, in `predicted`'s order, until one is within `within`.
double order_count(const std::vector<double>& predicted, const std::vector<double>& us, double within) {
  std::vector<size_t> order(us.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return predicted[a] < predicted[b]; });
  const double goal = *std::min_element(us.begin(), us.end()) * (1.0 + within);
  for (size_t i = 0; i < order.size(); ++i)
    if (us[order[i]] <= goal) return static_cast<double>(i + 1);
  return static_cast<double>(order.size());
}

struct Replay {
  double found_after = 0, stop_after = 0, stop_regret = 0;
};

// The guided strategy and the plateau stop over recorded times; the search
// goes on past the stop to see when it would have come within `within`.
Replay replay(CostModel& model, const Problem& problem, size_t bpe, const std::vector<MeasuredSchedule>& group,
              const ModelEvalOptions& o) {
  std::vector<Candidate> space;
  std::map<std::string, size_t> index;
  double best = 1e300;
  for (size_t i = 0; i < group.size(); ++i) {
    space.push_back(candidate_of(group[i]));
    index[space.back().config.to_string()] = i;
    best = std::min(best, group[i].us);
  }
  GuidedOptions guided;
  guided.explore = o.guided_explore;
  guided.picks_per_problem = 0;  // batches of guided_batch, as the committed evaluations replayed them
  auto strategy = make_guided_strategy(space, model, {problem}, bpe, guided, o.seed);
  auto stop = make_plateau_stop(space.size(), 1, 0.01);
  Replay r;
  double timed = 0, best_so_far = 1e300;
  for (;;) {
    const std::vector<Candidate> batch = strategy->next_batch(o.guided_batch);
    if (batch.empty()) break;
    std::vector<MeasureResult> results;
    for (const Candidate& c : batch) {
      const MeasuredSchedule& s = group[index.at(c.config.to_string())];
      MeasureResult m;
      m.median_us = s.us;
      m.p20_us = s.p20_us > 0 ? s.p20_us : s.us;
      m.p80_us = s.p80_us > 0 ? s.p80_us : s.us;
      m.problem = 0;
      results.push_back(m);
      ++timed;
      best_so_far = std::min(best_so_far, s.us);
      if (r.found_after == 0 && best_so_far <= best * (1.0 + o.within)) r.found_after = timed;
    }
    strategy->notify(batch, results);
    stop->update(results);
    if (r.stop_after == 0 && stop->is_fulfilled()) {
      r.stop_after = timed;
      r.stop_regret = best_so_far / best - 1.0;
    }
    if (r.found_after > 0 && r.stop_after > 0) break;
  }
  return r;
}

std::string kind_of(const MeasuredSchedule& s) {
  return std::string(s.rows ? "rows" : "pointwise") + " " + s.dtype + " " + s.backend;
}

// Every schedule as a sample under an empty prior (NaN prior features), with
// its keys: each fold fills the prior's features from its own training schedules.
struct EvalSamples {
  ProblemCache problems;
  std::vector<CostSample> samples;
  std::vector<ScheduleKeys> keys;
  size_t base = cost_feature_names().size();

  EvalSamples(const std::vector<MeasuredSchedule>& schedules, const ModelEvalOptions& o) {
    const SchedulePrior none;
    for (const auto& s : schedules) {
      samples.push_back(cost_sample(problems, s, none));
      keys.push_back(schedule_keys(problems, s));
    }
    assign_groups(schedules, &samples);
    if (o.fast_weight >= 0) weigh_samples(schedules, o.fast_weight, &samples);
  }

  // Sample i's features with the prior's part from `prior` (`own`: the group left out of it).
  std::vector<float> features(size_t i, const SchedulePrior& prior, const std::string& own) const {
    std::vector<float> f(samples[i].features.begin(), samples[i].features.begin() + base);
    const std::vector<float> p = prior.features(keys[i], own);
    f.insert(f.end(), p.begin(), p.end());
    return f;
  }
};

// One fold: the held-out schedules by group, and a model with its prior trained on the rest.
struct Fold {
  std::map<std::string, std::vector<size_t>> groups;
  SchedulePrior prior;
  std::unique_ptr<LearnedCostModel> model;
  size_t trained_on = 0;
};

Fold train_fold(const std::vector<MeasuredSchedule>& schedules, EvalSamples& ev, const ModelEvalOptions& o,
                const std::function<std::string(const MeasuredSchedule&)>& fold_of, const std::string& fold) {
  Fold f;
  std::vector<MeasuredSchedule> train_schedules;
  std::vector<size_t> train_index;
  for (size_t i = 0; i < schedules.size(); ++i) {
    if (fold_of(schedules[i]) == fold) {
      f.groups[schedules[i].group()].push_back(i);
      continue;
    }
    train_schedules.push_back(schedules[i]);
    train_index.push_back(i);
  }
  if (o.prior) f.prior = schedule_prior(train_schedules, ev.problems);
  std::vector<CostSample> train;
  for (size_t i : train_index) {
    train.push_back(ev.samples[i]);
    train.back().features = ev.features(i, f.prior, schedules[i].group());
  }
  f.trained_on = train.size();
  if (train.empty()) return f;
  CostModelInfo info;
  describe_training(train_schedules, &info);
  info.training_samples = train.size();
  f.model = LearnedCostModel::train(train, info, o.train, f.prior);
  return f;
}

// The regrets and search counts of one held-out group (`idx`) under the fold's model.
GroupEval evaluate_group(const std::vector<MeasuredSchedule>& schedules, EvalSamples& ev, const Fold& f,
                         const std::vector<size_t>& idx, const ModelEvalOptions& o) {
  std::vector<MeasuredSchedule> group;
  std::vector<std::vector<float>> rows;
  std::vector<double> us;
  std::vector<Candidate> cands;
  for (size_t i : idx) {
    group.push_back(schedules[i]);
    rows.push_back(ev.features(i, f.prior, ""));
    us.push_back(schedules[i].us);
    cands.push_back(candidate_of(schedules[i]));
  }
  const MeasuredSchedule& first = group.front();
  const Problem& p = ev.problems.problem(first);
  const size_t bpe = ev.problems.bytes_per_element(first);
  const ArchLimits& arch = arch_of(first);
  const std::vector<double> analytic = make_analytic_cost_model(arch)->predict(p, bpe, cands);
  // A group is of one domain: a model trained on none of it ranks by the analytic model, as a tune would.
  const std::vector<float> logs = f.model->covers(cands.front()) ? f.model->predict_rows(rows) : std::vector<float>{};
  const std::vector<double> learned = logs.empty() ? analytic : std::vector<double>(logs.begin(), logs.end());
  GroupEval g;
  g.kind = kind_of(first);
  g.group = first.group();
  g.schedules = idx.size();
  g.learned_top1 = top_k_regret(learned, us, 1);
  const MeasuredSchedule& pick = group[std::min_element(learned.begin(), learned.end()) - learned.begin()];
  const MeasuredSchedule& fastest = group[std::min_element(us.begin(), us.end()) - us.begin()];
  g.learned_pick = pick.params;
  g.best = fastest.params;
  g.learned_top1_beyond_spread = beyond_spread(pick, fastest);
  const size_t generic = generic_pick(cands, learned);
  g.generic_pick = group[generic].params;
  g.generic_top1 = us[generic] / fastest.us - 1.0;
  g.learned_top8 = top_k_regret(learned, us, 8);
  g.analytic_top1 = top_k_regret(analytic, us, 1);
  g.analytic_top8 = top_k_regret(analytic, us, 8);
  g.analytic_order = order_count(analytic, us, o.within);
  const double best = *std::min_element(us.begin(), us.end());
  const double good = static_cast<double>(
      std::count_if(us.begin(), us.end(), [&](double t) { return t <= best * (1.0 + o.within); }));
  g.random_order = (static_cast<double>(us.size()) + 1.0) / (good + 1.0);
  auto guided = f.model->clone();
  guided->set_arch(arch);
  const Replay r = replay(*guided, p, bpe, group, o);
  g.guided = r.found_after;
  g.stop_after = r.stop_after;
  g.stop_regret = r.stop_regret;
  f.model->set_arch(arch);
  FrozenModel frozen(*f.model);
  g.guided_static = replay(frozen, p, bpe, group, o).found_after;
  return g;
}

using FoldOf = std::function<std::string(const MeasuredSchedule&)>;

// Each holdout by name, and what it holds out of a schedule.
const std::vector<std::pair<std::string, FoldOf>>& holdout_folds() {
  static const std::vector<std::pair<std::string, FoldOf>> folds = {
      {"workload", [](const MeasuredSchedule& s) { return s.pattern; }},
      {"shape", [](const MeasuredSchedule& s) { return s.bucket; }},
      {"gpu", [](const MeasuredSchedule& s) { return s.gpu; }}};
  return folds;
}

}  // namespace

size_t generic_pick(const std::vector<Candidate>& cands, const std::vector<double>& predicted) {
  size_t pick = cands.size();
  for (size_t i = 0; i < cands.size(); ++i)
    if (RowReductionTemplate::fixed_row_length(cands[i].config) == 0 &&
        (pick == cands.size() || predicted[i] < predicted[pick]))
      pick = i;
  if (pick < cands.size()) return pick;
  return static_cast<size_t>(std::min_element(predicted.begin(), predicted.end()) - predicted.begin());
}

bool is_holdout(const std::string& name) {
  const auto& folds = holdout_folds();
  return std::any_of(folds.begin(), folds.end(), [&](const auto& f) { return f.first == name; });
}

std::vector<GroupEval> evaluate_held_out(const std::vector<MeasuredSchedule>& schedules,
                                         const ModelEvalOptions& options,
                                         const std::function<void(const std::string&)>& progress) {
  EvalSamples ev(schedules, options);
  std::vector<GroupEval> out;
  for (const auto& [holdout, fold_of] : holdout_folds()) {
    if (std::find(options.holdouts.begin(), options.holdouts.end(), holdout) == options.holdouts.end()) continue;
    std::set<std::string> folds;
    for (const auto& s : schedules) folds.insert(fold_of(s));
    for (const std::string& fold : folds) {
      const Fold f = train_fold(schedules, ev, options, fold_of, fold);
      if (!f.model) continue;
      for (const auto& [name, idx] : f.groups) {
        if (idx.size() < 2) continue;
        out.push_back(evaluate_group(schedules, ev, f, idx, options));
        out.back().holdout = holdout;
        out.back().fold = fold;
      }
      if (progress)
        progress(holdout + " " + fold + ": trained on " + std::to_string(f.trained_on) + " schedules");
    }
  }
  return out;
}

nlohmann::json summarize_eval(const std::vector<GroupEval>& groups) {
  auto quantile = [](std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
  };
  auto stats = [&](const std::vector<double>& v) {
    return nlohmann::json{{"median", quantile(v, 0.5)}, {"p90", quantile(v, 0.9)}, {"worst", quantile(v, 1.0)}};
  };
  auto counts = [&](const std::vector<double>& v) {
    const double within8 = static_cast<double>(std::count_if(v.begin(), v.end(), [](double x) { return x <= 8; }));
    return nlohmann::json{{"median", quantile(v, 0.5)},
                          {"p90", quantile(v, 0.9)},
                          {"share_at_most_8", within8 / static_cast<double>(v.size())}};
  };
  // holdout -> kind -> the groups' values of each measure.
  std::map<std::string, std::map<std::string, std::map<std::string, std::vector<double>>>> by;
  for (const GroupEval& g : groups) {
    const std::string pooled = g.kind.substr(0, g.kind.rfind(' '));  // "rows f32"
    // Each GPU's transfer on its own: a GPU is not a sample of the others.
    const std::string holdout = g.holdout == "gpu" ? "gpu " + g.fold : g.holdout;
    for (const std::string& kind : {g.kind, pooled}) {
      auto& m = by[holdout][kind];
      m["learned_top1"].push_back(g.learned_top1);
      m["learned_top1_beyond_spread"].push_back(g.learned_top1_beyond_spread);
      m["generic_top1"].push_back(g.generic_top1);
      m["learned_top8"].push_back(g.learned_top8);
      m["analytic_top1"].push_back(g.analytic_top1);
      m["analytic_top8"].push_back(g.analytic_top8);
      m["guided"].push_back(g.guided);
      m["guided_static"].push_back(g.guided_static);
      m["analytic_order"].push_back(g.analytic_order);
      m["random_order"].push_back(g.random_order);
      m["stop_after"].push_back(g.stop_after);
      m["stop_regret"].push_back(g.stop_regret);
    }
  }
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [holdout, kinds] : by)
    for (const auto& [kind, m] : kinds) {
      nlohmann::json k;
      k["groups"] = m.at("learned_top1").size();
      for (const char* r : {"learned_top1", "learned_top1_beyond_spread", "generic_top1", "learned_top8",
                            "analytic_top1", "analytic_top8", "stop_regret"})
        k["regret"][r] = stats(m.at(r));
      for (const char* c : {"guided", "guided_static", "analytic_order", "random_order", "stop_after"})
        k["timed_to_within"][c] = counts(m.at(c));
      out[holdout][kind] = k;
    }
  return out;
}

}  // namespace fusekit
