// The page: data and library inlined so that nothing in them can end a
// script early, and the file written whole or not at all.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/errors.h"
#include "report/html_writer.h"

namespace fusekit {
namespace {

namespace fs = std::filesystem;

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(HtmlWriter, InlinesDataAndLibraryWithoutEndingTheirScripts) {
  nlohmann::json data = {{"message", "error: </script><script>alert(1)</script>"}};
  const std::string html = render_report_html(data, "/* plotly.js */ var s = '</script>'; function newPlot() {}");
  // Only the page's own four scripts open and close.
  EXPECT_EQ(count_of(html, "<script"), 4u);
  EXPECT_EQ(count_of(html, "</script>"), 4u);
  EXPECT_NE(html.find("error: \\u003c/script>\\u003cscript>alert(1)\\u003c/script>"), std::string::npos);
  EXPECT_NE(html.find("data-rendered"), std::string::npos);  // the page script marks the plots drawn
  EXPECT_NE(html.find("data-error"), std::string::npos);     // and the hook marks script errors
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);     // nothing fetched when viewed
}

TEST(HtmlWriter, PlotLibraryMustBePlotly) {
  EXPECT_THROW(read_plot_library("/nonexistent/plotly.js"), UserError);
  const fs::path f = fs::temp_directory_path() / ("fusekit_not_plotly_" + std::to_string(getpid()) + ".js");
  std::ofstream(f) << "var x = 1;";
  EXPECT_THROW(read_plot_library(f.string()), UserError);
  fs::remove(f);
}

TEST(HtmlWriter, WritesWholeOrNothing) {
  const fs::path dir = fs::temp_directory_path() / ("fusekit_report_out_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  write_report_file((dir / "r.html").string(), "<html>page</html>");
  std::ifstream in(dir / "r.html");
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_EQ(s.str(), "<html>page</html>");
  EXPECT_THROW(write_report_file((dir / "missing" / "r.html").string(), "x"), UserError);
  EXPECT_FALSE(fs::exists(dir / "missing"));
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1u);  // no temporary left behind
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fusekit
