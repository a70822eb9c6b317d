// summarize_op: one op's shapes (best per backend, winner, runner-up) and its
// schedule points. A schedule timed several times ranks by its median
// record, as TuneDb::best ranks it; measured records beat modeled ones.
#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "common/shape_text.h"
#include "report/report_data.h"

namespace fusekit {
namespace {

using nlohmann::json;

bool timed(const TuningRecord& r) { return r.status == RecordStatus::kOk || r.status == RecordStatus::kModeled; }

int64_t elements_of(const std::string& shape) {
  auto dims = parse_shape_text(shape);
  if (!dims) return 0;
  int64_t n = 1;
  for (int64_t d : *dims) n *= d;
  return n;
}

// "threads=256 vec=4" -> {threads: 256, vec: 4}; a value that is not a
// number stays text.
std::vector<std::pair<std::string, json>> parse_params(const std::string& text) {
  std::vector<std::pair<std::string, json>> out;
  std::istringstream s(text);
  std::string token;
  while (s >> token) {
    const size_t eq = token.find('=');
    if (eq == std::string::npos) continue;
    const std::string value = token.substr(eq + 1);
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    out.emplace_back(token.substr(0, eq), !value.empty() && *end == '\0' ? json(v) : json(value));
  }
  return out;
}

// One schedule at one shape: its records and the median one.
struct Schedule {
  std::vector<const TuningRecord*> records;
  const TuningRecord* median = nullptr;
};

json schedule_json(const Schedule& s) {
  const TuningRecord& r = *s.median;
  return {{"backend", r.backend}, {"params", r.params},          {"median_us", r.median_us},
          {"p20_us", r.p20_us},   {"p80_us", r.p80_us},          {"gbps", r.bandwidth_gbps},
          {"id", r.id},           {"status", record_status_name(r.status)}, {"records", s.records.size()}};
}

// The competing schedules of one shape, fastest first: measured ones if
// any record there was measured, else modeled ones.
std::vector<Schedule> ranked_schedules(const std::vector<const TuningRecord*>& at_shape) {
  const bool any_ok = std::any_of(at_shape.begin(), at_shape.end(),
                                  [](const TuningRecord* r) { return r->status == RecordStatus::kOk; });
  std::map<std::string, Schedule> by_name;
  for (const TuningRecord* r : at_shape) {
    if (!timed(*r) || (any_ok && r->status != RecordStatus::kOk)) continue;
    by_name[r->backend + '\n' + r->params].records.push_back(r);
  }
  std::vector<Schedule> out;
  for (auto& [name, s] : by_name) {
    std::sort(s.records.begin(), s.records.end(),
              [](const TuningRecord* a, const TuningRecord* b) { return a->median_us < b->median_us; });
    s.median = s.records[(s.records.size() - 1) / 2];
    out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const Schedule& a, const Schedule& b) {
    return a.median->median_us != b.median->median_us ? a.median->median_us < b.median->median_us
                                                      : a.median->id < b.median->id;
  });
  return out;
}

// One shape's entry; `keep` gets the records every sample shows.
json shape_json(const std::string& shape, const std::vector<const TuningRecord*>& at_shape,
                std::set<const TuningRecord*>* keep, double* winner_us) {
  const std::vector<Schedule> ranked = ranked_schedules(at_shape);
  json best = json::object();
  for (const Schedule& s : ranked) {
    if (best.contains(s.median->backend)) continue;
    best[s.median->backend] = schedule_json(s);
    keep->insert(s.median);
  }
  const size_t failed = std::count_if(at_shape.begin(), at_shape.end(), [](const TuningRecord* r) { return !timed(*r); });
  json j = {{"shape", shape},          {"elements", elements_of(shape)},
            {"bucket", at_shape.front()->shape_bucket},
            {"records", at_shape.size()}, {"failed", failed}, {"best", best}, {"schedules", ranked.size()},
            {"winner", nullptr},       {"runner_up", nullptr}, {"margin", nullptr},
            {"timed", ranked.empty() ? "none" : record_status_name(ranked.front().median->status)}};
  *winner_us = 0;
  if (ranked.empty()) return j;
  j["winner"] = schedule_json(ranked[0]);
  *winner_us = ranked[0].median->median_us;
  if (ranked.size() > 1) {
    j["runner_up"] = schedule_json(ranked[1]);
    if (*winner_us > 0) j["margin"] = ranked[1].median->median_us / *winner_us - 1.0;
  }
  return j;
}

// Index of `value` in `names`, appending it when new.
int index_of(std::vector<std::string>* names, const std::string& value) {
  auto it = std::find(names->begin(), names->end(), value);
  if (it != names->end()) return static_cast<int>(it - names->begin());
  names->push_back(value);
  return static_cast<int>(names->size() - 1);
}

// The points, columnwise; above `max_points` every stride-th record is
// drawn, and the records in `keep` (each shape's best per backend) always.
json points_json(const std::vector<const TuningRecord*>& records, const std::vector<std::string>& shapes,
                 const std::set<const TuningRecord*>& keep, const std::map<std::string, double>& winner_us,
                 size_t max_points) {
  max_points = std::max<size_t>(max_points, 1);
  const size_t stride = records.size() > max_points ? (records.size() + max_points - 1) / max_points : 1;
  std::vector<std::string> backends, statuses, params;
  json shape_col = json::array(), backend_col = json::array(), status_col = json::array(), us = json::array(),
       rel = json::array();
  std::vector<std::vector<std::pair<std::string, json>>> values;
  for (size_t i = 0; i < records.size(); ++i) {
    const TuningRecord& r = *records[i];
    if (i % stride != 0 && !keep.count(&r)) continue;
    shape_col.push_back(std::find(shapes.begin(), shapes.end(), r.shape) - shapes.begin());
    backend_col.push_back(index_of(&backends, r.backend));
    status_col.push_back(index_of(&statuses, record_status_name(r.status)));
    const double w = winner_us.at(r.shape);
    us.push_back(timed(r) ? json(r.median_us) : json(nullptr));
    rel.push_back(timed(r) && w > 0 ? json(r.median_us / w) : json(nullptr));
    values.push_back(parse_params(r.params));
    for (const auto& [name, v] : values.back()) index_of(&params, name);
  }
  std::sort(params.begin(), params.end());
  json param_cols = json::object();
  for (const std::string& p : params) {
    json col = json::array();
    for (const auto& vs : values) {
      auto it = std::find_if(vs.begin(), vs.end(), [&](const auto& kv) { return kv.first == p; });
      col.push_back(it == vs.end() ? json(nullptr) : it->second);
    }
    param_cols[p] = std::move(col);
  }
  return {{"shown", us.size()}, {"of", records.size()}, {"stride", stride}, {"shape_names", shapes},
          {"backends", backends}, {"statuses", statuses}, {"params", params}, {"shape", shape_col},
          {"backend", backend_col}, {"status", status_col}, {"us", us}, {"rel", rel}, {"values", param_cols}};
}

}  // namespace

nlohmann::json summarize_op(const std::vector<const TuningRecord*>& records, size_t max_points) {
  std::map<std::string, std::vector<const TuningRecord*>> by_shape;
  for (const TuningRecord* r : records) by_shape[r->shape].push_back(r);
  std::vector<std::string> shapes;
  for (const auto& [shape, rs] : by_shape) shapes.push_back(shape);
  std::sort(shapes.begin(), shapes.end(), [](const std::string& a, const std::string& b) {
    const int64_t ea = elements_of(a), eb = elements_of(b);
    return ea != eb ? ea < eb : a < b;
  });
  json shape_list = json::array();
  std::set<const TuningRecord*> keep;
  std::map<std::string, double> winner_us;
  std::set<std::string> gpus;
  for (const std::string& shape : shapes) {
    shape_list.push_back(shape_json(shape, by_shape[shape], &keep, &winner_us[shape]));
    for (const TuningRecord* r : by_shape[shape])
      if (!r->gpu_name.empty()) gpus.insert(r->gpu_name);
  }
  const TuningRecord& first = *records.front();
  return {{"op", op_label(first)},
          {"pattern", first.pattern},
          {"dtype", first.dtype},
          {"arch", first.arch},
          {"gpus", gpus},
          {"pipeline_text", first.pipeline_text.substr(0, 400)},
          {"records", records.size()},
          {"shapes", shape_list},
          {"points", points_json(records, shapes, keep, winner_us, max_points)}};
}

}  // namespace fusekit
