// The fleet bars, measured on the stores themselves (docs/fleet.md):
//
//   fleet_bench writers [--writers 16] [--records 500]
//       W processes x R records into one PostgreSQL database (a throwaway
//       server, or --pg URI) and into one SQLite file at once, one commit a
//       record: counts lost, duplicated and failed, then PostgreSQL's
//       amcheck and SQLite's integrity_check; then a writer killed with
//       SIGKILL mid-run loses at most its open transaction.
//   fleet_bench sync [--records 100000]
//       two stores of N records each (half of them shared) synced both
//       ways, for SQLite-SQLite, PostgreSQL-SQLite and PostgreSQL-PostgreSQL.
//
// Exits 1 when a bar is missed.
#include <libpq-fe.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "testing/pg_server.h"
#include "tunedb/store_sync.h"
#include "tunedb/tune_db.h"

namespace fusekit {
namespace {

// This process's user + system CPU seconds (the servers' are not in it).
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

TuningRecord sample(int writer, int i) {
  TuningRecord r;
  r.id = new_record_id();
  r.pipeline_hash = "bench" + std::to_string(i % 7);
  r.pipeline_text = "layout flat; dtype f32; input x; out = x";
  r.pattern = "relu_add";
  r.dtype = "f32";
  r.shape = std::to_string(4096 << (i % 5));
  r.shape_bucket = "n<=2^" + std::to_string(12 + i % 5);
  r.arch = "sm_90";
  r.gpu_name = "NVIDIA H200";
  r.sm_count = 132;
  r.host = "writer" + std::to_string(writer);
  r.backend = i % 2 ? "nvrtc" : "halide";
  r.params = "threads=" + std::to_string(64 << (i % 4));
  r.median_us = 1.0 + i;
  r.samples = 100;
  r.timestamp = utc_timestamp();
  return r;
}

// W writers at once into `db`; each writes the ids it committed to a file.
// Returns the number of writers that failed.
int run_writers(const std::string& db, int writers, int records, const std::string& dir) {
  open_tune_db(db, OpenMode::kCreate);  // the schema exists before the race
  std::vector<pid_t> pids;
  for (int w = 0; w < writers; ++w) {
    const pid_t pid = fork();
    if (pid == 0) {
      int rc = 0;
      try {
        std::ofstream ids(dir + "/ids." + std::to_string(w));
        auto store = open_tune_db(db, OpenMode::kCreate);
        for (int i = 0; i < records; ++i) {
          TuningRecord r = sample(w, i);
          store->commit({r});
          ids << r.id << "\n";
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "writer %d: %s\n", w, e.what());
        rc = 1;
      }
      _exit(rc);
    }
    pids.push_back(pid);
  }
  int failed = 0;
  for (pid_t p : pids) {
    int status = 0;
    waitpid(p, &status, 0);
    failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  return failed;
}

// Every id the writers say they committed, and how often each is stored.
bool check_writers(const std::string& name, const std::string& db, int writers, int records, const std::string& dir,
                   int failed, double secs) {
  std::map<std::string, int> stored;
  for (const auto& r : open_tune_db(db, OpenMode::kMustExist)->all()) ++stored[r.id];
  size_t committed = 0, lost = 0, duplicated = 0;
  for (int w = 0; w < writers; ++w) {
    std::ifstream ids(dir + "/ids." + std::to_string(w));
    for (std::string id; std::getline(ids, id);) {
      ++committed;
      lost += stored.count(id) == 0;
    }
  }
  for (const auto& [id, n] : stored) duplicated += n > 1;
  const bool ok = failed == 0 && lost == 0 && duplicated == 0 &&
                  committed == static_cast<size_t>(writers) * static_cast<size_t>(records) && stored.size() == committed;
  std::printf("%-10s %d writers x %d records: %zu committed, %zu stored, %zu lost, %zu duplicated, %d failed writers, "
              "%.1fs (%.0f commits/s)\n",
              name.c_str(), writers, records, committed, stored.size(), lost, duplicated, failed, secs,
              static_cast<double>(committed) / secs);
  return ok;
}

bool sqlite_integrity(const std::string& path) {
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_stmt* s = nullptr;
  sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, nullptr);
  std::string result = sqlite3_step(s) == SQLITE_ROW ? reinterpret_cast<const char*>(sqlite3_column_text(s, 0)) : "?";
  sqlite3_finalize(s);
  sqlite3_close(db);
  std::printf("sqlite     PRAGMA integrity_check: %s\n", result.c_str());
  return result == "ok";
}

bool pg_amcheck(const std::string& uri) {
  PGconn* c = PQconnectdb(uri.c_str());
  bool ok = PQstatus(c) == CONNECTION_OK;
  std::string detail;
  for (const char* sql : {"CREATE EXTENSION IF NOT EXISTS amcheck",
                          "SELECT bt_index_check('fusekit_records_pkey', true)",
                          "SELECT bt_index_check('fusekit_records_key', true)"}) {
    PGresult* r = ok ? PQexec(c, sql) : nullptr;
    if (!r || (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)) {
      ok = false;
      detail = PQerrorMessage(c);
    }
    PQclear(r);
  }
  PQfinish(c);
  std::printf("postgres   amcheck bt_index_check (primary key, key index, heap all indexed): %s%s\n",
              ok ? "clean" : "FAILED ", detail.c_str());
  return ok;
}

// A writer committing batches of 10 killed with SIGKILL after a while:
// the store holds every batch it reported committed, and at most one more.
bool killed_writer(const std::string& name, const std::string& db, const std::string& dir) {
  open_tune_db(db, OpenMode::kCreate);
  const size_t before = open_tune_db(db, OpenMode::kMustExist)->size();
  const std::string log = dir + "/killed.log";
  const pid_t pid = fork();
  if (pid == 0) {
    try {
      auto store = open_tune_db(db, OpenMode::kCreate);
      for (int b = 0;; ++b) {
        std::vector<TuningRecord> batch;
        for (int i = 0; i < 10; ++i) batch.push_back(sample(99, b * 10 + i));
        store->commit(batch);
        std::ofstream(log, std::ios::app) << "1\n" << std::flush;
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "killed writer: %s\n", e.what());
    }
    _exit(1);
  }
  usleep(1500 * 1000);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  size_t reported = 0;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) ++reported;
  std::filesystem::remove(log);
  const size_t stored = open_tune_db(db, OpenMode::kMustExist)->size() - before;
  const bool ok = stored == reported * 10 || stored == (reported + 1) * 10;
  std::printf("%-10s writer killed mid-run: %zu batches of 10 reported committed, %zu records stored (%s)\n",
              name.c_str(), reported, stored, ok ? "at most the open batch lost" : "FAILED");
  return ok;
}

std::vector<TuningRecord> many(int n, int writer) {
  std::vector<TuningRecord> out;
  out.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) out.push_back(sample(writer, i));
  return out;
}

// Two stores of n records each, n/2 of them the same, synced both ways.
bool time_sync(const std::string& name, const std::string& a_db, const std::string& b_db, int n) {
  const std::vector<TuningRecord> shared = many(n / 2, 1);
  std::vector<TuningRecord> a = many(n - n / 2, 2), b = many(n - n / 2, 3);
  a.insert(a.end(), shared.begin(), shared.end());
  b.insert(b.end(), shared.begin(), shared.end());
  auto sa = open_tune_db(a_db, OpenMode::kCreate);
  auto sb = open_tune_db(b_db, OpenMode::kCreate);
  sa->commit(a);
  sb->commit(b);
  const double cpu = cpu_seconds();
  const auto t = std::chrono::steady_clock::now();
  const SyncCounts c = sync_stores(*sa, *sb);
  const double secs = seconds_since(t), cpu1 = cpu_seconds() - cpu;
  const auto t2 = std::chrono::steady_clock::now();
  const SyncCounts again = sync_stores(*sa, *sb);
  const double secs2 = seconds_since(t2);
  const size_t want = static_cast<size_t>(n) + static_cast<size_t>(n - n / 2);
  const bool ok = c.a_after == want && c.b_after == want && again.a_to_b + again.b_to_a == 0 && secs < 30;
  std::printf("%-21s %d + %d records (%d shared): %zu and %zu copied in %.1fs (%.1fs CPU here); both hold %zu; "
              "again: %zu copied in %.1fs%s\n",
              name.c_str(), n, n, n / 2, c.a_to_b, c.b_to_a, secs, cpu1, c.a_after, again.a_to_b + again.b_to_a, secs2,
              ok ? "" : "  FAILED");
  return ok;
}

int arg(int argc, char** argv, const char* name, int fallback) {
  for (int i = 2; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  return fallback;
}

int run(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "writers" && mode != "sync") {
    std::fprintf(stderr, "usage: fleet_bench writers [--writers 16] [--records 500] | sync [--records 100000]\n");
    return 2;
  }
  PgServer pg;
  if (!pg.available()) {
    std::fprintf(stderr, "fleet_bench: no PostgreSQL server: %s\n", pg.skip_reason().c_str());
    return 2;
  }
  char tmpl[] = "/tmp/fusekit_fleet_bench_XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  bool ok = true;
  if (mode == "writers") {
    const int writers = arg(argc, argv, "--writers", 16), records = arg(argc, argv, "--records", 500);
    const std::string uri = pg.create_database("writers");
    auto t = std::chrono::steady_clock::now();
    int failed = run_writers(uri, writers, records, dir);
    ok &= check_writers("postgres", uri, writers, records, dir, failed, seconds_since(t));
    ok &= pg_amcheck(uri);
    const std::string file = dir + "/writers.db";
    t = std::chrono::steady_clock::now();
    failed = run_writers(file, writers, records, dir);
    ok &= check_writers("sqlite", file, writers, records, dir, failed, seconds_since(t));
    ok &= sqlite_integrity(file);
    ok &= killed_writer("postgres", uri, dir);
    ok &= killed_writer("sqlite", file, dir);
    ok &= sqlite_integrity(file);
  } else {
    const int n = arg(argc, argv, "--records", 100000);
    ok &= time_sync("sqlite <-> sqlite", dir + "/a.db", dir + "/b.db", n);
    ok &= time_sync("postgres <-> sqlite", pg.create_database("sync_a"), dir + "/c.db", n);
    ok &= time_sync("postgres <-> postgres", pg.create_database("sync_b"), pg.create_database("sync_c"), n);
  }
  std::filesystem::remove_all(dir);
  std::printf("%s\n", ok ? "all bars met" : "BARS MISSED");
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace fusekit

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each result as it comes, also into a file
  try {
    return fusekit::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fleet_bench: %s\n", e.what());
    return 2;
  }
}
