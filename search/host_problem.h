// One problem's host side, everything a measurer needs besides the kernels:
// seeded inputs, the CPU reference, the tolerance and the scalar
// parameters. The tuning process prepares it (it owns the Workload and its
// Halide reference); a measuring worker only copies it to its GPU.
#pragma once

#include <string>
#include <vector>

#include "search/workload.h"

namespace fusekit {

struct HostProblem {
  std::string key;                      // names the data: workload, dtype, shape, seed, magnitudes
  Problem problem;
  std::vector<HostTensor> inputs;
  std::vector<HostTensor> reference;
  Tolerance tolerance{0, 0};
  std::vector<float> params;
};

// The key HostProblem would have, without computing the data.
std::string host_problem_key(const Workload& workload, const Problem& problem, uint64_t seed);
HostProblem prepare_host_problem(const Workload& workload, const Problem& problem, uint64_t seed);

}  // namespace fusekit
