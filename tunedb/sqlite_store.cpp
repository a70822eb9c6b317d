// SQLite implementation of TuneDb. One table, one row per record; the id is
// the primary key so INSERT OR IGNORE makes merges idempotent.
#include <sqlite3.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "common/errors.h"
#include "tunedb/tune_db.h"

namespace fusekit {
namespace {

// Version 1: the records (kernel_hash added later with its default); 2 adds
// row_length, filled from the params of the records already there. A fusekit
// that reads version 1 refuses a version 2 file instead of writing records
// whose row length it does not set.
constexpr int kSchemaVersion = 2;
constexpr const char* kColumns =
    "id, pipeline_hash, pipeline_text, pattern, dtype, shape, shape_bucket, arch, gpu_name, sm_count, "
    "driver_version, cuda_version, halide_version, fusekit_version, host, backend, params, status, error, "
    "verify_error, median_us, p20_us, p80_us, bandwidth_gbps, samples, timestamp, kernel_hash, row_length";

constexpr const char* kCreate = R"sql(
CREATE TABLE IF NOT EXISTS records (
  id TEXT PRIMARY KEY,
  pipeline_hash TEXT NOT NULL, pipeline_text TEXT NOT NULL, pattern TEXT NOT NULL,
  dtype TEXT NOT NULL, shape TEXT NOT NULL, shape_bucket TEXT NOT NULL,
  arch TEXT NOT NULL, gpu_name TEXT NOT NULL, sm_count INTEGER NOT NULL,
  driver_version TEXT NOT NULL, cuda_version TEXT NOT NULL, halide_version TEXT NOT NULL,
  fusekit_version TEXT NOT NULL, host TEXT NOT NULL,
  backend TEXT NOT NULL, params TEXT NOT NULL,
  status TEXT NOT NULL, error TEXT NOT NULL, verify_error REAL NOT NULL,
  median_us REAL NOT NULL, p20_us REAL NOT NULL, p80_us REAL NOT NULL,
  bandwidth_gbps REAL NOT NULL, samples INTEGER NOT NULL, timestamp TEXT NOT NULL,
  kernel_hash TEXT NOT NULL DEFAULT '', row_length INTEGER NOT NULL DEFAULT 0);
CREATE INDEX IF NOT EXISTS records_key ON records (pipeline_hash, dtype, shape_bucket, arch, status);
)sql";

// A version 1 record's row length, from its params as legacy_row_length
// (tunedb/record.h) reads them: SQLite's CAST takes the leading integer of
// "16384 rows=1".
constexpr const char* kLegacyRowLength =
    "(CASE WHEN backend NOT LIKE 'cublaslt%' AND instr(' ' || params, ' len=') > 0 "
    "THEN CAST(substr(' ' || params, instr(' ' || params, ' len=') + 5) AS INTEGER) ELSE 0 END)";

class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql, const std::string& path) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK)
      throw UserError("database '" + path + "': " + sqlite3_errmsg(db));
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  sqlite3_stmt* get() { return stmt_; }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

class SqliteStore final : public TuneDb {
 public:
  SqliteStore(const std::string& path, bool read_only) : path_(path) {
    open_file(read_only);
    const int version = schema_version();
    check_version(version);
    if (read_only) {
      read_old_columns();
      return;
    }
    // A current database opens without a write, so concurrent opens do not
    // queue for the write lock.
    if (version != kSchemaVersion || !has_column("row_length")) migrate();
  }
  ~SqliteStore() override { sqlite3_close(db_); }

  size_t commit(const std::vector<TuningRecord>& records) override {
    if (records.empty()) return 0;
    exec("BEGIN IMMEDIATE");
    size_t added = 0;
    try {
      Statement ins(db_, std::string("INSERT OR IGNORE INTO records (") + kColumns +
                             ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    path_);
      for (const auto& r : records) {
        sqlite3_stmt* s = ins.get();
        sqlite3_reset(s);
        int i = 0;
        auto text = [&](const std::string& v) { sqlite3_bind_text(s, ++i, v.c_str(), -1, SQLITE_TRANSIENT); };
        auto integer = [&](int64_t v) { sqlite3_bind_int64(s, ++i, v); };
        auto real = [&](double v) { sqlite3_bind_double(s, ++i, v); };
        text(r.id); text(r.pipeline_hash); text(r.pipeline_text); text(r.pattern); text(r.dtype);
        text(r.shape); text(r.shape_bucket); text(r.arch); text(r.gpu_name); integer(r.sm_count);
        text(r.driver_version); text(r.cuda_version); text(r.halide_version); text(r.fusekit_version);
        text(r.host); text(r.backend); text(r.params); text(record_status_name(r.status)); text(r.error);
        real(r.verify_error); real(r.median_us); real(r.p20_us); real(r.p80_us); real(r.bandwidth_gbps);
        integer(r.samples); text(r.timestamp); text(r.kernel_hash); integer(r.row_length);
        if (sqlite3_step(s) != SQLITE_DONE) throw UserError("database '" + path_ + "': " + sqlite3_errmsg(db_));
        added += static_cast<size_t>(sqlite3_changes(db_));
      }
    } catch (...) {
      exec("ROLLBACK");
      throw;
    }
    exec("COMMIT");
    return added;
  }

  std::vector<TuningRecord> key_records(const TuneKey& key, bool generic_only) const override {
    return query("SELECT " + columns_ +
                     " FROM records WHERE pipeline_hash=?1 AND dtype=?2 AND shape_bucket=?3 AND arch=?4"
                     " AND status IN ('ok','modeled','revoked')" +
                     (generic_only ? " AND " + row_length_ + " = 0" : "") +
                     " ORDER BY (status='ok') DESC, median_us ASC, timestamp ASC, rowid ASC",
                 {key.pipeline_hash, key.dtype, key.shape_bucket, key.arch});
  }

  std::vector<TuningRecord> all(const RecordFilter& f) const override {
    return query("SELECT " + columns_ +
                     " FROM records WHERE (?1='' OR pattern=?1) AND (?2='' OR dtype=?2) AND (?3='' OR arch=?3)"
                     " AND (?4='' OR backend=?4) AND (?5='' OR status='ok') ORDER BY timestamp, rowid",
                 {f.pattern, f.dtype, f.arch, f.backend, f.ok_only ? "1" : ""});
  }

  std::vector<std::string> ids() const override {
    Statement st(db_, "SELECT id FROM records", path_);
    std::vector<std::string> out;
    int rc;
    while ((rc = sqlite3_step(st.get())) == SQLITE_ROW)
      out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st.get(), 0)));
    if (rc != SQLITE_DONE) throw UserError("database '" + path_ + "': " + sqlite3_errmsg(db_));
    return out;
  }

  size_t size() const override {
    Statement s(db_, "SELECT COUNT(*) FROM records", path_);
    sqlite3_step(s.get());
    return static_cast<size_t>(sqlite3_column_int64(s.get(), 0));
  }

 private:
  void open_file(bool read_only) {
    auto parent = std::filesystem::path(path_).parent_path();
    if (!read_only && !parent.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(parent, ec);
    }
    const int flags = read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    if (sqlite3_open_v2(path_.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
      std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
      fail("cannot open database '" + path_ + "': " + msg +
           (read_only ? "; pass --db with an existing database" : "; pass --db with a writable path"));
    }
    // Writers wait their turn: sixteen tuning processes committing into one
    // file at once (bench/fleet_bench) each wait for several seconds at times.
    sqlite3_busy_timeout(db_, 120000);
  }

  // Reading the version touches the file header: a non-SQLite file fails here.
  int schema_version() {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, "PRAGMA user_version", -1, &s, nullptr) != SQLITE_OK || sqlite3_step(s) != SQLITE_ROW) {
      std::string msg = sqlite3_errmsg(db_);
      sqlite3_finalize(s);
      fail("'" + path_ + "' is not a fusekit database (" + msg + "); pass --db with another path or move the file away");
    }
    const int version = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    return version;
  }

  void check_version(int version) {
    if (version > kSchemaVersion)
      fail("database '" + path_ + "' has schema version " + std::to_string(version) +
           "; this fusekit reads versions up to " + std::to_string(kSchemaVersion) + ": use a newer fusekit");
    if (version == 0 && has_foreign_tables())
      fail("'" + path_ + "' is a SQLite file but not a fusekit database; pass --db with another path");
  }

  // Reads never write: an old file's missing columns read as what the
  // migration would store.
  void read_old_columns() {
    if (!has_table()) fail("'" + path_ + "' holds no fusekit records table; run tune or db import into it first");
    if (!has_column("kernel_hash")) replace_column("kernel_hash", "'' AS kernel_hash");
    if (!has_column("row_length")) {
      replace_column("row_length", std::string(kLegacyRowLength) + " AS row_length");
      row_length_ = kLegacyRowLength;
    }
  }

  void replace_column(const std::string& name, const std::string& expression) {
    columns_.replace(columns_.rfind(name), name.size(), expression);
  }

  // Creates the table or brings an older one to this version, in one write
  // transaction (a concurrent opener waits, then finds it done). Columns are
  // added with defaults, so statements naming their columns keep working.
  void migrate() {
    exec("BEGIN IMMEDIATE");
    try {
      exec(kCreate);
      if (!has_column("kernel_hash")) exec("ALTER TABLE records ADD COLUMN kernel_hash TEXT NOT NULL DEFAULT ''");
      if (!has_column("row_length")) {
        exec("ALTER TABLE records ADD COLUMN row_length INTEGER NOT NULL DEFAULT 0");
        exec(std::string("UPDATE records SET row_length = ") + kLegacyRowLength);
      }
      exec("PRAGMA user_version = " + std::to_string(kSchemaVersion));
    } catch (...) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
    exec("COMMIT");
  }

  [[noreturn]] void fail(const std::string& message) {
    sqlite3_close(db_);
    db_ = nullptr;
    throw UserError(message);
  }

  bool has_column(const std::string& name) {
    Statement s(db_, "SELECT COUNT(*) FROM pragma_table_info('records') WHERE name=?1", path_);
    sqlite3_bind_text(s.get(), 1, name.c_str(), -1, SQLITE_TRANSIENT);
    return sqlite3_step(s.get()) == SQLITE_ROW && sqlite3_column_int(s.get(), 0) > 0;
  }

  bool has_table() {
    Statement s(db_, "SELECT COUNT(*) FROM sqlite_master WHERE type='table' AND name='records'", path_);
    return sqlite3_step(s.get()) == SQLITE_ROW && sqlite3_column_int(s.get(), 0) > 0;
  }

  bool has_foreign_tables() {
    Statement s(db_, "SELECT COUNT(*) FROM sqlite_master WHERE type='table' AND name<>'records'", path_);
    sqlite3_step(s.get());
    return sqlite3_column_int(s.get(), 0) > 0;
  }

  void exec(const std::string& sql) const {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : "unknown error";
      sqlite3_free(err);
      throw UserError("database '" + path_ + "': " + msg);
    }
  }

  std::vector<TuningRecord> query(const std::string& sql, const std::vector<std::string>& binds) const {
    Statement st(db_, sql, path_);
    sqlite3_stmt* s = st.get();
    for (size_t i = 0; i < binds.size(); ++i)
      sqlite3_bind_text(s, static_cast<int>(i + 1), binds[i].c_str(), -1, SQLITE_TRANSIENT);
    std::vector<TuningRecord> out;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      TuningRecord r;
      int i = 0;
      auto text = [&]() {
        const unsigned char* t = sqlite3_column_text(s, i++);
        return std::string(t ? reinterpret_cast<const char*>(t) : "");
      };
      auto integer = [&]() { return sqlite3_column_int64(s, i++); };
      auto real = [&]() { return sqlite3_column_double(s, i++); };
      r.id = text(); r.pipeline_hash = text(); r.pipeline_text = text(); r.pattern = text(); r.dtype = text();
      r.shape = text(); r.shape_bucket = text(); r.arch = text(); r.gpu_name = text();
      r.sm_count = static_cast<int>(integer());
      r.driver_version = text(); r.cuda_version = text(); r.halide_version = text(); r.fusekit_version = text();
      r.host = text(); r.backend = text(); r.params = text(); r.status = parse_record_status(text());
      r.error = text(); r.verify_error = real(); r.median_us = real(); r.p20_us = real(); r.p80_us = real();
      r.bandwidth_gbps = real(); r.samples = static_cast<int>(integer()); r.timestamp = text();
      r.kernel_hash = text();
      r.row_length = integer();
      out.push_back(std::move(r));
    }
    if (rc != SQLITE_DONE) throw UserError("database '" + path_ + "': " + sqlite3_errmsg(db_));
    return out;
  }

  std::string path_;
  std::string columns_ = kColumns;          // what SELECTs read
  std::string row_length_ = "row_length";   // what WHERE reads it as
  sqlite3* db_ = nullptr;
};

}  // namespace

std::unique_ptr<TuneDb> open_sqlite_db(const std::string& path) {
  if (path.empty()) throw UserError("empty database path; pass --db FILE");
  return std::make_unique<SqliteStore>(path, false);
}

std::unique_ptr<TuneDb> open_sqlite_db_read_only(const std::string& path) {
  if (path.empty()) throw UserError("empty database path; pass --db FILE");
  return std::make_unique<SqliteStore>(path, true);
}

std::string default_db_path() {
  if (const char* p = std::getenv("FUSEKIT_DB"); p && *p) return p;
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) return std::string(x) + "/fusekit/tune.db";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.local/share/fusekit/tune.db";
}

}  // namespace fusekit
