// Plan coverage: entries matched to records by (name, dtype, shape).
#include "report/plan_coverage.h"

#include <fstream>
#include <map>
#include <tuple>

#include "common/errors.h"

namespace fusekit {
namespace {

using nlohmann::json;

std::string text_field(const json& entry, const char* name) {
  auto it = entry.find(name);
  return it != entry.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

nlohmann::json read_plan(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw UserError("cannot read plan '" + path + "'; pass --plan with the plan.json `fusekit plan` wrote");
  json plan = json::parse(f, nullptr, false);
  if (plan.is_discarded())
    throw UserError("plan '" + path + "' is not JSON; pass --plan with the plan.json `fusekit plan` wrote");
  if (!plan.is_object() || !plan.contains("entries") || !plan["entries"].is_array())
    throw UserError("plan '" + path + "' has no \"entries\" array; pass --plan with the plan.json `fusekit plan` wrote");
  return plan;
}

nlohmann::json plan_coverage(const nlohmann::json& plan, const std::vector<TuningRecord>& records) {
  struct Tuned {
    size_t records = 0;
    double best_us = 0;
  };
  std::map<std::tuple<std::string, std::string, std::string>, Tuned> tuned;
  for (const TuningRecord& r : records) {
    if (r.status != RecordStatus::kOk && r.status != RecordStatus::kModeled) continue;
    Tuned& t = tuned[{r.pattern, r.dtype, r.shape}];
    if (t.records++ == 0 || r.median_us < t.best_us) t.best_us = r.median_us;
  }
  json entries = json::array();
  size_t sizes_total = 0, sizes_tuned = 0;
  for (const json& e : plan["entries"]) {
    if (!e.is_object()) continue;
    const std::string name = text_field(e, "name"), dtype = text_field(e, "dtype");
    json sizes = json::array();
    size_t covered = 0;
    if (e.contains("sizes") && e["sizes"].is_array())
      for (const json& s : e["sizes"]) {
        const std::string size = s.is_string() ? s.get<std::string>() : s.dump();
        auto it = tuned.find({name, dtype, size});
        const bool hit = it != tuned.end();
        covered += hit;
        sizes.push_back({{"size", size}, {"records", hit ? it->second.records : 0},
                         {"best_us", hit ? json(it->second.best_us) : json(nullptr)}});
      }
    sizes_total += sizes.size();
    sizes_tuned += covered;
    const size_t occurrences = e.contains("occurrences") && e["occurrences"].is_array() ? e["occurrences"].size() : 0;
    entries.push_back({{"name", name}, {"expr", text_field(e, "expr")}, {"dtype", dtype}, {"sizes", sizes},
                       {"covered", covered}, {"occurrences", occurrences}});
  }
  auto count_of = [&](const char* key) { return plan.contains(key) && plan[key].is_array() ? plan[key].size() : 0; };
  return {{"model", text_field(plan, "model")}, {"source", text_field(plan, "source")},
          {"entries", entries},                 {"sizes", sizes_total},
          {"sizes_tuned", sizes_tuned},         {"coverage", plan.value("coverage", json::object())},
          {"unsupported", count_of("unsupported")}, {"boundaries", count_of("boundaries")}};
}

}  // namespace fusekit
