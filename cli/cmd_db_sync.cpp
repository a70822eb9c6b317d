// `fusekit db sync A B` (see cmd_db_sync.h).
#include "cli/cmd_db_sync.h"

#include <chrono>
#include <cstdio>

#include "common/errors.h"
#include "tunedb/store_sync.h"
#include "tunedb/tune_db.h"

namespace fusekit {

int cmd_db_sync(const std::vector<std::string>& args) {
  if (args.size() != 2)
    throw UserError("db sync needs two stores: fusekit db sync A B (SQLite files or postgresql:// URIs), got " +
                    std::to_string(args.size()));
  if (args[0] == args[1]) throw UserError("db sync of '" + mask_uri(args[0]) + "' with itself; give two stores");
  const auto start = std::chrono::steady_clock::now();
  auto a = open_tune_db(args[0], OpenMode::kCreate);
  auto b = open_tune_db(args[1], OpenMode::kCreate);
  const SyncCounts c = sync_stores(*a, *b);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("synced %s (%zu records) and %s (%zu records): %zu copied to the second, %zu to the first, in %.1fs\n",
              mask_uri(args[0]).c_str(), c.a_after, mask_uri(args[1]).c_str(), c.b_after, c.a_to_b, c.b_to_a, s);
  return 0;
}

}  // namespace fusekit
