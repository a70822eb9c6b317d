// The learned cost model: gradient-boosted trees (XGBoost's C API) over
// cost_features and a SchedulePrior's features, fit by default to the log
// of a schedule's time over its workload's best (CostTrainOptions), so it
// ranks within a workload; predict() gives roofline_us times the predicted
// slowdown (the mean over CostTrainOptions::members boosters of other
// seeds), an estimate stored as "modeled", never a measurement. It is
// saved as one JSON file: the boosters, the schedule prior and the
// provenance (feature schema, objective, XGBoost version, training records,
// archs, GPUs, domains). For an arch the training data has no record of,
// or a kind of schedule it has none of (cost_domain: Halide rows trained
// only on NVRTC records), predictions are the analytic model's.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cost_model/schedule_prior.h"
#include "search/interfaces.h"

namespace fusekit {

// A model's input row: cost_features, then the prior's features.
const std::vector<std::string>& model_feature_names();

// One training row: the model's features, log(us / roofline_us) and the
// group of schedules it competes with (the relative and ranking objectives
// read it).
struct CostSample {
  std::vector<float> features;
  float target = 0;
  float weight = 1;
  uint32_t group = 0;  // schedules that compete (one op, dtype, shape, backend, arch)
};

// Where a model came from (saved beside the booster).
struct CostModelInfo {
  int feature_schema = 0;
  std::string xgboost_version;   // of the library that trained it
  size_t training_records = 0;   // measured records read
  size_t training_samples = 0;   // distinct schedules at a shape fit
  std::vector<std::string> archs;
  std::vector<std::string> gpus;  // the records' GPU names (absent in files before 2026-12-05)
  // The records' cost_domain()s; empty (files before 2026-12-07): every domain.
  std::vector<std::string> domains;
  std::string source;            // the database it was trained on
  std::string fusekit_version;
  std::string trained_at;        // ISO 8601 UTC
};

struct CostTrainOptions {
  int rounds = 300;
  int max_depth = 6;
  double eta = 0.1;
  int threads = 1;   // XGBoost threads (OpenMP spins on a busy machine)
  uint64_t seed = 1;
  // Trees added per update() (on everything updates have seen) and their depth.
  int update_rounds = 2;
  int update_depth = 3;
  // Boosters trained alike but for their seed (seed, seed + 1, ...), whose
  // predictions are averaged, since one booster's picks depend on its seed
  // about as much as on a change of features (docs/architecture.md).
  int members = 4;
  // "relative" (the default): squared error on log(us / the group's best
  // us), so the trees spend themselves on what differs within a workload
  // and the same schedule's slowdown carries across ops; "time": on
  // log(us / roofline_us); "pairwise" / "ndcg": XGBoost's rank:pairwise /
  // rank:ndcg within each group, the relevance being the group's best
  // target minus the sample's in steps of rank_step (0 past rank_levels).
  std::string objective = "relative";
  // Train on each sample twice, the second time without the prior's size
  // and row-length features, as at a size no other op was timed at (off:
  // on the H200 records it helps sizes never seen and costs ops never seen).
  bool unsized_copies = false;
  double rank_step = 0.02;
  int rank_levels = 40;
};

// "1.7.4": the linked XGBoost's version.
std::string xgboost_version();

class LearnedCostModel final : public CostModel {
 public:
  ~LearnedCostModel() override;
  LearnedCostModel(const LearnedCostModel&) = delete;
  LearnedCostModel& operator=(const LearnedCostModel&) = delete;

  // Throws UserError when there are no samples. `prior` is what the
  // samples' prior features came from; predict() reads it the same way.
  static std::unique_ptr<LearnedCostModel> train(const std::vector<CostSample>& samples, CostModelInfo info,
                                                 const CostTrainOptions& options = {}, SchedulePrior prior = {});
  // Throws UserError naming the path when the file is missing, not a
  // fusekit cost model or of another feature schema (retrain it).
  static std::unique_ptr<LearnedCostModel> load(const std::string& path);
  void save(const std::string& path) const;
  // An independent copy (its updates do not touch this one).
  std::unique_ptr<LearnedCostModel> clone() const;

  // Which arch predict() and update() are for (default: sm_90).
  void set_arch(const ArchLimits& arch) { arch_ = arch; }
  // Threads for predict() and update() from here on: XGBoost's and those
  // computing the feature rows (default: the training's, 1).
  void set_threads(int threads);
  // Whether the training data held records of the current arch.
  bool knows_arch() const;
  // Whether it held records of the candidate's cost_domain.
  bool covers(const Candidate& candidate) const;
  const CostModelInfo& info() const { return info_; }

  // The model's feature row of one candidate (cost_features and the prior's).
  std::vector<float> features(const Problem& problem, size_t bytes_per_element, const Candidate& candidate) const;
  // Per feature row, the predicted log(us / roofline_us) on the
  // objective's scale (relative: the log slowdown; ranking: minus the score).
  std::vector<float> predict_rows(const std::vector<std::vector<float>>& rows) const;
  std::vector<double> predict(const Problem& problem, size_t bytes_per_element,
                              const std::vector<Candidate>& batch) const override;
  // Adds the times (of candidates in its domains) to what updates have seen; the next prediction (or
  // save) first boosts update_rounds more trees on all of it, once however
  // many problems' updates came in between (for the rest of this search;
  // save() keeps them).
  void update(const Problem& problem, size_t bytes_per_element, const std::vector<Candidate>& batch,
              const std::vector<double>& measured_us) override;

 private:
  LearnedCostModel(std::vector<void*> boosters, CostModelInfo info, CostTrainOptions options, SchedulePrior prior);
  std::vector<void*> boosters_;  // the members (XGBoost handles), owned
  CostModelInfo info_;
  CostTrainOptions options_;
  ArchLimits arch_;
  SchedulePrior prior_;
  // The group of a problem's samples among those updates have seen.
  uint32_t problem_group(const Problem& problem);
  // Boosts the trees that updates since the last refit asked for.
  void refit() const;

  std::vector<CostSample> seen_;
  mutable bool stale_ = false;  // updates arrived since the last boost
  std::map<std::string, uint32_t> seen_problems_;
};

}  // namespace fusekit
