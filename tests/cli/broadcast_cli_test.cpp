// General broadcasting through the CLI: a modeled tune (every candidate
// printed and compiled for sm_90 by NVRTC, no GPU) of an ndrows and an nd
// expression writes no failed record; shapes that do not fit are refused.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "tests/cli/run_command.h"

namespace {

fusekit::testing::CommandResult fusekit_cli(const std::string& args) {
  return fusekit::testing::run_command(std::string(FUSEKIT_BINARY) + " " + args);
}

TEST(BroadcastCli, ModeledTuneCompilesEveryCandidate) {
  const auto dir = std::filesystem::temp_directory_path() / ("fusekit_bcast_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string db = (dir / "t.db").string();
  const std::string common = " --arch sm_90 --backend nvrtc --dtype f32 --budget 2 --seed 3 --db " + db;
  auto r = fusekit_cli("tune --expr 's = x * 0.125 + m[d0,d3]; out = exp(s - max(s, col)) / sum(exp(s - max(s, col)), col)'"
                       " --name bert_mask --sizes 2x3x5x33" + common);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(" 0 failed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("bert_mask"), std::string::npos) << r.out;
  r = fusekit_cli("tune --expr 'out = x + pos[d0,d1] + b[d0]' --name pos_add --sizes 4x33x768" + common);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(" 0 failed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("4x33x768"), std::string::npos) << r.out;
  std::filesystem::remove_all(dir);
}

TEST(BroadcastCli, ShapesOfMoreThanFourDimsAreRefused) {
  const auto r = fusekit_cli("tune --arch sm_90 --model --expr 'out = x + pos[d0,d1]' --sizes 2x3x4x5x6 --db /nonexistent/x.db");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("has 5 dims"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("takes up to d3 x d2 x d1 x d0"), std::string::npos) << r.out;
}

}  // namespace
