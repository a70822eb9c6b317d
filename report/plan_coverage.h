// A plan's coverage by a database: for each plan entry (one fused region of a
// model, see `fusekit plan`), which of its sizes have timed records.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tunedb/record.h"

namespace fusekit {

// Reads a plan file; throws UserError naming the file when it is not JSON or
// has no "entries" array.
nlohmann::json read_plan(const std::string& path);

// Entry by entry: its name, expression, dtype and each size with the number
// of ok/modeled records whose pattern is the entry's name (the op name a
// plan tunes under), of its dtype and that shape, and the fastest time.
// The plan's own "coverage", "unsupported" and "boundaries" are passed on.
nlohmann::json plan_coverage(const nlohmann::json& plan, const std::vector<TuningRecord>& records);

}  // namespace fusekit
