#include "search/host_problem.h"

#include <unistd.h>

#include <algorithm>

namespace fusekit {

std::string host_problem_key(const Workload& workload, const Problem& problem, uint64_t seed) {
  std::string key = workload.name() + "/" + dtype_name(workload.dtype()) + "/" + problem.shape_text + "/" +
                    std::to_string(seed);
  for (size_t i = 0; i < problem.input_dims.size(); ++i) key += "/" + std::to_string(workload.input_magnitude(i));
  return key;
}

HostProblem prepare_host_problem(const Workload& workload, const Problem& problem, uint64_t seed) {
  HostProblem p;
  p.key = host_problem_key(workload, problem, seed);
  p.problem = problem;
  const DType dt = workload.dtype();
  for (size_t i = 0; i < problem.input_dims.size(); ++i) {
    HostTensor t = HostTensor::unfilled(dt, problem.input_dims[i]);
    workload.fill_input(i, seed * 1000003u + i, &t);
    p.inputs.push_back(std::move(t));
  }
  workload.reference(problem, p.inputs, &p.reference);
  workload.reference_slack(problem, p.inputs, p.reference, &p.slack);
  p.tolerance = workload.tolerance(problem);
  p.params = workload.param_values();
  return p;
}

size_t host_problem_bytes(const HostProblem& p) {
  size_t n = 0;
  for (const auto* list : {&p.inputs, &p.reference, &p.slack})
    for (const auto& t : *list) n += t.bytes.size();
  return n;
}

size_t ProblemWindow::bytes() {
  static const size_t budget = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    const size_t gib = size_t{1} << 30;
    const size_t phys = pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : 16 * gib;
    return std::clamp(phys / 8, 2 * gib, 16 * gib);
  }();
  return budget;
}

bool ProblemWindow::holds(const std::string& key) const {
  for (const auto& [k, n] : keys_)
    if (k == key) return true;
  return false;
}

std::vector<std::string> ProblemWindow::add(const std::string& key, size_t bytes) {
  for (auto it = keys_.begin(); it != keys_.end(); ++it)
    if (it->first == key) {
      keys_.erase(it);
      break;
    }
  keys_.emplace_back(key, bytes);
  size_t total = 0;
  for (const auto& [k, n] : keys_) total += n;
  std::vector<std::string> out;
  while (keys_.size() > 1 && (keys_.size() > kEntries || total > ProblemWindow::bytes())) {
    total -= keys_.front().second;
    out.push_back(keys_.front().first);
    keys_.erase(keys_.begin());
  }
  return out;
}

const HostProblem* HostProblemCache::find(const std::string& key) const {
  const auto it = problems_.find(key);
  return it == problems_.end() ? nullptr : &it->second;
}

const HostProblem& HostProblemCache::put(HostProblem problem) {
  const std::string key = problem.key;
  for (const auto& gone : window_.add(key, host_problem_bytes(problem))) problems_.erase(gone);
  return problems_[key] = std::move(problem);
}

}  // namespace fusekit
