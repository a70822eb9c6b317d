// The reproductions of issue 28 that need no GPU, through the real binary:
// each gives a clear message (exit 2) or a correct result, and refused
// commands write nothing.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "tests/cli/run_command.h"
#include "tests/support/temp_dir.h"

namespace {

using fusekit::testing::CommandResult;
namespace fs = std::filesystem;

CommandResult fusekit(const std::string& args) {
  return fusekit::testing::run_command(std::string(FUSEKIT_BINARY) + " " + args);
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void spit(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

bool has(const CommandResult& r, const std::string& text) { return r.out.find(text) != std::string::npos; }

class Hostile : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fusekit::testing::make_temp_dir("hostile");
    // One small tuned database and its export, shared by the tests.
    ASSERT_EQ(fusekit("tune --arch sm_80 --pattern relu_add --sizes 4096 --budget 2 --backend nvrtc --db " +
                      path("base.db")).code, 0);
    ASSERT_EQ(fusekit("db export --db " + path("base.db") + " " + path("base.jsonl")).code, 0);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static std::string path(const std::string& n) { return (dir_ / n).string(); }
  // The first record of base.jsonl with `field` replaced by `json_value`.
  static std::string edited_record(const std::string& field, const std::string& json_value) {
    std::string line = slurp(path("base.jsonl"));
    line = line.substr(0, line.find('\n'));
    const size_t at = line.find("\"" + field + "\":");
    size_t start = at + field.size() + 3, end = start;
    if (line[start] == '"') end = line.find('"', start + 1) + 1;
    else end = line.find_first_of(",}", start);
    return line.substr(0, start) + json_value + line.substr(end) + "\n";
  }
  static fs::path dir_;
};
fs::path Hostile::dir_;

TEST_F(Hostile, EmptyPatternsAreRefused) {
  CommandResult show = fusekit("db show --db " + path("base.db") + " --pattern ''");
  EXPECT_EQ(show.code, 2) << show.out;
  EXPECT_TRUE(has(show, "--pattern takes one pattern name")) << show.out;
  CommandResult tune = fusekit("tune --arch sm_90 --pattern '' --db " + path("never.db"));
  EXPECT_EQ(tune.code, 2) << tune.out;
  EXPECT_TRUE(has(tune, "--pattern is empty")) << tune.out;
  EXPECT_FALSE(fs::exists(path("never.db")));
}

TEST_F(Hostile, RefusedTuneCreatesNoDatabase) {
  for (const std::string args : {"--hint-twins -1", "--budget 0", "--sizes 2147483649", "--sizes 4294967296x4294967296",
                                 "--sizes 1099511627776", "--expr 'out = out + x'", "--backend ''"}) {
    CommandResult r = fusekit("tune --arch sm_90 --pattern relu_add " + args + " --db " + path("never.db"));
    EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
    EXPECT_FALSE(fs::exists(path("never.db"))) << args;
  }
  CommandResult big = fusekit("tune --arch sm_90 --pattern softmax --sizes 4294967296x4294967296 --db " + path("never.db"));
  EXPECT_TRUE(has(big, "more than 2147483647 elements")) << big.out;
}

TEST_F(Hostile, BuildUnderAFileIsAMessage) {
  spit(path("afile"), "x");
  CommandResult r = fusekit("build --arch sm_90 --db " + path("base.db") + " --out " + path("afile/pkg"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r, "is a file, not a folder")) << r.out;
}

TEST_F(Hostile, ImportRefusesBadFieldsAndWritesNothing) {
  const std::pair<std::string, std::string> cases[] = {
      {"sm_count", "999999999999999999999999999999"}, {"samples", "-3"},       {"median_us", "null"},
      {"dtype", "\"f64\""},                           {"arch", "\"sm_999\""},   {"status", "\"great\""},
      {"shape", "\"0x5\""},                           {"p20_us", "-1.5"},       {"backend", "\"cuda\""},
      {"params", "\"threads==3\""},                   {"sm_count", "1.5"},    {"row_length", "512"},
  };
  for (const auto& [field, value] : cases) {
    spit(path("bad.jsonl"), edited_record(field, value));
    CommandResult r = fusekit("db import --db " + path("new.db") + " " + path("bad.jsonl"));
    EXPECT_EQ(r.code, 2) << field << "=" << value << "\n" << r.out;
    EXPECT_TRUE(has(r, field) || has(r, "record")) << r.out;
    EXPECT_TRUE(has(r, "bad.jsonl:1")) << r.out;
    EXPECT_FALSE(fs::exists(path("new.db"))) << field;
  }
}

// A GEMM record's shape is M x N x K: the size bound is on its largest
// matrix, so an 8192-token Llama MLP record (3.7e11 multiply-adds) imports.
TEST_F(Hostile, GemmShapesAreBoundedByTheirMatrices) {
  const std::string gemm = std::string(FUSEKIT_SOURCE_DIR) + "/tests/data/gemm_record_8192.jsonl";
  CommandResult r = fusekit("db import --db " + path("gemm.db") + " " + gemm);
  EXPECT_EQ(r.code, 0) << r.out;
  std::string line = slurp(gemm);
  const std::string shape = "\"shape\":\"8192x11008x4096\"";
  ASSERT_NE(line.find(shape), std::string::npos) << line;
  line.replace(line.find(shape), shape.size(), "\"shape\":\"300000x11008x4096\"");
  spit(path("huge_gemm.jsonl"), line);
  r = fusekit("db import --db " + path("gemm2.db") + " " + path("huge_gemm.jsonl"));
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r, "elements in one of its matrices")) << r.out;
}

TEST_F(Hostile, TruncatedGzipIsRefused) {
  const std::string text = slurp(path("base.jsonl"));
  gzFile gz = gzopen(path("full.jsonl.gz").c_str(), "wb");
  gzwrite(gz, text.data(), static_cast<unsigned>(text.size()));
  gzclose(gz);
  const std::string full = slurp(path("full.jsonl.gz"));
  spit(path("notrailer.jsonl.gz"), full.substr(0, full.size() - 8));
  spit(path("half.jsonl.gz"), full.substr(0, full.size() / 2));
  for (const char* f : {"notrailer.jsonl.gz", "half.jsonl.gz"}) {
    CommandResult r = fusekit("db import --db " + path("gz.db") + " " + path(f));
    EXPECT_EQ(r.code, 2) << f << "\n" << r.out;
    EXPECT_TRUE(has(r, "truncated")) << r.out;
    EXPECT_FALSE(fs::exists(path("gz.db")));
  }
  EXPECT_EQ(fusekit("db import --db " + path("gz.db") + " " + path("full.jsonl.gz")).code, 0);
}

TEST_F(Hostile, ImportsEveryFileWithAReportAndFlagsConflicts) {
  const std::string text = slurp(path("base.jsonl"));
  const size_t second = text.find('\n') + 1;
  spit(path("a.jsonl"), text.substr(0, second));
  spit(path("b.jsonl"), text.substr(second));
  CommandResult r = fusekit("db import --db " + path("two.db") + " " + path("a.jsonl") + " " + path("b.jsonl"));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r, "a.jsonl: 1 imported")) << r.out;
  EXPECT_TRUE(has(r, "b.jsonl: ")) << r.out;
  EXPECT_EQ(fusekit("db show --db " + path("two.db")).out.find("records"),
            fusekit("db show --db " + path("two.db")).out.find("records"));
  CommandResult all = fusekit("db show --db " + path("two.db"));
  CommandResult base = fusekit("db show --db " + path("base.db"));
  EXPECT_EQ(all.out.substr(all.out.rfind('\n', all.out.size() - 2)), base.out.substr(base.out.rfind('\n', base.out.size() - 2)));
  // The same id with another median: a conflict, reported, the stored one kept.
  spit(path("c.jsonl"), edited_record("host", "\"elsewhere\""));
  CommandResult c = fusekit("db import --db " + path("two.db") + " " + path("c.jsonl"));
  EXPECT_EQ(c.code, 1) << c.out;
  EXPECT_TRUE(has(c, "c.jsonl:1: record")) << c.out;
  EXPECT_TRUE(has(c, "conflicts with the stored record")) << c.out;
  EXPECT_TRUE(has(c, "1 conflicts")) << c.out;
}

TEST_F(Hostile, ReadsDoNotWriteAndWorkOnAReadOnlyFile) {
  fs::copy_file(path("base.db"), path("ro.db"));
  chmod(path("ro.db").c_str(), 0444);
  const std::string before = slurp(path("ro.db"));
  CommandResult show = fusekit("db show --db " + path("ro.db"));
  EXPECT_EQ(show.code, 0) << show.out;
  EXPECT_TRUE(has(show, "relu_add"));
  EXPECT_EQ(fusekit("db export --db " + path("ro.db") + " " + path("ro.jsonl")).code, 0);
  EXPECT_EQ(slurp(path("ro.db")), before);
  // A writable one is not touched by reads either, byte for byte.
  const std::string base = slurp(path("base.db"));
  fusekit("db show --db " + path("base.db"));
  fusekit("db export --db " + path("base.db") + " " + path("again.jsonl"));
  EXPECT_EQ(slurp(path("base.db")), base);
}

TEST_F(Hostile, HelpIsPerCommand) {
  CommandResult tune = fusekit("tune --help");
  EXPECT_EQ(tune.code, 0);
  EXPECT_TRUE(has(tune, "--hint-twins"));
  EXPECT_FALSE(has(tune, "--command"));
  EXPECT_FALSE(has(tune, "--runtime-lib"));
  EXPECT_FALSE(has(tune, "--package"));
  CommandResult build = fusekit("build --help");
  EXPECT_TRUE(has(build, "--runtime-lib"));
  EXPECT_FALSE(has(build, "--hint-twins"));
  EXPECT_FALSE(has(build, FUSEKIT_SOURCE_DIR)) << build.out;  // no build-tree paths as defaults
  EXPECT_EQ(fusekit("nonsense").code, 2);
}

TEST_F(Hostile, DeepAndLongExpressionsAreMessages) {
  std::string deep = "out = " + std::string(6000, '(') + "x" + std::string(6000, ')');
  CommandResult r = fusekit("source --arch sm_86 --expr '" + deep + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r, "expression too deep: 6000 levels, at most 256")) << r.out.substr(0, 300);
  CommandResult constant = fusekit("source --arch sm_86 --dtype bf16 --expr 'out = 0.832; other = x'");
  EXPECT_EQ(constant.code, 0) << constant.out.substr(0, 300);
}

}  // namespace

namespace {

// Packages: hostile names compile, rebuilds are atomic and leave no stale files.
TEST_F(Hostile, PackagesAreAtomicAndTakeHostileNames) {
  const std::string db = path("names.db");
  const std::string expr = "'param float = 0.5; int = relu(__x * float) + _Bool; return = int * const'";
  CommandResult t = fusekit("tune --arch sm_90 --expr " + expr + " --sizes 4096 --budget 1 --backend nvrtc --db " + db);
  ASSERT_EQ(t.code, 0) << t.out;
  const std::string out = path("it's a \"pkg\"");
  const std::string out_arg = "\"" + path("it's a \\\"pkg\\\"") + "\"";
  CommandResult b = fusekit("build --arch sm_90 --expr " + expr + " --db " + db + " --out " + out_arg);
  ASSERT_EQ(b.code, 0) << b.out;
  ASSERT_TRUE(fs::exists(fs::path(out) / "lib" / "libfusekit_kernels.a"));
  const std::string header = slurp((fs::path(out) / "include" / "fusekit_kernels.h").string());
  EXPECT_NE(header.find("float* arg_int"), std::string::npos) << header;
  // A stale file of the earlier build does not survive a rebuild.
  spit((fs::path(out) / "share" / "stale.txt").string(), "old");
  ASSERT_EQ(fusekit("build --arch sm_90 --expr " + expr + " --db " + db + " --out " + out_arg).code, 0);
  EXPECT_FALSE(fs::exists(fs::path(out) / "share" / "stale.txt"));
  // A failed build leaves the package as it was, and no temporary folder.
  const std::string manifest = slurp((fs::path(out) / "share" / "fusekit_kernels" / "manifest.json").string());
  CommandResult bad = fusekit("build --arch sm_90 --expr " + expr + " --db " + db + " --out " + out_arg + " --cxx /bin/false");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_EQ(slurp((fs::path(out) / "share" / "fusekit_kernels" / "manifest.json").string()), manifest);
  EXPECT_TRUE(fs::exists(fs::path(out) / "lib" / "libfusekit_kernels.a"));
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find(".fusekit-build-"), std::string::npos) << e.path();
  // A folder that holds something else is not replaced.
  fs::create_directories(path("mine"));
  spit(path("mine/keep.txt"), "mine");
  CommandResult mine = fusekit("build --arch sm_90 --expr " + expr + " --db " + db + " --out " + path("mine"));
  EXPECT_EQ(mine.code, 2);
  EXPECT_TRUE(fs::exists(path("mine/keep.txt")));
}

}  // namespace

namespace {

// Seeded random command lines from the CLI's own words: each ends with a
// result or a message (exit 0, 1 or 2), never an internal error or a signal.
TEST_F(Hostile, RandomCommandLinesNeverCrash) {
  static const char* words[] = {"list", "tune", "db", "show", "export", "import", "verify", "build", "source", "eval",
                                "--arch", "sm_90", "sm_999", "--pattern", "''", "relu_add", "softmax", "--expr",
                                "'out = x +'", "'out = relu(x)'", "--dtype", "f64", "bf16", "--sizes", "0", "3x",
                                "99999999999999999999", "--db", "--out", "--budget", "-1", "--params", "'vec=3'",
                                "--help", "--backend", "halide", "--model", "--seed", "x", "--hint-twins", "--nope"};
  std::mt19937 rng(28);
  for (int run = 0; run < 40; ++run) {
    std::string args;
    const int n = 1 + static_cast<int>(rng() % 7);
    for (int k = 0; k < n; ++k) {
      std::string w = words[rng() % std::size(words)];
      if (w == "--db" || w == "--out") w += " " + path("fz" + std::to_string(run));
      args += " " + w;
    }
    if (args.find(" tune") != std::string::npos || args.find(" build") != std::string::npos) args += " --sizes 4096 --budget 1 --backend nvrtc --pattern relu_add";
    CommandResult r = fusekit(args);
    EXPECT_TRUE(r.code == 0 || r.code == 1 || r.code == 2) << args << "\nexit " << r.code << "\n" << r.out.substr(0, 500);
    EXPECT_EQ(r.out.find("fusekit: internal error"), std::string::npos) << args << "\n" << r.out.substr(0, 500);
  }
}

}  // namespace
