#include "cli/cmd_list.h"

#include <cstdio>

#include "common/errors.h"
#include "generator/candidates/catalog.h"

namespace fusekit {

po::options_description cmd_list_options() { return po::options_description("list options"); }

int cmd_list(const po::variables_map&, const std::vector<std::string>& args) {
  if (!args.empty()) throw UserError("list takes no arguments, got '" + args[0] + "'");
  std::printf("%-22s %-7s %s\n", "pattern", "layout", "computes");
  for (const auto& c : catalog()) std::printf("%-22s %-7s %s\n", c.name.c_str(), layout_name(c.layout), c.description.c_str());
  return 0;
}

}  // namespace fusekit
