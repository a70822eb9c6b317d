// `fusekit report --db FILE [--plan plan.json] [--package DIR] --out report.html`:
// one self-contained HTML page of what the tuner did (see report/).
#pragma once

#include <boost/program_options.hpp>

namespace fusekit {

// The options only `report` takes (--plan, --plotly-js); --db, --package and
// --out are the CLI's shared ones.
void add_report_options(boost::program_options::options_description& opts);

// Checks every input before writing; a bad one throws UserError and leaves
// --out untouched.
int cmd_report(const boost::program_options::variables_map& vm);

}  // namespace fusekit
