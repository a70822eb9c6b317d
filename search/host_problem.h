// One problem's host side, everything a measurer needs besides the kernels:
// seeded inputs, the CPU reference, the tolerance and the scalar
// parameters. The tuning process prepares it (it owns the Workload and its
// Halide reference); a measuring worker only copies it to its GPU.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "search/workload.h"

namespace fusekit {

struct HostProblem {
  std::string key;                      // names the data: workload, dtype, shape, seed, magnitudes
  Problem problem;
  std::vector<HostTensor> inputs;
  std::vector<HostTensor> reference;
  std::vector<HostTensor> slack;        // Workload::reference_slack (empty: a well-conditioned reference)
  Tolerance tolerance{0, 0};
  std::vector<float> params;
};

// Which of the last problems a cache holds: at most kEntries and, beyond
// the newest, bytes() of tensors. A tuning process keeps one window for what
// its worker holds; the worker's cache follows the same window over the same
// sends, so the process knows what the worker holds without asking.
class ProblemWindow {
 public:
  // A row task cycles through five timed shapes, its odd verify shapes and
  // one verify shape per specialized row length every batch: a smaller
  // window recomputes each problem's reference on every batch.
  static constexpr size_t kEntries = 16;
  // An eighth of the machine's memory (the process and its worker each
  // hold a copy), within 2 to 16 GiB; the same on both sides of the pipe.
  static size_t bytes();
  bool holds(const std::string& key) const;
  // Adds (or refreshes) a key; returns the keys it pushed out.
  std::vector<std::string> add(const std::string& key, size_t bytes);
  void clear() { keys_.clear(); }

 private:
  std::vector<std::pair<std::string, size_t>> keys_;  // oldest first
};

// Host problems by key, within a ProblemWindow; a found problem stays put
// until it leaves the window.
class HostProblemCache {
 public:
  const HostProblem* find(const std::string& key) const;
  const HostProblem& put(HostProblem problem);

 private:
  ProblemWindow window_;
  std::map<std::string, HostProblem> problems_;
};

size_t host_problem_bytes(const HostProblem& problem);

// The key HostProblem would have, without computing the data.
std::string host_problem_key(const Workload& workload, const Problem& problem, uint64_t seed);
HostProblem prepare_host_problem(const Workload& workload, const Problem& problem, uint64_t seed);

}  // namespace fusekit
