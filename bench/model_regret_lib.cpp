#include "bench/model_regret_lib.h"

#include <algorithm>
#include <memory>

#include "common/errors.h"
#include "common/shape_text.h"
#include "fusekit/arch.h"
#include "generator/candidate_workload.h"
#include "generator/candidates/catalog.h"
#include "schedules/arch_limits.h"
#include "search/interfaces.h"
#include "tunedb/tune_db.h"

namespace fusekit {
namespace {

// "8192x4096" (outermost first) -> {4096, 8192} (innermost first).
std::vector<int64_t> domain_of(const std::string& shape) {
  const auto outer_first = parse_shape_text(shape);
  if (!outer_first) throw UserError("record shape '" + shape + "' is malformed; expected e.g. 8192x4096");
  return {outer_first->rbegin(), outer_first->rend()};
}

}  // namespace

std::map<std::string, std::vector<RegretCase>> model_regret(const std::vector<TuningRecord>& records) {
  std::map<std::vector<std::string>, std::map<std::string, double>> groups;  // key -> params -> fastest us
  for (const auto& r : records) {
    if (r.status != RecordStatus::kOk || r.shape == "any") continue;
    auto& times = groups[{r.pattern, r.dtype, r.shape, r.backend, r.arch}];
    auto it = times.find(r.params);
    if (it == times.end() || r.median_us < it->second) times[r.params] = r.median_us;
  }
  std::map<std::string, std::vector<RegretCase>> out;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<Workload>> workloads;  // built once per op and dtype
  for (const auto& [key, times] : groups) {
    const FusionCandidate* cand = nullptr;
    for (const auto& c : catalog())
      if (c.name == key[0]) cand = &c;
    const auto dt = parse_dtype(key[1]);
    const auto arch = parse_arch(key[4]);
    const ArchLimits* limits = arch ? find_arch_limits(*arch) : nullptr;
    if (!cand || !dt || !limits || times.size() < 2) continue;
    std::vector<Candidate> batch;
    std::vector<double> measured;
    for (const auto& [params, us] : times) {
      batch.push_back({parse_backend(key[3]), Config::parse(params)});
      measured.push_back(us);
    }
    auto& wl = workloads[{key[0], key[1]}];
    if (!wl) wl = make_candidate_workload(*cand, *dt);
    const Problem p = wl->problem(domain_of(key[2]));
    const std::vector<double> predicted = make_analytic_cost_model(*limits)->predict(p, dtype_bytes(*dt), batch);
    const size_t pick = std::min_element(predicted.begin(), predicted.end()) - predicted.begin();
    RegretCase c{key[0], key[1], key[2], key[3], batch[pick].config.to_string(), measured[pick],
                 *std::min_element(measured.begin(), measured.end())};
    out[std::string(cand->reduces() ? "rows" : "pointwise") + " " + key[1] + " " + key[3]].push_back(c);
  }
  return out;
}

std::vector<TuningRecord> read_measured_records(const std::vector<std::string>& paths) {
  std::vector<TuningRecord> records;
  for (const auto& path : paths)
    for (TuningRecord& r : read_jsonl(path))
      if (r.status == RecordStatus::kOk) records.push_back(std::move(r));
  return records;
}

}  // namespace fusekit
