// From measured records to the cost model's training rows: each schedule's
// fastest verified time at each shape (as bench/model_regret counts them),
// its problem rebuilt from the catalog op and shape.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cost_model/learned_cost_model.h"
#include "tunedb/record.h"

namespace fusekit {

// One schedule at one shape on one GPU: the fastest of its "ok" records.
struct MeasuredSchedule {
  std::string pattern, dtype, shape, bucket, backend, arch, params;
  double us = 0, p20_us = 0, p80_us = 0;
  bool rows = false;  // a row reduction
  std::string gpu;    // the record's gpu_name: two GPUs of one arch time apart
  // What competes: the same op, dtype, shape, backend, arch and GPU.
  std::string group() const { return pattern + " " + dtype + " " + shape + " " + backend + " " + arch + " " + gpu; }
};

// Verified records of catalog ops at a shape on a known arch, one per
// schedule and shape (the fastest, a schedule spelled in full:
// complete_config); others are skipped.
std::vector<MeasuredSchedule> measured_schedules(const std::vector<TuningRecord>& records);

// Problems of catalog ops, built once per op and dtype.
class ProblemCache {
 public:
  ProblemCache();
  ~ProblemCache();
  // The problem of a schedule's op, dtype and shape.
  const Problem& problem(const MeasuredSchedule& s);
  size_t bytes_per_element(const MeasuredSchedule& s) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

Candidate candidate_of(const MeasuredSchedule& s);
const ArchLimits& arch_of(const MeasuredSchedule& s);
ScheduleKeys schedule_keys(ProblemCache& problems, const MeasuredSchedule& s);

// The prior of `schedules`: each one's log time over its group's best.
SchedulePrior schedule_prior(const std::vector<MeasuredSchedule>& schedules, ProblemCache& problems);

// `s` as a training sample: cost_features, then `prior`'s features with
// `s`'s own group left out; the target log(us / roofline_us).
CostSample cost_sample(ProblemCache& problems, const MeasuredSchedule& s, const SchedulePrior& prior);

// The archs, GPU names and cost_domains of `schedules`, as a model trained on them records them.
void describe_training(const std::vector<MeasuredSchedule>& schedules, CostModelInfo* info);

// Numbers `samples[i]` (of `schedules[i]`) by the group it competes in.
void assign_groups(const std::vector<MeasuredSchedule>& schedules, std::vector<CostSample>* samples);

// Weights `samples[i]` (of `schedules[i]`) so that every group counts alike
// (a group of n schedules weighs 1/n each, times the mean group size), and
// a schedule within 10 % of its group's best `1 + fast_weight` times more:
// a ranking is judged by its top.
void weigh_samples(const std::vector<MeasuredSchedule>& schedules, double fast_weight, std::vector<CostSample>* samples);

}  // namespace fusekit
