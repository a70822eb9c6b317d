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

constexpr int kSchemaVersion = 1;
constexpr const char* kColumns =
    "id, pipeline_hash, pipeline_text, pattern, dtype, shape, shape_bucket, arch, gpu_name, sm_count, "
    "driver_version, cuda_version, halide_version, fusekit_version, host, backend, params, status, error, "
    "verify_error, median_us, p20_us, p80_us, bandwidth_gbps, samples, timestamp, kernel_hash";

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
  kernel_hash TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS records_key ON records (pipeline_hash, dtype, shape_bucket, arch, status);
)sql";

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
    auto parent = std::filesystem::path(path).parent_path();
    if (!read_only && !parent.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(parent, ec);
    }
    const int flags = read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
    if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
      std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      db_ = nullptr;
      throw UserError("cannot open database '" + path + "': " + msg +
                      (read_only ? "; pass --db with an existing database" : "; pass --db with a writable path"));
    }
    // Writers wait their turn: sixteen tuning processes committing into one
    // file at once (bench/fleet_bench) each wait for several seconds at times.
    sqlite3_busy_timeout(db_, 120000);
    // Reading the version touches the file header: a non-SQLite file fails here.
    int version = 0;
    {
      sqlite3_stmt* s = nullptr;
      if (sqlite3_prepare_v2(db_, "PRAGMA user_version", -1, &s, nullptr) != SQLITE_OK ||
          sqlite3_step(s) != SQLITE_ROW) {
        std::string msg = sqlite3_errmsg(db_);
        sqlite3_finalize(s);
        sqlite3_close(db_);
        db_ = nullptr;
        throw UserError("'" + path + "' is not a fusekit database (" + msg +
                        "); pass --db with another path or move the file away");
      }
      version = sqlite3_column_int(s, 0);
      sqlite3_finalize(s);
    }
    if (version != 0 && version != kSchemaVersion) {
      sqlite3_close(db_);
      db_ = nullptr;
      throw UserError("database '" + path + "' has schema version " + std::to_string(version) +
                      "; this fusekit reads version " + std::to_string(kSchemaVersion));
    }
    if (version == 0 && has_foreign_tables()) {
      sqlite3_close(db_);
      db_ = nullptr;
      throw UserError("'" + path + "' is a SQLite file but not a fusekit database; pass --db with another path");
    }
    if (read_only) {
      // Reads never write: an old file without kernel_hash reads it as ''.
      if (!has_table())
        throw UserError("'" + path + "' holds no fusekit records table; run tune or db import into it first");
      if (!has_column("kernel_hash")) {
        columns_ = kColumns;
        columns_.replace(columns_.rfind("kernel_hash"), std::string("kernel_hash").size(), "'' AS kernel_hash");
      }
      return;
    }
    // A current database opens without a write, so concurrent opens do not
    // queue for the write lock.
    if (version == kSchemaVersion && has_column("kernel_hash")) return;
    exec(kCreate);
    // A column added after databases were written (kernel_hash): added with
    // its default, so the file stays readable by the fusekit that wrote it
    // (whose statements name their columns).
    if (!has_column("kernel_hash")) exec("ALTER TABLE records ADD COLUMN kernel_hash TEXT NOT NULL DEFAULT ''");
    if (version != kSchemaVersion) exec("PRAGMA user_version = " + std::to_string(kSchemaVersion));
  }
  ~SqliteStore() override { sqlite3_close(db_); }

  size_t commit(const std::vector<TuningRecord>& records) override {
    if (records.empty()) return 0;
    exec("BEGIN IMMEDIATE");
    size_t added = 0;
    try {
      Statement ins(db_, std::string("INSERT OR IGNORE INTO records (") + kColumns +
                             ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
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
        integer(r.samples); text(r.timestamp); text(r.kernel_hash);
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

  // Config text is canonical ("cache=4 len=16384 rows=1"): a specialized
  // schedule has the token "len=".
  std::vector<TuningRecord> key_records(const TuneKey& key, bool generic_only) const override {
    return query("SELECT " + columns_ +
                     " FROM records WHERE pipeline_hash=?1 AND dtype=?2 AND shape_bucket=?3 AND arch=?4"
                     " AND status IN ('ok','modeled','revoked')" +
                     (generic_only ? " AND (' ' || params) NOT LIKE '% len=%'" : "") +
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
      out.push_back(std::move(r));
    }
    if (rc != SQLITE_DONE) throw UserError("database '" + path_ + "': " + sqlite3_errmsg(db_));
    return out;
  }

  std::string path_;
  std::string columns_ = kColumns;  // what SELECTs read
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
