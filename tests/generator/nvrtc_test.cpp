// NVRTC compiles every catalog kernel for the archs we ship, with no GPU.
#include <gtest/gtest.h>

#include "generator/candidates/catalog.h"
#include "generator/nvrtc/pointwise_printer.h"
#include "generator/candidates/expr_parser.h"
#include "generator/nvrtc/nvrtc_compiler.h"

namespace fusekit {
namespace {

TEST(Nvrtc, CompilesEveryCatalogPatternForSm80Sm86Sm90) {
  const std::pair<Arch, int> archs[] = {{{8, 0}, 0x50}, {{8, 6}, 0x56}, {{9, 0}, 0x5a}};
  for (const auto& c : catalog()) {
    if (c.reduces()) continue;  // row reductions: row_reduction_test.cpp
    Pipeline p = instantiate(c, DType::kBF16);
    PrintedKernel k = print_pointwise_kernel(c, p, Config::parse("threads=128 vec=8 ept=2 grid=4"), "k_" + c.name);
    for (const auto& [arch, flag] : archs) {
      NvrtcResult r = compile_cuda_to_cubin(k.source, "k_" + c.name, arch);
      ASSERT_TRUE(r.ok) << c.name << " " << arch.name() << ": " << r.log;
      EXPECT_EQ(cubin_sm(r.cubin), flag) << c.name << " " << arch.name();
    }
  }
}

TEST(Nvrtc, CompilesEveryDtypeAndVectorWidth) {
  FusionCandidate c = parse_expression(
      "param k = 3\nout = where(abs(x) < 1, pow(x, 3) * k, rsqrt(abs(x))) + min(y, 0)\n"
      "aux = log(sqrt(abs(y) + 1)) + gelu_tanh(x) + silu(x) + max(exp(-x), tanh(y))");
  for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (int vec : {1, 2, 4}) {
      Pipeline p = instantiate(c, dt);
      Config cfg = Config::parse("threads=64 ept=1 grid=0 vec=" + std::to_string(vec));
      PrintedKernel k = print_pointwise_kernel(c, p, cfg, "k");
      for (bool fast : {false, true}) {
        NvrtcResult r = compile_cuda_to_cubin(k.source, "k", Arch{9, 0}, fast);
        EXPECT_TRUE(r.ok) << dtype_name(dt) << " vec " << vec << " fast " << fast << ": " << r.log;
      }
    }
  }
}

// Exporters write a variance as Pow(x - mean, 2): a fast-math powf of a
// negative base is NaN, so small integer powers print as products.
TEST(Nvrtc, IntegerPowersArePrintedAsProducts) {
  FusionCandidate c = parse_expression("out = pow(x - y, 2) + pow(x, -3)\naux = pow(y, 0.5)");
  Pipeline p = instantiate(c, DType::kF32);
  PrintedKernel k = print_pointwise_kernel(c, p, Config::parse("threads=64 ept=1 grid=0 vec=1 fast=1"), "k");
  EXPECT_EQ(k.source.find("powf(o0"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("1.0f / "), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("powf("), std::string::npos) << "pow(y, 0.5) stays a powf:\n" << k.source;
}

TEST(Nvrtc, CompileErrorCarriesTheLog) {
  NvrtcResult r = compile_cuda_to_cubin("extern \"C\" __global__ void k() { undefined_thing(); }", "broken", Arch{9, 0});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("nvrtcCompileProgram(broken, --gpu-architecture=sm_90) failed"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("undefined_thing"), std::string::npos) << r.log;
}

// ptxas's report of a cubin: registers, static shared memory, spills.
TEST(Nvrtc, ReportsRegistersAndSharedMemory) {
  const char* src =
      "extern \"C\" __global__ void k(float* p) {\n"
      "  __shared__ float s[256];\n"
      "  s[threadIdx.x] = p[threadIdx.x];\n"
      "  __syncthreads();\n"
      "  p[threadIdx.x] = s[255 - threadIdx.x] * 2.0f;\n"
      "}\n";
  NvrtcResult r = compile_cuda_to_cubin(src, "k", Arch{9, 0});
  ASSERT_TRUE(r.ok) << r.log;
  EXPECT_GT(r.registers, 0) << r.log;
  EXPECT_LT(r.registers, 32) << r.log;
  EXPECT_EQ(r.static_shared_bytes, 1024) << r.log;
  EXPECT_EQ(r.spill_store_bytes, 0) << r.log;
  // PTX has no ptxas report.
  NvrtcResult ptx = compile_cuda_to_ptx(src, "k", Arch{7, 5});
  ASSERT_TRUE(ptx.ok) << ptx.log;
  EXPECT_EQ(ptx.registers, -1);
}

TEST(Nvrtc, CubinSmRejectsNonElf) {
  EXPECT_EQ(cubin_sm("//\n.version 7.0\n"), 0);
  EXPECT_EQ(cubin_sm(""), 0);
  EXPECT_FALSE(nvrtc_version().empty());
}

}  // namespace
}  // namespace fusekit
