// TuneDb: the tuning database. commit() appends, best() answers the winner
// of a key, merge() unions records by id (idempotent). The SQLite store is
// the embedded default, PostgreSQL the shared server store (open_tune_db
// picks one from the --db text); JSON lines move records between machines.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tunedb/record.h"
#include "tunedb/winner_selection.h"

namespace fusekit {

// Which records all() returns; empty fields match everything.
struct RecordFilter {
  std::string pattern;
  std::string dtype;
  std::string arch;
  std::string backend;
  bool ok_only = false;
};

class TuneDb {
 public:
  virtual ~TuneDb() = default;
  // Appends records in one transaction; a record whose id exists is skipped.
  // Returns how many were added.
  virtual size_t commit(const std::vector<TuningRecord>& records) = 0;
  // A key's verified ("ok") and modeled records in ranking order: measured
  // first, then by median_us, timestamp and insertion. `generic_only`
  // leaves out schedules compiled for one row length (a `len` parameter:
  // see schedules/row_reduction_template.h).
  virtual std::vector<TuningRecord> key_records(const TuneKey& key, bool generic_only) const = 0;
  // The fastest verified schedule of a key; measured ("ok") beats modeled.
  // A schedule with several records (runs pooled from machines, a schedule
  // timed again) ranks by their median, and that median record is returned
  // (select_winner, the same for every store).
  std::optional<TuningRecord> best(const TuneKey& key) const { return select_winner(key_records(key, false)).best; }
  // The same among schedules generic over the row length.
  std::optional<TuningRecord> best_generic(const TuneKey& key) const {
    return select_winner(key_records(key, true)).best;
  }
  // Records matching a filter, oldest first.
  virtual std::vector<TuningRecord> all(const RecordFilter& filter = {}) const = 0;
  virtual size_t size() const = 0;
  // Every record's id (what a sync compares before it reads records).
  virtual std::vector<std::string> ids() const = 0;
  // Union with another database's records (same as commit: ids dedupe).
  size_t merge(const TuneDb& other) { return commit(other.all()); }
};

// Opens (creating if absent) a SQLite database file. Throws UserError when
// the file is not a fusekit database or cannot be opened, naming the path.
std::unique_ptr<TuneDb> open_sqlite_db(const std::string& path);
// Opens an existing database for reading only: nothing in the file changes
// (no schema setup, no header writes), and a read-only file works. commit()
// on it throws UserError.
std::unique_ptr<TuneDb> open_sqlite_db_read_only(const std::string& path);

// Whether --db names a PostgreSQL server (postgresql:// or postgres://)
// rather than a SQLite file.
bool is_postgres_uri(const std::string& db);

// How a command opens its database: writers create it, readers need it and
// never write it (a SQLite file opens read-only).
enum class OpenMode { kCreate, kMustExist };

// The one factory behind --db: a PostgreSQL URI or a SQLite path. With
// kMustExist, a missing SQLite file or a server database without fusekit's
// tables is a UserError telling to run tune first.
// A server store whose commit fails (the server went away) writes the
// records it did not take to a JSON-lines file in `spool_dir` (when given)
// and names it in the message, so nothing measured is lost.
std::unique_ptr<TuneDb> open_tune_db(const std::string& uri_or_path, OpenMode mode,
                                     const std::string& spool_dir = "");

// `db` fit to print: a URI's password (user:PASSWORD@ or password=...)
// replaced by "***"; a path unchanged.
std::string mask_uri(const std::string& db);

// The default database path: $FUSEKIT_DB if set, else
// $XDG_DATA_HOME/fusekit/tune.db, else ~/.local/share/fusekit/tune.db.
// (Read once by the CLI and passed down, never deep in the code.)
std::string default_db_path();

// Writes every record as one JSON object per line, gzip-compressed where
// `path` ends in ".gz"; returns the count.
size_t export_jsonl(const TuneDb& db, const std::string& path);
// The same for any list of records (a spool of records a server did not take).
size_t write_jsonl(const std::vector<TuningRecord>& records, const std::string& path);
// Every record of a JSON-lines file, plain or gzip-compressed (told by its
// bytes, not its name), each upgraded as an import gives it
// (upgrade_record); a line that is not a record throws UserError naming the
// file and line, and so does a gzip file cut short. `lines`, if given,
// receives each record's line number.
std::vector<TuningRecord> read_jsonl(const std::string& path, std::vector<size_t>* lines = nullptr);
// Reads JSON lines (read_jsonl) into `db`; returns how many were new. The
// whole file is validated before anything is written, so after a bad line
// the database is untouched.
size_t import_jsonl(TuneDb& db, const std::string& path);

}  // namespace fusekit
