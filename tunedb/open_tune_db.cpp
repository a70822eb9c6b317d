// The one factory behind --db: a PostgreSQL URI or a SQLite file path.
#include <unistd.h>

#include "common/errors.h"
#include "tunedb/postgres_store.h"

namespace fusekit {

std::unique_ptr<TuneDb> open_tune_db(const std::string& uri_or_path, OpenMode mode, const std::string& spool_dir) {
  if (is_postgres_uri(uri_or_path)) return open_postgres_db(uri_or_path, mode == OpenMode::kCreate, spool_dir);
  if (mode == OpenMode::kMustExist && access(uri_or_path.c_str(), R_OK) != 0)
    throw UserError("no database at '" + uri_or_path + "'; pass --db FILE or run tune first");
  return mode == OpenMode::kMustExist ? open_sqlite_db_read_only(uri_or_path) : open_sqlite_db(uri_or_path);
}

}  // namespace fusekit
