// `fusekit tune`: its options (for per-command help) and the command.
#pragma once

#include <string>
#include <vector>

#include "cli/cli_common.h"

namespace fusekit {

// tune's exit status when a requested op, dtype and size ended without a
// usable (ok or modeled) kernel; each is named on stderr.
constexpr int kExitNoKernel = 1;

po::options_description cmd_tune_options();
// args: the positional arguments after the command name.
int cmd_tune(const po::variables_map& vm, const std::vector<std::string>& args);

}  // namespace fusekit
