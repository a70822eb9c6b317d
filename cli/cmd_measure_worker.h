// `fusekit measure-worker --device N`: the measuring worker a tune starts
// (search/measure_worker.h); not for users, so not in the usage list.
#pragma once

#include <string>
#include <vector>

#include "cli/cli_common.h"

namespace fusekit {

po::options_description cmd_measure_worker_options();
int cmd_measure_worker(const po::variables_map& vm, const std::vector<std::string>& args);

}  // namespace fusekit
