// `fusekit db sync A B`: both stores end up with every record of either.
#pragma once

#include <string>
#include <vector>

namespace fusekit {

// `args` are the two stores (SQLite paths or postgresql:// URIs). Prints
// what was copied each way; returns 0. Throws UserError for bad arguments
// or a store that cannot be opened (its password masked).
int cmd_db_sync(const std::vector<std::string>& args);

}  // namespace fusekit
