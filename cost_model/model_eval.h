// Honest regret of the learned cost model: every schedule of a held-out
// fold (one catalog op, one shape bucket over every op, or one GPU) is
// ranked by a model trained on the other folds only, beside the analytic
// model, and a guided search (make_guided_strategy + make_plateau_stop) is
// replayed over the fold's recorded times.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "cost_model/training_set.h"

namespace fusekit {

struct ModelEvalOptions {
  CostTrainOptions train;
  size_t guided_batch = 4;
  size_t guided_explore = 1;
  double within = 0.03;     // "found": within this much of the best measured
  uint64_t seed = 1;
  double fast_weight = -1;  // >= 0: weigh_samples with it; < 0: every sample alike
  // workload: one catalog op at a time; shape: one shape bucket; gpu: one
  // GPU's records (trained on the other GPUs', where the data has several).
  std::vector<std::string> holdouts = {"workload", "shape", "gpu"};
  bool prior = true;  // false: the schedule prior's features are all missing
};

// One held-out group: the schedules of one op, dtype, shape, backend, arch
// and GPU.
struct GroupEval {
  std::string holdout;      // "workload", "shape" or "gpu"
  std::string fold;         // the op, shape bucket or GPU held out
  std::string kind;         // "pointwise f32 nvrtc"
  std::string group;
  size_t schedules = 0;
  std::string learned_pick, best;  // the learned model's top-1 schedule, and the fastest measured
  double learned_top1 = 0, learned_top8 = 0, analytic_top1 = 0, analytic_top8 = 0;  // regrets
  // The learned pick's p20 over the best's p80, minus one, or 0 where the two
  // measurements' p20-p80 ranges overlap: the regret no rerun would erase.
  double learned_top1_beyond_spread = 0;
  // The learned model's top-1 among the schedules not built for one row
  // length, over the fastest of all: what a modeled pick would lose if a
  // tune without a GPU did not build its rows' leaders for their length
  // (TunerOptions::specialize_modeled).
  std::string generic_pick;
  double generic_top1 = 0;
  // Timed candidates until one is within `within` of the best: the guided
  // search (model updated between batches), the same without updates, the
  // analytic model's order, and a random order (expected value).
  double guided = 0, guided_static = 0, analytic_order = 0, random_order = 0;
  // Where the plateau stop ended the guided search, and the regret there.
  double stop_after = 0, stop_regret = 0;
};

// The index of the schedule `predicted` ranks first among those not built
// for one row length (`len`); where all are, the first of all.
size_t generic_pick(const std::vector<Candidate>& cands, const std::vector<double>& predicted);

// Whether `name` is a holdout evaluate_held_out knows (ModelEvalOptions::holdouts).
bool is_holdout(const std::string& name);

// Every group of two or more schedules, under each holdout of `options`; a
// fold with nothing left to train on (the only GPU) is skipped.
std::vector<GroupEval> evaluate_held_out(const std::vector<MeasuredSchedule>& schedules,
                                         const ModelEvalOptions& options,
                                         const std::function<void(const std::string&)>& progress = {});

// Per holdout ("gpu NAME" for each GPU held out) and kind (also "rows f32"
// over both backends): groups and the median, p90 and worst of each regret;
// for the searches the median, p90 and the share of groups that took at
// most 8.
nlohmann::json summarize_eval(const std::vector<GroupEval>& groups);

}  // namespace fusekit
