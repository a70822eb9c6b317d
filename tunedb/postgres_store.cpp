// PostgreSQL implementation of TuneDb (libpq). One table, one row per
// record; the id is the primary key, so INSERT ... ON CONFLICT (id) DO
// NOTHING keeps merges an idempotent union however many writers there are.
// A one-row table holds the schema version; opening migrates step by step
// under an advisory lock, so concurrent first opens do not race.
//
//   fusekit_schema  (version)
//   fusekit_records (seq: insertion order, the columns of a TuningRecord)
#include <libpq-fe.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <vector>

#include "common/errors.h"
#include "tunedb/postgres_store.h"

namespace fusekit {
namespace {

// Version 1: the records without kernel_hash; 2 adds it; 3 adds row_length,
// filled from the params of the records already there (as
// legacy_row_length in tunedb/record.h reads them).
constexpr int kSchemaVersion = 3;
constexpr const char* kMigrations[] = {
    R"sql(
CREATE TABLE fusekit_schema (version INTEGER NOT NULL);
INSERT INTO fusekit_schema VALUES (0);
CREATE TABLE fusekit_records (
  seq BIGSERIAL NOT NULL,
  id TEXT PRIMARY KEY,
  pipeline_hash TEXT NOT NULL, pipeline_text TEXT NOT NULL, pattern TEXT NOT NULL,
  dtype TEXT NOT NULL, shape TEXT NOT NULL, shape_bucket TEXT NOT NULL,
  arch TEXT NOT NULL, gpu_name TEXT NOT NULL, sm_count INTEGER NOT NULL,
  driver_version TEXT NOT NULL, cuda_version TEXT NOT NULL, halide_version TEXT NOT NULL,
  fusekit_version TEXT NOT NULL, host TEXT NOT NULL,
  backend TEXT NOT NULL, params TEXT NOT NULL,
  status TEXT NOT NULL, error TEXT NOT NULL, verify_error DOUBLE PRECISION NOT NULL,
  median_us DOUBLE PRECISION NOT NULL, p20_us DOUBLE PRECISION NOT NULL, p80_us DOUBLE PRECISION NOT NULL,
  bandwidth_gbps DOUBLE PRECISION NOT NULL, samples INTEGER NOT NULL, timestamp TEXT NOT NULL);
CREATE INDEX fusekit_records_key ON fusekit_records (pipeline_hash, dtype, shape_bucket, arch, status);
)sql",
    "ALTER TABLE fusekit_records ADD COLUMN kernel_hash TEXT NOT NULL DEFAULT ''",
    R"sql(
ALTER TABLE fusekit_records ADD COLUMN row_length BIGINT NOT NULL DEFAULT 0;
UPDATE fusekit_records SET row_length = substring(' ' || params from ' len=([0-9]+)')::BIGINT
  WHERE backend NOT LIKE 'cublaslt%' AND ' ' || params LIKE '% len=%';
)sql",
};
static_assert(sizeof(kMigrations) / sizeof(kMigrations[0]) == kSchemaVersion);

// Any constant: the advisory lock the schema setup holds.
constexpr const char* kSchemaLock = "SELECT pg_advisory_xact_lock(7306581402)";

constexpr int kColumnCount = 28;
constexpr const char* kColumns =
    "id, pipeline_hash, pipeline_text, pattern, dtype, shape, shape_bucket, arch, gpu_name, sm_count, "
    "driver_version, cuda_version, halide_version, fusekit_version, host, backend, params, status, error, "
    "verify_error, median_us, p20_us, p80_us, bandwidth_gbps, samples, timestamp, kernel_hash, row_length";
// Rows per INSERT (PostgreSQL takes at most 65535 parameters a statement);
// larger commits go through COPY.
constexpr size_t kRowsPerInsert = 1000;

struct ConnCloser {
  void operator()(PGconn* c) const { PQfinish(c); }
};
struct ResultCloser {
  void operator()(PGresult* r) const { PQclear(r); }
};
using Result = std::unique_ptr<PGresult, ResultCloser>;

std::string real_text(double v) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

class PostgresStore final : public TuneDb {
 public:
  PostgresStore(const std::string& uri, bool create, const std::string& spool_dir)
      : shown_(mask_uri(uri)), spool_dir_(spool_dir) {
    password_ = password_of(uri);
    conn_.reset(PQconnectdb(uri.c_str()));
    if (!conn_ || PQstatus(conn_.get()) != CONNECTION_OK)
      throw UserError("cannot connect to PostgreSQL at " + shown_ + ": " + server_message() +
                      "; check the server is up and the user, password and database in --db");
    PQsetNoticeProcessor(conn_.get(), [](void*, const char*) {}, nullptr);  // IF NOT EXISTS chatter
    set_up_schema(create);
  }

  size_t commit(const std::vector<TuningRecord>& records) override {
    if (records.empty()) return 0;
    size_t added = 0;
    try {
      exec("BEGIN");
      if (records.size() > kRowsPerInsert) added = copy_in(records);
      else added = insert(records, 0, records.size());
      exec("COMMIT");
    } catch (const UserError& e) {
      PQclear(PQexec(conn_.get(), "ROLLBACK"));
      throw UserError(std::string(e.what()) + "; the " + std::to_string(records.size()) +
                      " records of this commit were not stored (those committed before were)" + spool(records));
    }
    return added;
  }

  std::vector<TuningRecord> key_records(const TuneKey& key, bool generic_only) const override {
    return query(std::string("SELECT ") + kColumns +
                     " FROM fusekit_records WHERE pipeline_hash=$1 AND dtype=$2 AND shape_bucket=$3 AND arch=$4"
                     " AND status IN ('ok','modeled','revoked')" +
                     (generic_only ? " AND row_length = 0" : "") +
                     " ORDER BY (status='ok') DESC, median_us ASC, timestamp COLLATE \"C\" ASC, seq ASC",
                 {key.pipeline_hash, key.dtype, key.shape_bucket, key.arch});
  }

  std::vector<TuningRecord> all(const RecordFilter& f) const override {
    return query(std::string("SELECT ") + kColumns +
                     " FROM fusekit_records WHERE ($1='' OR pattern=$1) AND ($2='' OR dtype=$2) AND ($3='' OR arch=$3)"
                     " AND ($4='' OR backend=$4) AND ($5='' OR status='ok') ORDER BY timestamp COLLATE \"C\", seq",
                 {f.pattern, f.dtype, f.arch, f.backend, f.ok_only ? "1" : ""});
  }

  std::vector<std::string> ids() const override {
    Result r = run("SELECT id FROM fusekit_records", {}, PGRES_TUPLES_OK);
    std::vector<std::string> out;
    out.reserve(static_cast<size_t>(PQntuples(r.get())));
    for (int i = 0; i < PQntuples(r.get()); ++i) out.emplace_back(PQgetvalue(r.get(), i, 0));
    return out;
  }

  size_t size() const override {
    Result r = run("SELECT COUNT(*) FROM fusekit_records", {}, PGRES_TUPLES_OK);
    return static_cast<size_t>(std::strtoull(PQgetvalue(r.get(), 0, 0), nullptr, 10));
  }

 private:
  static std::string password_of(const std::string& uri) {
    char* err = nullptr;
    PQconninfoOption* opts = PQconninfoParse(uri.c_str(), &err);
    if (!opts) {
      std::string msg = err ? err : "malformed";
      PQfreemem(err);
      throw UserError("malformed PostgreSQL URI " + mask_uri(uri) + ": " + msg +
                      "; expected postgresql://user[:password]@host[:port]/dbname");
    }
    std::string password;
    for (PQconninfoOption* o = opts; o->keyword; ++o)
      if (std::string(o->keyword) == "password" && o->val) password = o->val;
    PQconninfoFree(opts);
    return password;
  }

  // Writes records the server did not take to the spool; the message tail.
  std::string spool(const std::vector<TuningRecord>& records) const {
    if (spool_dir_.empty()) return "";
    const std::string path = spool_dir_ + "/unstored-" + utc_timestamp() + "-" + std::to_string(getpid()) + ".jsonl";
    try {
      std::error_code ec;
      std::filesystem::create_directories(spool_dir_, ec);
      write_jsonl(records, path);
    } catch (const UserError& e) {
      return "; nor could they be spooled: " + std::string(e.what());
    }
    return "; they are saved in " + path + ": `fusekit db import --db URI " + path + "` adds them";
  }

  // The server's or libpq's last message, one line, the password masked.
  std::string server_message() const {
    std::string msg = conn_ ? PQerrorMessage(conn_.get()) : "out of memory";
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    for (char& c : msg)
      if (c == '\n' || c == '\t') c = ' ';
    if (!password_.empty())
      for (size_t p; (p = msg.find(password_)) != std::string::npos;) msg.replace(p, password_.size(), "***");
    return msg;
  }

  Result run(const std::string& sql, const std::vector<std::string>& params, ExecStatusType want) const {
    std::vector<const char*> values;
    for (const auto& p : params) values.push_back(p.c_str());
    Result r(params.empty() ? PQexec(conn_.get(), sql.c_str())
                            : PQexecParams(conn_.get(), sql.c_str(), static_cast<int>(values.size()), nullptr,
                                           values.data(), nullptr, nullptr, 0));
    if (!r || PQresultStatus(r.get()) != want)
      throw UserError("PostgreSQL at " + shown_ + ": " + server_message());
    return r;
  }

  void exec(const std::string& sql) const { run(sql, {}, PGRES_COMMAND_OK); }

  int schema_version() const {
    Result t = run("SELECT to_regclass('fusekit_schema') IS NOT NULL", {}, PGRES_TUPLES_OK);
    if (std::string(PQgetvalue(t.get(), 0, 0)) != "t") return 0;
    Result v = run("SELECT version FROM fusekit_schema", {}, PGRES_TUPLES_OK);
    if (PQntuples(v.get()) != 1)
      throw UserError("PostgreSQL at " + shown_ + ": fusekit_schema holds " + std::to_string(PQntuples(v.get())) +
                      " rows, not one; the database is damaged: restore it or pass another --db");
    return std::atoi(PQgetvalue(v.get(), 0, 0));
  }

  // Creates or migrates the tables in one transaction under the lock.
  void set_up_schema(bool create) {
    exec("BEGIN");
    try {
      run(kSchemaLock, {}, PGRES_TUPLES_OK);
      const int version = schema_version();
      if (version > kSchemaVersion)
        throw UserError("PostgreSQL at " + shown_ + " has fusekit schema version " + std::to_string(version) +
                        "; this fusekit reads versions up to " + std::to_string(kSchemaVersion) +
                        ": use a newer fusekit or another database");
      if (version == 0 && !create)
        throw UserError("PostgreSQL at " + shown_ + " holds no fusekit records (no fusekit_schema table); "
                        "run `fusekit tune --db ...` into it first");
      for (int v = version; v < kSchemaVersion; ++v) {
        exec(kMigrations[v]);
        exec("UPDATE fusekit_schema SET version = " + std::to_string(v + 1));
      }
      exec("COMMIT");
    } catch (...) {
      PQclear(PQexec(conn_.get(), "ROLLBACK"));
      throw;
    }
  }

  // One record as a line of COPY's text format (tab-separated, escaped).
  static void copy_line(const TuningRecord& r, size_t ord, std::string* out) {
    auto field = [&](const std::string& v) {
      out->push_back('\t');
      for (char c : v) {
        switch (c) {
          case '\\': *out += "\\\\"; break;
          case '\t': *out += "\\t"; break;
          case '\n': *out += "\\n"; break;
          case '\r': *out += "\\r"; break;
          default: out->push_back(c);
        }
      }
    };
    *out += std::to_string(ord);
    for (const std::string* v : {&r.id, &r.pipeline_hash, &r.pipeline_text, &r.pattern, &r.dtype, &r.shape,
                                 &r.shape_bucket, &r.arch, &r.gpu_name})
      field(*v);
    field(std::to_string(r.sm_count));
    for (const std::string* v : {&r.driver_version, &r.cuda_version, &r.halide_version, &r.fusekit_version, &r.host,
                                 &r.backend, &r.params})
      field(*v);
    field(record_status_name(r.status));
    field(r.error);
    for (double v : {r.verify_error, r.median_us, r.p20_us, r.p80_us, r.bandwidth_gbps}) field(real_text(v));
    field(std::to_string(r.samples));
    field(r.timestamp);
    field(r.kernel_hash);
    field(std::to_string(r.row_length));
    out->push_back('\n');
  }

  // Many records: COPY into a temporary table, then one INSERT ... SELECT
  // in their order (so insertion order, the ranking's last tie-break, holds).
  size_t copy_in(const std::vector<TuningRecord>& records) {
    exec(std::string("CREATE TEMP TABLE fusekit_incoming ON COMMIT DROP AS SELECT 0::BIGINT AS ord, ") + kColumns +
         " FROM fusekit_records WITH NO DATA");
    Result start = run(std::string("COPY fusekit_incoming (ord, ") + kColumns + ") FROM STDIN", {}, PGRES_COPY_IN);
    std::string chunk;
    for (size_t i = 0; i < records.size(); ++i) {
      copy_line(records[i], i, &chunk);
      if (chunk.size() > (1 << 20) || i + 1 == records.size()) {
        if (PQputCopyData(conn_.get(), chunk.data(), static_cast<int>(chunk.size())) != 1)
          throw UserError("PostgreSQL at " + shown_ + ": " + server_message());
        chunk.clear();
      }
    }
    if (PQputCopyEnd(conn_.get(), nullptr) != 1) throw UserError("PostgreSQL at " + shown_ + ": " + server_message());
    Result done(PQgetResult(conn_.get()));
    if (!done || PQresultStatus(done.get()) != PGRES_COMMAND_OK)
      throw UserError("PostgreSQL at " + shown_ + ": " + server_message());
    while (PGresult* extra = PQgetResult(conn_.get())) PQclear(extra);
    Result ins = run(std::string("INSERT INTO fusekit_records (") + kColumns + ") SELECT " + kColumns +
                         " FROM fusekit_incoming ORDER BY ord ON CONFLICT (id) DO NOTHING",
                     {}, PGRES_COMMAND_OK);
    return static_cast<size_t>(std::strtoull(PQcmdTuples(ins.get()), nullptr, 10));
  }

  size_t insert(const std::vector<TuningRecord>& records, size_t first, size_t last) {
    std::string sql = std::string("INSERT INTO fusekit_records (") + kColumns + ") VALUES ";
    std::vector<std::string> params;
    params.reserve((last - first) * kColumnCount);
    for (size_t k = first; k < last; ++k) {
      const TuningRecord& r = records[k];
      sql += k == first ? "(" : ",(";
      for (int c = 0; c < kColumnCount; ++c)
        sql += (c ? ",$" : "$") + std::to_string(params.size() + c + 1);
      sql += ")";
      for (const std::string* v : {&r.id, &r.pipeline_hash, &r.pipeline_text, &r.pattern, &r.dtype, &r.shape,
                                   &r.shape_bucket, &r.arch, &r.gpu_name})
        params.push_back(*v);
      params.push_back(std::to_string(r.sm_count));
      for (const std::string* v : {&r.driver_version, &r.cuda_version, &r.halide_version, &r.fusekit_version, &r.host,
                                   &r.backend, &r.params})
        params.push_back(*v);
      params.push_back(record_status_name(r.status));
      params.push_back(r.error);
      for (double v : {r.verify_error, r.median_us, r.p20_us, r.p80_us, r.bandwidth_gbps}) params.push_back(real_text(v));
      params.push_back(std::to_string(r.samples));
      params.push_back(r.timestamp);
      params.push_back(r.kernel_hash);
      params.push_back(std::to_string(r.row_length));
    }
    sql += " ON CONFLICT (id) DO NOTHING";
    Result res = run(sql, params, PGRES_COMMAND_OK);
    return static_cast<size_t>(std::strtoull(PQcmdTuples(res.get()), nullptr, 10));
  }

  std::vector<TuningRecord> query(const std::string& sql, const std::vector<std::string>& params) const {
    Result res = run(sql, params, PGRES_TUPLES_OK);
    PGresult* q = res.get();
    std::vector<TuningRecord> out;
    const int rows = PQntuples(q);
    out.reserve(static_cast<size_t>(rows));
    for (int row = 0; row < rows; ++row) {
      TuningRecord r;
      int i = 0;
      auto text = [&]() { return std::string(PQgetvalue(q, row, i++)); };
      auto integer = [&]() { return std::strtoll(PQgetvalue(q, row, i++), nullptr, 10); };
      auto real = [&]() { return std::strtod(PQgetvalue(q, row, i++), nullptr); };
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
    return out;
  }

  std::string shown_;     // the URI as messages print it
  std::string password_;  // masked out of server messages
  std::string spool_dir_;
  std::unique_ptr<PGconn, ConnCloser> conn_;
};

}  // namespace

std::unique_ptr<TuneDb> open_postgres_db(const std::string& uri, bool create, const std::string& spool_dir) {
  return std::make_unique<PostgresStore>(uri, create, spool_dir);
}

}  // namespace fusekit
