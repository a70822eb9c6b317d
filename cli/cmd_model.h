// `fusekit model train|eval`: the learned cost model from a database's
// measured records (cost_model/), and its held-out regret.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cli/cli_common.h"
#include "cost_model/learned_cost_model.h"
#include "search/interfaces.h"

namespace fusekit {

po::options_description cmd_model_options();
// args: "train" or "eval".
int cmd_model(const po::variables_map& vm, const std::vector<std::string>& args);

// Where a database's cost model is kept: beside a SQLite file
// ("tune.db" -> "tune.db.cost-model.json"); a server database has none.
std::string default_model_path(const std::string& db);

// `fusekit tune`'s --cost-model FILE, else (with --search guided) the
// model beside the database if there is one, loaded for `arch`; nullptr
// when neither (a guided search then ranks with the analytic model).
std::shared_ptr<LearnedCostModel> tune_cost_model(const po::variables_map& vm, const std::string& db,
                                           const ArchLimits& arch);

}  // namespace fusekit
