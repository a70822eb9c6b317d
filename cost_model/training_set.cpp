#include "cost_model/training_set.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "common/errors.h"
#include "common/shape_text.h"
#include "cost_model/features.h"
#include "fusekit/arch.h"
#include "generator/candidate_workload.h"
#include "generator/candidates/catalog.h"

namespace fusekit {
namespace {

const FusionCandidate* catalog_op(const std::string& name) {
  for (const auto& c : catalog())
    if (c.name == name) return &c;
  return nullptr;
}

// "8192x4096" (outermost first) -> {4096, 8192} (innermost first).
std::vector<int64_t> domain_of(const std::string& shape) {
  const auto outer_first = parse_shape_text(shape);
  if (!outer_first) throw UserError("record shape '" + shape + "' is malformed; expected e.g. 8192x4096");
  return {outer_first->rbegin(), outer_first->rend()};
}

}  // namespace

std::vector<MeasuredSchedule> measured_schedules(const std::vector<TuningRecord>& records) {
  std::map<std::string, MeasuredSchedule> fastest;  // group + params -> schedule
  for (const auto& r : records) {
    if (r.status != RecordStatus::kOk || r.shape == "any" || r.median_us <= 0) continue;
    const FusionCandidate* op = catalog_op(r.pattern);
    const auto arch = parse_arch(r.arch);
    if (!op || !parse_dtype(r.dtype) || !arch || !find_arch_limits(*arch) || !parse_shape_text(r.shape)) continue;
    // One schedule under its full spelling: a record written before a
    // parameter was added is the same kernel configuration as one that
    // spells the parameter's absent value.
    const Candidate full{parse_backend(r.backend),
                         complete_config({parse_backend(r.backend), Config::parse(r.params)},
                                         dtype_bytes(*parse_dtype(r.dtype)), *find_arch_limits(*arch))};
    MeasuredSchedule s{r.pattern, r.dtype, r.shape, r.shape_bucket, r.backend, r.arch, full.config.to_string(),
                       r.median_us, r.p20_us, r.p80_us, op->reduces(), r.gpu_name};
    auto [it, fresh] = fastest.emplace(s.group() + " " + s.params, s);
    if (!fresh && r.median_us < it->second.us) it->second = s;
  }
  std::vector<MeasuredSchedule> out;
  for (auto& [key, s] : fastest) out.push_back(std::move(s));
  return out;
}

struct ProblemCache::State {
  std::map<std::pair<std::string, std::string>, std::unique_ptr<Workload>> workloads;
  std::map<std::string, Problem> problems;  // pattern dtype shape
};

ProblemCache::ProblemCache() : state_(std::make_unique<State>()) {}
ProblemCache::~ProblemCache() = default;

const Problem& ProblemCache::problem(const MeasuredSchedule& s) {
  const std::string key = s.pattern + " " + s.dtype + " " + s.shape;
  auto it = state_->problems.find(key);
  if (it != state_->problems.end()) return it->second;
  auto& wl = state_->workloads[{s.pattern, s.dtype}];
  if (!wl) {
    const FusionCandidate* op = catalog_op(s.pattern);
    if (!op) throw UserError("unknown catalog op '" + s.pattern + "'; see `fusekit list`");
    wl = make_candidate_workload(*op, *parse_dtype(s.dtype));
  }
  return state_->problems.emplace(key, wl->problem(domain_of(s.shape))).first->second;
}

size_t ProblemCache::bytes_per_element(const MeasuredSchedule& s) const { return dtype_bytes(*parse_dtype(s.dtype)); }

Candidate candidate_of(const MeasuredSchedule& s) { return {parse_backend(s.backend), Config::parse(s.params)}; }

const ArchLimits& arch_of(const MeasuredSchedule& s) { return *find_arch_limits(*parse_arch(s.arch)); }

ScheduleKeys schedule_keys(ProblemCache& problems, const MeasuredSchedule& s) {
  return schedule_keys(problems.problem(s), problems.bytes_per_element(s), candidate_of(s), arch_of(s));
}

SchedulePrior schedule_prior(const std::vector<MeasuredSchedule>& schedules, ProblemCache& problems) {
  std::map<std::string, double> best;
  for (const auto& s : schedules) {
    auto [it, fresh] = best.emplace(s.group(), s.us);
    if (!fresh) it->second = std::min(it->second, s.us);
  }
  SchedulePrior prior;
  for (const auto& s : schedules) prior.add(s.group(), schedule_keys(problems, s), std::log(s.us / best.at(s.group())));
  return prior;
}

CostSample cost_sample(ProblemCache& problems, const MeasuredSchedule& s, const SchedulePrior& prior) {
  const Problem& p = problems.problem(s);
  const size_t bpe = problems.bytes_per_element(s);
  const ArchLimits& arch = arch_of(s);
  std::vector<float> f = cost_features(p, bpe, candidate_of(s), arch);
  const std::vector<float> pf = prior.features(schedule_keys(problems, s), s.group());
  f.insert(f.end(), pf.begin(), pf.end());
  return {std::move(f), static_cast<float>(std::log(s.us / roofline_us(p, bpe, arch)))};
}

void describe_training(const std::vector<MeasuredSchedule>& schedules, CostModelInfo* info) {
  std::set<std::string> archs, gpus, domains;
  for (const auto& s : schedules) {
    archs.insert(s.arch);
    gpus.insert(s.gpu);
    domains.insert(cost_domain(candidate_of(s)));
  }
  info->archs.assign(archs.begin(), archs.end());
  info->gpus.assign(gpus.begin(), gpus.end());
  info->domains.assign(domains.begin(), domains.end());
}

void assign_groups(const std::vector<MeasuredSchedule>& schedules, std::vector<CostSample>* samples) {
  std::map<std::string, uint32_t> ids;
  for (size_t i = 0; i < schedules.size(); ++i)
    (*samples)[i].group = ids.emplace(schedules[i].group(), static_cast<uint32_t>(ids.size())).first->second;
}

void weigh_samples(const std::vector<MeasuredSchedule>& schedules, double fast_weight, std::vector<CostSample>* samples) {
  std::map<std::string, std::pair<size_t, double>> groups;  // size, best
  for (const auto& s : schedules) {
    auto [it, fresh] = groups.emplace(s.group(), std::make_pair(size_t{0}, s.us));
    ++it->second.first;
    it->second.second = std::min(it->second.second, s.us);
  }
  const double mean = static_cast<double>(schedules.size()) / static_cast<double>(std::max<size_t>(1, groups.size()));
  for (size_t i = 0; i < schedules.size(); ++i) {
    const auto& [n, best] = groups.at(schedules[i].group());
    const double fast = schedules[i].us <= best * 1.1 ? 1.0 + fast_weight : 1.0;
    (*samples)[i].weight = static_cast<float>(mean / static_cast<double>(n) * fast);
  }
}

}  // namespace fusekit
