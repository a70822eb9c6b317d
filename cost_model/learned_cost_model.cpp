#include "cost_model/learned_cost_model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/errors.h"
#include "common/parallel_chunks.h"
#include "cost_model/features.h"

namespace fusekit {
namespace {

constexpr const char* kFormat = "fusekit-cost-model";

bool is_ranking(const CostTrainOptions& o) { return o.objective == "pairwise" || o.objective == "ndcg"; }

void check(int rc, const char* what) {
  if (rc != 0) throw InternalError(std::string("xgboost ") + what + ": " + XGBGetLastError());
}

// A DMatrix owned for one scope.
struct Matrix {
  DMatrixHandle h = nullptr;
  Matrix(const std::vector<std::vector<float>>& rows, const std::vector<float>* labels) {
    const size_t cols = model_feature_names().size();
    std::vector<float> flat;
    flat.reserve(rows.size() * cols);
    for (const auto& r : rows) {
      if (r.size() != cols) throw InternalError("cost feature row of " + std::to_string(r.size()) + " values");
      flat.insert(flat.end(), r.begin(), r.end());
    }
    check(XGDMatrixCreateFromMat(flat.data(), rows.size(), cols, std::nanf(""), &h), "DMatrix");
    if (labels) check(XGDMatrixSetFloatInfo(h, "label", labels->data(), labels->size()), "labels");
  }
  ~Matrix() { XGDMatrixFree(h); }
};

// Training samples rows and columns; an update fits every time it was given
// (a leaf of a single time still counts: min_child_weight 1).
void set_params(BoosterHandle b, const CostTrainOptions& o, bool update, uint64_t seed) {
  const std::pair<std::string, std::string> params[] = {
      {"objective", is_ranking(o) ? "rank:" + o.objective : "reg:squarederror"},
      {"tree_method", "hist"},
      {"max_depth", std::to_string(update ? o.update_depth : o.max_depth)},
      {"eta", std::to_string(update ? 0.3 : o.eta)},
      {"subsample", update ? "1" : "0.8"},
      {"colsample_bytree", update ? "1" : "0.8"},
      {"min_child_weight", update ? "1" : "2"},
      {"nthread", std::to_string(o.threads)},
      {"seed", std::to_string(seed)},
      {"verbosity", "0"}};
  for (const auto& [k, v] : params) check(XGBoosterSetParam(b, k.c_str(), v.c_str()), "parameter");
}

// Graded relevance for a ranking objective: how far below its group's
// best target a sample is, in steps (higher is faster).
std::vector<float> relevance(const std::vector<CostSample>& samples, const std::vector<size_t>& order,
                             const CostTrainOptions& o) {
  std::map<uint32_t, float> best;
  for (const auto& s : samples) {
    auto [it, fresh] = best.emplace(s.group, s.target);
    if (!fresh) it->second = std::min(it->second, s.target);
  }
  std::vector<float> out;
  for (size_t i : order) {
    const double steps = std::floor((samples[i].target - best.at(samples[i].group)) / o.rank_step);
    out.push_back(static_cast<float>(std::max(0.0, o.rank_levels - steps)));
  }
  return out;
}

// Each sample's target over its group's best (log of the slowdown).
std::vector<float> over_group_best(const std::vector<CostSample>& samples, const std::vector<size_t>& order) {
  std::map<uint32_t, float> best;
  for (const auto& s : samples) {
    auto [it, fresh] = best.emplace(s.group, s.target);
    if (!fresh) it->second = std::min(it->second, s.target);
  }
  std::vector<float> out;
  for (size_t i : order) out.push_back(samples[i].target - best.at(samples[i].group));
  return out;
}

// The samples, then each again with the prior's size and row-length
// features missing, as they are at a size no other op was timed at.
std::vector<CostSample> with_unsized_copies(const std::vector<CostSample>& samples) {
  const auto& names = model_feature_names();
  std::vector<size_t> masked;
  for (const char* n : {"prior_size", "prior_size_groups", "prior_cols", "prior_cols_groups"})
    masked.push_back(std::find(names.begin(), names.end(), n) - names.begin());
  std::vector<CostSample> out = samples;
  for (const CostSample& s : samples) {
    CostSample copy = s;
    for (size_t i = 0; i < masked.size(); ++i)
      copy.features.at(masked[i]) = i % 2 == 0 ? std::nanf("") : 0.0f;  // no mean, no groups
    out.push_back(std::move(copy));
  }
  return out;
}

// The samples as a training matrix; for a ranking objective sorted by
// group, with the group sizes and one weight per group (XGBoost's rule).
std::unique_ptr<Matrix> training_matrix(const std::vector<CostSample>& samples, const CostTrainOptions& o) {
  const bool ranking = is_ranking(o);
  std::vector<size_t> order(samples.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (ranking)
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return samples[a].group < samples[b].group; });
  std::vector<std::vector<float>> rows;
  std::vector<float> labels, weights;
  std::vector<unsigned> sizes;
  for (size_t k = 0; k < order.size(); ++k) {
    const CostSample& s = samples[order[k]];
    rows.push_back(s.features);
    labels.push_back(s.target);
    const bool first = k == 0 || samples[order[k - 1]].group != s.group;
    if (!ranking) weights.push_back(s.weight);
    else if (first) sizes.push_back(1), weights.push_back(s.weight);
    else ++sizes.back();
  }
  if (ranking) labels = relevance(samples, order, o);
  if (o.objective == "relative") labels = over_group_best(samples, order);
  auto m = std::make_unique<Matrix>(rows, &labels);
  check(XGDMatrixSetFloatInfo(m->h, "weight", weights.data(), weights.size()), "weights");
  if (ranking) check(XGDMatrixSetUIntInfo(m->h, "group", sizes.data(), sizes.size()), "groups");
  return m;
}

void boost(BoosterHandle b, const Matrix& m, int rounds) {
  int done = 0;
  check(XGBoosterBoostedRounds(b, &done), "rounds");
  for (int i = 0; i < rounds; ++i) check(XGBoosterUpdateOneIter(b, done + i, m.h), "update");
}

std::string buffer_of(BoosterHandle b, const char* format) {
  bst_ulong len = 0;
  const char* data = nullptr;
  const std::string config = std::string("{\"format\": \"") + format + "\"}";
  check(XGBoosterSaveModelToBuffer(b, config.c_str(), &len, &data), "save");
  return std::string(data, len);
}

BoosterHandle booster_from(const std::string& buffer) {
  BoosterHandle b = nullptr;
  check(XGBoosterCreate(nullptr, 0, &b), "create");
  if (XGBoosterLoadModelFromBuffer(b, buffer.data(), buffer.size()) != 0) {
    const std::string why = XGBGetLastError();
    XGBoosterFree(b);
    throw InternalError("xgboost load: " + why);
  }
  return b;
}

}  // namespace

std::string xgboost_version() {
  int major = 0, minor = 0, patch = 0;
  XGBoostVersion(&major, &minor, &patch);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

const std::vector<std::string>& model_feature_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = cost_feature_names();
    for (const auto& p : SchedulePrior::feature_names()) n.push_back(p);
    return n;
  }();
  return names;
}

LearnedCostModel::LearnedCostModel(std::vector<void*> boosters, CostModelInfo info, CostTrainOptions options,
                                   SchedulePrior prior)
    : boosters_(std::move(boosters)),
      info_(std::move(info)),
      options_(std::move(options)),
      arch_(require_arch("sm_90")),
      prior_(std::move(prior)) {}

std::vector<float> LearnedCostModel::features(const Problem& problem, size_t bytes_per_element,
                                              const Candidate& candidate) const {
  std::vector<float> f = cost_features(problem, bytes_per_element, candidate, arch_);
  const std::vector<float> p = prior_.features(schedule_keys(problem, bytes_per_element, candidate, arch_));
  f.insert(f.end(), p.begin(), p.end());
  return f;
}

LearnedCostModel::~LearnedCostModel() {
  for (void* b : boosters_) XGBoosterFree(b);
}

std::unique_ptr<LearnedCostModel> LearnedCostModel::train(const std::vector<CostSample>& samples, CostModelInfo info,
                                                          const CostTrainOptions& options, SchedulePrior prior) {
  if (samples.empty())
    throw UserError("no measured records to train a cost model on; tune on a GPU or `fusekit db import` records first");
  const std::unique_ptr<Matrix> m = training_matrix(options.unsized_copies ? with_unsized_copies(samples) : samples,
                                                    options);
  std::unique_ptr<LearnedCostModel> model(new LearnedCostModel({}, std::move(info), options, std::move(prior)));
  for (int k = 0; k < std::max(1, options.members); ++k) {
    BoosterHandle b = nullptr;
    check(XGBoosterCreate(&m->h, 1, &b), "create");
    model->boosters_.push_back(b);
    set_params(b, options, false, options.seed + k);
    boost(b, *m, options.rounds);
  }
  model->info_.feature_schema = kCostFeatureSchema;
  model->info_.xgboost_version = xgboost_version();
  model->info_.training_samples = samples.size();
  return model;
}

std::unique_ptr<LearnedCostModel> LearnedCostModel::clone() const {
  std::vector<void*> boosters;
  for (void* b : boosters_) boosters.push_back(booster_from(buffer_of(b, "ubj")));
  std::unique_ptr<LearnedCostModel> copy(new LearnedCostModel(std::move(boosters), info_, options_, prior_));
  copy->arch_ = arch_;
  copy->seen_ = seen_;
  copy->seen_problems_ = seen_problems_;
  copy->stale_ = stale_;
  return copy;
}

bool LearnedCostModel::knows_arch() const {
  for (const auto& a : info_.archs)
    if (a == arch_.arch.name()) return true;
  return false;
}

bool LearnedCostModel::covers(const Candidate& candidate) const {
  return info_.domains.empty() ||
         std::find(info_.domains.begin(), info_.domains.end(), cost_domain(candidate)) != info_.domains.end();
}

std::vector<float> LearnedCostModel::predict_rows(const std::vector<std::vector<float>>& rows) const {
  if (rows.empty()) return {};
  refit();
  Matrix m(rows, nullptr);
  std::vector<float> v(rows.size(), 0.0f);
  for (void* b : boosters_) {
    bst_ulong len = 0;
    const float* out = nullptr;
    check(XGBoosterPredict(b, m.h, 0, 0, 0, &len, &out), "predict");
    if (len != v.size()) throw InternalError("xgboost predicted " + std::to_string(len) + " rows of " +
                                             std::to_string(v.size()));
    for (size_t i = 0; i < v.size(); ++i) v[i] += out[i] / static_cast<float>(boosters_.size());
  }
  if (is_ranking(options_))  // a score, higher is faster
    for (float& x : v) x = -x;
  return v;
}

void LearnedCostModel::set_threads(int threads) {
  options_.threads = std::max(1, threads);
  for (void* b : boosters_) check(XGBoosterSetParam(b, "nthread", std::to_string(options_.threads).c_str()), "nthread");
}

std::vector<double> LearnedCostModel::predict(const Problem& problem, size_t bytes_per_element,
                                              const std::vector<Candidate>& batch) const {
  // Outside the training's domains the trees never saw such a schedule: the analytic model predicts it.
  std::vector<bool> outside(batch.size());
  for (size_t i = 0; i < batch.size(); ++i) outside[i] = !covers(batch[i]);
  if (!knows_arch() || std::all_of(outside.begin(), outside.end(), [](bool o) { return o; }))
    return make_analytic_cost_model(arch_)->predict(problem, bytes_per_element, batch);
  std::vector<std::vector<float>> rows(batch.size());
  // In parallel: a guided search ranks thousands of schedules per shape and batch.
  parallel_chunks(
      static_cast<int64_t>(batch.size()),
      [&](int64_t begin, int64_t end, size_t) {
        for (int64_t i = begin; i < end; ++i)
          rows[static_cast<size_t>(i)] = features(problem, bytes_per_element, batch[static_cast<size_t>(i)]);
      },
      256, options_.threads);
  const std::vector<float> logs = predict_rows(rows);
  const double floor_us = roofline_us(problem, bytes_per_element, arch_);
  std::vector<double> out;
  for (float l : logs) out.push_back(floor_us * std::exp(static_cast<double>(l)));
  if (std::none_of(outside.begin(), outside.end(), [](bool o) { return o; })) return out;
  const std::vector<double> analytic = make_analytic_cost_model(arch_)->predict(problem, bytes_per_element, batch);
  for (size_t i = 0; i < batch.size(); ++i)
    if (outside[i]) out[i] = analytic[i];
  return out;
}

void LearnedCostModel::update(const Problem& problem, size_t bytes_per_element, const std::vector<Candidate>& batch,
                              const std::vector<double>& measured_us) {
  if (!knows_arch() || options_.update_rounds <= 0) return;
  const double floor_us = roofline_us(problem, bytes_per_element, arch_);
  for (size_t i = 0; i < batch.size() && i < measured_us.size(); ++i)
    if (measured_us[i] > 0 && covers(batch[i]))  // outside its domains the analytic model predicts
      seen_.push_back({features(problem, bytes_per_element, batch[i]),
                       static_cast<float>(std::log(measured_us[i] / floor_us)), 1.0f, problem_group(problem)});
  stale_ = stale_ || !seen_.empty();
}

void LearnedCostModel::refit() const {
  if (!stale_) return;
  stale_ = false;
  const std::unique_ptr<Matrix> m = training_matrix(seen_, options_);
  for (size_t k = 0; k < boosters_.size(); ++k) {
    set_params(boosters_[k], options_, true, options_.seed + k);
    boost(boosters_[k], *m, options_.update_rounds);
  }
}

uint32_t LearnedCostModel::problem_group(const Problem& problem) {
  std::string key;
  for (int64_t d : problem.domain) key += std::to_string(d) + "x";
  return seen_problems_.emplace(key, static_cast<uint32_t>(seen_problems_.size())).first->second;
}

void LearnedCostModel::save(const std::string& path) const {
  refit();
  nlohmann::json j;
  j["format"] = kFormat;
  j["feature_schema"] = info_.feature_schema;
  j["features"] = model_feature_names();
  j["objective"] = options_.objective;
  j["target"] = is_ranking(options_) ? "rank:" + options_.objective + " score within op, dtype, shape, backend (higher is faster)"
                : options_.objective == "relative" ? "log(median_us / the group's best median_us)"
                                                   : "log(median_us / (2 + bytes_moved / dram_bandwidth))";
  j["xgboost_version"] = info_.xgboost_version;
  j["training_records"] = info_.training_records;
  j["training_samples"] = info_.training_samples;
  j["archs"] = info_.archs;
  j["gpus"] = info_.gpus;
  j["domains"] = info_.domains;
  j["source"] = info_.source;
  j["fusekit_version"] = info_.fusekit_version;
  j["trained_at"] = info_.trained_at;
  j["prior"] = prior_.to_json();
  j["boosters"] = nlohmann::json::array();
  for (void* b : boosters_) j["boosters"].push_back(nlohmann::json::parse(buffer_of(b, "json")));
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) throw UserError("cannot write the cost model to '" + path + "'; check the folder exists and is writable");
    out << j.dump() << "\n";
    if (!out) throw UserError("writing the cost model to '" + path + "' failed (disk full?)");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw UserError("cannot move the cost model into place at '" + path + "'");
}

std::unique_ptr<LearnedCostModel> LearnedCostModel::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError("no cost model at '" + path + "'; train one with `fusekit model train --db DB`");
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    throw UserError("'" + path + "' is not a fusekit cost model (not JSON: " + e.what() + ")");
  }
  if (!j.is_object() || j.value("format", "") != kFormat)
    throw UserError("'" + path + "' is not a fusekit cost model (no \"format\": \"" + kFormat + "\")");
  const int schema = j.value("feature_schema", 0);
  if (schema != kCostFeatureSchema)
    throw UserError("cost model '" + path + "' has feature schema " + std::to_string(schema) + ", this fusekit " +
                    std::to_string(kCostFeatureSchema) + "; retrain it with `fusekit model train`");
  CostModelInfo info;
  try {
    info.feature_schema = schema;
    info.xgboost_version = j.at("xgboost_version").get<std::string>();
    info.training_records = j.at("training_records").get<size_t>();
    info.training_samples = j.at("training_samples").get<size_t>();
    info.archs = j.at("archs").get<std::vector<std::string>>();
    info.gpus = j.value("gpus", std::vector<std::string>{});
    info.domains = j.value("domains", std::vector<std::string>{});
    info.source = j.value("source", "");
    info.fusekit_version = j.value("fusekit_version", "");
    info.trained_at = j.value("trained_at", "");
  } catch (const nlohmann::json::exception& e) {
    throw UserError("cost model '" + path + "' lacks a provenance field (" + e.what() + "); retrain it");
  }
  SchedulePrior prior;
  try {
    prior = SchedulePrior::from_json(j.value("prior", nlohmann::json::object()));
  } catch (const UserError& e) {
    throw UserError("cost model '" + path + "': " + e.what());
  }
  CostTrainOptions options;
  options.objective = j.value("objective", "time");
  const nlohmann::json members = j.value("boosters", nlohmann::json::array());
  if (!members.is_array() || members.empty())
    throw UserError("cost model '" + path + "' holds no boosters; retrain it");
  options.members = static_cast<int>(members.size());
  std::unique_ptr<LearnedCostModel> model(new LearnedCostModel({}, std::move(info), options, std::move(prior)));
  for (const nlohmann::json& member : members) {
    try {
      model->boosters_.push_back(booster_from(member.dump()));
    } catch (const InternalError& e) {
      throw UserError("cost model '" + path + "' holds an unreadable booster (" + e.what() + "); retrain it");
    }
  }
  return model;
}

}  // namespace fusekit
