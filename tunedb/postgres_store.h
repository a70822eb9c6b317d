// The PostgreSQL store: the shared server database of a fleet, behind the
// same TuneDb interface as the SQLite file (open_tune_db picks it for a
// postgresql:// URI).
#pragma once

#include <memory>
#include <string>

#include "tunedb/tune_db.h"

namespace fusekit {

// Connects to a PostgreSQL database (a libpq URI, postgresql://...),
// creating or migrating fusekit's tables unless `create` is false (then a
// database without them is a UserError). Throws UserError for an
// unreachable server, a refused login or a newer schema version; every
// message masks the password. A failed commit writes its records to a
// JSON-lines file in `spool_dir` (when given) and names it in the message.
std::unique_ptr<TuneDb> open_postgres_db(const std::string& uri, bool create = true,
                                         const std::string& spool_dir = "");

}  // namespace fusekit
