// The options `fusekit tune` shares between its --pattern/--expr form and
// its --plan form, checked into the tuner's options before any I/O.
#pragma once

#include "cli/cli_common.h"
#include "search/tuner.h"

namespace fusekit {

// --backend, --budget, --specialize, --hint-twins, --seed and
// --launch-deadline as TunerOptions; a bad value is a UserError naming it.
TunerOptions tuner_options(const po::variables_map& vm);

}  // namespace fusekit
