// `fusekit build --plan plan.json --arch sm_80,sm_90 --out DIR`: packages
// every entry under its plan name; the manifest carries the plan.
#pragma once

#include <boost/program_options.hpp>

namespace fusekit {

int cmd_build_plan(const boost::program_options::variables_map& vm);

}  // namespace fusekit
