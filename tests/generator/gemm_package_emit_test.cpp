// A package with GEMM entries, emitted from records made here: the typed
// entries in the header, the manifest, the tail kernel among the variants,
// and the built library's C ABI answering without a GPU (dlopen, then calls
// that must come back with a code and a message, never a crash).
#include <gtest/gtest.h>

#include <cuda.h>
#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "generator/package/library_emitter.h"
#include "generator/cublaslt/gemm_points.h"
#include "tunedb/tune_db.h"

namespace fusekit {
namespace {

namespace fs = std::filesystem;

GemmPoint point(bool tail, GemmEpilogue ep, bool residual, int64_t m, int64_t n, int64_t k) {
  GemmPoint p;
  p.tail = tail;
  p.plan.epilogue = ep;
  p.plan.residual = residual;
  p.plan.has_algo = true;
  p.plan.algo.data[0] = 0xabc;
  p.plan.cublaslt_version = 130100;
  p.plan.tuned = {m, n, k, true, DType::kF16};
  if (tail) p.tail_config = Config::parse("ept=1 fast=0 grid=0 hint=0 occ=0 plane=0 threads=256 vec=8");
  return p;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

TEST(GemmPackageEmit, TypedEntriesManifestAndCAbi) {
  const fs::path dir = fs::temp_directory_path() / ("fusekit_gemm_pkg_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto db = open_sqlite_db((dir / "t.db").string());
  const GemmCandidate up = make_gemm_candidate("out = gelu(acc + b[col])", true, "bert_up");
  const GemmCandidate down = make_gemm_candidate("out = acc + b[col] + r", true, "bert_down");
  DeviceInfo dev;
  dev.gpu_name = "NVIDIA H200";
  dev.arch = Arch{9, 0};
  MeasureResult ok;
  ok.median_us = 10;
  ok.samples_us = {10};
  db->commit(gemm_records(up, DType::kF16, {128, 3072, 768},
                          {point(true, GemmEpilogue::kDefault, false, 128, 3072, 768)}, {ok}, dev, Provenance()));
  db->commit(gemm_records(down, DType::kF16, {128, 768, 3072},
                          {point(false, GemmEpilogue::kBias, true, 128, 768, 3072)}, {ok}, dev, Provenance()));
  // A faster record of bert_down measured with another cuBLASLt: the build
  // targets 130100, so it is passed over and the line says why.
  GemmPoint other = point(false, GemmEpilogue::kBias, true, 128, 768, 3072);
  other.plan.cublaslt_version = 130000;
  MeasureResult faster = ok;
  faster.median_us = 7;
  const TuningRecord stale = gemm_records(down, DType::kF16, {128, 768, 3072}, {other}, {faster}, dev, Provenance())[0];
  db->commit({stale});

  EmitOptions o;
  o.archs = {Arch{9, 0}};
  o.out_dir = (dir / "pkg").string();
  o.gemms = {up, down};
  o.runtime_library = FUSEKIT_RUNTIME_LIBRARY;
  o.runtime_include = std::string(FUSEKIT_SOURCE_DIR) + "/runtime/include";
  o.cuda_include = "/usr/local/cuda/include";
  o.target.cublas_version = "130100";
  EmitReport report = emit_library(*db, o);
  EXPECT_EQ(report.variants, 2u);  // the tail's tuned and generic variants
  std::string down_line;
  for (const auto& line : report.selections)
    if (line.rfind("bert_down f16 (GEMM) sm_90 m<=2^7 n=768 k=3072: cublaslt ", 0) == 0) down_line = line;
  EXPECT_NE(down_line.find("10.00 us"), std::string::npos) << down_line;
  EXPECT_NE(down_line.find("passed over 1: 1 stale: cuBLASLt 130000 (not 130100) [" + stale.id.substr(0, 8) + "]"),
            std::string::npos)
      << down_line;

  const std::string header = slurp(dir / "pkg/include/fusekit_kernels.h");
  EXPECT_NE(header.find("int fusekit_bert_up_f16(const uint16_t* A, const uint16_t* B, const uint16_t* b, uint16_t* out, "
                        "int64_t M, int64_t N, int64_t K, CUstream stream);"),
            std::string::npos)
      << header;
  EXPECT_NE(header.find("int fusekit_bert_down_f16(const uint16_t* A, const uint16_t* B, const uint16_t* b, "
                        "const uint16_t* r, uint16_t* out, int64_t M, int64_t N, int64_t K, CUstream stream);"),
            std::string::npos);
  nlohmann::json m = nlohmann::json::parse(slurp(dir / "pkg/share/fusekit_kernels/manifest.json"));
  ASSERT_EQ(m["gemms"].size(), 2u);
  EXPECT_EQ(m["gemms"][0]["backend"], "cublaslt+nvrtc");
  EXPECT_EQ(m["gemms"][1]["backend"], "cublaslt");
  EXPECT_NE(m["gemms"][1]["params"].get<std::string>().find("ep=bias res=1"), std::string::npos);
  EXPECT_NE(m["gemms"][1]["params"].get<std::string>().find("cublaslt=130100"), std::string::npos);
  EXPECT_EQ(m["variants"][0]["op"], "bert_up_tail");

  void* lib = dlopen((dir / "pkg/lib/libfusekit_kernels.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  using Launch = int (*)(const char*, const char*, const void* const*, int, void* const*, int, const float*, int,
                         const int64_t*, int, CUstream);
  using Down = int (*)(const void*, const void*, const void*, const void*, void*, int64_t, int64_t, int64_t, CUstream);
  using LastError = const char* (*)();
  auto launch = reinterpret_cast<Launch>(dlsym(lib, "fusekit_launch"));
  auto down_f16 = reinterpret_cast<Down>(dlsym(lib, "fusekit_bert_down_f16"));
  auto last_error = reinterpret_cast<LastError>(dlsym(lib, "fusekit_last_error"));
  ASSERT_TRUE(launch && down_f16 && last_error);
  void* p = reinterpret_cast<void*>(0x100000);
  const void* ins[] = {p, p, p};
  void* outs[] = {p};
  const int64_t domain[] = {128, 768, 3072};
  EXPECT_EQ(launch("bert_down", "f16", ins, 3, outs, 1, nullptr, 0, domain, 3, nullptr), 1);
  EXPECT_NE(std::string(last_error()).find("(a GEMM) takes 4 inputs"), std::string::npos) << last_error();
  EXPECT_EQ(down_f16(p, p, p, p, p, 128, 1024, 3072, nullptr), 2);  // FUSEKIT_NOT_SUPPORTED
  EXPECT_NE(std::string(last_error()).find("tuned for N=768 K=3072"), std::string::npos) << last_error();
  // The right shape reaches the libraries: no GPU here, so a driver message.
  EXPECT_NE(down_f16(p, p, p, p, p, 128, 768, 3072, nullptr), 0);
  EXPECT_FALSE(std::string(last_error()).empty());
  dlclose(lib);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fusekit
