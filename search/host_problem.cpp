#include "search/host_problem.h"

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
    HostTensor t = HostTensor::make(dt, problem.input_dims[i]);
    workload.fill_input(i, seed * 1000003u + i, &t);
    p.inputs.push_back(std::move(t));
  }
  workload.reference(problem, p.inputs, &p.reference);
  p.tolerance = workload.tolerance(problem);
  p.params = workload.param_values();
  return p;
}

}  // namespace fusekit
