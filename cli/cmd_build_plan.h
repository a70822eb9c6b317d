// `fusekit build --plan plan.json --arch sm_80,sm_90 --out DIR`: packages
// every entry under its plan name; the manifest carries the plan.
#pragma once

#include <boost/program_options.hpp>

#include "generator/package/library_emitter.h"

namespace fusekit {

// `o` holds what `build` resolved already (archs, --out, compiler, runtime,
// target); the plan's entries become its candidates.
int cmd_build_plan(const boost::program_options::variables_map& vm, EmitOptions o);

}  // namespace fusekit
