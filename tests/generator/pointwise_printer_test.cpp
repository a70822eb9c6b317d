#include "generator/nvrtc/pointwise_printer.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "common/errors.h"
#include "generator/candidates/catalog.h"
#include "generator/candidates/expr_parser.h"
#include "generator/nvrtc/nvrtc_compiler.h"
#include "generator/candidates/op_traits.h"
#include "generator/nvrtc/kernel_printer.h"
#include "generator/nvrtc/row_printer.h"
#include "schedules/arch_limits.h"

namespace fusekit {
namespace {

const Config kConfig = Config::parse("threads=256 vec=4 ept=2 grid=0");

TEST(CudaCPrinter, PrintsEveryCatalogPatternAtEveryDtype) {
  for (const auto& c : catalog()) {
    if (c.reduces()) continue;  // row reductions: row_reduction_test.cpp
    for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
      Pipeline p = instantiate(c, dt);
      PrintedKernel k = print_pointwise_kernel(c, p, kConfig, "k_" + c.name);
      SCOPED_TRACE(c.name + " " + dtype_name(dt));
      EXPECT_NE(k.source.find("extern \"C\" __global__ void __launch_bounds__(256) k_" + c.name + "("),
                std::string::npos);
      EXPECT_NE(k.source.find("static __device__ __forceinline__ void fk_point("), std::string::npos);
      // Inputs, output, n (+ per inner extent: the extent and its
      // divmagic/divshift pair, when something broadcasts).
      size_t expect = c.inputs.size() + 1 + 1;
      bool bcast = false;
      for (const auto& in : c.inputs) bcast |= !in.full();
      if (bcast) {
        expect += 3 * (layout_axes(c.layout).size() - 1);
        EXPECT_EQ(k.launch.params.back().expr.to_string(), "(divshift d" + std::to_string(layout_axes(c.layout).size() - 2) + ")");
      }
      EXPECT_EQ(k.launch.params.size(), expect);
      EXPECT_EQ(k.launch.block[0], 256);
      EXPECT_EQ(k.launch.pointer_alignment, 4 * static_cast<int>(dtype_bytes(dt)));
      if (dt == DType::kBF16) EXPECT_NE(k.source.find("fk_bf2f(in_"), std::string::npos);
      if (dt == DType::kF16) EXPECT_NE(k.source.find("fk_f2h("), std::string::npos);
    }
  }
}

// The body of fk_point(), where the candidate's own math is printed.
std::string point_body(const std::string& source) {
  const size_t start = source.find("void fk_point(");
  return source.substr(start, source.find("\n}\n", start) - start);
}

TEST(CudaCPrinter, MathComesFromTheHalideExprs) {
  const auto& c = find_pattern("sigmoid_mul_tanh_add");
  Pipeline p = instantiate(c, DType::kF32);
  const std::string body = point_body(print_pointwise_kernel(c, p, kConfig, "k").source);
  EXPECT_NE(body.find("fk_tanh("), std::string::npos) << body;
  EXPECT_NE(body.find("expf("), std::string::npos) << body;
  EXPECT_EQ(body.find("erf"), std::string::npos) << body;
  const auto& g = find_pattern("bias_gelu");
  Pipeline pg = instantiate(g, DType::kBF16);
  const std::string gelu = point_body(print_pointwise_kernel(g, pg, kConfig, "k").source);
  EXPECT_NE(gelu.find("fk_erf("), std::string::npos) << gelu;
  EXPECT_NE(gelu.find("fk_bf2f(in_x)"), std::string::npos) << gelu;
  EXPECT_EQ(gelu.find("tanh"), std::string::npos) << gelu;
}

// Results leave the math as f32 and are rounded to the storage type by the
// caller: vectors two values per cvt, the scalar tail one at a time.
TEST(CudaCPrinter, SixteenBitResultsAreRoundedInPairs) {
  const auto& g = find_pattern("bias_gelu");
  const std::string bf = print_pointwise_kernel(g, instantiate(g, DType::kBF16), kConfig, "k").source;
  EXPECT_NE(bf.find("= fk_f2bf2(w_o0[2 * j], w_o0[2 * j + 1])"), std::string::npos) << bf;
  EXPECT_NE(bf.find("g_o0[i] = fk_f2bf(t_o0)"), std::string::npos) << bf;
  const std::string h = print_pointwise_kernel(g, instantiate(g, DType::kF16), kConfig, "k").source;
  EXPECT_NE(h.find("= fk_f2h2(w_o0[2 * j], w_o0[2 * j + 1])"), std::string::npos) << h;
  const std::string one =
      print_pointwise_kernel(g, instantiate(g, DType::kBF16), Config::parse("threads=128 vec=1 ept=1 grid=0"), "k").source;
  EXPECT_NE(one.find("= fk_f2bf(w_o0[0])"), std::string::npos) << one;
  const std::string f = print_pointwise_kernel(g, instantiate(g, DType::kF32), kConfig, "k").source;
  EXPECT_EQ(f.find("fk_f2bf2("), f.rfind("fk_f2bf2("));  // only the prelude's definition
  EXPECT_NE(f.find("= w_p0;"), std::string::npos) << f;
}

TEST(CudaCPrinter, GridDependsOnTheSchedule) {
  const auto& c = find_pattern("relu_add");
  Pipeline p = instantiate(c, DType::kF32);
  EXPECT_EQ(print_pointwise_kernel(c, p, kConfig, "k").launch.grid[0].to_string(), "(max 1 (div (add n 2047) 2048))");
  EXPECT_EQ(print_pointwise_kernel(c, p, Config::parse("threads=128 vec=2 ept=1 grid=4"), "k").launch.grid[0].to_string(),
            "(min (max 1 (div (add n 255) 256)) (mul 4 sm_count))");
}

// plane=1 (bn_relu): a block takes a tile of one H*W plane, loads the
// channel's scale and shift once, and computes no element's coordinates.
TEST(CudaCPrinter, PlaneTilesLoadPerPlaneInputsOncePerBlock) {
  const auto& bn = find_pattern("bn_relu");
  EXPECT_EQ(op_traits(bn, DType::kF32).plane_inputs, 2);
  EXPECT_EQ(op_traits(find_pattern("relu_add"), DType::kF32).plane_inputs, 0);
  const Config plane = Config::parse("threads=128 vec=4 ept=2 grid=0 fast=1 plane=1");
  for (DType dt : {DType::kF32, DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(dtype_name(dt));
    const Pipeline p = instantiate(bn, dt);
    const PrintedKernel k = print_pointwise_kernel(bn, p, plane, "k");
    EXPECT_EQ(k.launch.grid[0].to_string(), "(max 1 (mul (div n d0) (div (add d0 1023) 1024)))");
    const std::string& src = k.source;
    EXPECT_NE(src.find("const I p = b / tiles, t0 = (b - p * tiles) * kTile, base = p * d0 + t0;"), std::string::npos)
        << src;
    EXPECT_NE(src.find(" b_scale = g_scale[c[1]];"), std::string::npos) << src;
    EXPECT_NE(src.find("if (d0 - t0 >= kTile && d0 % kV == 0) {"), std::string::npos) << src;
    EXPECT_EQ(src.find("fk_coords<I>("), std::string::npos) << "no per-element coordinates";
    EXPECT_EQ(src.find("g_scale[c["), src.rfind("g_scale[c[")) << "scale loaded once per block";
    const NvrtcResult r = compile_cuda_to_cubin(src, "k", require_arch("sm_90").arch, true);
    EXPECT_TRUE(r.ok) << r.log;
  }
  // With the grid-stride loop: min(planes * tiles, grid * SMs).
  EXPECT_EQ(print_pointwise_kernel(bn, instantiate(bn, DType::kF32),
                                   Config::parse("threads=256 vec=1 ept=1 grid=2 fast=0 plane=1"), "k")
                .launch.grid[0]
                .to_string(),
            "(min (max 1 (mul (div n d0) (div (add d0 255) 256))) (mul 2 sm_count))");
  // Offered only where it applies; refused with the fix elsewhere.
  const ArchLimits& sm90 = require_arch("sm_90");
  EXPECT_EQ(PointwiseTemplate::space(sm90, Backend::kNvrtc, 4, op_traits(bn, DType::kF32)).violation(plane), "");
  const auto& relu_add = find_pattern("relu_add");
  EXPECT_NE(PointwiseTemplate::space(sm90, Backend::kNvrtc, 4, op_traits(relu_add, DType::kF32)).violation(plane), "");
  EXPECT_NE(PointwiseTemplate::space(sm90, Backend::kHalide, 4, op_traits(bn, DType::kF32))
                .violation(Config::parse("threads=128 vec=4 ept=2 plane=1")),
            "");
  try {
    print_pointwise_kernel(relu_add, instantiate(relu_add, DType::kF32), plane, "k");
    ADD_FAILURE() << "relu_add has no per-plane input";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("set plane=0"), std::string::npos) << e.what();
  }
}

// occ=1: __launch_bounds__ asks for the blocks that fill an SM of the arch
// being compiled, so ptxas keeps registers within what full occupancy
// allows (bn_relu bf16 at 128 threads: 40 registers without it on sm_90).
TEST(CudaCPrinter, FullOccupancyCapsRegistersPerArch) {
  const auto& bn = find_pattern("bn_relu");
  const Pipeline p = instantiate(bn, DType::kBF16);
  const Config occ = Config::parse("threads=128 vec=8 ept=1 grid=0 fast=1 occ=1");
  const std::string src = print_pointwise_kernel(bn, p, occ, "k").source;
  EXPECT_NE(src.find("__launch_bounds__(128, FK_MIN_BLOCKS(128)) k("), std::string::npos) << src;
  EXPECT_NE(src.find("#elif __CUDA_ARCH__ == 860\n#define FK_SM_THREADS 1536\n#define FK_SM_BLOCKS 16\n"),
            std::string::npos)
      << src;
  EXPECT_EQ(print_pointwise_kernel(bn, p, Config::parse("threads=128 vec=8 ept=1 grid=0 fast=1"), "k")
                .source.find("FK_MIN_BLOCKS"),
            std::string::npos);
  for (const char* name : {"sm_75", "sm_86", "sm_90"}) {
    const ArchLimits& arch = require_arch(name);
    const NvrtcResult r = compile_cuda_to_cubin(src, "k", arch.arch, true);
    ASSERT_TRUE(r.ok) << name << ": " << r.log;
    const int blocks = std::min(arch.max_threads_per_sm / 128, arch.max_blocks_per_sm);
    EXPECT_GT(r.registers, 0) << name;
    EXPECT_LE(r.registers, arch.registers_per_sm / (blocks * 128)) << name;
    EXPECT_EQ(r.spill_store_bytes, 0) << name;
  }
  // Offered by the NVRTC space only.
  const ArchLimits& sm90 = require_arch("sm_90");
  EXPECT_EQ(PointwiseTemplate::space(sm90, Backend::kNvrtc, 2).violation(occ), "");
  EXPECT_NE(PointwiseTemplate::space(sm90, Backend::kHalide, 2).violation(Config::parse("threads=128 vec=8 ept=1 occ=1")),
            "");
}

// hint=1 and 2: every full input's vector loads carry an L2 eviction policy
// and the matching L1 priority (1 evict_first, 2 evict_last); broadcast
// inputs keep plain loads; the kernels compile where the space offers them.
TEST(CudaCPrinter, LoadHintsOnFullInputs) {
  const auto& bn = find_pattern("bn_relu");
  const Pipeline p = instantiate(bn, DType::kBF16);
  const std::string base = "threads=128 vec=8 ept=2 grid=0 fast=1 occ=1";
  const std::string plain = print_pointwise_kernel(bn, p, Config::parse(base), "k").source;
  EXPECT_EQ(plain.find("fk_ldg_hint"), std::string::npos);
  EXPECT_EQ(plain.find("createpolicy"), std::string::npos);
  const std::string keep = print_pointwise_kernel(bn, p, Config::parse(base + " hint=2"), "k").source;
  EXPECT_NE(keep.find("const unsigned long long fk_pol = fk_policy<true>();"), std::string::npos) << keep;
  EXPECT_NE(keep.find("r_x[e] = fk_ldg_hint<unsigned short, kV, 1>(g_x + i0, fk_pol);"), std::string::npos) << keep;
  EXPECT_NE(keep.find("const unsigned short b_scale = g_scale[c[1]];"), std::string::npos) << keep;
  const std::string stream = print_pointwise_kernel(bn, p, Config::parse(base + " hint=1"), "k").source;
  EXPECT_NE(stream.find("fk_policy<false>()"), std::string::npos) << stream;
  EXPECT_NE(stream.find("r_x[e] = fk_ldg_hint<unsigned short, kV, 2>(g_x + i0, fk_pol);"), std::string::npos)
      << stream;
  // Every full input of a two-input op, f32 and one element per access too.
  const auto& ra = find_pattern("relu_add");
  const std::string two =
      print_pointwise_kernel(ra, instantiate(ra, DType::kF32), Config::parse("threads=256 vec=1 ept=2 grid=2 hint=2"), "k")
          .source;
  EXPECT_NE(two.find("r_x[e] = fk_ldg_hint<float, kV, 1>(g_x + i0, fk_pol);"), std::string::npos) << two;
  EXPECT_NE(two.find("r_y[e] = fk_ldg_hint<float, kV, 1>(g_y + i0, fk_pol);"), std::string::npos) << two;
  for (const std::string& src : {keep, stream, two})
    for (const char* name : {"sm_80", "sm_90"}) {
      const NvrtcResult r = compile_cuda_to_cubin(src, "k", require_arch(name).arch, true);
      EXPECT_TRUE(r.ok) << name << ": " << r.log;
    }
  const ArchLimits& sm90 = require_arch("sm_90");
  EXPECT_EQ(PointwiseTemplate::space(sm90, Backend::kNvrtc, 2).violation(Config::parse(base + " hint=2")), "");
  EXPECT_NE(PointwiseTemplate::space(require_arch("sm_75"), Backend::kNvrtc, 2).violation(Config::parse(base + " hint=2")),
            "");
  EXPECT_NE(PointwiseTemplate::space(sm90, Backend::kHalide, 2).violation(Config::parse("threads=128 vec=8 ept=1 hint=1")),
            "");
  try {
    print_pointwise_kernel(bn, p, Config::parse(base + " hint=3"), "k");
    ADD_FAILURE() << "hint=3 printed";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("hint=3"), std::string::npos) << e.what();
  }
}

TEST(CudaCPrinter, ParametersBecomeFloatArguments) {
  FusionCandidate c = parse_expression("param alpha = 0.25\nout = where(x > 0, x, alpha * x)");
  Pipeline p = instantiate(c, DType::kF32);
  PrintedKernel k = print_pointwise_kernel(c, p, kConfig, "k");
  EXPECT_NE(k.source.find("const float p_alpha"), std::string::npos);
  ASSERT_GE(k.launch.params.size(), 3u);
  EXPECT_EQ(k.launch.params[2].kind, KernelParam::Kind::kScalarParam);
  EXPECT_EQ(k.launch.params[2].type, KernelParam::Type::kF32);
}

TEST(CudaCPrinter, PrintsScalarExprs) {
  Halide::Var x("x");
  std::string stmts;
  EXPECT_EQ(print_cuda_expr(Halide::max(Halide::Expr(1.5f), 2.0f) * 3.0f, &stmts), "(fmaxf(1.5f, 2.0f) * 3.0f)");
  EXPECT_EQ(print_cuda_expr(Halide::Expr(7) / Halide::Expr(x), &stmts), "fk_floor_div(7, v_x)");
  EXPECT_EQ(print_cuda_expr(Halide::cast<float>(Halide::Expr(x)), &stmts), "((float)(v_x))");
  EXPECT_TRUE(stmts.empty());
}

}  // namespace
}  // namespace fusekit
