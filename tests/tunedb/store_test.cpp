#include <gtest/gtest.h>
#include <sqlite3.h>

#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

#include "common/errors.h"
#include "testing/pg_server.h"
#include "tests/support/sample_record.h"
#include "tests/support/temp_dir.h"
#include "tunedb/store_sync.h"
#include "tunedb/tune_db.h"

namespace fusekit {
namespace {

PgServer& pg_server() { return shared_pg_server(); }

// A temporary folder per test, and records of one key.
class TuneDbTest : public testing::TempDirTest {
 protected:
  static TuningRecord record(const std::string& backend, double median, RecordStatus status = RecordStatus::kOk) {
    return testing::sample_record(backend, median, status);
  }
};

// The same tests against every store: "sqlite" (a file in the test's
// folder) and "postgres" (a database on a throwaway server).
class StoreTest : public TuneDbTest, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    TuneDbTest::SetUp();
    if (GetParam() == "postgres" && !pg_server().available()) GTEST_SKIP() << pg_server().skip_reason();
  }
  // The store named `name` in this test, created on first use.
  std::unique_ptr<TuneDb> open_db(const std::string& name) {
    if (GetParam() == "sqlite") return open_tune_db(path(name), OpenMode::kCreate);
    auto it = uris_.find(name);
    if (it == uris_.end()) {
      static int count = 0;
      it = uris_.emplace(name, pg_server().create_database("t" + std::to_string(getpid()) + "_" +
                                                           std::to_string(++count))).first;
    }
    return open_tune_db(it->second, OpenMode::kCreate);
  }
  std::map<std::string, std::string> uris_;
};

// Checks that `sel` took `best` and passed over `other` alone; `reason`
// gets why it passed it over (empty when it did not).
void expect_took_over(const Selection& sel, const TuningRecord& best, const TuningRecord& other, std::string* reason) {
  reason->clear();
  ASSERT_TRUE(sel.best.has_value());
  EXPECT_EQ(sel.best->id, best.id);
  ASSERT_EQ(sel.passed_over.size(), 1u);
  EXPECT_EQ(sel.passed_over[0].record.id, other.id);
  *reason = sel.passed_over[0].reason;
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreTest, ::testing::Values("sqlite", "postgres"),
                         [](const auto& info) { return info.param; });

TEST_P(StoreTest, BestPrefersMeasuredThenFastest) {
  auto db = open_db("a.db");
  db->commit({record("nvrtc", 5.0), record("halide", 4.0), record("nvrtc", 1.0, RecordStatus::kModeled),
              record("nvrtc", 0.5, RecordStatus::kVerifyError)});
  auto best = db->best({"abc123", "f32", "n<=2^12", "sm_90"});
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->backend, "halide");
  EXPECT_DOUBLE_EQ(best->median_us, 4.0);
  EXPECT_FALSE(db->best({"abc123", "f32", "n<=2^12", "sm_86"}).has_value());
}

// Pooled runs: a schedule's one fast record does not outrank another
// schedule's steady time; its median record does.
TEST_P(StoreTest, BestRanksAScheduleByTheMedianOfItsRecords) {
  auto db = open_db("a.db");
  auto timed = [&](const std::string& params, double median) {
    TuningRecord r = record("nvrtc", median);
    r.params = params;
    return r;
  };
  const TuneKey key{"abc123", "f32", "n<=2^12", "sm_90"};
  db->commit({timed("threads=256", 10.0), timed("threads=256", 12.0), timed("threads=256", 12.5),
              timed("threads=128", 11.0)});
  auto best = db->best(key);
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->params, "threads=128");
  EXPECT_DOUBLE_EQ(best->median_us, 11.0);
  // Two more runs of threads=256 at 10.2 and 10.4: its median is 10.4.
  db->commit({timed("threads=256", 10.2), timed("threads=256", 10.4)});
  best = db->best(key);
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->params, "threads=256");
  EXPECT_DOUBLE_EQ(best->median_us, 10.4);
  // The same params at another shape of the bucket are another schedule.
  TuningRecord other = timed("threads=128", 10.3);
  other.shape = "4000";
  db->commit({other});
  EXPECT_DOUBLE_EQ(db->best(key)->median_us, 10.3);
  // An even count: the lower middle (threads=64 at 10.0 and 20.0).
  db->commit({timed("threads=64", 20.0), timed("threads=64", 10.0)});
  EXPECT_EQ(db->best(key)->params, "threads=64");
  EXPECT_DOUBLE_EQ(db->best(key)->median_us, 10.0);
}

// The same params printed as another kernel (a later printer): a schedule
// ranks by the records of its newest kernel; records of an unknown kernel
// (from before records kept it) still count.
TEST_P(StoreTest, BestLeavesOutRecordsOfAnOlderKernel) {
  auto db = open_db("a.db");
  auto timed = [&](const std::string& params, double median, const std::string& kernel, const std::string& at) {
    TuningRecord r = record("nvrtc", median);
    r.params = params;
    r.kernel_hash = kernel;
    r.timestamp = at;
    return r;
  };
  const TuneKey key{"abc123", "f32", "n<=2^12", "sm_90"};
  // threads=256's old kernel (aaaa) was fast; its new one (bbbb) is slower.
  db->commit({timed("threads=256", 9.0, "aaaa", "2026-11-30T01:00:00Z"),
              timed("threads=256", 9.1, "aaaa", "2026-11-30T02:00:00Z"),
              timed("threads=256", 12.0, "bbbb", "2026-12-01T01:00:00Z"),
              timed("threads=128", 11.0, "cccc", "2026-12-01T01:00:00Z")});
  auto best = db->best(key);
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->params, "threads=128");
  // A record of an unknown kernel counts beside the newest kernel's: the
  // lower middle of 10.0 and 12.0.
  db->commit({timed("threads=256", 10.0, "", "2026-11-29T01:00:00Z")});
  EXPECT_EQ(db->best(key)->params, "threads=256");
  EXPECT_DOUBLE_EQ(db->best(key)->median_us, 10.0);
  // Without kernels on record, every record counts, as before.
  auto old = open_db("b.db");
  old->commit({timed("threads=256", 9.0, "", "2026-11-30T01:00:00Z"), timed("threads=256", 12.0, "", "2026-12-01T01:00:00Z"),
               timed("threads=128", 11.0, "", "2026-12-01T01:00:00Z")});
  EXPECT_EQ(old->best(key)->params, "threads=256");
}

// Concurrent writers, each in its own process and connection, one commit a
// record, all also committing one shared batch: nothing lost, nothing twice.
TEST_P(StoreTest, ConcurrentWritersLoseAndDuplicateNothing) {
  constexpr int kWriters = 4, kEach = 40;
  open_db("shared.db");  // created (and migrated) before the writers race
  std::vector<TuningRecord> shared;
  for (int i = 0; i < 10; ++i) shared.push_back(record("nvrtc", 100 + i));
  std::vector<std::vector<TuningRecord>> own(kWriters);
  for (auto& list : own)
    for (int i = 0; i < kEach; ++i) list.push_back(record("halide", i));
  std::vector<pid_t> children;
  for (int w = 0; w < kWriters; ++w) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int failures = 0;
      try {
        auto db = open_db("shared.db");
        for (const auto& r : own[w]) db->commit({r});
        db->commit(shared);
      } catch (...) {
        failures = 1;
      }
      _exit(failures);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a writer failed";
  }
  auto db = open_db("shared.db");
  std::map<std::string, int> seen;
  for (const auto& r : db->all()) ++seen[r.id];
  EXPECT_EQ(seen.size(), static_cast<size_t>(kWriters * kEach + 10));
  for (const auto& list : own)
    for (const auto& r : list) EXPECT_EQ(seen[r.id], 1) << r.id;
  for (const auto& r : shared) EXPECT_EQ(seen[r.id], 1) << r.id;
}

// Sync copies what each side lacks, both ways; a second sync copies nothing.
TEST_P(StoreTest, SyncCopiesWhatEachSideLacksOnce) {
  auto a = open_db("a.db");
  auto b = open_db("b.db");
  const TuningRecord both = record("nvrtc", 1);
  a->commit({both, record("nvrtc", 2), record("nvrtc", 3)});
  b->commit({both, record("halide", 4)});
  SyncCounts c = sync_stores(*a, *b);
  EXPECT_EQ(c.a_to_b, 2u);
  EXPECT_EQ(c.b_to_a, 1u);
  EXPECT_EQ(c.a_after, 4u);
  EXPECT_EQ(c.b_after, 4u);
  EXPECT_EQ(a->ids().size(), 4u);
  c = sync_stores(*a, *b);
  EXPECT_EQ(c.a_to_b + c.b_to_a, 0u);
  std::vector<std::string> ia, ib;
  for (const auto& r : a->all()) ia.push_back(r.id);
  for (const auto& r : b->all()) ib.push_back(r.id);
  std::sort(ia.begin(), ia.end());
  std::sort(ib.begin(), ib.end());
  EXPECT_EQ(ia, ib);
}

// A commit large enough for the server's bulk path (COPY) keeps every field,
// escapes included, and the insertion order.
TEST_P(StoreTest, LargeCommitsKeepEveryFieldAndTheOrder) {
  auto db = open_db("big.db");
  std::vector<TuningRecord> many;
  for (int i = 0; i < 1500; ++i) {
    TuningRecord r = record(i % 2 ? "nvrtc" : "halide", 1.0 + i % 7);
    r.error = "tab\there \\ back\\slash\nnew line\r" + std::to_string(i);
    r.verify_error = i == 3 ? std::numeric_limits<double>::infinity() : 0.125 * i;
    r.timestamp = "2026-12-01T00:00:00Z";  // one time: the order is insertion's
    many.push_back(r);
  }
  many.push_back(many[10]);  // a duplicate within the commit is stored once
  EXPECT_EQ(db->commit(many), 1500u);
  EXPECT_EQ(db->commit(many), 0u);
  const auto all = db->all();
  ASSERT_EQ(all.size(), 1500u);
  for (size_t i = 0; i < all.size(); ++i) {
    nlohmann::json got = all[i], want = many[i];
    if (i == 3) {
      EXPECT_TRUE(std::isinf(all[i].verify_error));
      got.erase("verify_error");
      want.erase("verify_error");
    }
    ASSERT_EQ(got, want) << i;
  }
}

// Records measured elsewhere rank below those of the build's origin.
TEST_P(StoreTest, StaleRecordsRankBelowMatchingOnes) {
  auto db = open_db("a.db");
  TuningRecord here = record("nvrtc", 10.0);
  here.cuda_version = "13.0";
  here.params = "threads=128";
  TuningRecord elsewhere = record("nvrtc", 5.0);
  elsewhere.cuda_version = "12.4";
  elsewhere.params = "threads=256";
  db->commit({here, elsewhere});
  const TuneKey key{"abc123", "f32", "n<=2^12", "sm_90"};
  EXPECT_EQ(db->best(key)->id, elsewhere.id);  // no target: every record counts
  RecordOrigin target;
  target.cuda_version = "13.0";
  std::string reason;
  expect_took_over(select_winner(db->key_records(key, false), target), here, elsewhere, &reason);
  EXPECT_NE(reason.find("CUDA 12.4 (not 13.0)"), std::string::npos) << reason;
}

// A GEMM record of another cuBLASLt ranks below one of the target's in every
// store, though it is faster; the version is read from the stored text.
TEST_P(StoreTest, GemmRecordsOfAnotherCublasRankBelowMatchingOnes) {
  auto db = open_db("a.db");
  auto gemm = [](const std::string& cublas, double median) {
    TuningRecord r = record("cublaslt", median);
    r.pattern = "bert_down";
    r.shape = "128x768x3072";
    r.shape_bucket = "m<=2^7 n=768 k=3072";
    r.cuda_version = "13.0 cublasLt " + cublas;
    r.params = "rank=0 ep=bias res=1 shape=128x768x3072 bt=1 dtype=f16 ws=0 cublaslt=" + cublas + " algo=heuristic";
    return r;
  };
  const TuningRecord here = gemm("130100", 20.0), other = gemm("130000", 15.0);
  db->commit({here, other});
  const TuneKey key{"abc123", "f32", "m<=2^7 n=768 k=3072", "sm_90"};
  RecordOrigin target;
  target.gpu_name = "NVIDIA H200";
  target.cuda_version = "13.0";
  target.cublas_version = "130100";
  std::string reason;
  expect_took_over(select_winner(db->key_records(key, false), target), here, other, &reason);
  EXPECT_EQ(reason, "stale: cuBLASLt 130000 (not 130100)");
  target.cublas_version = "130000";
  EXPECT_EQ(select_winner(db->key_records(key, false), target).best->id, other.id);
}

// Revocations are part of a key's records in every store, and best() passes
// over the kernel they revoke.
TEST_P(StoreTest, BestPassesOverARevokedKernel) {
  auto db = open_db("a.db");
  TuningRecord fast = record("nvrtc", 5.0), slow = record("nvrtc", 9.0);
  fast.params = "threads=128";
  slow.params = "threads=256";
  fast.kernel_hash = slow.kernel_hash = "0123456789abcdef";
  TuningRecord revocation = fast;
  revocation.id = new_record_id();
  revocation.status = RecordStatus::kRevoked;
  revocation.error = "verify_error at 1001: got nan";
  revocation.median_us = 0.0;
  db->commit({fast, slow});
  const TuneKey key{"abc123", "f32", "n<=2^12", "sm_90"};
  EXPECT_EQ(db->best(key)->id, fast.id);
  db->commit({revocation});
  EXPECT_EQ(db->best(key)->id, slow.id);
  EXPECT_EQ(db->key_records(key, false).size(), 3u);
}

// A version 1 database: the records of a schedule compiled for one row
// length (only its params said so) and of a generic one.
void write_version_one_db(const std::string& file) {
  sqlite3* raw = nullptr;
  const char* old_schema = R"sql(
CREATE TABLE records (
  id TEXT PRIMARY KEY,
  pipeline_hash TEXT NOT NULL, pipeline_text TEXT NOT NULL, pattern TEXT NOT NULL,
  dtype TEXT NOT NULL, shape TEXT NOT NULL, shape_bucket TEXT NOT NULL,
  arch TEXT NOT NULL, gpu_name TEXT NOT NULL, sm_count INTEGER NOT NULL,
  driver_version TEXT NOT NULL, cuda_version TEXT NOT NULL, halide_version TEXT NOT NULL,
  fusekit_version TEXT NOT NULL, host TEXT NOT NULL,
  backend TEXT NOT NULL, params TEXT NOT NULL,
  status TEXT NOT NULL, error TEXT NOT NULL, verify_error REAL NOT NULL,
  median_us REAL NOT NULL, p20_us REAL NOT NULL, p80_us REAL NOT NULL,
  bandwidth_gbps REAL NOT NULL, samples INTEGER NOT NULL, timestamp TEXT NOT NULL);
INSERT INTO records VALUES ('0123456789abcdef0123456789abcdef', 'abc123', 'layout flat; out = x', 'relu_add', 'f32',
  '4096', 'n<=2^12', 'sm_90', 'NVIDIA H200', 132, '13.0', '13.0', '14.0.0', '0.1.0', 'vm', 'nvrtc', 'threads=256',
  'ok', '', 0.1, 5.0, 4.5, 5.5, 100.0, 100, '2026-11-30T01:00:00Z'),
  ('1123456789abcdef0123456789abcdef', 'abc123', 'layout flat; out = x', 'relu_add', 'f32',
  '4096', 'n<=2^12', 'sm_90', 'NVIDIA H200', 132, '13.0', '13.0', '14.0.0', '0.1.0', 'vm', 'nvrtc',
  'cache=4 len=4096 rows=1', 'ok', '', 0.1, 3.0, 2.5, 3.5, 100.0, 100, '2026-11-30T01:00:01Z');
PRAGMA user_version = 1;
)sql";
  ASSERT_EQ(sqlite3_open(file.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, old_schema, nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(raw);
}

// Both records as the migration (or a read-only open, which migrates
// nothing) must give them.
void expect_version_one_records(const TuneDb& db) {
  auto all = db.all();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].kernel_hash, "");
  EXPECT_EQ(all[0].row_length, 0);
  EXPECT_EQ(all[1].row_length, 4096);
  const TuneKey key{"abc123", "f32", "n<=2^12", "sm_90"};
  EXPECT_EQ(db.best(key)->id, all[1].id);
  EXPECT_EQ(db.best_generic(key)->id, all[0].id);
}

// A version 1 database migrates on open: it gains the kernel and row-length
// columns, a schedule compiled for one length gets it from its params, and
// records committed after keep both.
TEST_F(TuneDbTest, VersionOneDatabasesMigrate) {
  write_version_one_db(path("old.db"));
  expect_version_one_records(*open_sqlite_db_read_only(path("old.db")));
  {
    sqlite3* raw = nullptr;
    ASSERT_EQ(sqlite3_open(path("old.db").c_str(), &raw), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(raw, "SELECT row_length FROM records", nullptr, nullptr, nullptr), SQLITE_ERROR)
        << "the read-only open changed the file";
    sqlite3_close(raw);
  }
  auto db = open_sqlite_db(path("old.db"));
  expect_version_one_records(*db);
  auto all = db->all();
  EXPECT_DOUBLE_EQ(all[0].median_us, 5.0);
  TuningRecord r = record("nvrtc", 4.0);
  r.kernel_hash = "00000000deadbeef";
  r.params = "cache=4 len=4096 rows=1";
  r.row_length = 4096;
  r.median_us = 1.0;
  EXPECT_EQ(db->commit({r}), 1u);
  auto reopened = open_sqlite_db(path("old.db"));
  EXPECT_EQ(reopened->best({"abc123", "f32", "n<=2^12", "sm_90"})->kernel_hash, "00000000deadbeef");
  EXPECT_EQ(reopened->best_generic({"abc123", "f32", "n<=2^12", "sm_90"})->id, all[0].id);
}

TEST_P(StoreTest, RecordsSurviveReopeningWithEveryField) {
  TuningRecord r = record("nvrtc", 2.5);
  r.error = "it's \"quoted\"\nand multi-line";
  r.verify_error = 0.25;
  r.bandwidth_gbps = 4100.5;
  r.kernel_hash = "0123456789abcdef";
  r.row_length = 16384;
  { open_db("b.db")->commit({r}); }
  auto all = open_db("b.db")->all();
  ASSERT_EQ(all.size(), 1u);
  nlohmann::json a = all[0], b = r;
  EXPECT_EQ(a, b);
}

TEST_P(StoreTest, MergeAndImportAreIdempotent) {
  auto a = open_db("a.db");
  auto b = open_db("b.db");
  a->commit({record("nvrtc", 1), record("nvrtc", 2)});
  b->commit({record("halide", 3)});
  EXPECT_EQ(b->merge(*a), 2u);
  EXPECT_EQ(b->merge(*a), 0u);
  EXPECT_EQ(b->size(), 3u);

  EXPECT_EQ(export_jsonl(*b, path("out.jsonl")), 3u);
  auto c = open_db("c.db");
  EXPECT_EQ(import_jsonl(*c, path("out.jsonl")), 3u);
  EXPECT_EQ(import_jsonl(*c, path("out.jsonl")), 0u);
  EXPECT_EQ(c->size(), 3u);
}

// A name ending in .gz exports gzip; import tells compressed from plain by
// the bytes, whatever the name.
TEST_P(StoreTest, GzipExportImportsAsThePlainFileDoes) {
  auto a = open_db("a.db");
  a->commit({record("nvrtc", 1), record("halide", 2), record("nvrtc", 3)});
  ASSERT_EQ(export_jsonl(*a, path("out.jsonl.gz")), 3u);
  ASSERT_EQ(export_jsonl(*a, path("out.jsonl")), 3u);
  std::ifstream gz(path("out.jsonl.gz"), std::ios::binary);
  char magic[2] = {0, 0};
  gz.read(magic, 2);
  EXPECT_EQ(static_cast<unsigned char>(magic[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(magic[1]), 0x8b);
  EXPECT_LT(std::filesystem::file_size(path("out.jsonl.gz")), std::filesystem::file_size(path("out.jsonl")));
  std::filesystem::copy_file(path("out.jsonl.gz"), path("renamed.jsonl"));
  for (const char* name : {"out.jsonl.gz", "renamed.jsonl"}) {
    auto b = open_db(std::string(name) + ".db");
    EXPECT_EQ(import_jsonl(*b, path(name)), 3u) << name;
    std::vector<std::string> got, want;
    for (const auto& r : b->all()) got.push_back(r.id + r.backend + std::to_string(r.median_us));
    for (const auto& r : a->all()) want.push_back(r.id + r.backend + std::to_string(r.median_us));
    std::sort(got.begin(), got.end());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(got, want) << name;
  }
}

// A .gz cut short is a message naming the file, and nothing is imported.
TEST_P(StoreTest, TruncatedGzipIsAUserErrorAndWritesNothing) {
  auto a = open_db("a.db");
  std::vector<TuningRecord> many;
  for (int i = 0; i < 200; ++i) many.push_back(record("nvrtc", i));
  a->commit(many);
  ASSERT_EQ(export_jsonl(*a, path("out.jsonl.gz")), 200u);
  std::filesystem::resize_file(path("out.jsonl.gz"), std::filesystem::file_size(path("out.jsonl.gz")) / 2);
  auto b = open_db("b.db");
  try {
    import_jsonl(*b, path("out.jsonl.gz"));
    FAIL() << "a truncated file imported";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("out.jsonl.gz"), std::string::npos) << e.what();
  }
  EXPECT_EQ(b->size(), 0u);
}

// A NaN mismatch's verification ratio is +inf, which JSON writes as null:
// an export must import again, every record intact.
TEST_P(StoreTest, InfiniteVerifyErrorsSurviveExportAndImport) {
  auto a = open_db("a.db");
  TuningRecord bad = record("nvrtc", 0, RecordStatus::kVerifyError);
  bad.verify_error = std::numeric_limits<double>::infinity();
  a->commit({bad, record("nvrtc", 1)});
  ASSERT_EQ(export_jsonl(*a, path("out.jsonl")), 2u);
  auto b = open_db("b.db");
  EXPECT_EQ(import_jsonl(*b, path("out.jsonl")), 2u);
  for (const auto& r : b->all()) {
    if (r.id == bad.id) {
      EXPECT_TRUE(std::isinf(r.verify_error));
    }
  }
}

// Row-op records from before row lengths were bucketed get them on import.
TEST_P(StoreTest, ImportAddsTheRowLengthToOldRowRecords) {
  TuningRecord rows = record("nvrtc", 5);
  rows.pipeline_text = "layout rows; dtype f32; input x; out = x";
  rows.shape = "8192x4096";
  rows.shape_bucket = "n<=2^25";
  TuningRecord flat = record("nvrtc", 6);
  {
    std::ofstream out(path("old.jsonl"));
    out << nlohmann::json(rows).dump() << "\n" << nlohmann::json(flat).dump() << "\n";
  }
  auto db = open_db("new.db");
  EXPECT_EQ(import_jsonl(*db, path("old.jsonl")), 2u);
  for (const auto& r : db->all())
    EXPECT_EQ(r.shape_bucket, r.id == rows.id ? "n<=2^25 cols<=2^12" : "n<=2^12") << r.shape;
  // Up-to-date and malformed records stay as they are.
  rows.shape_bucket = "n<=2^25 cols<=2^12";
  EXPECT_FALSE(upgrade_record(&rows));
  rows.shape_bucket = "n<=2^25";
  rows.shape = "8192x";
  EXPECT_FALSE(upgrade_record(&rows));
  EXPECT_EQ(rows.shape_bucket, "n<=2^25");
  rows.shape = "3000x3001";
  EXPECT_TRUE(upgrade_record(&rows));
  EXPECT_EQ(rows.shape_bucket, "n<=2^24 cols<=2^12");
}

TEST_P(StoreTest, BadImportLineNamesTheLineAndWritesNothing) {
  auto db = open_db("a.db");
  db->commit({record("nvrtc", 1)});
  {
    std::ofstream f(path("bad.jsonl"));
    f << nlohmann::json(record("nvrtc", 2)).dump() << "\n";
    f << "{\"id\": \"nothex\"}\n";
  }
  try {
    import_jsonl(*db, path("bad.jsonl"));
    FAIL() << "bad file imported";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.jsonl:2"), std::string::npos) << e.what();
  }
  EXPECT_EQ(db->size(), 1u);
}

TEST_F(TuneDbTest, CorruptFileIsAUserErrorAndIsLeftAlone) {
  {
    std::ofstream f(path("junk.db"));
    f << "this is not a database, just some text that is long enough to have a header..........................."
         "................................................................................................";
  }
  const auto before = std::filesystem::file_size(path("junk.db"));
  EXPECT_THROW(open_sqlite_db(path("junk.db")), UserError);
  EXPECT_EQ(std::filesystem::file_size(path("junk.db")), before);
}

TEST_F(TuneDbTest, ForeignSqliteFileIsRejectedUntouched) {
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path("other.db").c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "CREATE TABLE invoices (id INTEGER); INSERT INTO invoices VALUES (7);", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  try {
    open_sqlite_db(path("other.db"));
    FAIL() << "foreign database accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("not a fusekit database"), std::string::npos) << e.what();
  }
  ASSERT_EQ(sqlite3_open(path("other.db").c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(raw, "SELECT COUNT(*) FROM sqlite_master WHERE name='records'", -1, &s, nullptr), SQLITE_OK);
  EXPECT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(s, 0), 0);  // no fusekit table was added
  sqlite3_finalize(s);
  sqlite3_close(raw);
}

// kernel_hash is optional (exports from before fusekit kept it), but a string.
TEST_F(TuneDbTest, KernelHashIsOptionalInJson) {
  TuningRecord r = record("nvrtc", 2.0);
  r.kernel_hash = "0123456789abcdef";
  nlohmann::json full = r;
  EXPECT_EQ(full.get<TuningRecord>().kernel_hash, "0123456789abcdef");
  full.erase("kernel_hash");
  EXPECT_EQ(full.get<TuningRecord>().kernel_hash, "");
  full["kernel_hash"] = 7;
  EXPECT_THROW(full.get<TuningRecord>(), UserError);
}

// row_length is optional too: an export from before it names the length in
// params only (a row schedule's len; never a GEMM's plan), else an integer.
TEST_F(TuneDbTest, RowLengthIsOptionalInJson) {
  TuningRecord r = record("nvrtc", 2.0);
  r.params = "cache=4 len=4097 rows=1";
  r.row_length = 4097;
  nlohmann::json full = r;
  EXPECT_EQ(full.get<TuningRecord>().row_length, 4097);
  full.erase("row_length");
  EXPECT_EQ(full.get<TuningRecord>().row_length, 4097);
  full["params"] = "cache=4 rows=1";
  EXPECT_EQ(full.get<TuningRecord>().row_length, 0);
  full["backend"] = "cublaslt";
  full["params"] = "rank=0 len=12";
  EXPECT_EQ(full.get<TuningRecord>().row_length, 0);
  for (nlohmann::json bad : {nlohmann::json("4097"), nlohmann::json(40.5)}) {
    full["row_length"] = bad;
    EXPECT_THROW(full.get<TuningRecord>(), UserError) << bad;
  }
}

TEST(TuningRecord, FromJsonNamesMissingFields) {
  nlohmann::json j = nlohmann::json::object();
  j["id"] = "0123456789abcdef0123456789abcdef";
  try {
    j.get<TuningRecord>();
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("lacks field"), std::string::npos);
  }
  EXPECT_NE(new_record_id(), new_record_id());
  EXPECT_EQ(new_record_id().size(), 32u);
}

}  // namespace
}  // namespace fusekit
