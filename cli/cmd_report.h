// `fusekit report --db FILE [--plan plan.json] [--package DIR] --out report.html`:
// one self-contained HTML page of what the tuner did (see report/).
#pragma once

#include <boost/program_options.hpp>
#include <string>
#include <vector>

namespace fusekit {

boost::program_options::options_description cmd_report_options();

// Checks every input before writing; a bad one throws UserError and leaves
// --out untouched.
int cmd_report(const boost::program_options::variables_map& vm, const std::vector<std::string>& args);

}  // namespace fusekit
