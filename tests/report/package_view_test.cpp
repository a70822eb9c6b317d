// package_view on a hand-written manifest: the variant rows and the fallback
// ladder the runtime's select_variant gives; read_package_manifest refuses
// folders that are not packages.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/errors.h"
#include "report/package_view.h"

namespace fusekit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json variant(const std::string& arch, const std::string& bucket, const std::string& params, int alignment = 16) {
  return {{"op", "relu_add"},     {"dtype", "f32"},           {"arch", arch},
          {"image", arch == "ptx (compute_75)" ? "ptx" : "cubin"},
          {"entry", "k_" + params}, {"image_file", "kernels/x"}, {"shape_bucket", bucket},
          {"backend", "nvrtc"},   {"params", params},         {"record_id", bucket == "generic" ? "" : "r1"},
          {"provenance", bucket == "generic" ? "generic (not tuned)" : "measured"},
          {"measured_on", "NVIDIA H200"}, {"pointer_alignment", alignment}, {"row_length", "any"}, {"row_multiple", 0}};
}

json manifest() {
  return {{"generator", "fusekit build"},
          {"archs", {"sm_90"}},
          {"variants",
           {variant("sm_90", "n<=2^12", "a"), variant("sm_90", "n<=2^20", "b"), variant("sm_90", "generic", "g", 4),
            variant("ptx (compute_75)", "n<=2^12", "pa"), variant("ptx (compute_75)", "generic", "pg", 4)}},
          {"notes", json::array()}};
}

const json* find_call(const json& ladder, const std::string& device, int64_t elements, int alignment) {
  for (const json& c : ladder)
    if (c["device"] == device && c["elements"] == elements && c["alignment"] == alignment) return &c;
  return nullptr;
}

TEST(PackageView, LadderIsTheRuntimeSelection) {
  json v = package_view(manifest(), "pkg");
  EXPECT_EQ(v["variants"].size(), 5u);
  const json& ladder = v["ladder"];
  const json* exact = find_call(ladder, "sm_90", 4096, 256);
  ASSERT_NE(exact, nullptr);
  EXPECT_EQ((*exact)["arch_step"], "exact arch");
  EXPECT_EQ((*exact)["shape_step"], "exact bucket");
  EXPECT_EQ((*exact)["variant"]["params"], "a");
  const json* beyond = find_call(ladder, "sm_90", int64_t{1} << 22, 256);  // past the largest bucket
  ASSERT_NE(beyond, nullptr);
  EXPECT_EQ((*beyond)["shape_step"], "nearest bucket");
  EXPECT_EQ((*beyond)["variant"]["params"], "b");
  const json* misaligned = find_call(ladder, "sm_90", 4096, 4);
  ASSERT_NE(misaligned, nullptr);
  EXPECT_EQ((*misaligned)["shape_step"], "generic");
  // sm_89 has no cubin here: the portable PTX.
  const json* other = find_call(ladder, "sm_89", 4096, 256);
  ASSERT_NE(other, nullptr);
  EXPECT_EQ((*other)["arch_step"], "ptx jit");
  EXPECT_EQ((*other)["variant"]["arch"], "ptx");
}

TEST(PackageView, NoVariantForTheArchIsTheRuntimeMessage) {
  json m = manifest();
  m["variants"] = {variant("sm_90", "n<=2^12", "a")};
  json v = package_view(m, "pkg");
  const json* other = find_call(v["ladder"], "sm_89", 4096, 256);
  ASSERT_NE(other, nullptr);
  EXPECT_NE((*other)["status"].get<std::string>().find("rebuild it with --arch sm_89"), std::string::npos) << *other;
}

TEST(PackageView, AVariantWithoutAFieldNamesIt) {
  json m = manifest();
  m["variants"][1].erase("params");
  try {
    package_view(m, "pkg");
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("variant 1 has no text field \"params\""), std::string::npos) << e.what();
  }
}

TEST(PackageView, FoldersThatAreNotPackagesAreRefused) {
  const fs::path dir = fs::temp_directory_path() / ("fusekit_report_pkg_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "share" / "fusekit_kernels");
  try {
    read_package_manifest(dir.string());
    FAIL() << "no error for a folder without a manifest";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("is not a fusekit package"), std::string::npos) << e.what();
  }
  std::ofstream(dir / "share" / "fusekit_kernels" / "manifest.json") << "{\"generator\": \"something else\", \"variants\": []}";
  EXPECT_THROW(read_package_manifest(dir.string()), UserError);
  std::ofstream(dir / "share" / "fusekit_kernels" / "manifest.json") << "not json";
  EXPECT_THROW(read_package_manifest(dir.string()), UserError);
  std::ofstream(dir / "share" / "fusekit_kernels" / "manifest.json") << manifest().dump();
  EXPECT_EQ(read_package_manifest(dir.string())["variants"].size(), 5u);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fusekit
