// The modeled path pinned: a small NVRTC tune without a GPU must write the
// same records (key, schedule, status, kernel hash, estimate) as the code of
// tests/data/golden_modeled_records.txt did, so refactors of the tuner, the
// templates or the printers cannot change what users get unnoticed. An
// intended change regenerates the file from the `.actual` one written here.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/cli/run_command.h"

namespace {

std::string fusekit(const std::string& args) {
  auto r = fusekit::testing::run_command(std::string(FUSEKIT_BINARY) + " " + args);
  EXPECT_EQ(r.code, 0) << args << "\n" << r.out;
  return r.out;
}

// One line per record, sorted: what a user's database would hold, minus ids and clocks.
std::string digest(const std::string& jsonl) {
  std::ifstream in(jsonl);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    char us[32];
    std::snprintf(us, sizeof us, "%.6g", j["median_us"].get<double>());
    lines.push_back(j["pattern"].get<std::string>() + " " + j["dtype"].get<std::string>() + " " +
                    j["shape"].get<std::string>() + " " + j["shape_bucket"].get<std::string>() + " " +
                    j["backend"].get<std::string>() + " [" + j["params"].get<std::string>() + "] " +
                    j["status"].get<std::string>() + " " + j["kernel_hash"].get<std::string>() + " " + us);
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

TEST(ModeledRecords, SmallTuneWritesThePinnedRecords) {
  const auto dir = std::filesystem::temp_directory_path() / ("fusekit_modeled_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string db = (dir / "t.db").string(), jsonl = (dir / "t.jsonl").string();
  const std::string common = " --arch sm_90 --backend nvrtc --dtype f32,bf16 --budget 6 --seed 3 --db " + db;
  fusekit("tune --pattern relu_add,silu_mul --sizes 4096,65537" + common);
  fusekit("tune --pattern bias_gelu,bn_relu --sizes 65536" + common);
  fusekit("tune --pattern softmax,layernorm,add_rmsnorm --sizes 256x1024,300x4099" + common);
  fusekit("db export --db " + db + " " + jsonl);
  const std::string actual = digest(jsonl);
  std::filesystem::remove_all(dir);
  std::ofstream("golden_modeled_records.actual.txt") << actual;
  std::ifstream golden(std::string(FUSEKIT_SOURCE_DIR) + "/tests/data/golden_modeled_records.txt");
  ASSERT_TRUE(golden.good()) << "tests/data/golden_modeled_records.txt is missing";
  std::stringstream expected;
  expected << golden.rdbuf();
  EXPECT_EQ(expected.str(), actual) << "the records written are in golden_modeled_records.actual.txt";
}

}  // namespace
