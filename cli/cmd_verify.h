// `fusekit verify`: its options (for per-command help) and the command.
#pragma once

#include <string>
#include <vector>

#include "cli/cli_common.h"

namespace fusekit {

po::options_description cmd_verify_options();
// args: the positional arguments after the command name.
int cmd_verify(const po::variables_map& vm, const std::vector<std::string>& args);

}  // namespace fusekit
