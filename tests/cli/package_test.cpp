// `fusekit build` end to end on the CPU: a database made here (modeled
// records for three archs), the package it emits, the cubins' arch, the shared
// library's dependencies, and an application built against the package.
#include <gtest/gtest.h>

#include "tests/cli/run_command.h"
#include "tests/support/temp_dir.h"
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace {

namespace fs = std::filesystem;

using Result = fusekit::testing::CommandResult;

Result sh(const std::string& cmd) { return fusekit::testing::run_command(cmd); }

int elf_sm(const fs::path& cubin) {
  std::ifstream f(cubin, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (s.size() < 52 || s.compare(0, 4, "\x7f" "ELF") != 0) return -1;
  uint32_t flags;
  std::memcpy(&flags, s.data() + 48, 4);
  return static_cast<int>((flags >> 8) & 0xff);
}

class Package : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fusekit::testing::make_temp_dir("package");
    db_ = (dir_ / "t.db").string();
    for (const char* arch : {"sm_80", "sm_86", "sm_90"}) {
      Result r = sh(std::string(FUSEKIT_BINARY) + " tune --arch " + arch +
                    " --pattern relu_add,bias_gelu --dtype f32,bf16 --sizes 4096,1048576 --budget 2 --db " + db_);
      ASSERT_EQ(r.code, 0) << r.out;
    }
    build_ = sh(std::string(FUSEKIT_BINARY) + " build --arch sm_80,sm_86,sm_90 --pattern relu_add,bias_gelu --db " +
                db_ + " --out " + (dir_ / "pkg").string());
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }
  static fs::path dir_;
  static std::string db_;
  static Result build_;
};
fs::path Package::dir_;
std::string Package::db_;
Result Package::build_;

TEST_F(Package, HoldsLibrariesHeaderManifestAndCMakePackage) {
  ASSERT_EQ(build_.code, 0) << build_.out;
  const fs::path pkg = dir_ / "pkg";
  for (const char* f : {"include/fusekit_kernels.h", "lib/libfusekit_kernels.a", "lib/libfusekit_kernels.so",
                        "lib/cmake/fusekit_kernels/fusekit_kernelsConfig.cmake", "share/fusekit_kernels/manifest.json"})
    EXPECT_TRUE(fs::exists(pkg / f)) << f;
  std::ifstream h(pkg / "include/fusekit_kernels.h");
  std::string header((std::istreambuf_iterator<char>(h)), std::istreambuf_iterator<char>());
  EXPECT_NE(header.find("int fusekit_relu_add_f32(const float* x, const float* y, float* out, int64_t count, CUstream stream);"),
            std::string::npos);
  EXPECT_NE(header.find("int fusekit_bias_gelu_bf16(const uint16_t* x, const uint16_t* b, uint16_t* out, int64_t rows, "
                        "int64_t cols, CUstream stream);"),
            std::string::npos);
  EXPECT_NE(header.find("int fusekit_launch("), std::string::npos);
  EXPECT_NE(header.find("int fusekit_explain("), std::string::npos);
}

TEST_F(Package, HasACubinForEveryRequestedArchAndPortablePtx) {
  ASSERT_EQ(build_.code, 0) << build_.out;
  nlohmann::json m;
  std::ifstream(dir_ / "pkg/share/fusekit_kernels/manifest.json") >> m;
  std::map<std::string, int> cubins;
  int ptx = 0, generic = 0, modeled = 0;
  for (const auto& v : m["variants"]) {
    const std::string arch = v["arch"], image = v["image"], image_file = v["image_file"];
    const fs::path file = dir_ / "pkg/share/fusekit_kernels" / image_file;
    ASSERT_TRUE(fs::exists(file)) << file;
    if (image == "cubin") {
      const int expect = std::stoi(arch.substr(3), nullptr, 10);
      EXPECT_EQ(elf_sm(file), expect) << file;  // e_flags bits 8-15: 0x50, 0x56, 0x5a
      ++cubins[arch];
    } else if (arch.rfind("ptx", 0) == 0) {
      ++ptx;
    }
    generic += v["shape_bucket"] == "generic" && image == "cubin";
    modeled += v["provenance"] == "modeled";
  }
  EXPECT_GT(cubins["sm_80"], 0);
  EXPECT_GT(cubins["sm_86"], 0);
  EXPECT_GT(cubins["sm_90"], 0);
  EXPECT_GT(ptx, 0);
  EXPECT_EQ(generic, 4 * 3);  // a generic cubin per (2 ops x 2 dtypes) x 3 archs
  EXPECT_GT(modeled, 0);
  EXPECT_FALSE(m["notes"].empty());  // modeled archs are flagged
}

TEST_F(Package, SharedLibraryNeedsNoCompilerLibraries) {
  ASSERT_EQ(build_.code, 0) << build_.out;
  Result r = sh("ldd " + (dir_ / "pkg/lib/libfusekit_kernels.so").string());
  ASSERT_EQ(r.code, 0) << r.out;
  for (const char* lib : {"Halide", "LLVM", "nvrtc", "boost", "sqlite", "libcuda"})
    EXPECT_EQ(r.out.find(lib), std::string::npos) << lib << " in\n" << r.out;
  Result syms = sh("nm -D --defined-only " + (dir_ / "pkg/lib/libfusekit_kernels.so").string());
  EXPECT_NE(syms.out.find("fusekit_relu_add_f32"), std::string::npos);
  EXPECT_NE(syms.out.find("fusekit_bias_gelu_bf16"), std::string::npos);
}

TEST_F(Package, AnApplicationBuildsAgainstItWithFindPackage) {
  ASSERT_EQ(build_.code, 0) << build_.out;
  if (sh("command -v nvcc || test -x /usr/local/cuda/bin/nvcc").code != 0) GTEST_SKIP() << "no nvcc to build the example";
  const std::string b = (dir_ / "example").string();
  Result conf = sh("cmake -S " FUSEKIT_SOURCE_DIR "/examples/fused_relu_add -B " + b + " -DCMAKE_PREFIX_PATH=" +
                   (dir_ / "pkg").string() + " -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc");
  ASSERT_EQ(conf.code, 0) << conf.out;
  Result build = sh("cmake --build " + b);
  ASSERT_EQ(build.code, 0) << build.out;
  EXPECT_TRUE(fs::exists(fs::path(b) / "fused_relu_add"));
}

TEST_F(Package, EmbeddedImagesAreTheKernels) {
  // A program linked against the static library walks the package's own table.
  ASSERT_EQ(build_.code, 0) << build_.out;
  const fs::path src = dir_ / "check_images.cpp", exe = dir_ / "check_images";
  std::ofstream(src) << R"cpp(
#include <cstdio>
#include <cstring>
#include <string>
#include "fusekit/package.h"
fusekit::Package& fusekit_kernels_package();
int main() {
  fusekit::Package& p = fusekit_kernels_package();
  int bad = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const fusekit_variant_desc& v = p.table()[i];
    if (v.image_kind == 0) {
      unsigned flags = 0;
      std::memcpy(&flags, v.image + 48, 4);
      if (v.image_size < 52 || std::memcmp(v.image, "\x7f" "ELF", 4) != 0 || int((flags >> 8) & 0xff) != v.sm) ++bad;
    } else {
      std::string ptx(reinterpret_cast<const char*>(v.image), v.image_size);
      if (ptx.back() != '\0' || ptx.find(std::string(".entry ") + v.entry) == std::string::npos) ++bad;
    }
  }
  std::printf("%zu variants, %d bad\n", p.size(), bad);
  return bad != 0;
}
)cpp";
  Result c = sh("c++ -std=c++17 -I" FUSEKIT_SOURCE_DIR "/runtime/include -I/usr/local/cuda/include " + src.string() +
                " " + (dir_ / "pkg/lib/libfusekit_kernels.a").string() + " -ldl -lpthread -o " + exe.string());
  ASSERT_EQ(c.code, 0) << c.out;
  Result r = sh(exe.string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(" 0 bad"), std::string::npos) << r.out;
}

// Relative paths are resolved against the caller's folder, not the build
// steps' (a relative --runtime-lib once failed inside `ar x`).
TEST_F(Package, RelativePathsWork) {
  fs::create_directories(dir_ / "rt");
  fs::copy_file(FUSEKIT_RUNTIME_LIBRARY, dir_ / "rt" / "libfusekit_runtime.a", fs::copy_options::overwrite_existing);
  const std::string cmd = "cd " + dir_.string() + " && " + FUSEKIT_BINARY +
                          " build --arch sm_90 --pattern relu_add --db t.db --out relative/pkg"
                          " --runtime-lib rt/libfusekit_runtime.a";
  Result r = sh(cmd);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::exists(dir_ / "relative/pkg/lib/libfusekit_kernels.a"));
  r = sh("cd " + dir_.string() + " && " + FUSEKIT_BINARY +
         " build --arch sm_90 --pattern relu_add --db t.db --out relative/pkg2 --runtime-lib nowhere/lib.a");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("cannot read nowhere/lib.a (--runtime-lib)"), std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(dir_ / "relative/pkg2"));
}

// A row reduction packages like a pointwise op: typed entry point with its
// parameter and [rows, cols], a generic variant, portable PTX. A winner
// whose rows are split across a thread-block cluster (sm_90) gets its cubin
// but no portable PTX copy (compute_75 has no clusters).
TEST_F(Package, RowReductionsPackageWithTheirParameters) {
  const std::string db = (dir_ / "rows.db").string();
  Result r = sh(std::string(FUSEKIT_BINARY) + " tune --arch sm_90 --pattern layernorm --sizes 256x1024 --budget 2 --db " + db);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string jsonl = (dir_ / "rows.jsonl").string(), split_jsonl = (dir_ / "split.jsonl").string();
  ASSERT_EQ(sh(std::string(FUSEKIT_BINARY) + " db export --db " + db + " " + jsonl).code, 0);
  {
    std::ifstream in(jsonl);
    std::string line;
    std::getline(in, line);
    nlohmann::json rec = nlohmann::json::parse(line);
    rec["id"] = std::string(32, 'a');
    rec["params"] = "cache=8 fast=1 rows=1 split=4 threads=512 vec=4";
    rec["shape"] = "64x65536";
    rec["shape_bucket"] = "n<=2^22 cols<=2^16";
    std::ofstream(split_jsonl) << rec.dump() << "\n";
  }
  ASSERT_EQ(sh(std::string(FUSEKIT_BINARY) + " db import --db " + db + " " + split_jsonl).code, 0);
  r = sh(std::string(FUSEKIT_BINARY) + " build --arch sm_90 --pattern layernorm --db " + db + " --out " +
         (dir_ / "rows_pkg").string());
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream h(dir_ / "rows_pkg/include/fusekit_kernels.h");
  std::string header((std::istreambuf_iterator<char>(h)), std::istreambuf_iterator<char>());
  EXPECT_NE(header.find("int fusekit_layernorm_f32(const float* x, const float* w, const float* b, float* out, "
                        "float eps, int64_t rows, int64_t cols, CUstream stream);"),
            std::string::npos)
      << header;
  nlohmann::json m;
  std::ifstream(dir_ / "rows_pkg/share/fusekit_kernels/manifest.json") >> m;
  int generic = 0, ptx = 0, split_cubins = 0;
  for (const auto& v : m["variants"]) {
    generic += v["shape_bucket"] == "generic";
    ptx += v["image"] == "ptx";
    if (v["params"].get<std::string>().find("split=4") != std::string::npos) {
      EXPECT_EQ(v["image"], "cubin") << v;
      EXPECT_EQ(v["shape_bucket"], "n<=2^22 cols<=2^16") << v;
      ++split_cubins;
    }
    if (v["backend"] == "nvrtc") EXPECT_NE(v["params"].get<std::string>().find("cache="), std::string::npos) << v;
    else EXPECT_EQ(v["params"].get<std::string>().rfind("threads=", 0), 0u) << v;  // the Halide schedule
  }
  EXPECT_GE(generic, 1);
  EXPECT_GE(ptx, 1);
  EXPECT_EQ(split_cubins, 1);
}

TEST_F(Package, BuildErrorsNameWhatIsMissing) {
  Result r = sh(std::string(FUSEKIT_BINARY) + " build --arch sm_75 --pattern relu_add --db " + db_ + " --out " +
                (dir_ / "p2").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("none for sm_75; run `fusekit tune --arch sm_75"), std::string::npos) << r.out;
  r = sh(std::string(FUSEKIT_BINARY) + " build --arch sm_90 --db " + db_);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("build needs --out DIR"), std::string::npos) << r.out;
  r = sh(std::string(FUSEKIT_BINARY) + " build --arch sm_90 --pattern silu_mul --db " + db_ + " --out " +
         (dir_ / "p3").string());
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("no verified or modeled records"), std::string::npos) << r.out;
}

}  // namespace
