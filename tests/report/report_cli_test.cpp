// `fusekit report` end to end: a database imported from the committed H200
// slice (tests/data/h200_slice.jsonl.gz), and bad input that must leave no
// file behind.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/cli/run_command.h"
#include "tests/support/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using fusekit::testing::run_command;

const std::string kFusekit = FUSEKIT_BINARY;
const std::string kSlice = std::string(FUSEKIT_SOURCE_DIR) + "/tests/data/h200_slice.jsonl.gz";

std::string read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class ReportCli : public fusekit::testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    db_ = path("slice.db");
  }
  void import_slice() {
    auto r = run_command(kFusekit + " db import --db " + db_ + " " + kSlice);
    ASSERT_EQ(r.code, 0) << r.out;
  }
  // Runs a report that must fail with exit 2 and `message`, writing nothing.
  void expect_refused(const std::string& args, const std::string& message) {
    const fs::path out = dir_ / "refused.html";
    auto r = run_command(kFusekit + " report " + args + " --out " + out.string());
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find(message), std::string::npos) << r.out;
    EXPECT_FALSE(fs::exists(out)) << args;
  }
  std::string db_;
};

TEST_F(ReportCli, WritesOneSelfContainedPage) {
  import_slice();
  const fs::path out = dir_ / "r.html";
  auto r = run_command(kFusekit + " report --db " + db_ + " --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("389 records, 4 ops"), std::string::npos) << r.out;
  const std::string html = read_all(out);
  EXPECT_NE(html.find("plotly.js v"), std::string::npos);  // the library, inlined
  EXPECT_EQ(html.find("<script src"), std::string::npos);   // and nothing fetched
  EXPECT_NE(html.find("\"op\":\"softmax\""), std::string::npos);
  EXPECT_NE(html.find("\"status\":\"compile_error\""), std::string::npos);
  // A winner of the slice: relu_add f32 at 64 M elements is the nvrtc schedule measured at 186.30 us.
  EXPECT_NE(html.find("\"params\":\"ept=1 fast=1 grid=0 threads=1024 vec=4\""), std::string::npos);
}

TEST_F(ReportCli, PlanCoverageAndPackageNeedTheirFiles) {
  import_slice();
  std::ofstream(dir_ / "plan.json") << R"J({"format": "fusekit-plan", "version": 1,
    "entries": [{"name": "relu_add", "expr": "out = max(x, 0) + y", "dtype": "f32", "sizes": ["4096", "12345"]}]})J";
  const fs::path out = dir_ / "r.html";
  auto r = run_command(kFusekit + " report --db " + db_ + " --plan " + (dir_ / "plan.json").string() + " --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string html = read_all(out);
  EXPECT_NE(html.find("\"sizes_tuned\":1"), std::string::npos);
  std::ofstream(dir_ / "bad_plan.json") << R"J({"entries": 3})J";
  expect_refused("--db " + db_ + " --plan " + (dir_ / "bad_plan.json").string(), "has no \"entries\" array");
  expect_refused("--db " + db_ + " --plan " + (dir_ / "none.json").string(), "cannot read plan");
}

TEST_F(ReportCli, BadInputIsAClearMessageAndNoFile) {
  // An empty database: a fusekit database (made by importing no records) with no records.
  std::ofstream(dir_ / "empty.jsonl").close();
  auto r = run_command(kFusekit + " db import --db " + (dir_ / "empty.db").string() + " " + (dir_ / "empty.jsonl").string());
  ASSERT_EQ(r.code, 0) << r.out;
  import_slice();
  expect_refused("--db " + (dir_ / "empty.db").string(), "has no records");
  // A database of another schema version.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "v99.db").string().c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE records (id TEXT); PRAGMA user_version = 99;", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  expect_refused("--db " + (dir_ / "v99.db").string(), "has schema version 99");
  // A folder that is not a package.
  fs::create_directories(dir_ / "not_a_package");
  expect_refused("--db " + db_ + " --package " + (dir_ / "not_a_package").string(), "is not a fusekit package");
  // No such database, no --out, a plot library that is not one.
  expect_refused("--db " + (dir_ / "nowhere.db").string(), "no database at");
  r = run_command(kFusekit + " report --db " + db_);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("report needs --out"), std::string::npos) << r.out;
  expect_refused("--db " + db_ + " --plotly-js " + kSlice, "is not plotly.js");
}

}  // namespace
