// extract_report_data: the overview, the ops (summarize_op), the failures and
// what the records cannot show (peer timings, copy limits).
#include <algorithm>
#include <map>
#include <set>

#include "common/errors.h"
#include "report/report_data.h"

namespace fusekit {
namespace {

using nlohmann::json;

constexpr RecordStatus kStatuses[] = {RecordStatus::kOk,          RecordStatus::kModeled,
                                      RecordStatus::kCompileError, RecordStatus::kLaunchError,
                                      RecordStatus::kVerifyError,  RecordStatus::kTimeout,
                                      RecordStatus::kFault,
                                      RecordStatus::kRevoked};

bool failed(const TuningRecord& r) { return r.status != RecordStatus::kOk && r.status != RecordStatus::kModeled; }

// A message's first non-empty line, cut to `chars`.
std::string first_line(const std::string& text, size_t chars) {
  size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string::npos) return "";
  std::string line = text.substr(start, text.find('\n', start) - start);
  if (line.size() > chars) line = line.substr(0, chars) + "...";
  return line;
}

json overview_json(const std::vector<TuningRecord>& records) {
  std::map<std::string, size_t> statuses;
  for (RecordStatus s : kStatuses) statuses[record_status_name(s)] = 0;
  std::map<std::string, std::set<std::string>> op_dtypes;
  std::map<std::string, size_t> op_records;
  std::map<std::string, std::map<std::string, size_t>> op_statuses;
  std::set<std::string> dtypes, shapes, archs, backends, versions;
  std::map<std::pair<std::string, int>, size_t> gpus;
  std::string first_time, last_time;
  for (const TuningRecord& r : records) {
    ++statuses[record_status_name(r.status)];
    op_dtypes[op_label(r)].insert(r.dtype);
    ++op_records[op_label(r)];
    ++op_statuses[op_label(r)][record_status_name(r.status)];
    dtypes.insert(r.dtype);
    shapes.insert(r.shape);
    archs.insert(r.arch);
    backends.insert(r.backend);
    versions.insert(r.fusekit_version);
    if (!r.gpu_name.empty()) ++gpus[{r.gpu_name, r.sm_count}];
    if (first_time.empty() || r.timestamp < first_time) first_time = r.timestamp;
    if (r.timestamp > last_time) last_time = r.timestamp;
  }
  json ops = json::array();
  for (const auto& [op, ds] : op_dtypes) ops.push_back({{"op", op}, {"dtypes", ds}, {"records", op_records[op]}, {"statuses", op_statuses[op]}});
  json gpu_list = json::array();
  for (const auto& [g, n] : gpus) gpu_list.push_back({{"name", g.first}, {"sm_count", g.second}, {"records", n}});
  return {{"records", records.size()}, {"statuses", statuses}, {"ops", ops},
          {"dtypes", dtypes},          {"shapes", shapes},     {"archs", archs},
          {"backends", backends},      {"gpus", gpu_list},     {"fusekit_versions", versions},
          {"first_timestamp", first_time}, {"last_timestamp", last_time}};
}

json failures_json(const std::vector<TuningRecord>& records, const ReportLimits& limits) {
  json by_status = json::array();
  for (RecordStatus s : kStatuses) {
    if (s == RecordStatus::kOk || s == RecordStatus::kModeled) continue;
    size_t count = 0;
    json first = json::array();
    for (const TuningRecord& r : records) {
      if (r.status != s) continue;
      if (count++ < limits.first_messages)
        first.push_back({{"id", r.id}, {"op", op_label(r)}, {"dtype", r.dtype}, {"shape", r.shape}, {"arch", r.arch},
                         {"backend", r.backend}, {"params", r.params},
                         {"message", first_line(r.error, limits.message_chars)}});
    }
    if (count) by_status.push_back({{"status", record_status_name(s)}, {"count", count}, {"first", first}});
  }
  // Per op: how many of its records failed, by status.
  std::map<std::tuple<std::string, std::string, std::string>, std::map<std::string, size_t>> per_op;
  for (const TuningRecord& r : records)
    if (failed(r)) ++per_op[{op_label(r), r.dtype, r.arch}][record_status_name(r.status)];
  json by_op = json::array();
  for (const auto& [key, counts] : per_op)
    by_op.push_back({{"op", std::get<0>(key)}, {"dtype", std::get<1>(key)}, {"arch", std::get<2>(key)}, {"counts", counts}});
  return {{"by_status", by_status}, {"by_op", by_op}};
}

}  // namespace

std::string op_label(const TuningRecord& r) {
  return r.pattern == "expr" ? "expr " + r.pipeline_hash.substr(0, 8) : r.pattern;
}

nlohmann::json extract_report_data(const std::vector<TuningRecord>& records, const ReportLimits& limits) {
  if (records.empty())
    throw UserError("the database has no records; run `fusekit tune` (or `fusekit db import`) into it first");
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<const TuningRecord*>> groups;
  for (const TuningRecord& r : records) groups[{op_label(r), r.dtype, r.arch}].push_back(&r);
  json ops = json::array();
  size_t shown = 0;
  for (const auto& [key, rs] : groups) {
    // Each op's share of the points, at least a few hundred.
    const size_t share = std::max<size_t>(200, limits.max_points * rs.size() / records.size());
    ops.push_back(summarize_op(rs, share));
    shown += ops.back()["points"]["shown"].get<size_t>();
  }
  return {{"overview", overview_json(records)},
          {"ops", ops},
          {"points", {{"shown", shown}, {"of", records.size()}, {"limit", limits.max_points}}},
          {"failures", failures_json(records, limits)},
          {"peers",
           {{"present", false},
            {"note", "Tuning records carry no peer timings: the side-by-side benchmark (bench/peers.py) writes its "
                     "own peers.json, which the database does not hold, so no ratio against Inductor is shown."}}},
          {"copy",
           {{"present", false},
            {"note", "Tuning records carry no copy measurement, so bandwidth is shown in GB/s and not as a "
                     "fraction of the copy limit."}}}};
}

}  // namespace fusekit
