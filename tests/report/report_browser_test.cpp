// The report in a real headless browser (Debian's chromium): a database from
// the committed H200 slice and a package `fusekit build` makes from it. The
// page must load without script errors and draw every plot; the screenshot
// is kept in the build folder (test_artifacts/report.png).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "tests/cli/run_command.h"

namespace {

namespace fs = std::filesystem;
using fusekit::testing::run_command;

const std::string kFusekit = FUSEKIT_BINARY;

std::string read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string chromium() {
  for (const char* name : {"chromium", "chromium-browser"})
    if (run_command(std::string("command -v ") + name).code == 0) return name;
  return "";
}

TEST(ReportBrowser, PageLoadsWithoutErrorsAndDrawsEveryPlot) {
  const std::string browser = chromium();
  if (browser.empty()) GTEST_SKIP() << "no chromium to render the page in (scripts/install_deps.sh installs it)";
  const fs::path dir = fs::temp_directory_path() / ("fusekit_report_browser_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db = (dir / "slice.db").string();
  auto r = run_command(kFusekit + " db import --db " + db + " " + FUSEKIT_SOURCE_DIR + "/tests/data/h200_slice.jsonl.gz");
  ASSERT_EQ(r.code, 0) << r.out;
  r = run_command(kFusekit + " build --arch sm_90 --pattern relu_add,softmax --db " + db + " --out " + (dir / "pkg").string());
  ASSERT_EQ(r.code, 0) << r.out;
  const fs::path page = dir / "report.html";
  r = run_command(kFusekit + " report --db " + db + " --package " + (dir / "pkg").string() + " --out " + page.string());
  ASSERT_EQ(r.code, 0) << r.out;
  ASSERT_NE(r.out.find("4 ops"), std::string::npos) << r.out;

  // One browser run: the DOM after the page finished (--virtual-time-budget
  // lets it) and a screenshot, kept in the build folder.
  const fs::path artifacts = fs::path(FUSEKIT_ARTIFACT_DIR);
  fs::create_directories(artifacts);
  const fs::path shot = artifacts / "report.png";
  fs::remove(shot);
  r = run_command(browser + " --headless --no-sandbox --disable-gpu --user-data-dir=" + (dir / "profile").string() +
                  " --virtual-time-budget=20000 --window-size=1400,2000 --enable-logging=stderr --v=0 --screenshot=" +
                  shot.string() + " --dump-dom file://" + page.string() + " 2> " + (dir / "console.txt").string() + " > " +
                  (dir / "dom.html").string());
  ASSERT_EQ(r.code, 0) << r.out << read_all(dir / "console.txt");
  const std::string dom = read_all(dir / "dom.html");
  const std::string console = read_all(dir / "console.txt");
  // The error hook marks <html data-error="..."> (its own text holds the words too).
  const std::string html_tag = dom.substr(dom.find("<html"), dom.find('>', dom.find("<html")) - dom.find("<html"));
  EXPECT_EQ(html_tag.find("data-error"), std::string::npos) << html_tag;
  EXPECT_EQ(dom.find("id=\"fk-error\""), std::string::npos);
  EXPECT_EQ(console.find("Uncaught"), std::string::npos) << console;  // the console, through --enable-logging
  // One overview chart and two per op (bandwidth, schedules) for the 4 ops.
  ASSERT_NE(dom.find("<body"), std::string::npos);
  const std::string body_tag = dom.substr(dom.find("<body"), 200);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(body_tag, m, std::regex("^<body[^>]*data-rendered=\"([0-9]+)\""))) << body_tag;
  EXPECT_EQ(m[1], "9");
  EXPECT_GE(count_of(dom, "class=\"main-svg\""), 9u);
  EXPECT_GE(count_of(dom, "class=\"point\""), 389u);  // every record a point, plus the bars and winners
  EXPECT_GE(count_of(dom, "class=\"js-line\""), 3u);  // bandwidth lines
  // The package section: its variants and ladder were built into the page.
  EXPECT_NE(dom.find("Fallback ladder for sample calls"), std::string::npos);
  EXPECT_NE(dom.find("ptx jit"), std::string::npos);
  EXPECT_NE(dom.find("exact bucket"), std::string::npos);

  const std::string png = read_all(shot);
  // A page that stopped after its header screenshots to about 30 kB.
  ASSERT_GT(png.size(), 100000u) << "the screenshot shows no plots";
  EXPECT_EQ(png.substr(1, 3), "PNG");
  fs::copy_file(page, artifacts / "report.html", fs::copy_options::overwrite_existing);
  fs::remove_all(dir);
}

}  // namespace
