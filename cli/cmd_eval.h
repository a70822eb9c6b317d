// `fusekit eval` (a developer command, not in the usage list): runs the CPU
// reference of one op on seeded inputs and writes inputs and outputs as raw
// f32 files with a meta.json, so an independent oracle (numpy, in
// tests/python/oracle_test.py) can check the reference from the formula.
#pragma once

#include <string>
#include <vector>

#include "cli/cli_common.h"

namespace fusekit {

po::options_description cmd_eval_options();
int cmd_eval(const po::variables_map& vm, const std::vector<std::string>& args);

}  // namespace fusekit
