// What only the server store has: URIs, logins, schema versions and their
// migration, on a real throwaway server (skipped where none can start).
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "common/errors.h"
#include "testing/pg_server.h"
#include "tests/support/sample_record.h"
#include "tunedb/postgres_store.h"
#include "tunedb/tune_db.h"

namespace fusekit {
namespace {

PgServer& server() { return shared_pg_server(); }

class PostgresStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!server().available()) GTEST_SKIP() << server().skip_reason();
    uri_ = server().create_database("p_" + std::to_string(getpid()) + "_" + std::to_string(++count_));
  }
  // Runs SQL on the test's database directly, as a setup step.
  void sql(const std::string& text) {
    PGconn* c = PQconnectdb(uri_.c_str());
    ASSERT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
    PGresult* r = PQexec(c, text.c_str());
    EXPECT_TRUE(PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK) << PQerrorMessage(c);
    PQclear(r);
    PQfinish(c);
  }
  // The message opening `uri` throws (or "" when it opens).
  static std::string open_error(const std::string& uri, OpenMode mode = OpenMode::kCreate) {
    try {
      open_tune_db(uri, mode);
    } catch (const UserError& e) {
      return e.what();
    }
    return "";
  }
  std::string uri_;
  static inline int count_ = 0;
};

TEST(MaskUri, HidesPasswordsAndKeepsTheRest) {
  EXPECT_EQ(mask_uri("postgresql://tuner:hunter2@db.example:5432/fusekit"),
            "postgresql://tuner:***@db.example:5432/fusekit");
  EXPECT_EQ(mask_uri("postgres://tuner@db/fusekit"), "postgres://tuner@db/fusekit");
  EXPECT_EQ(mask_uri("postgresql://db/fusekit?user=u&password=hunter2&sslmode=require"),
            "postgresql://db/fusekit?user=u&password=***&sslmode=require");
  EXPECT_EQ(mask_uri("postgresql://u:p%40ss@[::1]:5432/d?password=x"), "postgresql://u:***@[::1]:5432/d?password=***");
  EXPECT_EQ(mask_uri("/data/tune.db"), "/data/tune.db");
  EXPECT_TRUE(is_postgres_uri("postgresql://h/d"));
  EXPECT_FALSE(is_postgres_uri("tune.db"));
}

TEST_F(PostgresStoreTest, WrongPasswordIsOneMaskedMessage) {
  const std::string bad = server().uri("postgres", "wrong-pw-123");
  const std::string msg = open_error(bad);
  EXPECT_NE(msg.find("cannot connect to PostgreSQL"), std::string::npos) << msg;
  EXPECT_NE(msg.find("password authentication failed"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("wrong-pw-123"), std::string::npos) << msg;
  EXPECT_NE(msg.find("fusekit:***@"), std::string::npos) << msg;
}

TEST_F(PostgresStoreTest, UnreachableServerIsOneMaskedMessage) {
  // Port 1 on loopback: nothing listens there.
  const std::string msg = open_error("postgresql://fusekit:hunter2@127.0.0.1:1/fusekit?connect_timeout=5");
  EXPECT_NE(msg.find("cannot connect to PostgreSQL at postgresql://fusekit:***@127.0.0.1:1/fusekit"),
            std::string::npos) << msg;
  EXPECT_EQ(msg.find("hunter2"), std::string::npos) << msg;
}

TEST_F(PostgresStoreTest, NewerSchemaVersionIsRefusedUntouched) {
  open_tune_db(uri_, OpenMode::kCreate)->commit({});
  sql("UPDATE fusekit_schema SET version = 99");
  const std::string msg = open_error(uri_);
  EXPECT_NE(msg.find("schema version 99"), std::string::npos) << msg;
  EXPECT_NE(msg.find("reads versions up to 3"), std::string::npos) << msg;
  EXPECT_EQ(msg.find(PgServer::kPassword), std::string::npos) << msg;
}

TEST_F(PostgresStoreTest, ReadersNeedTheTables) {
  const std::string msg = open_error(uri_, OpenMode::kMustExist);
  EXPECT_NE(msg.find("holds no fusekit records"), std::string::npos) << msg;
  open_tune_db(uri_, OpenMode::kCreate);
  EXPECT_EQ(open_error(uri_, OpenMode::kMustExist), "");
}

// A version-1 database (no kernel_hash, no row_length column) migrates on
// open: its records read with no kernel, a row schedule compiled for one
// length gets that length from its params, and new records keep theirs.
TEST_F(PostgresStoreTest, VersionOneMigratesToTheCurrentVersion) {
  sql(R"sql(
CREATE TABLE fusekit_schema (version INTEGER NOT NULL);
INSERT INTO fusekit_schema VALUES (1);
CREATE TABLE fusekit_records (
  seq BIGSERIAL NOT NULL, id TEXT PRIMARY KEY,
  pipeline_hash TEXT NOT NULL, pipeline_text TEXT NOT NULL, pattern TEXT NOT NULL,
  dtype TEXT NOT NULL, shape TEXT NOT NULL, shape_bucket TEXT NOT NULL,
  arch TEXT NOT NULL, gpu_name TEXT NOT NULL, sm_count INTEGER NOT NULL,
  driver_version TEXT NOT NULL, cuda_version TEXT NOT NULL, halide_version TEXT NOT NULL,
  fusekit_version TEXT NOT NULL, host TEXT NOT NULL, backend TEXT NOT NULL, params TEXT NOT NULL,
  status TEXT NOT NULL, error TEXT NOT NULL, verify_error DOUBLE PRECISION NOT NULL,
  median_us DOUBLE PRECISION NOT NULL, p20_us DOUBLE PRECISION NOT NULL, p80_us DOUBLE PRECISION NOT NULL,
  bandwidth_gbps DOUBLE PRECISION NOT NULL, samples INTEGER NOT NULL, timestamp TEXT NOT NULL);
INSERT INTO fusekit_records (id, pipeline_hash, pipeline_text, pattern, dtype, shape, shape_bucket, arch, gpu_name,
  sm_count, driver_version, cuda_version, halide_version, fusekit_version, host, backend, params, status, error,
  verify_error, median_us, p20_us, p80_us, bandwidth_gbps, samples, timestamp)
VALUES ('0123456789abcdef0123456789abcdef', 'abc123', 'layout flat; out = x', 'relu_add', 'f32', '4096', 'n<=2^12',
  'sm_90', 'NVIDIA H200', 132, '580.95.05', '13.0', '14.0.0', '0.1.0', 'vm', 'nvrtc', 'threads=256', 'ok', '',
  0.1, 5.0, 4.5, 5.5, 100.0, 100, '2026-11-30T01:00:00Z'),
  ('1123456789abcdef0123456789abcdef', 'abc123', 'layout flat; out = x', 'relu_add', 'f32', '4096', 'n<=2^12',
  'sm_90', 'NVIDIA H200', 132, '580.95.05', '13.0', '14.0.0', '0.1.0', 'vm', 'nvrtc', 'cache=4 len=4096 rows=1',
  'ok', '', 0.1, 3.0, 2.5, 3.5, 100.0, 100, '2026-11-30T01:00:01Z');
)sql");
  auto db = open_tune_db(uri_, OpenMode::kMustExist);
  auto all = db->all();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].row_length, 0);
  EXPECT_EQ(all[1].row_length, 4096);
  EXPECT_EQ(db->best(all[0].key())->id, all[1].id);
  EXPECT_EQ(db->best_generic(all[0].key())->id, all[0].id);
  EXPECT_EQ(all[0].kernel_hash, "");
  EXPECT_DOUBLE_EQ(all[0].median_us, 5.0);
  TuningRecord r = all[0];
  r.id = new_record_id();
  r.median_us = 1.0;
  r.kernel_hash = "00000000deadbeef";
  EXPECT_EQ(db->commit({r}), 1u);
  EXPECT_EQ(db->best(r.key())->kernel_hash, "00000000deadbeef");
}

// The server dropping the connection mid-run: the commit fails with one
// masked message, and its records are in the spool, whole.
TEST_F(PostgresStoreTest, ACommitTheServerDropsIsSpooledNotLost) {
  const std::string spool = "/tmp/fusekit_spool_" + std::to_string(getpid());
  std::filesystem::remove_all(spool);
  auto db = open_tune_db(uri_, OpenMode::kCreate, spool);
  const TuningRecord r = testing::sample_record("nvrtc", 3.0);
  ASSERT_EQ(db->commit({r}), 1u);
  sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND "
      "pid <> pg_backend_pid()");
  std::vector<TuningRecord> batch(3, r);
  for (auto& b : batch) b.id = new_record_id();
  std::string msg;
  try {
    db->commit(batch);
  } catch (const UserError& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("the 3 records of this commit were not stored"), std::string::npos) << msg;
  EXPECT_EQ(msg.find(PgServer::kPassword), std::string::npos) << msg;
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(spool)) files.push_back(e.path().string());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_NE(msg.find(files[0]), std::string::npos) << msg;
  const auto spooled = read_jsonl(files[0]);
  ASSERT_EQ(spooled.size(), 3u);
  EXPECT_EQ(spooled[2].id, batch[2].id);
  // Imported back, nothing is missing.
  auto again = open_tune_db(uri_, OpenMode::kMustExist);
  EXPECT_EQ(import_jsonl(*again, files[0]), 3u);
  EXPECT_EQ(again->size(), 4u);
  std::filesystem::remove_all(spool);
}

}  // namespace
}  // namespace fusekit
