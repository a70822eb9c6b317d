// Two-way sync by id (see store_sync.h).
#include "tunedb/store_sync.h"

#include <unordered_set>
#include <vector>

namespace fusekit {
namespace {

// The records of `from` whose ids `to` does not hold.
std::vector<TuningRecord> lacking(const std::vector<TuningRecord>& from, const std::vector<TuningRecord>& to) {
  std::unordered_set<std::string> held;
  held.reserve(to.size());
  for (const auto& r : to) held.insert(r.id);
  std::vector<TuningRecord> out;
  for (const auto& r : from)
    if (!held.count(r.id)) out.push_back(r);
  return out;
}

}  // namespace

SyncCounts sync_stores(TuneDb& a, TuneDb& b) {
  const std::vector<TuningRecord> in_a = a.all();
  const std::vector<TuningRecord> in_b = b.all();
  SyncCounts c;
  c.a_to_b = b.commit(lacking(in_a, in_b));
  c.b_to_a = a.commit(lacking(in_b, in_a));
  c.a_after = a.size();
  c.b_after = b.size();
  return c;
}

}  // namespace fusekit
