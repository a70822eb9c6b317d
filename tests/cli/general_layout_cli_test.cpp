// General layouts through the command line without a GPU: each of the four
// example expressions tunes for sm_90 in every dtype (modeled records, the
// Halide backend only, the NVRTC backend skipped with its reason), a package
// of one builds with its permuted input and reduced output in the C API's
// shapes, and `fusekit source --backend nvrtc` refuses with the fix.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/cli/run_command.h"
#include "tests/support/temp_dir.h"

namespace {

std::string example_file(const std::string& name) {
  return std::string(FUSEKIT_SOURCE_DIR) + "/examples/general_layouts/" + name + ".fk";
}

fusekit::testing::CommandResult fusekit_run(const std::string& args) {
  return fusekit::testing::run_command(std::string(FUSEKIT_BINARY) + " " + args);
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class GeneralLayoutCli : public fusekit::testing::TempDirTest {};

TEST_F(GeneralLayoutCli, TheFourTuneForSm90InEveryDtypeThroughHalideOnly) {
  const std::pair<const char*, const char*> ops[] = {{"global_avg_pool", "3x5x7"},
                                                     {"batchnorm_stats", "5x3x9"},
                                                     {"softmax_dim1", "3x7x5"},
                                                     {"transpose_bias_gelu", "7x11"}};
  for (const auto& [name, shape] : ops) {
    SCOPED_TRACE(name);
    const auto r = fusekit_run("tune --arch sm_90 --model --db " + (dir_ / "t.db").string() +
                               " --dtype f32,f16,bf16 --budget 1 --sizes " + shape + " --name " + name +
                               " --expr \"$(cat " + example_file(name) + ")\"");
    EXPECT_EQ(r.code, 0) << r.out;
    for (const char* dt : {" f32", " f16", " bf16"})
      EXPECT_EQ(count(r.out, std::string(name) + dt +
                                 " nvrtc: skipped: the NVRTC templates take flat, broadcast and last-axis row regions "
                                 "only"),
                1)
          << r.out;
    EXPECT_EQ(count(r.out, " halide  "), 3) << r.out;  // a winner per dtype
    EXPECT_EQ(count(r.out, " modeled\n"), 3) << r.out;
    EXPECT_NE(r.out.find("3 records written"), std::string::npos) << r.out;  // 1 per dtype, none failed
  }
}

TEST_F(GeneralLayoutCli, APackageCarriesThePermutedInputAndTheExpression) {
  const std::string db = (dir_ / "t.db").string(), expr = "\"$(cat " + example_file("transpose_bias_gelu") + ")\"";
  auto r = fusekit_run("tune --arch sm_90 --model --db " + db + " --budget 2 --sizes 7x11 --name tbg --expr " + expr);
  ASSERT_EQ(r.code, 0) << r.out;
  r = fusekit_run("build --arch sm_90 --db " + db + " --name tbg --expr " + expr + " --out " + (dir_ / "pkg").string());
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream mf(dir_ / "pkg/share/fusekit_kernels/manifest.json");
  const auto manifest = nlohmann::json::parse(mf);
  EXPECT_NE(manifest["expressions"]["tbg"].get<std::string>().find("gelu(x[row, col] + b[col])"), std::string::npos);
  int halide = 0;
  for (const auto& v : manifest["variants"]) halide += v["backend"] == "halide";
  EXPECT_EQ(halide, 2);  // the winner and the generic variant, both Halide
  std::ifstream api(dir_ / "pkg/src/fusekit_kernels_api.cpp");
  std::stringstream text;
  text << api.rdbuf();
  // x[row, col]: storage order row (axis 1), then col (axis 0): 2 | 1 << 4.
  EXPECT_NE(text.str().find("{\"tbg\", 2, 2, 1, 0, {3u, 1u, }, {18u, 0u, }, 0u},"), std::string::npos) << text.str();
}

TEST_F(GeneralLayoutCli, SourceRefusesAnNvrtcKernelAndNamesTheFix) {
  const auto r = fusekit_run("source --arch sm_90 --expr \"$(cat " + example_file("global_avg_pool") + ")\"");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("cannot print an NVRTC kernel of expr_"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("give --backend halide"), std::string::npos) << r.out;
  const auto h = fusekit_run("source --arch sm_90 --backend halide --expr \"$(cat " + example_file("global_avg_pool") +
                             ")\"");
  EXPECT_EQ(h.code, 0) << h.out;
  EXPECT_NE(h.out.find(".entry"), std::string::npos);
}

}  // namespace
