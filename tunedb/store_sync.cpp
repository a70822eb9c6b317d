// Two-way sync by id (see store_sync.h).
#include "tunedb/store_sync.h"

#include <future>
#include <unordered_set>
#include <vector>

namespace fusekit {
namespace {

// The records of `from` whose ids `to_ids` lacks; `from` is read only when
// it has some.
std::vector<TuningRecord> lacking(const TuneDb& from, const std::vector<std::string>& from_ids,
                                  const std::vector<std::string>& to_ids) {
  const std::unordered_set<std::string> held(to_ids.begin(), to_ids.end());
  size_t missing = 0;
  for (const auto& id : from_ids) missing += held.count(id) == 0;
  std::vector<TuningRecord> out;
  if (missing == 0) return out;
  out.reserve(missing);
  for (auto& r : from.all())
    if (!held.count(r.id)) out.push_back(std::move(r));
  return out;
}

}  // namespace

// The two sides are separate connections: each step runs on both at once.
SyncCounts sync_stores(TuneDb& a, TuneDb& b) {
  auto ids_b = std::async(std::launch::async, [&] { return b.ids(); });
  const std::vector<std::string> ids_a = a.ids();
  const std::vector<std::string> held_b = ids_b.get();
  auto to_a = std::async(std::launch::async, [&] { return lacking(b, held_b, ids_a); });
  const std::vector<TuningRecord> to_b = lacking(a, ids_a, held_b);
  const std::vector<TuningRecord> for_a = to_a.get();
  SyncCounts c;
  auto into_a = std::async(std::launch::async, [&] { return a.commit(for_a); });
  c.a_to_b = b.commit(to_b);
  c.b_to_a = into_a.get();
  c.a_after = a.size();
  c.b_after = b.size();
  return c;
}

}  // namespace fusekit
