// The data of a report: what `fusekit report` extracts from a database's
// records (and a plan), as the JSON the page draws from. Extraction is pure:
// records in, JSON out, so it is unit-tested without a browser.
//
//   overview   ops, dtypes, shapes, arches, GPUs, record counts by status
//   ops        per (op, dtype, arch): each shape's best per backend, the
//              winner, its spread and the runner-up margin; every schedule
//              as a point (sampled above a limit, and the page says so)
//   failures   counts by status, the first messages with their record ids
//   peers      whether records carry peer timings (they do not: the page says so)
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tunedb/record.h"

namespace fusekit {

struct ReportLimits {
  size_t max_points = 60000;      // schedule points over all ops; above it they are sampled
  size_t first_messages = 5;      // failure messages shown per status
  size_t message_chars = 400;     // each cut to its first line and this many characters
};

// Throws UserError when `records` is empty (an empty database has nothing to report).
nlohmann::json extract_report_data(const std::vector<TuningRecord>& records, const ReportLimits& limits = {});

// One op of the report: its records' summary per shape and its points.
// `records` (not empty) all share pattern, dtype and arch; `max_points` caps the points.
nlohmann::json summarize_op(const std::vector<const TuningRecord*>& records, size_t max_points);

// The name an op is shown under: its pattern, or for `--expr` chains
// "expr " and the first 8 digits of the pipeline hash (they share a pattern).
std::string op_label(const TuningRecord& r);

}  // namespace fusekit
