#include "generator/halide/halide_backend.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>

#include "common/errors.h"
#include "generator/candidates/catalog.h"
#include "generator/candidates/expr_parser.h"
#include "generator/build/isolated_build.h"
#include "fusekit/kernel_launch.h"

namespace fusekit {
namespace {

int64_t eval(const LaunchExpr& e, const LaunchShape& s) {
  int64_t v = 0;
  Status st = e.evaluate([&](const std::string& n, int64_t* out) { return lookup_shape_symbol(s, n, out); }, &v);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return v;
}

TEST(HalideBackend, EmitsPtxAndALaunchDescriptionForEveryF32Pattern) {
  const ArchLimits& sm90 = require_arch("sm_90");
  for (const auto& c : catalog()) {
    if (c.reduces()) continue;  // row reductions: row_reduction_test.cpp
    SCOPED_TRACE(c.name);
    KernelArtifact a = build_halide_kernel(c, DType::kF32, Config::parse("threads=128 vec=4 ept=2"), sm90, "fk_test");
    EXPECT_EQ(a.image_kind, ImageKind::kPtx);
    EXPECT_NE(a.image.find(".entry " + a.entry), std::string::npos) << a.entry;
    EXPECT_NE(a.image.find(".target sm_86"), std::string::npos);
    EXPECT_EQ(a.block[0], 128);
    int inputs = 0, outputs = 0;
    for (const auto& p : a.params) {
      inputs += p.kind == KernelParam::Kind::kInput;
      outputs += p.kind == KernelParam::Kind::kOutput;
    }
    EXPECT_EQ(inputs, static_cast<int>(c.inputs.size()));
    EXPECT_EQ(outputs, 1);
  }
}

// Row reductions: one kernel, one block of `threads` per row, the rfactor'ed
// partials in constant shared memory; a mean's row length arrives as an f32
// shape argument. (Built and described here; run on the GPU by gpu_test.)
// lanes=1 makes the block 32 lanes by threads/32 warps, and the last
// reduction combines in warp shuffles; vec>1 loads whole vectors and takes
// rows of a multiple of vec only.
TEST(HalideBackend, RowReductionsLowerToOneKernelPerPipeline) {
  const ArchLimits& sm90 = require_arch("sm_90");
  for (const auto& c : catalog()) {
    if (!c.reduces()) continue;
    SCOPED_TRACE(c.name);
    for (const char* params : {"threads=32", "threads=1024", "lanes=1 threads=256 vec=4", "lanes=1 threads=32 vec=2",
                               "lanes=0 threads=128 vec=4"}) {
      SCOPED_TRACE(params);
      const Config config = Config::parse(params);
      const int threads = static_cast<int>(config.get("threads")), vec = static_cast<int>(config.get_or("vec", 1));
      const bool lanes = config.get_or("lanes", 0) == 1;
      KernelArtifact a = build_halide_kernel(c, DType::kF32, config, sm90, "fk_rows");
      EXPECT_EQ(a.image_kind, ImageKind::kPtx);
      EXPECT_EQ(a.block[0], lanes ? 32 : threads);
      EXPECT_EQ(a.block[1], lanes ? threads / 32 : 1);
      // ptxas is told the block size, so registers fit a block of it.
      EXPECT_NE(a.image.find(".maxntid " + std::to_string(a.block[0]) + ", " + std::to_string(a.block[1]) + ", 1\n{"),
                std::string::npos);
      EXPECT_GE(a.shared_bytes, threads * vec * 4);
      EXPECT_EQ(a.pointer_alignment, vec * 4);
      EXPECT_EQ(a.row_multiple, vec);
      EXPECT_EQ(a.image.find("shfl.sync") != std::string::npos, lanes);
      if (vec == 4) {
        EXPECT_NE(a.image.find("ld.global.v4.f32"), std::string::npos);
      } else if (vec == 1) {
        EXPECT_EQ(a.image.find("ld.global.v"), std::string::npos);
      }
      LaunchShape s;
      s.domain = {3004, 37};
      s.outputs.assign(c.outputs.size(), s.domain);
      for (size_t i = 0; i < c.inputs.size(); ++i) s.inputs.push_back(c.input_dims(i, s.domain));
      EXPECT_EQ(eval(a.grid[0], s), 37);
      bool row_length_as_float = false;
      for (const auto& p : a.params) {
        if (p.kind != KernelParam::Kind::kShape) continue;
        const int64_t v = eval(p.expr, s);
        if (p.type == KernelParam::Type::kF32) row_length_as_float |= v == 3004;
      }
      const bool has_mean = canonical_pipeline_text(c, DType::kF32).find("mean over col") != std::string::npos;
      if (has_mean) EXPECT_TRUE(row_length_as_float);
    }
  }
}

// Compiled for its row length (len, the tuner's specialization), a Halide
// row kernel stages the row's full inputs in shared memory where they fit
// (a constant size: the length is), and is taken for that length only.
TEST(HalideBackend, SpecializedRowsStageTheRowInSharedMemory) {
  const ArchLimits& sm90 = require_arch("sm_90");
  for (const auto& c : catalog()) {
    if (!c.reduces()) continue;
    SCOPED_TRACE(c.name);
    const int full = c.full_inputs();
    for (const char* params :
         {"lanes=1 len=4096 threads=256 vec=4", "len=3001 threads=128", "len=65536 lanes=1 threads=1024 vec=4"}) {
      SCOPED_TRACE(params);
      const Config config = Config::parse(params);
      const int64_t len = config.get("len");
      KernelArtifact a = build_halide_kernel(c, DType::kF32, config, sm90, "fk_len");
      EXPECT_EQ(a.row_length, len);
      const bool staged = RowReductionTemplate::halide_stages_row(config, 4, full, sm90.max_shared_per_block);
      EXPECT_EQ(staged, len < 65536);
      EXPECT_EQ(a.shared_bytes >= len * 4 * full, staged) << a.shared_bytes;
      EXPECT_LE(a.shared_bytes, sm90.max_shared_per_block);
      // The row is read from memory once per element: its loads sit in one loop.
      EXPECT_EQ(a.image.find("ld.shared") != std::string::npos, true);
      LaunchShape s;
      s.domain = {len, 37};
      s.outputs.assign(c.outputs.size(), s.domain);
      for (size_t i = 0; i < c.inputs.size(); ++i) s.inputs.push_back(c.input_dims(i, s.domain));
      EXPECT_EQ(eval(a.grid[0], s), 37);
      PreparedLaunch prepared;
      EXPECT_TRUE(prepare_launch(a, s, &prepared).ok());
      s.domain = {len + 4, 37};
      EXPECT_FALSE(prepare_launch(a, s, &prepared).ok());
    }
  }
}

// An input along the row (one value per row) in a kernel compiled for the
// row length: it builds, and its launch takes any row count (only
// [rows, cols] tensors take the constant extent).
TEST(HalideBackend, SpecializedRowsTakeInputsAlongTheRow) {
  const FusionCandidate c = parse_expression("out = x / sum(x, col) + b[row]");
  KernelArtifact a =
      build_halide_kernel(c, DType::kF32, Config::parse("len=1000 threads=128"), require_arch("sm_90"), "fk_rowin");
  for (int64_t rows : {37, 4001}) {
    LaunchShape s;
    s.domain = {1000, rows};
    s.outputs = {s.domain};
    for (size_t i = 0; i < c.inputs.size(); ++i) s.inputs.push_back(c.input_dims(i, s.domain));
    EXPECT_EQ(eval(a.grid[0], s), rows);
    PreparedLaunch prepared;
    EXPECT_TRUE(prepare_launch(a, s, &prepared).ok());
  }
}

TEST(HalideBackend, GridCoversTheDomainInTiles) {
  const auto& c = find_pattern("relu_add");
  KernelArtifact a =
      build_halide_kernel(c, DType::kF32, Config::parse("threads=256 vec=4 ept=2"), require_arch("sm_80"), "fk_grid");
  LaunchShape s;
  s.domain = {100003};
  s.inputs = {{100003}, {100003}};
  s.outputs = {{100003}};
  EXPECT_EQ(eval(a.grid[0], s), (100003 + 2047) / 2048);
  EXPECT_EQ(eval(a.grid[1], s), 1);
  for (const auto& p : a.params)
    if (p.kind == KernelParam::Kind::kShape) EXPECT_NO_FATAL_FAILURE(eval(p.expr, s));
}

TEST(IsolatedBuild, ACrashingCompilerBecomesAnError) {
  IsolatedBuild b = run_isolated_build([]() -> KernelArtifact {
    std::fputs("LLVM ERROR: something fatal\n", stderr);
    std::abort();
  });
  EXPECT_FALSE(b.ok);
  EXPECT_NE(b.error.find("compiler crashed"), std::string::npos) << b.error;
  EXPECT_NE(b.error.find("LLVM ERROR: something fatal"), std::string::npos) << b.error;
}

TEST(IsolatedBuild, ReturnsTheArtifactOrTheException) {
  IsolatedBuild ok = run_isolated_build([] {
    KernelArtifact a;
    a.entry = "k";
    a.image = std::string("\x7f" "ELF\0\1\2", 7);
    return a;
  });
  ASSERT_TRUE(ok.ok) << ok.error;
  EXPECT_EQ(ok.artifact.entry, "k");
  EXPECT_EQ(ok.artifact.image.size(), 7u);
  IsolatedBuild bad = run_isolated_build([]() -> KernelArtifact { throw UserError("no kernels"); });
  EXPECT_FALSE(bad.ok);
  EXPECT_EQ(bad.error, "no kernels");
}

// 16-bit storage reaches Halide as uint16 bits and erf as math in the
// pipeline, so every catalog pattern builds in every dtype, vectorized, and
// the PTX loads 16-bit words, holds no f16 conversion and calls no extern.
TEST(HalideBackend, EveryPatternBuildsInEveryDtype) {
  const ArchLimits& sm90 = require_arch("sm_90");
  for (const auto& c : catalog()) {
    for (DType dt : {DType::kF16, DType::kBF16}) {
      SCOPED_TRACE(c.name + " " + dtype_name(dt));
      const Config config = c.reduces() ? Config::parse("lanes=1 threads=256 vec=4") : Config::parse("threads=128 vec=8 ept=1");
      IsolatedBuild b = run_isolated_build([&] { return build_halide_kernel(c, dt, config, sm90, "fk_half"); });
      ASSERT_TRUE(b.ok) << b.error;
      const std::string& ptx = b.artifact.image;
      EXPECT_EQ(ptx.find(".extern .func"), std::string::npos);
      EXPECT_EQ(ptx.find(".f16"), std::string::npos);
      EXPECT_EQ(ptx.find(".bf16"), std::string::npos);
      EXPECT_NE(ptx.find(".u16"), std::string::npos);
      EXPECT_EQ(b.artifact.pointer_alignment, static_cast<int>(config.get("vec")) * 2);
    }
  }
}

// What the bits storage avoids, built in the child: Halide 14's own bf16
// code generation for CUDA, vectorized, aborts inside LLVM; the isolated
// build records the abort with LLVM's message instead of ending the process.
TEST(HalideBackend, HalidesOwnBf16CrashIsRecordedWithItsMessage) {
  IsolatedBuild b = run_isolated_build([]() -> KernelArtifact {
    Halide::ImageParam in(Halide::BFloat(16), 1, "crash_in");
    Halide::Var i("i"), bx("bx"), tx("tx");
    Halide::Func f("fk_crash");
    f(i) = Halide::cast(Halide::BFloat(16), Halide::cast<float>(in(i)) * 2.0f + 1.0f);
    f.vectorize(i, 4).gpu_tile(i, bx, tx, 128);
    f.compile_to_module({in}, "fk_crash", Halide::get_host_target().with_feature(Halide::Target::CUDA)
                                               .with_feature(Halide::Target::CUDACapability86));
    throw UserError("Halide built it");
  });
  ASSERT_FALSE(b.ok);
  if (b.error != "Halide built it") {
    EXPECT_NE(b.error.find("compiler crashed"), std::string::npos) << b.error;
    EXPECT_TRUE(b.error.find("LLVM ERROR") != std::string::npos || b.error.find("stack smashing") != std::string::npos)
        << b.error;
  }
}

// Scalar parameters in every dtype, math on them alone that Halide hoists
// out of the kernel, erf, and outputs that are constants or broadcasts: each
// lowers to one kernel whose float arguments are the candidate's parameters.
TEST(HalideBackend, ParametersConstantsAndCallsLowerInEveryDtype) {
  const ArchLimits& sm90 = require_arch("sm_90");
  for (const char* src : {"param a = 0.75\nout = x * exp(a) + tanh(a * 2)",
                          "param a = -1.5\nparam b = 2\nout = gelu(x * a + b) + a * b",
                          "out = x + 1\nout2 = rsqrt(abs(0.5) + 1) + 0 * x",
                          "out = where(x > 0, gelu(x), -gelu(-x))",
                          "out = b[col] + s[row] * 2 + x * 0",
                          "param a = 0.75\nout = x * 0.5 + where(a < 1.5, x, a * 2)",
                          "param a = 0.75\nout = x - sum(max(x, b[col]) * 0.5 + sqrt(abs(a)), col)"}) {
    const std::string text = src;
    const FusionCandidate c = parse_expression(text);
    for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
      SCOPED_TRACE(text + " " + dtype_name(dt));
      IsolatedBuild b = run_isolated_build(
          [&] { return build_halide_kernel(c, dt, Config::parse("threads=128 vec=4 ept=1"), sm90, "fk_scalar"); });
      ASSERT_TRUE(b.ok) << b.error;
      int scalars = 0;
      for (const auto& p : b.artifact.params) {
        if (p.kind != KernelParam::Kind::kScalarParam) continue;
        ++scalars;
        EXPECT_EQ(p.type, KernelParam::Type::kF32);
        EXPECT_GE(p.index, 0);
        EXPECT_LT(p.index, static_cast<int>(c.params.size()));
      }
      EXPECT_LE(scalars, static_cast<int>(c.params.size()));
    }
  }
}

}  // namespace
}  // namespace fusekit
