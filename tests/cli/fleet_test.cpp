// The fleet commands end to end on the real binary: sharded tunes cover an
// unsharded one exactly, reruns skip what is held, and a PostgreSQL store
// (a throwaway server) works like a SQLite file, sync between them included.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "tests/cli/run_command.h"
#include "testing/pg_server.h"
#include "tests/support/temp_dir.h"
#include "tunedb/tune_db.h"

namespace fusekit {
namespace {

testing::CommandResult fusekit_cli(const std::string& args) {
  return testing::run_command(std::string(FUSEKIT_BINARY) + " " + args);
}

class Fleet : public testing::TempDirTest {};

// A small part of the catalog: two ops, two dtypes, three sizes, both
// backends (24 units).
constexpr const char* kTune =
    "tune --model --arch sm_90 --pattern relu_add,silu_mul --dtype f32,f16 --sizes 4096,65536,1048576 --budget 2 ";
// Fewer units for the checks that only compare two ways of naming a shard.
constexpr const char* kSmallTune =
    "tune --model --arch sm_90 --pattern relu_add,silu_mul --dtype f32,f16 --sizes 4096,65536 --budget 1 "
    "--backend nvrtc ";

using Row = std::tuple<std::string, std::string, std::string, std::string, std::string, std::string, std::string>;

// The (key, schedule) rows of a store: what was tuned, not the record ids.
std::multiset<Row> rows_of(const std::string& db) {
  std::multiset<Row> out;
  for (const auto& r : open_tune_db(db, OpenMode::kMustExist)->all())
    out.insert({r.pipeline_hash, r.dtype, r.shape_bucket, r.arch, r.backend, r.shape, r.params});
  return out;
}

TEST_F(Fleet, FourShardsCoverAnUnshardedTuneExactlyOnce) {
  ASSERT_EQ(fusekit_cli(std::string(kTune) + "--db " + path("whole.db")).code, 0);
  for (int i = 0; i < 4; ++i) {
    auto r = fusekit_cli(std::string(kTune) + "--shard " + std::to_string(i) + "/4 --db " + path("shards.db"));
    ASSERT_EQ(r.code, 0) << r.out;
  }
  const auto whole = rows_of(path("whole.db"));
  ASSERT_GT(whole.size(), 20u);
  EXPECT_EQ(rows_of(path("shards.db")), whole);
  // Each shard alone holds a part: none is empty, none is everything.
  auto r = fusekit_cli(std::string(kTune) + "--shard 2/4 --db " + path("one.db"));
  ASSERT_EQ(r.code, 0) << r.out;
  const size_t part = rows_of(path("one.db")).size();
  EXPECT_GT(part, 0u);
  EXPECT_LT(part, whole.size());
}

// SLURM_ARRAY_TASK_ID / JOB_COMPLETION_INDEX pick the same shard --shard does.
TEST_F(Fleet, SchedulerIndicesPickTheShard) {
  ASSERT_EQ(fusekit_cli(std::string(kSmallTune) + "--shard 1/3 --db " + path("flag.db")).code, 0);
  ASSERT_EQ(testing::run_command("SLURM_ARRAY_TASK_ID=5 SLURM_ARRAY_TASK_MIN=4 SLURM_ARRAY_TASK_COUNT=3 " +
                                 std::string(FUSEKIT_BINARY) + " " + kSmallTune + "--db " + path("slurm.db"))
                .code,
            0);
  ASSERT_EQ(testing::run_command("JOB_COMPLETION_INDEX=1 " + std::string(FUSEKIT_BINARY) + " " + kSmallTune +
                                 "--shard-count 3 --db " + path("k8s.db"))
                .code,
            0);
  EXPECT_EQ(rows_of(path("slurm.db")), rows_of(path("flag.db")));
  EXPECT_EQ(rows_of(path("k8s.db")), rows_of(path("flag.db")));
}

// A rerun measures nothing the store holds; --retune tunes it again.
TEST_F(Fleet, RerunSkipsHeldWorkUnlessRetune) {
  const std::string args = "tune --model --arch sm_90 --pattern relu_add --sizes 4096,65536 --budget 2 --backend nvrtc --db " +
                           path("a.db");
  ASSERT_EQ(fusekit_cli(args).code, 0);
  const size_t first = rows_of(path("a.db")).size();
  auto again = fusekit_cli(args);
  ASSERT_EQ(again.code, 0);
  EXPECT_NE(again.out.find("0 records written"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("2 shapes x backends held already"), std::string::npos) << again.out;
  EXPECT_EQ(rows_of(path("a.db")).size(), first);
  // A size not tuned yet is added beside the held ones.
  ASSERT_EQ(fusekit_cli("tune --model --arch sm_90 --pattern relu_add --sizes 4096,65536,1048576 --budget 2 "
                        "--backend nvrtc --db " + path("a.db")).code, 0);
  EXPECT_GT(rows_of(path("a.db")).size(), first);
  const size_t second = rows_of(path("a.db")).size();
  ASSERT_EQ(fusekit_cli(args + " --retune").code, 0);
  EXPECT_EQ(rows_of(path("a.db")).size(), second + first);
}

TEST_F(Fleet, BadShardsAreClearMessages) {
  const std::pair<std::string, std::string> cases[] = {
      {"tune --arch sm_90 --shard 4/4", "malformed --shard '4/4'"},
      {"tune --arch sm_90 --shard x", "malformed --shard 'x'"},
      {"tune --arch sm_90 --shard-count 3", "needs JOB_COMPLETION_INDEX"},
      {"db sync " + path("a.db"), "db sync needs two stores"},
  };
  for (const auto& [args, message] : cases) {
    auto r = fusekit_cli(args + " --db " + path("t.db"));
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_NE(r.out.find(message), std::string::npos) << args << "\n" << r.out;
  }
  EXPECT_FALSE(std::filesystem::exists(path("t.db")));
}

// The same commands against a server: tune, show, sync with a file; bad
// logins and other schema versions fail with one masked message.
TEST_F(Fleet, PostgresStoreWorksLikeAFile) {
  PgServer& pg = shared_pg_server();
  if (!pg.available()) GTEST_SKIP() << pg.skip_reason();
  const std::string uri = pg.create_database("fleet_" + std::to_string(getpid()));
  const std::string small = "tune --model --arch sm_90 --pattern relu_add --sizes 4096,65536 --budget 2 ";
  auto r = fusekit_cli(small + "--db " + uri);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find(PgServer::kPassword), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fusekit:***@"), std::string::npos) << r.out;
  const size_t held = rows_of(uri).size();
  ASSERT_GT(held, 0u);
  r = fusekit_cli("db show --db " + uri);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(std::to_string(held) + " records"), std::string::npos) << r.out;
  ASSERT_EQ(fusekit_cli(small + "--sizes 1048576 --db " + path("local.db")).code, 0);
  r = fusekit_cli("db sync " + uri + " " + path("local.db"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find(PgServer::kPassword), std::string::npos) << r.out;
  EXPECT_EQ(rows_of(uri), rows_of(path("local.db")));
  r = fusekit_cli("db sync " + uri + " " + path("local.db"));
  EXPECT_NE(r.out.find("0 copied to the second, 0 to the first"), std::string::npos) << r.out;

  const std::string wrong = pg.uri("fleet_" + std::to_string(getpid()), "not-the-pw-9");
  r = fusekit_cli("db show --db " + wrong);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("password authentication failed"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("not-the-pw-9"), std::string::npos) << r.out;
  r = fusekit_cli(small + "--db postgresql://fusekit:pw@127.0.0.1:1/none?connect_timeout=5");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("cannot connect to PostgreSQL at postgresql://fusekit:***@127.0.0.1:1/none"),
            std::string::npos) << r.out;
}

// `fusekit build` ranks GEMM records by their cuBLASLt version: the H200's
// record (cuBLASLt 130100) against a faster copy from another cuBLASLt. With
// --target-cublaslt 130100 the H200's wins and the selection line names the
// other with the reason; with the other's version as the target, it wins.
TEST_F(Fleet, BuildPrefersGemmRecordsOfTheTargetCublasAndSaysWhy) {
  const std::string real = std::string(FUSEKIT_SOURCE_DIR) + "/tests/data/gemm_record_8192.jsonl";
  std::ifstream in(real);
  nlohmann::json rec = nlohmann::json::parse(in);
  const std::string real_id = rec["id"];
  nlohmann::json other = rec;
  other["id"] = "0123456789abcdef0123456789abcdef";
  other["cuda_version"] = "13.0 cublasLt 120900";
  std::string params = other["params"];
  params.replace(params.find("cublaslt=130100"), 15, "cublaslt=120900");
  other["params"] = params;
  other["median_us"] = 2000.0;  // faster than the H200's 2428 us
  std::ofstream(path("other.jsonl")) << other.dump() << "\n";
  const std::string db = " --db " + path("gemm.db");
  ASSERT_EQ(fusekit_cli("db import" + db + " " + real + " " + path("other.jsonl")).code, 0);
  const std::string build = "build --arch sm_90 --gemm 'llama_gate_up:out = silu(acc) * acc2' --target-gpu 'NVIDIA H200'" + db;

  auto r = fusekit_cli(build + " --out " + path("pkg") + " --target-cublaslt 130100");
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string head = "fusekit: selected llama_gate_up f16 (GEMM) sm_90 m<=2^13 n=11008 k=4096: cublaslt+nvrtc '";
  ASSERT_NE(r.out.find(head), std::string::npos) << r.out;
  const std::string line = r.out.substr(r.out.find(head), r.out.find('\n', r.out.find(head)) - r.out.find(head));
  EXPECT_NE(line.find("cublaslt=130100"), std::string::npos) << line;
  EXPECT_NE(line.find("2428.12 us (ok, record " + real_id.substr(0, 8)), std::string::npos) << line;
  EXPECT_NE(line.find("passed over 1: 1 stale: "), std::string::npos) << line;
  EXPECT_NE(line.find("cuBLASLt 120900 (not 130100)"), std::string::npos) << line;
  EXPECT_NE(line.find("[01234567]"), std::string::npos) << line;
  std::ifstream manifest(path("pkg") + "/share/fusekit_kernels/manifest.json");
  EXPECT_EQ(nlohmann::json::parse(manifest)["gemms"][0]["record_id"], real_id);

  r = fusekit_cli(build + " --out " + path("pkg2") + " --target-cublaslt 120900");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("2000.00 us (ok, record 01234567"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cuBLASLt 130100 (not 120900)"), std::string::npos) << r.out;

  r = fusekit_cli(build + " --out " + path("pkg3") + " --target-cublaslt 13.1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--target-cublaslt '13.1' is not a cuBLASLt version number"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(path("pkg3")));
}

}  // namespace
}  // namespace fusekit
