// How well the analytic cost model ranks schedules, against measured
// records: for every (pattern, dtype, shape, backend, arch) with two or more
// measured schedules, the model of that arch predicts each one, and the
// regret is the measured time of its pick over the best measured time, minus
// one (what tuning with `--model` instead of a GPU would have cost there).
// bench/model_regret prints it; a test holds the model to it on the H200
// records in bench/results.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tunedb/record.h"

namespace fusekit {

struct RegretCase {
  std::string pattern, dtype, shape, backend;
  std::string pick;       // the model's choice (Config text)
  double pick_us = 0.0;   // its measured time
  double best_us = 0.0;   // the best measured time
  double regret() const { return pick_us / best_us - 1.0; }
};

// Records of other statuses, of unknown patterns or archs, and groups with a
// single schedule are skipped. Keyed "rows f32 nvrtc", "pointwise bf16 halide".
std::map<std::string, std::vector<RegretCase>> model_regret(const std::vector<TuningRecord>& records);

// Measured records from JSONL files (the format of `fusekit db export`, plain
// or .gz: read_jsonl).
std::vector<TuningRecord> read_measured_records(const std::vector<std::string>& paths);

}  // namespace fusekit
