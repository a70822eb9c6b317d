#include "cost_model/schedule_prior.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "cost_model/features.h"

namespace fusekit {

ScheduleKeys schedule_keys(const Problem& problem, size_t bytes_per_element, const Candidate& candidate,
                           const ArchLimits& arch) {
  const Config c = complete_config(candidate, bytes_per_element, arch);
  ScheduleKeys k;
  k.any = arch.arch.name() + " " + backend_name(candidate.backend) + " " + std::to_string(bytes_per_element) + " " +
          c.to_string();
  const bool rows = !c.values().count("ept") && !c.values().count("rsplit");
  if (rows && !problem.domain.empty()) {
    const int64_t cols = problem.domain.front();
    k.cols = k.any + " cols=" + std::to_string(cols);
    k.size = k.any + " rows=" + std::to_string(problem.elements() / std::max<int64_t>(1, cols)) + "x" +
             std::to_string(cols);
  } else {
    k.size = k.any + " n=" + std::to_string(problem.elements());
  }
  return k;
}

const std::vector<std::string>& SchedulePrior::feature_names() {
  static const std::vector<std::string> names = {"prior_size",   "prior_size_groups", "prior_cols",
                                                 "prior_cols_groups", "prior_any", "prior_any_groups"};
  return names;
}

void SchedulePrior::add(const std::string& group, const ScheduleKeys& keys, double log_slowdown) {
  for (const std::string* k : {&keys.any, &keys.size, &keys.cols})
    if (!k->empty()) by_key_[*k][group] = static_cast<float>(log_slowdown);
}

std::vector<float> SchedulePrior::features(const ScheduleKeys& keys, const std::string& own_group) const {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> out;
  for (const std::string* k : {&keys.size, &keys.cols, &keys.any}) {
    double sum = 0, n = 0;
    const auto it = k->empty() ? by_key_.end() : by_key_.find(*k);
    if (it != by_key_.end())
      for (const auto& [group, v] : it->second)
        if (group != own_group) sum += v, n += 1;
    out.push_back(n > 0 ? static_cast<float>(sum / n) : nan);
    out.push_back(static_cast<float>(n));
  }
  return out;
}

nlohmann::json SchedulePrior::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [key, groups] : by_key_) j[key] = groups;
  return j;
}

SchedulePrior SchedulePrior::from_json(const nlohmann::json& j) {
  SchedulePrior p;
  if (!j.is_object()) throw UserError("a cost model's \"prior\" is not an object; retrain it");
  try {
    for (const auto& [key, groups] : j.items()) p.by_key_[key] = groups.get<std::map<std::string, float>>();
  } catch (const nlohmann::json::exception& e) {
    throw UserError(std::string("a cost model's \"prior\" is malformed (") + e.what() + "); retrain it");
  }
  return p;
}

}  // namespace fusekit
