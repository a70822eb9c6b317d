// `fusekit tune --plan plan.json --arch sm_90 [--retune]`: every entry at
// every size of the plan, with progress and an ETA over the whole plan.
// Resumable: a size the database already holds a record of for this arch,
// fusekit and Halide version is not tuned again unless --retune.
#pragma once

#include <boost/program_options.hpp>

namespace fusekit {

int cmd_tune_plan(const boost::program_options::variables_map& vm);

}  // namespace fusekit
