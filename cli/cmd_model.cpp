#include "cli/cmd_model.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "common/errors.h"
#include "cost_model/features.h"
#include "cost_model/model_eval.h"
#include "tunedb/tune_db.h"

namespace fusekit {
namespace {

template <class Names>
std::string comma_joined(const Names& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

po::options_description cmd_model_options() {
  po::options_description o("model options (fusekit model train|eval)");
  add_db_option(o);
  o.add_options()
      ("out", po::value<std::string>(),
       "`train`: the model file (default: beside the database, DB.cost-model.json); `eval`: a JSON report")
      ("hold-out", po::value<std::vector<std::string>>()->multitoken(),
       "`train`: leave these catalog ops' records out (to judge the model on them later)")
      ("hold-out-gpu", po::value<std::vector<std::string>>()->multitoken(),
       "`train`: leave the records of these GPUs (their gpu_name, e.g. \"NVIDIA H100 80GB HBM3\") out: a model "
       "that predicts for a GPU it never saw")
      ("rounds", po::value<int>()->default_value(300), "boosting rounds")
      ("depth", po::value<int>()->default_value(6), "tree depth")
      ("eta", po::value<double>()->default_value(0.1), "learning rate")
      ("fast-weight", po::value<double>()->default_value(-1),
       "weigh every op/shape group alike and its schedules within 10 % of the best 1 + W times more; < 0: off")
      ("threads", po::value<int>()->default_value(1), "XGBoost threads")
      ("members", po::value<int>()->default_value(4),
       "boosters trained alike but for their seed, their predictions averaged")
      ("seed", po::value<int>()->default_value(1),
       "XGBoost's random seed (row subsampling): two seeds' evals show how much of a change is the learner's own "
       "variance")
      ("objective", po::value<std::string>()->default_value("relative"),
       "time (regression on log time over the roofline), relative (on log time over the group's best), pairwise or ndcg (XGBoost's rank:pairwise / rank:ndcg within each op/shape group)")
      ("no-prior", po::bool_switch(), "leave the schedule prior's features out (missing)")
      ("unsized-copies", po::bool_switch(),
       "train on each sample again without the prior's size and row-length features")
      ("holdouts", po::value<std::string>()->default_value("workload,shape,gpu"),
       "`eval`: which holdouts to run, of workload (one op at a time), shape (one shape bucket) and gpu (one "
       "GPU's records, trained on the others': where the database has several)");
  return o;
}

std::string default_model_path(const std::string& db) {
  if (is_postgres_uri(db))
    throw UserError("a server database keeps no model file beside it; give --model FILE (or `model train --out FILE`)");
  return db + ".cost-model.json";
}

std::shared_ptr<LearnedCostModel> tune_cost_model(const po::variables_map& vm, const std::string& db,
                                                  const ArchLimits& arch) {
  std::string path;
  if (vm.count("cost-model")) path = vm["cost-model"].as<std::string>();
  else if (vm["search"].as<std::string>() == "guided" && !is_postgres_uri(db) &&
           std::ifstream(default_model_path(db)).good())
    path = default_model_path(db);
  if (path.empty()) return nullptr;
  std::shared_ptr<LearnedCostModel> model = LearnedCostModel::load(path);
  model->set_arch(arch);
  // The tune ranks and retrains while its measuring worker waits: every core.
  model->set_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  const std::string domains = comma_joined(model->info().domains);
  std::fprintf(stderr, "fusekit: cost model %s (%zu schedules of %zu records, %s%s%s)\n", path.c_str(),
               model->info().training_samples, model->info().training_records, model->info().trained_at.c_str(),
               model->knows_arch() ? "" : "; no records of this arch in it: the analytic model predicts",
               domains.empty() ? "" : ("; records of " + domains + ", the analytic model predicts the rest").c_str());
  return model;
}

namespace {

std::vector<TuningRecord> measured_records(const std::string& db_path) {
  auto db = open_tune_db(db_path, OpenMode::kMustExist);
  RecordFilter f;
  f.ok_only = true;
  return db->all(f);
}

CostTrainOptions train_options(const po::variables_map& vm) {
  CostTrainOptions o;
  o.rounds = int_at_least(vm, "rounds", 1, "at least 1");
  o.threads = int_at_least(vm, "threads", 1, "at least 1");
  o.max_depth = int_at_least(vm, "depth", 1, "at least 1");
  o.seed = static_cast<uint64_t>(int_at_least(vm, "seed", 0, "0 or more"));
  o.members = int_at_least(vm, "members", 1, "at least 1");
  o.eta = vm["eta"].as<double>();
  if (!(o.eta > 0 && o.eta <= 1)) throw UserError("--eta " + std::to_string(o.eta) + ": expected a rate in (0, 1]");
  o.objective = vm["objective"].as<std::string>();
  o.unsized_copies = vm["unsized-copies"].as<bool>();
  if (o.objective != "time" && o.objective != "pairwise" && o.objective != "ndcg" && o.objective != "relative")
    throw UserError("--objective '" + o.objective + "': expected time, relative, pairwise or ndcg");
  return o;
}

// Drops the schedules whose `field` is one of option `name`'s values; a value
// no schedule has is a typo, not an empty hold-out.
void leave_out(const po::variables_map& vm, const char* name, const char* what, std::string MeasuredSchedule::*field,
               std::vector<MeasuredSchedule>* schedules) {
  if (!vm.count(name)) return;
  const std::vector<std::string> held = split_list(vm[name].as<std::vector<std::string>>());
  std::set<std::string> known;
  for (const auto& s : *schedules) known.insert(s.*field);
  for (const std::string& v : held)
    if (!known.count(v))
      throw UserError(std::string("--") + name + " '" + v + "': the database has no measured records of that " +
                      what + "; it has records of " + comma_joined(known));
  schedules->erase(std::remove_if(schedules->begin(), schedules->end(),
                                  [&](const auto& s) { return std::count(held.begin(), held.end(), s.*field) > 0; }),
                   schedules->end());
}

int model_train(const po::variables_map& vm, const std::string& db_path) {
  const std::string out = vm.count("out") ? vm["out"].as<std::string>() : default_model_path(db_path);
  const CostTrainOptions options = train_options(vm);
  const std::vector<TuningRecord> records = measured_records(db_path);
  std::vector<MeasuredSchedule> schedules = measured_schedules(records);
  leave_out(vm, "hold-out", "op", &MeasuredSchedule::pattern, &schedules);
  leave_out(vm, "hold-out-gpu", "GPU", &MeasuredSchedule::gpu, &schedules);
  if (schedules.empty() && (vm.count("hold-out") || vm.count("hold-out-gpu")))
    throw UserError("--hold-out / --hold-out-gpu leave none of the database's records to train on");
  if (schedules.empty())
    throw UserError("database '" + mask_uri(db_path) +
                    "' holds no verified measurements of catalog ops; tune on a GPU or `fusekit db import` some");
  ProblemCache problems;
  const SchedulePrior prior = vm["no-prior"].as<bool>() ? SchedulePrior{} : schedule_prior(schedules, problems);
  std::vector<CostSample> samples;
  for (const auto& s : schedules) samples.push_back(cost_sample(problems, s, prior));
  assign_groups(schedules, &samples);
  if (vm["fast-weight"].as<double>() >= 0) weigh_samples(schedules, vm["fast-weight"].as<double>(), &samples);
  CostModelInfo info;
  info.training_records = records.size();
  describe_training(schedules, &info);
  info.source = mask_uri(db_path);
  info.fusekit_version = FUSEKIT_VERSION;
  info.trained_at = utc_timestamp();
  auto model = LearnedCostModel::train(samples, info, options, prior);
  model->save(out);
  std::printf("cost model: %zu schedules from %zu measured records (%s), feature schema %d, xgboost %s -> %s\n",
              samples.size(), records.size(), info.archs.empty() ? "" : info.archs.front().c_str(),
              kCostFeatureSchema, xgboost_version().c_str(), out.c_str());
  return 0;
}

int model_eval(const po::variables_map& vm, const std::string& db_path) {
  ModelEvalOptions options;
  options.train = train_options(vm);
  options.fast_weight = vm["fast-weight"].as<double>();
  options.prior = !vm["no-prior"].as<bool>();
  options.holdouts = split_list({vm["holdouts"].as<std::string>()});
  for (const std::string& h : options.holdouts)
    if (!is_holdout(h))
      throw UserError("--holdouts '" + h + "': expected workload, shape and/or gpu");
  const std::vector<TuningRecord> records = measured_records(db_path);
  const std::vector<MeasuredSchedule> schedules = measured_schedules(records);
  if (schedules.empty())
    throw UserError("database '" + mask_uri(db_path) + "' holds no verified measurements of catalog ops to evaluate on");
  const std::vector<GroupEval> groups =
      evaluate_held_out(schedules, options, [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
  nlohmann::json j;
  j["source"] = mask_uri(db_path);
  j["measured_records"] = records.size();
  j["schedules"] = schedules.size();
  j["feature_schema"] = kCostFeatureSchema;
  j["xgboost_version"] = xgboost_version();
  j["rounds"] = options.train.rounds;
  j["objective"] = options.train.objective;
  j["prior"] = options.prior;
  j["unsized_copies"] = options.train.unsized_copies;
  j["depth"] = options.train.max_depth;
  j["eta"] = options.train.eta;
  j["seed"] = options.train.seed;
  j["members"] = options.train.members;
  j["guided_batch"] = options.guided_batch;
  j["guided_explore"] = options.guided_explore;
  j["within"] = options.within;
  j["summary"] = summarize_eval(groups);
  for (const GroupEval& g : groups)
    j["groups"].push_back({{"holdout", g.holdout}, {"fold", g.fold}, {"kind", g.kind}, {"group", g.group},
                           {"schedules", g.schedules}, {"learned_pick", g.learned_pick}, {"best", g.best},
                           {"learned_top1", g.learned_top1},
                           {"learned_top1_beyond_spread", g.learned_top1_beyond_spread},
                           {"generic_pick", g.generic_pick}, {"generic_top1", g.generic_top1},
                           {"learned_top8", g.learned_top8}, {"analytic_top1", g.analytic_top1},
                           {"analytic_top8", g.analytic_top8}, {"guided", g.guided},
                           {"guided_static", g.guided_static}, {"analytic_order", g.analytic_order},
                           {"random_order", g.random_order}, {"stop_after", g.stop_after},
                           {"stop_regret", g.stop_regret}});
  // The table: regret in percent, searches in timed candidates.
  std::printf("%-28s %-22s %6s %21s %21s %21s %21s %21s %21s %17s %17s\n", "holdout", "kind", "groups",
              "learned top1 med/p90/max", "beyond spread", "generic top1", "analytic top1", "learned top8",
              "analytic top8", "guided med/p90/<=8", "analytic order");
  for (const auto& [holdout, kinds] : j["summary"].items())
    for (const auto& [kind, k] : kinds.items()) {
      auto pct = [&](const char* r) {
        const auto& s = k["regret"][r];
        char buf[64];
        std::snprintf(buf, sizeof(buf), "%6.1f %6.1f %7.1f", 100 * s["median"].get<double>(),
                      100 * s["p90"].get<double>(), 100 * s["worst"].get<double>());
        return std::string(buf);
      };
      auto cnt = [&](const char* c) {
        const auto& s = k["timed_to_within"][c];
        char buf[64];
        std::snprintf(buf, sizeof(buf), "%4.0f %4.0f %5.0f%%", s["median"].get<double>(), s["p90"].get<double>(),
                      100 * s["share_at_most_8"].get<double>());
        return std::string(buf);
      };
      std::printf("%-28s %-22s %6zu %21s %21s %21s %21s %21s %21s %17s %17s\n", holdout.c_str(), kind.c_str(),
                  k["groups"].get<size_t>(), pct("learned_top1").c_str(), pct("learned_top1_beyond_spread").c_str(),
                  pct("generic_top1").c_str(), pct("analytic_top1").c_str(),
                  pct("learned_top8").c_str(), pct("analytic_top8").c_str(), cnt("guided").c_str(),
                  cnt("analytic_order").c_str());
    }
  if (vm.count("out")) {
    const std::string out = vm["out"].as<std::string>();
    std::ofstream f(out);
    if (!f) throw UserError("cannot write '" + out + "'; check the folder exists and is writable");
    f << j.dump(1) << "\n";
  }
  return 0;
}

}  // namespace

int cmd_model(const po::variables_map& vm, const std::vector<std::string>& args) {
  if (args.size() != 1 || (args[0] != "train" && args[0] != "eval"))
    throw UserError("model takes one action, train or eval (e.g. `fusekit model train --db tune.db`)" +
                    std::string(args.empty() ? "" : ", got '" + args[0] + "'"));
  const std::string db_path = existing_db_path(vm, "import measured records with `fusekit db import` first");
  return args[0] == "train" ? model_train(vm, db_path) : model_eval(vm, db_path);
}

}  // namespace fusekit
