// Drives the real `fusekit` binary: error paths leave the database alone and
// name the bad value; the happy path tunes, shows, exports and imports.
#include <gtest/gtest.h>

#include "tests/cli/run_command.h"
#include "tests/support/temp_dir.h"
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

using CliRun = fusekit::testing::CommandResult;

CliRun fusekit(const std::string& args) {
  return fusekit::testing::run_command(std::string(FUSEKIT_BINARY) + " " + args);
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Each test in its own folder.
class Cli : public fusekit::testing::TempDirTest {};

TEST_F(Cli, ListsTheCatalog) {
  CliRun r = fusekit("list");
  EXPECT_EQ(r.code, 0);
  for (const char* name : {"relu_add", "sigmoid_mul_tanh_add", "bias_gelu", "bias_gelu_tanh", "bn_relu",
                           "residual_add_relu", "silu_mul"})
    EXPECT_NE(r.out.find(name), std::string::npos) << name;
}

TEST_F(Cli, BadInputNamesTheValueAndLeavesTheDatabaseAlone) {
  const std::string db = path("t.db");
  ASSERT_EQ(fusekit("tune --arch sm_80 --pattern relu_add --sizes 4096 --budget 1 --backend nvrtc --db " + db).code, 0);
  const std::string before = slurp(db);
  ASSERT_FALSE(before.empty());
  const std::pair<std::string, std::string> cases[] = {
      {"tune --arch sm_85", "unknown arch 'sm_85'; known: sm_70 sm_75 sm_80 sm_86 sm_89 sm_90"},
      {"tune", "tune needs --arch"},
      {"tune --arch sm_90 --pattern relu_mul", "unknown pattern 'relu_mul'; known: relu_add"},
      {"tune --arch sm_90 --dtype f64", "unknown dtype 'f64'; known: f32 f16 bf16"},
      {"tune --arch sm_90 --sizes 4096,12x", "malformed size '12x'"},
      {"tune --arch sm_90 --sizes -5", "malformed size '-5'"},
      {"tune --arch sm_90 --sizes 12x", "malformed size '12x'"},
      {"tune --arch sm_90 --sizes 8x0", "malformed size '8x0'"},
      {"tune --arch sm_90 --pattern relu_add --sizes 8192x1024",
       "size '8192x1024' has 2 dims; relu_add (flat) takes i or an element count"},
      {"tune --arch sm_90 --budget 0", "--budget 0 must be at least 1"},
      {"tune --arch sm_90 --timing fast", "--timing 'fast' is not a timing; give queued or issued"},
      {"tune --arch sm_90 --backend triton", "unknown backend 'triton'; known: nvrtc halide"},
      {"tune --arch sm_90 --expr 'out = x +'", "expression:1:10: unexpected end of input"},
      {"tune --arch sm_90 --expr 'out = x' --pattern relu_add", "give --pattern or --expr, not both"},
      {"frobnicate", "unknown command 'frobnicate'"},
      {"db drop", "unknown db subcommand 'drop'"},
      {"tune --arch sm_90 --bogus", "unrecognised option '--bogus'"},
  };
  for (const auto& [args, message] : cases) {
    CliRun r = fusekit(args + " --db " + db);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_NE(r.out.find(message), std::string::npos) << args << "\n" << r.out;
    EXPECT_EQ(slurp(db), before) << args;
  }
}

TEST_F(Cli, CorruptDatabaseIsRefusedAndKept) {
  const std::string db = path("junk.db");
  { std::ofstream(db) << std::string(4096, 'x'); }
  CliRun r = fusekit("tune --arch sm_80 --pattern relu_add --sizes 4096 --budget 1 --db " + db);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("is not a fusekit database"), std::string::npos) << r.out;
  EXPECT_EQ(slurp(db), std::string(4096, 'x'));
  r = fusekit("db show --db " + db);
  EXPECT_EQ(r.code, 2);
}

TEST_F(Cli, TunesShowsExportsAndImportsIdempotently) {
  const std::string db = path("a.db"), other = path("b.db"), jsonl = path("a.jsonl");
  CliRun t = fusekit("tune --arch sm_86 --expr 'out = silu(a) * b[col]' --dtype f32,f16 --sizes 4096,37x1001 --budget 2 --db " + db);
  ASSERT_EQ(t.code, 0) << t.out;
  EXPECT_NE(t.out.find("37x1001"), std::string::npos) << t.out;  // the shape as given, outermost first
  EXPECT_NE(t.out.find("ranking with the analytic model"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("modeled"), std::string::npos);
  EXPECT_NE(t.out.find("ETA"), std::string::npos);
  CliRun show = fusekit("db show --db " + db);
  ASSERT_EQ(show.code, 0) << show.out;
  EXPECT_NE(show.out.find("sm_86"), std::string::npos);
  CliRun ex = fusekit("db export --db " + db + " " + jsonl);
  ASSERT_EQ(ex.code, 0) << ex.out;
  CliRun im1 = fusekit("db import --db " + other + " " + jsonl);
  ASSERT_EQ(im1.code, 0) << im1.out;
  CliRun im2 = fusekit("db import --db " + other + " " + jsonl);
  ASSERT_EQ(im2.code, 0) << im2.out;
  EXPECT_NE(im2.out.find("imported 0 new records"), std::string::npos) << im2.out;
  // The same number of records in both databases.
  auto count = [](const std::string& s) { return s.substr(s.rfind('\n', s.size() - 2) + 1); };
  EXPECT_EQ(count(fusekit("db show --db " + db).out), count(fusekit("db show --db " + other).out));
}

TEST_F(Cli, MissingImportFileIsAnErrorWithoutCreatingTheDatabase) {
  CliRun r = fusekit("db import --db " + path("new.db") + " " + path("nope.jsonl"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("cannot read"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(path("new.db")));
}

TEST_F(Cli, SourcePrintsTheKernelOrRejectsAnIllegalSchedule) {
  CliRun ok = fusekit("source --pattern relu_add --arch sm_90 --params 'threads=128 vec=4 ept=1 grid=0 fast=0'");
  EXPECT_EQ(ok.code, 0);
  EXPECT_NE(ok.out.find("__launch_bounds__(128)"), std::string::npos);
  CliRun bad = fusekit("source --pattern relu_add --arch sm_90 --params 'threads=2048 vec=4 ept=1 grid=0 fast=0'");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("not a legal nvrtc schedule"), std::string::npos) << bad.out;
  // A parameter the space does not have is named, with the ones it has,
  // rather than left out of the kernel; a row kernel also takes its length.
  CliRun unknown = fusekit("source --pattern relu_add --arch sm_90 --params 'threads=128 vec=4 ept=1 grid=0 fast=0 tpb=3'");
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.out.find("--params names 'tpb', which nvrtc schedules of relu_add do not have; known: threads vec "
                             "ept grid fast occ hint"),
            std::string::npos)
      << unknown.out;
  CliRun len = fusekit("source --pattern layernorm --arch sm_90 --params 'cache=4 fast=0 rows=1 threads=256 vec=4 len=1024'");
  EXPECT_EQ(len.code, 0) << len.out;
  // --backend halide prints Halide's PTX; its default row schedule combines
  // in warp shuffles.
  CliRun ptx = fusekit("source --pattern layernorm --arch sm_90 --backend halide");
  EXPECT_EQ(ptx.code, 0) << ptx.out;
  EXPECT_NE(ptx.out.find(".entry"), std::string::npos);
  EXPECT_NE(ptx.out.find("shfl.sync"), std::string::npos);
  CliRun flat = fusekit("source --pattern relu_add --arch sm_90 --backend halide");
  EXPECT_EQ(flat.code, 0) << flat.out;
  EXPECT_NE(flat.out.find(".entry"), std::string::npos);
  // bf16 reaches Halide as uint16 bits (storage_bits.h): the PTX loads 16-bit words.
  CliRun bf16 = fusekit("source --pattern softmax --arch sm_90 --dtype bf16 --backend halide");
  EXPECT_EQ(bf16.code, 0) << bf16.out;
  EXPECT_NE(bf16.out.find(".entry"), std::string::npos) << bf16.out;
  EXPECT_NE(bf16.out.find(".u16"), std::string::npos) << bf16.out;
  CliRun two = fusekit("source --pattern relu_add --arch sm_90 --backend nvrtc,halide");
  EXPECT_EQ(two.code, 2);
  EXPECT_NE(two.out.find("give --backend nvrtc or --backend halide"), std::string::npos) << two.out;
}

}  // namespace
