// Bucket record choice and its explanation for `fusekit build`.
#include "generator/package/record_selection.h"

#include <cstdio>
#include <map>
#include <set>

namespace fusekit {

std::string explain_selection(const std::string& op, const TuneKey& key, const Selection& sel) {
  std::string line = op + " " + key.arch + " " + key.shape_bucket + ": ";
  if (!sel.best) return line + "no usable record";
  const TuningRecord& w = *sel.best;
  char us[32];
  std::snprintf(us, sizeof(us), "%.2f us", w.median_us);
  std::set<std::string> schedules;
  for (const auto& r : sel.used) schedules.insert(r.backend + '\n' + r.shape + '\n' + r.params);
  line += w.backend + " '" + w.params + "' " + us + " (" + record_status_name(w.status) + ", record " +
          w.id.substr(0, 8) + ", " + (w.gpu_name.empty() ? "no GPU" : w.gpu_name) + "), ranked among " +
          std::to_string(sel.used.size()) + " records of " + std::to_string(schedules.size()) + " schedules";
  if (sel.passed_over.empty()) return line + "; none passed over";
  // Reasons with their counts and a few record ids each.
  std::map<std::string, std::vector<std::string>> by_reason;
  for (const auto& p : sel.passed_over) by_reason[p.reason].push_back(p.record.id.substr(0, 8));
  line += "; passed over " + std::to_string(sel.passed_over.size()) + ":";
  for (const auto& [reason, ids] : by_reason) {
    line += " " + std::to_string(ids.size()) + " " + reason + " [";
    for (size_t i = 0; i < ids.size() && i < 3; ++i) line += (i ? " " : "") + ids[i];
    line += ids.size() > 3 ? " ...];" : "];";
  }
  line.pop_back();
  return line;
}

BucketChoice choose_bucket_record(const TuneDb& db, const TuneKey& key, const RecordOrigin& target,
                                  const std::string& op) {
  BucketChoice c;
  const Selection sel = select_winner(db.key_records(key, false), target);
  if (!sel.best) return c;
  c.best = sel.best;
  c.best_generic = select_winner(db.key_records(key, true), target).best;
  c.explanation = explain_selection(op, key, sel);
  return c;
}

}  // namespace fusekit
