// The guided search's pick and the full search's winner timed again side by
// side on this GPU: per op, dtype and shape of two `fusekit db export`s, the
// full run's fastest verified schedule and the fastest of the guided run's
// first MAX_TIMED verified schedules (in the order the search timed them)
// are built again and timed together in interleaved rounds, REPEATS times
// with their order swapped each time. Prints and writes to OUT.json each
// one's median over the repeats and their ratio.
//
//   guided_rematch FULL.jsonl GUIDED.jsonl OUT.json [MAX_TIMED=8] [REPEATS=4]
//
// (either export may be gzipped.)
//
// Why: a run's recorded best is the fastest of tens of noisy timings, so at a
// few microseconds two runs' recorded bests differ by luck as much as by
// schedule; timed in one batch, the two schedules share the GPU's state.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/errors.h"
#include "common/shape_text.h"
#include "generator/candidate_workload.h"
#include "generator/candidates/catalog.h"
#include "schedules/arch_limits.h"
#include "tunedb/tune_db.h"

namespace fusekit {
namespace {

using Key = std::tuple<std::string, std::string, std::string>;  // op, dtype, shape

struct Timed {
  Candidate candidate;
  std::string arch;
  double us = 0.0;
};

// Per op, dtype and shape: the verified records in file order.
std::map<Key, std::vector<Timed>> read_runs(const std::string& path) {
  std::map<Key, std::vector<Timed>> runs;
  for (const TuningRecord& r : read_jsonl(path)) {
    if (r.status != RecordStatus::kOk) continue;
    const Candidate c{parse_backend(r.backend), Config::parse(r.params)};
    runs[{r.pattern, r.dtype, r.shape}].push_back({c, r.arch, r.median_us});
  }
  return runs;
}

// The fastest of the first `n` timed.
const Timed& fastest(const std::vector<Timed>& timed, size_t n) {
  return *std::min_element(timed.begin(), timed.begin() + static_cast<std::ptrdiff_t>(std::min(n, timed.size())),
                           [](const Timed& a, const Timed& b) { return a.us < b.us; });
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

struct Rematch {
  double full_us = 0.0, guided_us = 0.0;  // medians over the repeats
  std::string error;
};

// Times `schedules` (built) together in one batch per repeat, the order
// swapped each time; per schedule, its median time in each repeat.
std::vector<std::vector<double>> time_together(Measurer& measurer, const Workload& wl, const Problem& p,
                                               const std::vector<Candidate>& schedules,
                                               const std::vector<BuildResult>& built, int repeats, std::string* error) {
  MeasureOptions opts;
  opts.target_ms = 100.0;
  opts.max_samples = 3000;
  opts.rounds = 20;
  std::vector<std::vector<double>> us(schedules.size());
  for (int r = 0; r < repeats; ++r) {
    std::vector<MeasureInput> batch;
    for (size_t i = 0; i < schedules.size(); ++i) batch.push_back({&schedules[i], &built[i].artifact});
    if (r % 2) std::reverse(batch.begin(), batch.end());
    const auto results = measurer.measure(wl, p, batch, opts);
    for (size_t k = 0; k < results.size(); ++k) {
      const MeasureResult& m = results[k];
      if (m.status != RecordStatus::kOk) {
        *error = std::string(record_status_name(m.status)) + ": " + m.error;
        return {};
      }
      us[static_cast<size_t>(batch[candidate_index(results, k)].candidate - schedules.data())].push_back(m.median_us);
    }
  }
  return us;
}

// Builds both schedules and times them side by side; the same schedule
// twice is timed once, as itself.
Rematch rematch(Measurer& measurer, const Key& key, const Timed& full, const Timed& guided, int repeats) {
  const auto& [op, dtype, shape] = key;
  const auto dt = parse_dtype(dtype);
  const auto outer_first = parse_shape_text(shape);
  if (!dt || !outer_first) return {0, 0, "dtype '" + dtype + "' or shape '" + shape + "' does not parse"};
  const FusionCandidate& cand = find_pattern(op);
  auto wl = make_candidate_workload(cand, *dt);
  const Problem p = wl->problem(std::vector<int64_t>(outer_first->rbegin(), outer_first->rend()));
  const bool same =
      full.candidate.backend == guided.candidate.backend && full.candidate.config == guided.candidate.config;
  std::vector<Candidate> schedules = {full.candidate};
  if (!same) schedules.push_back(guided.candidate);
  const auto built = make_kernel_builder(cand, *dt, require_arch(full.arch))->build(schedules);
  for (const auto& b : built)
    if (!b.ok) return {0, 0, "build: " + b.error};
  std::string error;
  const auto us = time_together(measurer, *wl, p, schedules, built, repeats, &error);
  if (!error.empty()) return {0, 0, error};
  return {median(us.front()), median(us.back()), ""};
}

// One shape's line on stdout and its row of OUT.json.
nlohmann::json report_row(const Key& key, const Timed& full, const Timed& guided, const Rematch& m) {
  const auto& [op, dtype, shape] = key;
  nlohmann::json row = {{"pattern", op}, {"dtype", dtype}, {"shape", shape},
                        {"full_params", full.candidate.config.to_string()},
                        {"guided_params", guided.candidate.config.to_string()},
                        {"recorded_ratio", guided.us / full.us}};
  if (!m.error.empty()) {
    row["error"] = m.error;
    std::printf("%-20s %-5s %-12s %s\n", op.c_str(), dtype.c_str(), shape.c_str(), m.error.c_str());
    return row;
  }
  const double ratio = m.guided_us / m.full_us;
  row.update({{"full_us", m.full_us}, {"guided_us", m.guided_us}, {"ratio", ratio}, {"within_3pct", ratio <= 1.03}});
  std::printf("%-20s %-5s %-12s %9.2f %9.2f %7.3f  %.3f\n", op.c_str(), dtype.c_str(), shape.c_str(), m.full_us,
              m.guided_us, ratio, guided.us / full.us);
  return row;
}

int run(const std::string& full_path, const std::string& guided_path, const std::string& out_path, size_t max_timed,
        int repeats) {
  const auto full = read_runs(full_path), guided = read_runs(guided_path);
  const auto measurer = make_gpu_measurer();  // first: no GPU is one error, not one per shape
  nlohmann::json rows = nlohmann::json::array();
  int compared = 0, within = 0, failed = 0;
  std::printf("%-20s %-5s %-12s %9s %9s %7s  %s\n", "op", "dtype", "shape", "full us", "guided us", "ratio",
              "recorded ratio");
  for (const auto& [key, full_timed] : full) {
    const auto g = guided.find(key);
    if (g == guided.end()) continue;
    const Timed& fw = fastest(full_timed, full_timed.size());
    const Timed& gw = fastest(g->second, max_timed);
    Rematch m;
    try {
      m = rematch(*measurer, key, fw, gw, repeats);
    } catch (const UserError& e) {  // an op not in the catalog (an --expr tune), an unknown arch
      m.error = e.what();
    }
    const nlohmann::json row = report_row(key, fw, gw, m);
    failed += !m.error.empty();
    compared += m.error.empty();
    within += m.error.empty() && row["within_3pct"].get<bool>();
    rows.push_back(row);
  }
  std::printf("timed again side by side: the guided pick after at most %zu timed within 3 %% of the full winner at "
              "%d/%d shapes (%d failed)\n", max_timed, within, compared, failed);
  std::ofstream(out_path) << nlohmann::json{{"max_timed", max_timed}, {"repeats", repeats}, {"rows", rows},
                                            {"within_3pct", within}, {"compared", compared}, {"failed", failed}}
                                 .dump(1)
                          << "\n";
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace fusekit

int main(int argc, char** argv) {
  if (argc < 4 || argc > 6) {
    std::fprintf(stderr, "usage: guided_rematch FULL.jsonl GUIDED.jsonl OUT.json [MAX_TIMED=8] [REPEATS=4]\n");
    return 2;
  }
  try {
    const int max_timed = argc > 4 ? std::stoi(argv[4]) : 8, repeats = argc > 5 ? std::stoi(argv[5]) : 4;
    if (max_timed < 1 || repeats < 1) throw fusekit::UserError("MAX_TIMED and REPEATS must be at least 1");
    return fusekit::run(argv[1], argv[2], argv[3], static_cast<size_t>(max_timed), repeats);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "guided_rematch: %s\n", e.what());
    return 1;
  }
}
