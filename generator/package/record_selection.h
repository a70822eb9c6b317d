// How `fusekit build` picks a shape bucket's record: the shared ranking
// (select_winner) against the build's target GPU and toolchain, and one
// line per op, arch and bucket saying what was used, what passed over, why.
#pragma once

#include <string>
#include <vector>

#include "tunedb/tune_db.h"

namespace fusekit {

struct BucketChoice {
  std::optional<TuningRecord> best;          // the winner, if the key has one
  std::optional<TuningRecord> best_generic;  // among generic (no `len`) schedules
  std::string explanation;                   // "" when the key has no records
};

// Ranks `key`'s records against `target`; `op` ("relu_add f32") heads the
// explanation.
BucketChoice choose_bucket_record(const TuneDb& db, const TuneKey& key, const RecordOrigin& target,
                                  const std::string& op);

// The line for one key: "relu_add f32 sm_90 n<=2^12: nvrtc 'threads=256' 4.10 us,
// ranked among 5 records (2 schedules); passed over 3: 2 modeled (...), 1 stale: CUDA 12.4 (not 13.0) [id...]".
std::string explain_selection(const std::string& op, const TuneKey& key, const Selection& sel);

}  // namespace fusekit
