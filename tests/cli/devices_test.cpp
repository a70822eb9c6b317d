// `fusekit tune --devices` end to end on the real binary over fake GPUs
// (FUSEKIT_TEST_FAKE_GPUS: measuring workers without a device, whose times
// follow from the kernel image), and its sharding on its own.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include "cli/tune_devices.h"
#include "common/errors.h"
#include "tests/cli/run_command.h"
#include "tests/support/temp_dir.h"
#include "tunedb/tune_db.h"

namespace fusekit {
namespace {

TEST(TuneDevices, SubShardsSplitTheHostShardExactly) {
  std::mt19937_64 rng(3);
  for (const ShardSpec host : {ShardSpec{0, 1}, ShardSpec{1, 3}}) {
    const std::vector<ShardSpec> parts = sub_shards(host, 4);
    for (int u = 0; u < 2000; ++u) {
      const std::string hash = std::to_string(rng());
      int in = 0;
      for (const ShardSpec& p : parts) in += in_shard(p, hash, "f32", "4096", "sm_90", "nvrtc");
      EXPECT_EQ(in, in_shard(host, hash, "f32", "4096", "sm_90", "nvrtc") ? 1 : 0) << hash;
    }
  }
}

TEST(TuneDevices, ParsesDevicesAndDropsThePerChildOptions) {
  EXPECT_EQ(parse_devices("0,2", nullptr), (std::vector<int>{0, 2}));
  EXPECT_EQ(parse_devices("all", [] { return 3; }), (std::vector<int>{0, 1, 2}));
  EXPECT_THROW(parse_devices("0,0", nullptr), UserError);
  EXPECT_THROW(parse_devices("one", nullptr), UserError);
  EXPECT_THROW(parse_devices("all", [] { return 0; }), UserError);
  EXPECT_EQ(child_tune_args({"--arch", "sm_90", "--devices", "all", "--shard=1/2", "--budget", "3"}),
            (std::vector<std::string>{"--arch", "sm_90", "--budget", "3"}));
}

class FakeGpus : public testing::TempDirTest {
 protected:
  testing::CommandResult tune(const std::string& env, const std::string& args, const std::string& db,
                              const std::string& what = "--pattern relu_add,silu_mul --sizes 4096,65536,1048576") const {
    return testing::run_command(env + " " + FUSEKIT_BINARY + " tune --arch sm_90 --dtype f32 " + what +
                                " --budget 3 --hint-twins 0 --backend nvrtc --db " + db + " " + args);
  }
};

using Row = std::tuple<std::string, std::string, std::string, std::string, std::string>;

// Every (key, schedule) row of a store and how often it is there, with its
// median time.
std::map<Row, std::pair<int, double>> rows_of(const std::string& db) {
  std::map<Row, std::pair<int, double>> out;
  for (const auto& r : open_tune_db(db, OpenMode::kMustExist)->all()) {
    auto& [n, us] = out[{r.pipeline_hash, r.dtype, r.shape, r.backend, r.params}];
    ++n;
    us = r.median_us;
  }
  return out;
}

std::set<std::string> shapes_of(const std::map<Row, std::pair<int, double>>& rows) {
  std::set<std::string> out;
  for (const auto& [row, n] : rows) out.insert(std::get<0>(row) + " " + std::get<2>(row));
  return out;
}

TEST_F(FakeGpus, TwoGpusRecordEveryScheduleOnceAndCoverEveryShape) {
  const auto r = tune("FUSEKIT_TEST_FAKE_GPUS=2", "--devices all", path("two.db"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("tuning on 2 GPUs in 4 parts"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[gpu 1, part"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("all GPUs:"), std::string::npos) << r.out;
  const auto rows = rows_of(path("two.db"));
  for (const auto& [row, n] : rows) EXPECT_EQ(n.first, 1) << std::get<2>(row) << " " << std::get<4>(row);
  EXPECT_EQ(shapes_of(rows).size(), 6u);  // two ops x three sizes
}

TEST_F(FakeGpus, ALostGpusWorkIsRedoneOnAnother) {
  const auto r = tune("FUSEKIT_TEST_FAKE_GPUS=2 FUSEKIT_TEST_FAKE_DEAD_DEVICE=1", "--devices 0,1", path("lost.db"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("GPU 1 lost"), std::string::npos) << r.out;
  const auto rows = rows_of(path("lost.db"));
  for (const auto& [row, n] : rows) EXPECT_EQ(n.first, 1) << std::get<2>(row) << " " << std::get<4>(row);
  EXPECT_EQ(shapes_of(rows).size(), 6u);
  // Resumed, not repeated: a second run finds everything held.
  const auto again = tune("FUSEKIT_TEST_FAKE_GPUS=2", "--devices all", path("lost.db"));
  ASSERT_EQ(again.code, 0) << again.out;
  EXPECT_EQ(rows_of(path("lost.db")), rows);
}

TEST_F(FakeGpus, OneGpuGivesThePlainTunesRecords) {
  const auto plain = tune("FUSEKIT_TEST_FAKE_GPUS=1", "", path("plain.db"));
  ASSERT_EQ(plain.code, 0) << plain.out;
  const auto all = tune("FUSEKIT_TEST_FAKE_GPUS=1", "--devices all", path("all.db"));
  ASSERT_EQ(all.code, 0) << all.out;
  EXPECT_EQ(rows_of(path("all.db")), rows_of(path("plain.db")));
}

TEST_F(FakeGpus, ATuneThatFindsNoUsableKernelNamesEachAndExitsOne) {
  const auto r = tune("FUSEKIT_TEST_FAKE_GPUS=1 FUSEKIT_TEST_FAKE_VERIFY=fail", "", path("none.db"),
                      "--pattern relu_add --sizes 4096");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("1 requested op/dtype/size ended without a usable kernel"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("relu_add f32 4096: 3 verify_error; nearest miss: nvrtc"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("element 0: got 0, reference 1 (fake)"), std::string::npos) << r.out;
}

TEST_F(FakeGpus, RefusesTheModelAndAPlan) {
  auto r = tune("FUSEKIT_TEST_FAKE_GPUS=1", "--devices all --model", path("m.db"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--model ranks without one"), std::string::npos) << r.out;
  r = tune("FUSEKIT_TEST_FAKE_GPUS=1", "--devices 0,x", path("m.db"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("malformed --devices '0,x'"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace fusekit
