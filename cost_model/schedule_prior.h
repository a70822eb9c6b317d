// What other workloads measured for the same schedule: for each schedule
// (arch, backend, element size, completed parameters) the log of its time
// over its group's best time, averaged over the groups (op, dtype, shape,
// backend, arch) of the training data that timed it, at the same size, at
// the same row length and at any size. A new op runs the schedules its
// neighbours ran, and a schedule that was slow at a size for every other op
// is usually slow for it too; the trees weigh this against the rest.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "search/interfaces.h"

namespace fusekit {

// Where one schedule's measurements are pooled.
struct ScheduleKeys {
  std::string any;   // arch backend element-bytes params
  std::string size;  // any + the problem's size (pointwise: elements; rows: rows x cols)
  std::string cols;  // any + the row length (empty for pointwise)
};

ScheduleKeys schedule_keys(const Problem& problem, size_t bytes_per_element, const Candidate& candidate,
                           const ArchLimits& arch);

class SchedulePrior {
 public:
  // The features' names, in the order features() gives them.
  static const std::vector<std::string>& feature_names();

  // One group's schedule: log(us / the group's best us).
  void add(const std::string& group, const ScheduleKeys& keys, double log_slowdown);
  // The pooled means and how many groups each pools, leaving out
  // `own_group` (a training sample must not see its own time); NaN where
  // no other group timed the schedule.
  std::vector<float> features(const ScheduleKeys& keys, const std::string& own_group = "") const;

  nlohmann::json to_json() const;
  // Throws UserError when `j` is not what to_json wrote.
  static SchedulePrior from_json(const nlohmann::json& j);

 private:
  std::map<std::string, std::map<std::string, float>> by_key_;  // key -> group -> log slowdown
};

}  // namespace fusekit
