// Row reductions and normalizations: the CPU reference against hand-computed
// values, the template's legality, and NVRTC compilation of printed kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <regex>

#include "common/errors.h"
#include "generator/candidate_workload.h"
#include "fusekit/kernel_launch.h"
#include "generator/candidates/catalog.h"
#include "generator/candidates/expr_parser.h"
#include "tests/generator/parse_error.h"
#include "generator/nvrtc/nvrtc_compiler.h"
#include "generator/candidates/op_traits.h"
#include "generator/nvrtc/kernel_printer.h"
#include "generator/nvrtc/row_printer.h"
#include "schedules/arch_limits.h"
#include "schedules/row_reduction_template.h"

namespace fusekit {
namespace {

// Runs the reference on a [rows, cols] problem; inputs in row-major order.
std::vector<float> ref(const std::string& pattern, int64_t rows, int64_t cols,
                       const std::vector<std::vector<float>>& inputs, size_t output = 0) {
  auto wl = make_candidate_workload(find_pattern(pattern), DType::kF32);
  Problem p = wl->problem({cols, rows});
  std::vector<HostTensor> in;
  for (size_t i = 0; i < inputs.size(); ++i) {
    in.push_back(HostTensor::make(DType::kF32, p.input_dims[i]));
    for (size_t k = 0; k < inputs[i].size(); ++k) in.back().set(static_cast<int64_t>(k), inputs[i][k]);
  }
  std::vector<HostTensor> out;
  wl->reference(p, in, &out);
  std::vector<float> v;
  for (int64_t k = 0; k < out.at(output).elements(); ++k) v.push_back(out[output].get(k));
  return v;
}

// The CUDA C of a catalog row op for one schedule.
std::string row_source(const std::string& pattern, DType dtype, const std::string& config) {
  const auto& c = find_pattern(pattern);
  return print_row_reduction_kernel(c, instantiate(c, dtype), Config::parse(config), "k").source;
}

// The launch shape of layernorm's rows x cols: x, a weight and a bias of
// cols, one output.
LaunchShape layernorm_shape(int64_t rows, int64_t cols) {
  LaunchShape shape;
  shape.domain = {cols, rows};
  shape.inputs = {shape.domain, {cols}, {cols}};
  shape.outputs = {shape.domain};
  return shape;
}

// How often `what` occurs in `s`.
size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

void expect_near(const std::vector<float>& got, const std::vector<double>& want, double tol = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

TEST(RowReductionReference, SoftmaxAndLogSoftmax) {
  // Rows [1 2 3] and [1000 1000 1000]: the max-subtracted form stays finite.
  const std::vector<float> x = {1, 2, 3, 1000, 1000, 1000};
  const double s = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  expect_near(ref("softmax", 2, 3, {x}),
              {std::exp(1.0) / s, std::exp(2.0) / s, std::exp(3.0) / s, 1.0 / 3, 1.0 / 3, 1.0 / 3});
  expect_near(ref("log_softmax", 2, 3, {x}),
              {1 - std::log(s), 2 - std::log(s), 3 - std::log(s), -std::log(3.0), -std::log(3.0), -std::log(3.0)},
              1e-5);
  // A row of length 1 is all ones (softmax) and zeros (log_softmax).
  expect_near(ref("softmax", 3, 1, {{-5, 0, 7}}), {1, 1, 1});
  expect_near(ref("log_softmax", 3, 1, {{-5, 0, 7}}), {0, 0, 0});
}

TEST(RowReductionReference, BiasAddSoftmaxWithAnInfiniteMask) {
  // scale 0.125: x = [8 16 -inf-masked], mask [0 0 -inf] -> softmax([1 2 -inf]).
  const float inf = std::numeric_limits<float>::infinity();
  const double s = std::exp(1.0) + std::exp(2.0);
  expect_near(ref("bias_add_softmax", 1, 3, {{8, 16, 24}, {0, 0, -inf}}), {std::exp(1.0) / s, std::exp(2.0) / s, 0});
}

TEST(RowReductionReference, LayernormAndRmsnorm) {
  // Row [1 2 3 4]: mean 2.5, variance 1.25; w = [1 1 2 2], b = [0 0 0 1].
  const std::vector<float> x = {1, 2, 3, 4}, w = {1, 1, 2, 2}, b = {0, 0, 0, 1};
  const double r = 1.0 / std::sqrt(1.25 + 1e-5);
  expect_near(ref("layernorm", 1, 4, {x, w, b}), {-1.5 * r, -0.5 * r, 2 * 0.5 * r, 2 * 1.5 * r + 1}, 1e-5);
  const double q = 1.0 / std::sqrt(7.5 + 1e-6);  // mean of squares (1+4+9+16)/4
  expect_near(ref("rmsnorm", 1, 4, {x, w}), {1 * q, 2 * q, 2 * 3 * q, 2 * 4 * q}, 1e-6);
}

TEST(RowReductionReference, AddNormsAlsoWriteTheSum) {
  const std::vector<float> x = {0, 1, 2, 3}, res = {1, 1, 1, 1}, w = {1, 1, 1, 1}, b = {0, 0, 0, 0};
  expect_near(ref("add_layernorm", 1, 4, {x, res, w, b}, 1), {1, 2, 3, 4});
  expect_near(ref("add_rmsnorm", 1, 4, {x, res, w}, 1), {1, 2, 3, 4});
  const double r = 1.0 / std::sqrt(1.25 + 1e-5);
  expect_near(ref("add_layernorm", 1, 4, {x, res, w, b}), {-1.5 * r, -0.5 * r, 0.5 * r, 1.5 * r}, 1e-5);
}

TEST(RowReductionReference, LongRowsOfLargeMagnitudeSumInDouble) {
  // 65536 equal values of 3e4: a naive f32 sum drifts, the reference does not.
  std::vector<float> x(65536, 3e4f);
  auto v = ref("layernorm", 1, 65536, {x, std::vector<float>(65536, 1.0f), std::vector<float>(65536, 0.0f)});
  for (float e : v) ASSERT_EQ(e, 0.0f);
}

TEST(RowReductionReference, ToleranceGrowsWithRowLength) {
  auto wl = make_candidate_workload(find_pattern("softmax"), DType::kF32);
  const Tolerance short_row = wl->tolerance(wl->problem({8, 100})), long_row = wl->tolerance(wl->problem({65536, 4}));
  EXPECT_GT(long_row.rtol, 10 * tolerance_for(DType::kF32).rtol);
  EXPECT_LT(short_row.rtol, 1.5 * tolerance_for(DType::kF32).rtol);
  auto pw = make_candidate_workload(find_pattern("relu_add"), DType::kF32);
  EXPECT_EQ(pw->tolerance(pw->problem({65536})).rtol, tolerance_for(DType::kF32).rtol);
}

TEST(RowReductionTemplate, LegalityPerArch) {
  for (const ArchLimits& arch : known_arch_limits()) {
    ParamSpace s = RowReductionTemplate::space(arch, Backend::kNvrtc, 4, 1);
    EXPECT_FALSE(s.legal(Config::parse("cache=0 fast=0 rows=4 split=1 threads=512 vec=4")));   // 2048 threads
    EXPECT_FALSE(s.legal(Config::parse("cache=0 fast=0 rows=1 split=1 threads=16 vec=4")));    // under a warp
    EXPECT_FALSE(s.legal(Config::parse("cache=16 fast=0 rows=1 split=1 threads=256 vec=8")));  // 32-byte access
    EXPECT_TRUE(s.legal(Config::parse("cache=16 fast=1 rows=1 split=1 threads=1024 vec=4")));
    // Two cached inputs halve the register budget.
    EXPECT_FALSE(RowReductionTemplate::space(arch, Backend::kNvrtc, 4, 2)
                     .legal(Config::parse("cache=16 fast=1 rows=1 split=1 threads=1024 vec=4")));
    // Halide: one block of `threads` per row (32 ... 1024), vectors of up to
    // 16 bytes, partials combined by one thread or by the lanes of a warp.
    const ParamSpace halide = RowReductionTemplate::space(arch, Backend::kHalide, 4, 1);
    EXPECT_EQ(halide.enumerate().size(), 6u * 3 * 2);
    EXPECT_EQ(RowReductionTemplate::space(arch, Backend::kHalide, 2, 1).enumerate().size(), 6u * 4 * 2);
    EXPECT_FALSE(halide.legal(Config::parse("lanes=1 threads=256 vec=8")));  // 32-byte access
    for (int bytes : {4, 2})
      for (const Config& c : RowReductionTemplate::seeds(Backend::kHalide, bytes))
        EXPECT_TRUE(RowReductionTemplate::space(arch, Backend::kHalide, bytes, 1).legal(c)) << c.to_string();
    // Records from before vec and lanes read as the scalar schedule.
    EXPECT_TRUE(halide.legal(halide.complete(Config::parse("threads=256"))));
    // onepass=1 only for an op with a pair of reductions (cached or not),
    // wbatch=1 only for one with weights beside a cached row; weights ahead
    // count against 256 bytes per thread.
    const ParamSpace ln = RowReductionTemplate::space(arch, Backend::kNvrtc, 2, 1, OpTraits{2, 1});
    EXPECT_FALSE(s.legal(Config::parse("cache=2 fast=0 onepass=1 rows=1 threads=256 vec=4")));
    EXPECT_FALSE(s.legal(Config::parse("cache=2 fast=0 rows=1 threads=256 vec=4 wbatch=1")));
    EXPECT_TRUE(ln.legal(Config::parse("cache=2 fast=0 onepass=1 rows=1 threads=256 vec=4 wbatch=1")));
    EXPECT_TRUE(ln.legal(Config::parse("cache=0 fast=0 onepass=1 rows=1 threads=256 vec=4")));
    EXPECT_FALSE(ln.legal(Config::parse("cache=0 fast=0 rows=1 threads=256 vec=4 wbatch=1")));
    EXPECT_TRUE(ln.legal(Config::parse("cache=8 fast=0 rows=1 threads=256 vec=8 wbatch=1")));    // 2 x 128 bytes
    EXPECT_FALSE(ln.legal(Config::parse("cache=16 fast=0 rows=1 smem=1 threads=64 vec=8 wbatch=1")));
    // Eviction policies (L2; L1 and L2): sm_80 and later.
    EXPECT_EQ(s.legal(Config::parse("cache=2 fast=0 hint=1 rows=1 threads=256 vec=4")), arch.arch.number() >= 80);
    EXPECT_EQ(s.legal(Config::parse("cache=2 fast=0 hint=2 rows=1 threads=256 vec=4")), arch.arch.number() >= 80);
    EXPECT_FALSE(s.legal(Config::parse("cache=2 fast=0 hint=3 rows=1 threads=256 vec=4")));
    // minb: blocks per SM that the SM can hold at once, and not beside a
    // persistent kernel's own bound.
    EXPECT_EQ(s.legal(Config::parse("cache=4 fast=0 minb=4 rows=1 threads=512 vec=4")), arch.max_threads_per_sm >= 2048);
    EXPECT_TRUE(s.legal(Config::parse("cache=4 fast=0 minb=2 rows=1 threads=512 vec=4")));
    EXPECT_FALSE(s.legal(Config::parse("cache=4 fast=0 minb=3 rows=2 threads=512 vec=4")));  // 3072 threads
    EXPECT_FALSE(s.legal(Config::parse("cache=4 fast=0 minb=9 rows=1 threads=64 vec=4")));
    if (arch.arch.number() >= 80) {
      EXPECT_FALSE(s.legal(Config::parse("cache=4 fast=0 minb=2 persist=2 rows=1 smem=1 threads=256 vec=4")));
    }
    // keep=0 only beside a cached row.
    EXPECT_FALSE(s.legal(Config::parse("cache=0 fast=0 keep=0 rows=1 split=1 threads=256 vec=4")));
    EXPECT_TRUE(s.legal(Config::parse("cache=2 fast=0 keep=0 rows=1 split=1 threads=256 vec=4")));
    // smem=1 stages a cached row in shared memory: no register budget, but
    // the arch's shared memory per block (f32 add_layernorm bound: 12 bytes
    // per element).
    EXPECT_FALSE(s.legal(Config::parse("cache=0 fast=0 rows=1 smem=1 split=1 threads=256 vec=4")));
    EXPECT_TRUE(RowReductionTemplate::space(arch, Backend::kNvrtc, 4, 2)
                    .legal(Config::parse("cache=16 fast=1 rows=1 smem=1 split=1 threads=64 vec=4")));
    const ParamSpace two = RowReductionTemplate::space(arch, Backend::kNvrtc, 4, 2);
    const Config staged = Config::parse("cache=8 fast=1 keep=2 rows=1 smem=1 split=1 threads=512 vec=4");
    EXPECT_EQ(two.legal(staged), 16384 * 12 <= arch.max_shared_per_block - 4096) << arch.arch.name();
    // Rows split across a cluster's blocks: sm_90 and later only.
    const bool clusters = arch.arch.number() >= 90;
    EXPECT_EQ(s.legal(Config::parse("cache=8 fast=1 rows=1 split=8 threads=256 vec=4")), clusters);
    EXPECT_TRUE(s.legal(Config::parse("cache=8 fast=1 rows=1 split=1 threads=256 vec=4")));
    // Persistent blocks: a staged row (smem=1), asynchronous copies (sm_80+)
    // of at least 4 bytes, and two buffers of the inputs in shared memory.
    const bool async_copies = arch.arch.number() >= 80;
    EXPECT_FALSE(s.legal(Config::parse("cache=8 fast=1 persist=1 rows=1 smem=0 split=1 threads=128 vec=4")));
    EXPECT_EQ(s.legal(Config::parse("cache=8 fast=1 persist=1 rows=1 smem=1 split=1 threads=128 vec=4")), async_copies)
        << arch.arch.name();
    EXPECT_FALSE(RowReductionTemplate::space(arch, Backend::kNvrtc, 2, 1)
                     .legal(Config::parse("cache=8 fast=1 persist=2 rows=1 smem=1 split=1 threads=256 vec=1")));
    EXPECT_EQ(RowReductionTemplate::space(arch, Backend::kNvrtc, 2, 1)
                  .legal(Config::parse("cache=8 fast=1 persist=2 rows=1 smem=1 split=1 threads=256 vec=2")),
              async_copies);
    // 16384 f32 elements per block: one input staged fits once (64 KiB plus
    // 64 KiB of kept bodies) and twice (a persistent block's two buffers) in
    // sm_90's 227 KiB, not twice in sm_80's 163 KiB.
    const Config one_buffer = Config::parse("cache=8 fast=1 rows=1 smem=1 split=1 threads=512 vec=4");
    EXPECT_EQ(s.legal(one_buffer), 16384 * 8 <= arch.max_shared_per_block - 4096) << arch.arch.name();
    EXPECT_EQ(s.legal(Config::parse("cache=8 fast=1 persist=1 rows=1 smem=1 split=1 threads=512 vec=4")),
              async_copies && 16384 * 12 <= arch.max_shared_per_block - 4096)
        << arch.arch.name();
    // Two persistent blocks of 1024 threads (sm_86 and sm_89 hold 1536 per
    // SM), or whose input buffers take more than half the shared memory
    // each, cannot be resident together.
    EXPECT_EQ(s.legal(Config::parse("cache=2 fast=1 persist=2 rows=1 smem=1 split=1 threads=1024 vec=4")),
              async_copies && arch.max_threads_per_sm >= 2048 && 2 * 1024 * 8 * 8 <= arch.max_shared_per_block)
        << arch.arch.name();
    EXPECT_EQ(s.legal(Config::parse("cache=2 fast=1 persist=1 rows=1 smem=1 split=1 threads=1024 vec=4")),
              async_copies && 1024 * 8 * 12 <= arch.max_shared_per_block - 4096)
        << arch.arch.name();
    EXPECT_FALSE(s.legal(Config::parse("cache=8 fast=1 persist=2 rows=1 smem=1 split=1 threads=512 vec=4")));
    // Seeds: split ones need clusters, staged ones the shared memory,
    // persistent ones asynchronous copies and two buffers of the input,
    // hinted ones sm_80, one combine per pair an op with a pair (softmax's
    // traits here; rmsnorm has none).
    for (int bytes : {4, 2})
      for (const Config& c : RowReductionTemplate::seeds(Backend::kNvrtc, bytes)) {
        const int64_t buffers = c.get_or("persist", 0) > 0 ? 2 : 1;
        const bool fits = c.get_or("smem", 0) == 0 ||
                          RowReductionTemplate::cached_row(c) / c.get("split") * (buffers * bytes + 4) <=
                              arch.max_shared_per_block - 4096;
        const bool legal = (c.get("split") == 1 || clusters) && (buffers == 1 || async_copies) && fits &&
                           (c.get_or("hint", 0) == 0 || async_copies);
        EXPECT_EQ(RowReductionTemplate::space(arch, Backend::kNvrtc, bytes, 1, OpTraits{0, 1}).legal(c), legal)
            << arch.arch.name() << " " << c.to_string();
        EXPECT_EQ(RowReductionTemplate::space(arch, Backend::kNvrtc, bytes, 1).legal(c),
                  legal && c.get_or("onepass", 0) == 0)
            << arch.arch.name() << " " << c.to_string();
      }
    // The split seeds hold a row of 65536 in registers.
    for (int bytes : {4, 2})
      for (const Config& c : RowReductionTemplate::seeds(Backend::kNvrtc, bytes))
        if (c.get("split") > 1) {
          EXPECT_EQ(RowReductionTemplate::cached_row(c), 65536) << c.to_string();
        }
    // Only the rows split across a pair ask for one combine per pair of
    // reductions, each beside its twin with two; no seed asks for weights
    // ahead (measured: no winner); the space still holds both for
    // layernorm. The fast seed of rows of 4096 in registers also comes with
    // L2 eviction policies (hint=1), the rows of 16384 in registers with L1
    // and L2 ones (hint=2); both legal from sm_80.
    for (int bytes : {4, 2}) {
      const std::vector<Config> seeds = RowReductionTemplate::seeds(Backend::kNvrtc, bytes);
      size_t fast = 0, hinted = 0, pairs = 0, one_combine = 0, wide = 0, hinted_wide = 0;
      for (const Config& c : seeds) {
        EXPECT_EQ(c.get_or("wbatch", 0), 0) << c.to_string();
        pairs += c.get("split") == 2 && c.get_or("onepass", 0) == 0;
        if (c.get_or("onepass", 0) == 1) {
          ++one_combine;
          EXPECT_EQ(c.get("split"), 2) << c.to_string();
          std::string twin = c.to_string();
          twin.erase(twin.find("onepass=1 "), 10);
          EXPECT_TRUE(std::any_of(seeds.begin(), seeds.end(), [&](const Config& o) { return o.to_string() == twin; }))
              << c.to_string();
        }
        fast += c.get("fast") == 1 && c.get_or("hint", 0) == 0 && c.get("rows") == 1 &&
                RowReductionTemplate::cached_row(c) == 4096;
        const bool in_registers_16k = RowReductionTemplate::cached_row(c) == 16384 && c.get("split") == 1 &&
                                      c.get_or("smem", 0) == 0;
        wide += in_registers_16k && c.get_or("hint", 0) == 0;
        if (c.get_or("hint", 0) == 0) continue;
        (c.get("hint") == 1 ? hinted : hinted_wide) += 1;
        if (c.get("hint") == 2) {
          EXPECT_TRUE(in_registers_16k) << c.to_string();
        }
        Config plain = c;
        plain.set("hint", 0);
        std::map<std::string, int64_t> twin = c.values();
        twin.erase("hint");
        EXPECT_TRUE(std::any_of(seeds.begin(), seeds.end(), [&](const Config& o) { return o == Config(twin); }))
            << c.to_string();
        const ParamSpace space = RowReductionTemplate::space(arch, Backend::kNvrtc, bytes, 1);
        EXPECT_EQ(space.legal(c), space.legal(plain) && async_copies) << arch.arch.name() << " " << c.to_string();
      }
      EXPECT_EQ(hinted, fast);
      EXPECT_EQ(hinted, 1u);
      EXPECT_EQ(hinted_wide, wide);
      EXPECT_GE(hinted_wide, 1u);
      EXPECT_EQ(one_combine, pairs);
      EXPECT_GE(pairs, 3u);
    }
  }
}

// Every row op at both stored dtypes, cached and re-reading schedules, one
// and several rows per block, compiles for sm_90; one also for every arch.
TEST(RowReductionPrinter, EveryOpCompilesWithNvrtc) {
  const ArchLimits& sm90 = require_arch("sm_90");
  for (const auto& c : catalog()) {
    if (!c.reduces()) continue;
    for (DType dt : {DType::kF32, DType::kBF16}) {
      Pipeline p = instantiate(c, dt);
      std::vector<std::string> cfgs = {"cache=2 fast=1 rows=4 threads=32 vec=4", "cache=0 fast=0 rows=1 threads=256 vec=2",
                              "cache=4 fast=1 rows=2 split=4 threads=128 vec=4",
                              "cache=4 fast=0 keep=0 rows=1 threads=64 vec=2",
                              "cache=4 fast=1 keep=2 rows=1 threads=64 vec=4",
                              "cache=4 fast=1 keep=1 rows=1 smem=1 threads=64 vec=4",
                              "cache=8 fast=0 keep=0 rows=2 smem=1 split=2 threads=64 vec=2",
                              "cache=2 fast=1 keep=2 rows=1 smem=1 threads=128 vec=8",
                              "cache=0 fast=1 rows=1 threads=256 unroll=4 vec=4",
                              "cache=2 fast=0 rows=2 split=2 threads=64 unroll=2 vec=2",
                              "cache=4 fast=1 keep=2 persist=1 rows=2 smem=1 threads=64 vec=4",
                              "cache=2 fast=0 keep=0 persist=2 rows=1 smem=1 split=2 threads=64 vec=2",
                              "cache=8 fast=1 keep=1 persist=2 rows=1 smem=1 split=8 threads=128 vec=4"};
      // One combine per pair of reductions, weights loaded ahead: where the
      // op has them (registers, staged, split, persistent, small blocks).
      const OpTraits traits = op_traits(c, dt);
      if (traits.reduction_pairs > 0)
        for (const char* cfg : {"cache=2 fast=1 keep=1 onepass=1 rows=4 threads=8 vec=4",
                                "cache=4 fast=0 keep=2 onepass=1 rows=1 smem=1 threads=1024 vec=2",
                                "cache=4 fast=1 keep=0 onepass=1 rows=1 split=4 threads=128 vec=4",
                                "cache=4 fast=1 keep=2 onepass=1 persist=2 rows=1 smem=1 split=2 threads=64 vec=4",
                                "cache=0 fast=1 onepass=1 rows=2 threads=64 unroll=2 vec=4",
                                "cache=0 fast=0 onepass=1 rows=1 split=2 threads=128 vec=2"})
          cfgs.push_back(cfg);
      // L2 eviction policies on every kind of load: cached, staged, re-read,
      // persistent (its copies carry none), 4-, 8- and 16-byte vectors.
      for (const char* cfg : {"cache=4 fast=1 hint=1 keep=0 rows=1 threads=128 vec=4",
                              "cache=2 fast=0 hint=1 keep=2 rows=1 smem=1 threads=256 vec=2",
                              "cache=0 fast=1 hint=1 rows=2 threads=64 unroll=2 vec=1",
                              "cache=4 fast=1 hint=1 keep=2 persist=1 rows=1 smem=1 threads=128 vec=4",
                              "cache=4 fast=1 hint=2 keep=2 rows=1 threads=1024 vec=4",
                              "cache=2 fast=0 hint=2 keep=0 rows=1 smem=1 threads=256 vec=2",
                              "cache=0 fast=1 hint=2 rows=2 threads=64 unroll=2 vec=2"})
        cfgs.push_back(cfg);
      // Compiled for one row length: whole vectors, a partial last vector,
      // re-read, split across a cluster, persistent.
      for (const char* cfg : {"cache=4 fast=1 keep=1 len=4096 rows=1 threads=256 vec=4",
                              "cache=2 fast=0 keep=2 len=1001 rows=2 smem=1 threads=64 vec=4",
                              "cache=0 fast=1 len=3001 rows=1 threads=128 unroll=2 vec=2",
                              "cache=8 fast=1 keep=2 len=65536 rows=1 split=4 threads=512 vec=4",
                              "cache=4 fast=1 keep=1 len=16384 persist=2 rows=1 smem=1 threads=512 vec=4"})
        cfgs.push_back(cfg);
      if (traits.weight_inputs > 0)
        for (const char* cfg : {"cache=4 fast=1 keep=0 rows=2 threads=64 vec=4 wbatch=1",
                                "cache=2 fast=1 keep=1 persist=1 rows=1 smem=1 threads=128 vec=2 wbatch=1"})
          cfgs.push_back(cfg);
      for (const std::string& cfg : cfgs) {
        const Config config = Config::parse(cfg);
        PrintedKernel k = print_row_reduction_kernel(c, p, config, "k_" + c.name);
        EXPECT_EQ(k.launch.block[1], config.get("rows"));
        std::string groups = "(max 1 (div (add d1 " + std::to_string(config.get("rows") - 1) + ") " +
                             std::to_string(config.get("rows")) + "))";
        const int64_t split = config.get_or("split", 1), persist = config.get_or("persist", 0);
        if (persist > 0)
          groups = "(min " + groups + " (max 1 (min (div (mul " + std::to_string(persist) + " sm_count) " +
                   std::to_string(split) + ") (div resident_blocks " + std::to_string(split) + "))))";
        EXPECT_EQ(k.launch.grid[0].to_string(),
                  split == 1 ? groups : "(mul " + groups + " " + std::to_string(split) + ")");
        NvrtcResult r = compile_cuda_to_cubin(k.source, "k_" + c.name, sm90.arch, config.get("fast") != 0);
        EXPECT_TRUE(r.ok) << c.name << " " << dtype_name(dt) << " " << cfg << "\n" << r.log;
      }
    }
  }
  const auto& softmax = find_pattern("softmax");
  Pipeline p = instantiate(softmax, DType::kF16);
  PrintedKernel k = print_row_reduction_kernel(softmax, p, Config::parse("cache=4 fast=0 rows=1 threads=1024 vec=8"), "k");
  for (const ArchLimits& arch : known_arch_limits()) {
    if (arch.arch.number() < 75) continue;  // CUDA 13's NVRTC has no sm_70 target
    NvrtcResult r = compile_cuda_to_cubin(k.source, "k", arch.arch, false);
    EXPECT_TRUE(r.ok) << arch.arch.name() << "\n" << r.log;
  }
}

// Rows of 2^31 columns or more: a Status at launch, never a wrong kernel.
TEST(RowReductionPrinter, RowsOfTwoToThe31ColumnsAreRefusedAtLaunch) {
  const auto& c = find_pattern("softmax");
  KernelArtifact a =
      print_row_reduction_kernel(c, instantiate(c, DType::kF32), Config::parse("cache=0 fast=0 rows=1 threads=256 vec=4"), "k")
          .launch;
  LaunchShape shape;
  shape.domain = {int64_t{1} << 31, 2};
  shape.inputs = {shape.domain};
  shape.outputs = {shape.domain};
  PreparedLaunch prepared;
  Status st = prepare_launch(a, shape, &prepared);
  EXPECT_EQ(st.code(), StatusCode::kNotSupported);
  EXPECT_NE(st.message().find("overflows int32"), std::string::npos) << st.message();
  shape.domain = {(int64_t{1} << 31) - 1, 3};
  shape.inputs = {shape.domain};
  shape.outputs = {shape.domain};
  ASSERT_TRUE(prepare_launch(a, shape, &prepared).ok());
  EXPECT_EQ(prepared.grid[0], 3u);  // one row per block
}

// len=L: the row length is a constant of the kernel, which keeps its
// argument (one launch signature) and is refused for other lengths.
TEST(RowReductionPrinter, SpecializedRowsFoldTheRowLength) {
  const auto& c = find_pattern("layernorm");
  const Pipeline p = instantiate(c, DType::kBF16);
  const Config generic = Config::parse("cache=4 fast=1 keep=1 rows=1 smem=1 threads=512 vec=8");
  const PrintedKernel g = print_row_reduction_kernel(c, p, generic, "k");
  const PrintedKernel k = print_row_reduction_kernel(c, p, RowReductionTemplate::specialize(generic, 16384), "k");
  EXPECT_EQ(g.launch.row_length, 0);
  EXPECT_EQ(k.launch.row_length, 16384);
  EXPECT_EQ(count(g.source, "constexpr int cols"), 0u);
  EXPECT_EQ(count(k.source, "constexpr int cols = 16384;"), 1u);
  EXPECT_EQ(count(g.source, "const long long rows, const int cols)"), 1u);
  EXPECT_EQ(count(k.source, "const long long rows, const int)"), 1u);
  ASSERT_EQ(k.launch.params.size(), g.launch.params.size());
  EXPECT_EQ(k.launch.params.back().expr.to_string(), "d0");
  LaunchShape shape = layernorm_shape(5, 16384);
  PreparedLaunch prepared;
  EXPECT_TRUE(prepare_launch(k.launch, shape, &prepared).ok());
  shape.domain = {4096, 5};
  EXPECT_EQ(prepare_launch(k.launch, shape, &prepared).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(prepare_launch(g.launch, shape, &prepared).ok());
  // No row has such a length.
  for (int64_t bad : {int64_t{-3}, int64_t{1} << 31}) {
    Config c2 = generic;
    c2.set("len", bad);
    try {
      print_row_reduction_kernel(c, p, c2, "k");
      ADD_FAILURE() << "len=" << bad << " printed";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("rows of " + std::to_string(bad) + " columns"), std::string::npos)
          << e.what();
    }
  }
  // The size check the tuner applies: only problems of that row length.
  EXPECT_EQ(template_size_violation(TemplateKind::kRowReduction, RowReductionTemplate::specialize(generic, 16384),
                                    Backend::kNvrtc, 16384 * 5, 16384),
            "");
  EXPECT_EQ(template_size_violation(TemplateKind::kRowReduction, RowReductionTemplate::specialize(generic, 16384),
                                    Backend::kNvrtc, 4096 * 5, 4096),
            "compiled for rows of 16384 columns, not 4096");
  EXPECT_EQ(template_size_violation(TemplateKind::kRowReduction, generic, Backend::kNvrtc, 4096 * 5, 4096), "");
  // It is verified on an odd count of rows of its length.
  EXPECT_EQ(template_verify_domain(TemplateKind::kRowReduction, RowReductionTemplate::specialize(generic, 16384),
                                   Backend::kNvrtc, {1001, 97}),
            (std::vector<int64_t>{16384, RowReductionTemplate::kSpecializedVerifyRows}));
  EXPECT_EQ(template_verify_domain(TemplateKind::kRowReduction, generic, Backend::kNvrtc, {1001, 97}),
            (std::vector<int64_t>{1001, 97}));
}

// minb=B is __launch_bounds__'s second argument: ptxas keeps the registers
// to what B blocks per SM hold (bf16 layernorm's 512-thread row of 16384 in
// registers: 40 without it, 32 with minb=4; the pair stays verified on the
// GPU, GpuKernels.SpecializedRowsMatchTheReference).
TEST(RowReductionPrinter, MinBlocksCapTheRegisters) {
  const auto& c = find_pattern("layernorm");
  const Pipeline p = instantiate(c, DType::kBF16);
  const Config plain = Config::parse("cache=4 fast=1 keep=0 len=16384 rows=1 threads=512 vec=8");
  Config capped = plain;
  capped.set("minb", 4);
  const std::string src = print_row_reduction_kernel(c, p, capped, "k").source;
  EXPECT_EQ(count(src, "__launch_bounds__(512, 4) k("), 1u) << src;
  EXPECT_EQ(count(print_row_reduction_kernel(c, p, plain, "k").source, "__launch_bounds__(512) k("), 1u);
  const ArchLimits& sm90 = require_arch("sm_90");
  const NvrtcResult r = compile_cuda_to_cubin(src, "k", sm90.arch, true);
  ASSERT_TRUE(r.ok) << r.log;
  EXPECT_GT(r.registers, 0);
  EXPECT_LE(r.registers, sm90.registers_per_sm / (4 * 512));
  // A persistent kernel's bound is its own.
  Config persistent = Config::parse("cache=4 fast=1 keep=0 minb=2 persist=2 rows=1 smem=1 threads=512 vec=8");
  try {
    print_row_reduction_kernel(c, p, persistent, "k");
    ADD_FAILURE() << "minb with persist printed";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("set minb=0"), std::string::npos) << e.what();
  }
  // A load hint outside 0-2 is refused, as by the pointwise printer (load_hint).
  try {
    print_row_reduction_kernel(c, p, Config::parse("cache=4 fast=1 hint=3 keep=0 rows=1 threads=512 vec=8"), "k");
    ADD_FAILURE() << "hint=3 printed";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("hint=3"), std::string::npos) << e.what();
  }
}

// A Halide vector schedule runs on rows of a multiple of its vector only:
// the tuner times it on no other and verifies it on the odd shape's row
// length rounded up to one.
TEST(RowReductionTemplate, HalideVectorsTakeRowsOfAMultipleOfTheVector) {
  const Config vec4 = Config::parse("lanes=1 threads=256 vec=4");
  EXPECT_EQ(RowReductionTemplate::row_multiple(vec4, Backend::kHalide), 4);
  EXPECT_EQ(RowReductionTemplate::row_multiple(Config::parse("threads=256"), Backend::kHalide), 1);
  EXPECT_EQ(RowReductionTemplate::row_multiple(Config::parse("cache=4 fast=1 rows=1 threads=256 vec=4"),
                                               Backend::kNvrtc),
            1);  // NVRTC kernels take any row
  EXPECT_EQ(template_size_violation(TemplateKind::kRowReduction, vec4, Backend::kHalide, 3001 * 3000, 3001),
            "vector accesses of 4 elements need rows of a multiple of 4 columns, not 3001");
  EXPECT_EQ(template_size_violation(TemplateKind::kRowReduction, vec4, Backend::kHalide, 4096 * 8192, 4096), "");
  EXPECT_EQ(template_verify_domain(TemplateKind::kRowReduction, vec4, Backend::kHalide, {1001, 97}),
            (std::vector<int64_t>{1004, 97}));
  EXPECT_EQ(template_verify_domain(TemplateKind::kRowReduction, Config::parse("lanes=1 threads=64 vec=2"),
                                   Backend::kHalide, {1001, 97}),
            (std::vector<int64_t>{1002, 97}));
  EXPECT_EQ(template_verify_domain(TemplateKind::kPointwise, Config::parse("ept=1 threads=256 vec=4"),
                                   Backend::kHalide, {100003}),
            (std::vector<int64_t>{100003}));
}

TEST(RowReductionPrinter, ReductionsComeFromTheHalideExprs) {
  const auto& c = find_pattern("layernorm");
  const std::string src = print_row_reduction_kernel(c, instantiate(c, DType::kF32),
                                                     Config::parse("cache=1 fast=0 rows=1 threads=64 vec=4"), "k")
                              .source;
  // mean(x), then mean((x - red0)^2), then the output; sum and mean divide.
  EXPECT_NE(src.find("fk_body0(const float in_x"), std::string::npos) << src;
  EXPECT_NE(src.find("fk_body1("), std::string::npos);
  EXPECT_EQ(src.find("fk_body2("), std::string::npos);
  EXPECT_NE(src.find("red0 /= (float)cols;"), std::string::npos);
  EXPECT_NE(src.find("sqrtf("), std::string::npos);
  EXPECT_NE(src.find("p_eps"), std::string::npos);
}

// Softmax evaluates exp(x - max) once per element when the row stays in
// registers (kept in kb1, then reused by the output) and multiplies by the
// reciprocal of the row's sum; re-reading schedules recompute the body.
TEST(RowReductionPrinter, OutputsReuseReductionBodiesAndReciprocals) {
  const std::string src = row_source("softmax", DType::kBF16, "cache=2 fast=1 rows=1 threads=128 vec=8");
  EXPECT_NE(src.find("const float kb1, const float rc0, float& o0) {\n  o0 = (kb1 * rc0);"), std::string::npos) << src;
  EXPECT_NE(src.find("kb1[j][l] = fk_body1("), std::string::npos);
  EXPECT_NE(src.find("const float rc0 = 1.0f / red1;"), std::string::npos);
  EXPECT_NE(src.find("fk_point(v_x.v[l], red0, red1, fk_body1(v_x.v[l], red0, red1), rc0, w_o0[l])"),
            std::string::npos);
  // bias_add_softmax keeps the exp (which holds the max's body), not the max's body.
  const std::string bsrc = row_source("bias_add_softmax", DType::kF32, "cache=2 fast=1 rows=1 threads=128 vec=4");
  EXPECT_NE(bsrc.find("o0 = (kb1 * rc0);"), std::string::npos) << bsrc;
  EXPECT_EQ(bsrc.find("kb0"), std::string::npos);
  // log_softmax's output holds no body and divides by nothing.
  const std::string lsrc = row_source("log_softmax", DType::kF32, "cache=2 fast=1 rows=1 threads=128 vec=4");
  EXPECT_EQ(lsrc.find("kb1"), std::string::npos);
  EXPECT_EQ(lsrc.find("rc0"), std::string::npos);
}

// keep=0: the outputs evaluate the bodies again and nothing is held per
// element but the row. A cached bf16 row is held as 32-bit words, two
// elements each, and split afresh in every pass; f32 and one-element
// vectors are held as loaded.
TEST(RowReductionPrinter, KeepZeroRecomputesAndSixteenBitRowsStayPacked) {
  const std::string kept = row_source("softmax", DType::kBF16, "cache=2 fast=1 rows=1 threads=128 vec=8");
  EXPECT_NE(kept.find("float kb1[kC][kV];"), std::string::npos);
  const std::string src = row_source("softmax", DType::kBF16, "cache=2 fast=1 keep=0 rows=1 threads=128 vec=8");
  EXPECT_EQ(src.find("kb1"), std::string::npos) << src;
  EXPECT_NE(src.find("o0 = (expf((fk_bf2f(in_x) - red0)) * rc0);"), std::string::npos) << src;
  EXPECT_NE(src.find("typedef fk_pack<unsigned, kV / 2> cache_t;"), std::string::npos);
  EXPECT_NE(src.find("c_x[j] = active ? fk_load_words<kV>(x_x, col0, cols, aligned) : cache_t();"), std::string::npos);
  EXPECT_NE(src.find("const pack_t v_x = fk_unwords<kV>(c_x[j]);"), std::string::npos);
  // Whole vectors run without a guard per lane; a row's last, partial one with.
  EXPECT_NE(src.find("if (col0 + kV <= cols) {\n#pragma unroll\n          for (int l = 0; l < kV; ++l) acc = fmaxf(acc, "
                     "fk_body0(v_x.v[l], red0, red1));"),
            std::string::npos)
      << src;
  EXPECT_NE(src.find("if (col0 + l < cols) acc = fmaxf(acc, fk_body0(v_x.v[l], red0, red1));"), std::string::npos);
  const std::string one = row_source("softmax", DType::kBF16, "cache=2 fast=1 rows=1 threads=128 vec=1");
  EXPECT_NE(one.find("typedef pack_t cache_t;"), std::string::npos);
  EXPECT_EQ(one.find("fk_unwords<kV>(c_x"), std::string::npos);
  const std::string f32 = row_source("softmax", DType::kF32, "cache=2 fast=1 rows=1 threads=128 vec=4");
  EXPECT_NE(f32.find("typedef pack_t cache_t;"), std::string::npos);
  EXPECT_NE(f32.find("const pack_t v_x = c_x[j];"), std::string::npos);
}

// keep=2: add_layernorm's variance pass reads the kept sum x + residual
// (the cached path only; re-reading rows evaluate the body as written), so
// neither input is read after the first pass.
TEST(RowReductionPrinter, KeptBodiesFeedLaterReductions) {
  const std::string src = row_source("add_layernorm", DType::kF32, "cache=4 fast=1 keep=2 rows=1 threads=128 vec=4");
  EXPECT_NE(src.find("float fk_cbody1(const float in_x, const float in_residual, const float in_w, const float in_b, "
                     "const float red0, const float red1, const float p_eps, const float kb0) {"),
            std::string::npos)
      << src;
  EXPECT_NE(src.find("(kb0 - red0)"), std::string::npos);
  EXPECT_NE(src.find("acc += fk_cbody1(v_x.v[l], v_residual.v[l], v_w.v[l], v_b.v[l], red0, red1, p_eps, kb0[j][l]);"),
            std::string::npos);
  // The re-reading path still evaluates the body from the inputs.
  EXPECT_NE(src.find("acc += fk_body1(v_x.v[l], v_residual.v[l], v_w.v[l], v_b.v[l], red0, red1, p_eps);"),
            std::string::npos);
  // keep=1 prints no fk_cbody; ops whose later reductions hold no kept body
  // print the same kernel for keep=1 and keep=2.
  EXPECT_EQ(row_source("add_layernorm", DType::kF32, "cache=4 fast=1 keep=1 rows=1 threads=128 vec=4").find("fk_cbody"),
            std::string::npos);
  // Let names carry a process-wide counter (b0_t35): compared without it.
  auto print = [](const char* op, const char* cfg) {
    return std::regex_replace(row_source(op, DType::kBF16, cfg), std::regex("_t[0-9]+"), "_t");
  };
  for (const char* op : {"softmax", "layernorm", "rmsnorm", "add_rmsnorm"})
    EXPECT_EQ(print(op, "cache=4 fast=1 keep=1 rows=1 threads=128 vec=8"),
              print(op, "cache=4 fast=1 keep=2 rows=1 threads=128 vec=8"))
        << op;
}

// smem=1: the first pass loads the row in batches of kB vectors and stages
// in shared memory only what a later pass or an output reads; later passes
// read the thread's own slots back. The launch asks for exactly those bytes.
TEST(RowReductionPrinter, StagedRowsHoldOnlyWhatLaterPassesRead) {
  auto print = [](const char* op, DType dt, const char* cfg) {
    const auto& c = find_pattern(op);
    return print_row_reduction_kernel(c, instantiate(c, dt), Config::parse(cfg), "k");
  };
  // add_layernorm keep=2: the kept sum x + residual feeds the variance and
  // both outputs, so neither input is staged: 512 threads x 8 vectors x 4
  // floats of it.
  const PrintedKernel kept = print("add_layernorm", DType::kF32, "cache=8 fast=1 keep=2 rows=1 smem=1 threads=512 vec=4");
  EXPECT_EQ(kept.launch.shared_bytes, 512 * 8 * 4 * 4);
  EXPECT_NE(kept.source.find("float* sk0 = reinterpret_cast<float*>(fk_stage + 0);"), std::string::npos) << kept.source;
  EXPECT_EQ(kept.source.find("s_x"), std::string::npos);
  EXPECT_EQ(kept.source.find("s_residual"), std::string::npos);
  EXPECT_NE(kept.source.find("kB = 4;"), std::string::npos);
  EXPECT_NE(kept.source.find("w_x[g] = active && col0 < cols ? fk_load<float, kV>(x_x, col0, cols, aligned) : cache_t();"),
            std::string::npos);
  EXPECT_NE(kept.source.find("sk0[(j * kV + l) * (kR * kT) + fk_at] = kbv; acc += kbv;"), std::string::npos);
  EXPECT_NE(kept.source.find("const pack_t v_x = pack_t();  // read by the first pass only"), std::string::npos);
  // keep=0: the later passes evaluate x + residual again, so both inputs are
  // staged and no body is.
  const PrintedKernel again = print("add_layernorm", DType::kF32, "cache=8 fast=1 keep=0 rows=1 smem=1 threads=512 vec=4");
  EXPECT_EQ(again.launch.shared_bytes, 2 * 512 * 8 * 4 * 4);
  EXPECT_NE(again.source.find("cache_t* s_x = reinterpret_cast<cache_t*>(fk_stage + 0);"), std::string::npos);
  EXPECT_NE(again.source.find("cache_t* s_residual = reinterpret_cast<cache_t*>(fk_stage + 65536);"), std::string::npos);
  EXPECT_EQ(again.source.find("sk0"), std::string::npos);
  // A bf16 softmax stages x as packed words and the kept exp as floats.
  const PrintedKernel soft = print("softmax", DType::kBF16, "cache=2 fast=1 keep=1 rows=2 smem=1 threads=128 vec=8");
  EXPECT_EQ(soft.launch.shared_bytes, 2 * 2 * 128 * 8 * 2 + 2 * 2 * 128 * 8 * 4);
  EXPECT_NE(soft.source.find("s_x[j * (kR * kT) + fk_at] = w_x[g];"), std::string::npos) << soft.source;
  EXPECT_NE(soft.source.find("const pack_t v_x = fk_unwords<kV>(s_x[j * (kR * kT) + fk_at]);"), std::string::npos);
  EXPECT_NE(soft.source.find("fk_load_words<kV>(x_x, col0, cols, aligned)"), std::string::npos);
  // Registers hold the row without smem=1: no dynamic shared memory.
  EXPECT_EQ(print("softmax", DType::kBF16, "cache=2 fast=1 keep=1 rows=2 threads=128 vec=8").launch.shared_bytes, 0);
  // More than any arch grants: refused with the bytes and the fix.
  try {
    print("add_layernorm", DType::kF32, "cache=16 fast=1 keep=1 rows=1 smem=1 threads=1024 vec=4");
    ADD_FAILURE() << "a 768 KiB staged row printed";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("stages 786432 bytes"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("lower cache, threads or rows"), std::string::npos);
  }
}

// persist=P: P blocks per SM (whole clusters, at most one per row group)
// loop over the row groups; each thread copies its slots of the next group
// into the second buffer (cp.async) before it works on the current one, so
// every full input is staged, twice.
TEST(RowReductionPrinter, PersistentBlocksCopyTheNextRowGroupAhead) {
  auto print = [](const char* op, DType dt, const char* cfg) {
    const auto& c = find_pattern(op);
    return print_row_reduction_kernel(c, instantiate(c, dt), Config::parse(cfg), "k");
  };
  // add_layernorm keep=2: both inputs in two buffers, the kept sum once.
  const PrintedKernel k =
      print("add_layernorm", DType::kF32, "cache=8 fast=1 keep=2 persist=2 rows=1 smem=1 split=4 threads=128 vec=4");
  EXPECT_EQ(k.launch.shared_bytes, 2 * 2 * 128 * 8 * 16 + 128 * 8 * 16);
  const std::string& src = k.source;
  EXPECT_NE(src.find("__launch_bounds__(128, 2) __cluster_dims__(4, 1, 1)"), std::string::npos) << src;
  EXPECT_NE(src.find("fk_copy_async<sizeof(cache_t)>(&s_residual_buffers[(b * kC + j) * (kR * kT) + fk_at], "
                     "g_residual + r * cols + col0);"),
            std::string::npos);
  EXPECT_NE(src.find("fetch(grp + stride, (it + 1) & 1);\n      fk_copy_commit();\n      fk_copy_wait_prior();"),
            std::string::npos);
  EXPECT_NE(src.find("cache_t* const s_x = s_x_buffers + (it & 1) * (kC * kR * kT);"), std::string::npos);
  // The first pass reads the staged row too; no pass loads the cached row
  // from memory, and the re-reading loop (rows that do not fit or are not
  // whole vectors) also walks the groups.
  EXPECT_EQ(src.find("w_x[g]"), std::string::npos);
  EXPECT_NE(src.find("if (aligned && cols <= kT * kS * kV * kC) {"), std::string::npos);
  EXPECT_NE(src.find("  for (long long grp = blockIdx.x / kS; grp < groups; grp += stride) {"), std::string::npos);
  // 1000 rows on 132 SMs: 66 clusters of 4 blocks; 10 rows: 10 clusters.
  // When the device holds fewer clusters at once (resident_blocks, from the
  // occupancy queries: 30 clusters of 4, as a GPC of 18 SMs fits four), the
  // grid is those; the shape symbol without that knowledge binds nothing.
  auto grid = [&](int64_t rows, int64_t resident) {
    int64_t v = 0;
    LaunchShape shape;
    shape.domain = {16384, rows};
    shape.sm_count = 132;
    shape.resident_blocks = resident;
    EXPECT_TRUE(k.launch.grid[0]
                    .evaluate([&](const std::string& n, int64_t* out) { return lookup_shape_symbol(shape, n, out); }, &v)
                    .ok());
    return v;
  };
  EXPECT_EQ(grid(1000, 0), 264);
  EXPECT_EQ(grid(10, 0), 40);
  EXPECT_EQ(grid(1000, 120), 120);
  EXPECT_EQ(grid(1000, 123), 120);  // whole clusters
  EXPECT_EQ(grid(10, 120), 40);
  EXPECT_EQ(grid(1000, 3), 4);      // at least one cluster
  // A bf16 row packed as words is copied as it lies in memory.
  const PrintedKernel soft = print("softmax", DType::kBF16, "cache=4 fast=1 keep=0 persist=1 rows=2 smem=1 threads=64 vec=8");
  EXPECT_EQ(soft.launch.shared_bytes, 2 * 2 * 64 * 4 * 16);
  EXPECT_NE(soft.source.find("typedef fk_pack<unsigned, kV / 2> cache_t;"), std::string::npos);
  EXPECT_NE(soft.source.find("const pack_t v_x = fk_unwords<kV>(s_x[j * (kR * kT) + fk_at]);"), std::string::npos);
  // Without a staged row, or with vectors an asynchronous copy cannot move
  // (2 or 32 bytes): refused with the fix.
  const std::pair<const char*, const char*> refused[] = {
      {"cache=4 fast=1 persist=1 rows=1 threads=64 vec=4", "set smem=1"},
      {"cache=4 fast=1 persist=1 rows=1 smem=1 threads=64 vec=1", "raise vec"},
      {"cache=4 fast=1 persist=1 rows=1 smem=1 threads=64 vec=16", "lower vec"}};
  for (const auto& [bad, fix] : refused) {
    try {
      print("softmax", DType::kBF16, bad);
      ADD_FAILURE() << bad << " printed";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(fix), std::string::npos) << e.what();
    }
  }
}

// unroll=4: every re-reading pass loads four vectors of each full input
// before it uses the first; unroll=1 (or absent) reads one at a time.
// onepass=1: a pair of reductions (layernorm's mean and variance, softmax's
// max and sum of exp) is reduced per thread and combined once; the pairs
// come from the Halide Exprs, so a user's own softmax has one too.
TEST(RowReductionPrinter, PairsOfReductionsCombineOnce) {
  auto pairs_of = [](const FusionCandidate& c) {
    std::vector<std::string> out;
    for (const ReductionPair& p : find_reduction_pairs(instantiate(c, DType::kF32)))
      out.push_back(std::to_string(p.first) + (p.kind == ReductionPair::Kind::kMeanVar ? " mean-var" : " max-sum"));
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(pairs_of(find_pattern("layernorm")), V{"0 mean-var"});
  EXPECT_EQ(pairs_of(find_pattern("add_layernorm")), V{"0 mean-var"});
  EXPECT_EQ(pairs_of(find_pattern("softmax")), V{"0 max-sum"});
  EXPECT_EQ(pairs_of(find_pattern("log_softmax")), V{"0 max-sum"});
  EXPECT_EQ(pairs_of(find_pattern("bias_add_softmax")), V{"0 max-sum"});
  EXPECT_EQ(pairs_of(find_pattern("rmsnorm")), V{});
  EXPECT_EQ(pairs_of(find_pattern("add_rmsnorm")), V{});
  EXPECT_EQ(pairs_of(parse_expression("out = exp(x - max(x, col)) / sum(exp(x - max(x, col)), col)")), V{"0 max-sum"});
  // Not pairs: a sum of squares about something else than the mean, and a
  // sum of exp(v - max) of another v.
  EXPECT_EQ(pairs_of(parse_expression("out = x / mean((x - mean(y, col)) * (x - mean(y, col)), col)")), V{});
  EXPECT_EQ(pairs_of(parse_expression("out = x / sum(exp(2 * x - max(x, col)), col)")), V{});
  const OpTraits ln = op_traits(find_pattern("layernorm"), DType::kBF16);
  EXPECT_EQ(ln.weight_inputs, 2);
  EXPECT_EQ(ln.reduction_pairs, 1);
  EXPECT_EQ(op_traits(find_pattern("softmax"), DType::kF32).weight_inputs, 0);

  // Both the cached path and the re-reading path (a longer row) combine
  // the pair once.
  const std::string one = row_source("layernorm", DType::kBF16, "cache=4 fast=1 keep=0 onepass=1 rows=1 threads=128 vec=8");
  const std::string two = row_source("layernorm", DType::kBF16, "cache=4 fast=1 keep=0 rows=1 threads=128 vec=8");
  EXPECT_EQ(count(one, "fk_row_combine_pair<kT, 0>(fk_stat{fk_m, fk_q, fk_n}"), 1u);
  EXPECT_EQ(count(one, "fk_row_combine_pair<kT, 0>(fk_t, fk_smem[threadIdx.y])"), 1u);
  EXPECT_EQ(count(one, "= fk_row_combine<kT, false>(acc"), 0u);
  EXPECT_EQ(count(two, "= fk_row_combine<kT, false>(acc"), 4u);
  EXPECT_EQ(count(two, "fk_stat"), 0u);
  // The variance's body is reduced about the thread's own mean, over the
  // elements it holds; the row's variance is the merged sum over cols.
  EXPECT_NE(one.find("const float fk_m = fk_n > 0.0f ? acc / fk_n : 0.0f;"), std::string::npos);
  EXPECT_NE(one.find("acc += fk_body1(v_x.v[l], v_w.v[l], v_b.v[l], fk_m, red1, p_eps);"), std::string::npos);
  EXPECT_NE(one.find("red1 = st.b / (float)cols;"), std::string::npos);
  // Re-reading, each vector's mean and squared deviations about it fold
  // into the thread's running statistic.
  EXPECT_NE(one.find("const float fk_m = acc / fk_n;"), std::string::npos);
  EXPECT_NE(one.find("fk_t = fk_update<0>(fk_t, fk_stat{fk_m, acc, fk_n});"), std::string::npos);
  // Softmax: the sum of exp(x - max) about the thread's max, skipped where
  // the thread has no finite element; exp(x - max) is not kept for the
  // outputs (it is not the row's).
  const std::string soft = row_source("softmax", DType::kF32, "cache=4 fast=1 keep=1 onepass=1 rows=1 threads=64 vec=4");
  EXPECT_NE(soft.find("if (fk_m != -__int_as_float(0x7f800000)) {"), std::string::npos);
  EXPECT_NE(soft.find("fk_row_combine_pair<kT, 1>"), std::string::npos);
  EXPECT_EQ(soft.find("kb1"), std::string::npos);
  EXPECT_NE(row_source("softmax", DType::kF32, "cache=4 fast=1 keep=1 rows=1 threads=64 vec=4").find("kb1"),
            std::string::npos);
  // Split rows: the pair's statistics go through the cluster once (on either
  // path), and the
  // slots hold three floats.
  const std::string split =
      row_source("add_layernorm", DType::kF32, "cache=4 fast=1 keep=2 onepass=1 rows=1 split=4 threads=128 vec=4");
  EXPECT_NE(split.find("__shared__ float fk_slot[2][kR][3];"), std::string::npos);
  EXPECT_EQ(count(split, "st = fk_cluster_combine_pair<kS, 0>(st, fk_slot[0][threadIdx.y]);"), 2u);  // both paths
  // Schedules that ask for what the op or the schedule lacks: UserError
  // naming the fix.
  const std::vector<std::pair<std::string, std::pair<std::string, std::string>>> bad = {
      {"rmsnorm", {"cache=4 fast=1 onepass=1 rows=1 threads=64 vec=4", "set onepass=0"}},
      {"softmax", {"cache=4 fast=1 rows=1 threads=64 vec=4 wbatch=1", "set wbatch=0"}},
      {"layernorm", {"cache=0 fast=1 rows=1 threads=64 vec=4 wbatch=1", "raise cache"}}};
  for (const auto& [op, cfg] : bad) {
    const auto& c = find_pattern(op);
    try {
      print_row_reduction_kernel(c, instantiate(c, DType::kF32), Config::parse(cfg.first), "k");
      ADD_FAILURE() << op << " " << cfg.first << " printed";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(cfg.second), std::string::npos) << e.what();
    }
  }
}

// wbatch=1: the output pass loads every vector of each weight first.
TEST(RowReductionPrinter, WeightsLoadAheadOfTheOutputPass) {
  const std::string src =
      row_source("layernorm", DType::kF32, "cache=4 fast=1 keep=2 rows=1 smem=1 threads=256 vec=4 wbatch=1");
  const size_t ahead = src.find("p_w[j] = active && col0 < cols ? fk_load<float, kV>(g_w, col0, cols, aligned)");
  const size_t use = src.find("const pack_t v_w = p_w[j];");
  ASSERT_NE(ahead, std::string::npos);
  ASSERT_NE(use, std::string::npos);
  EXPECT_LT(ahead, use);
  EXPECT_NE(src.find("p_b[j] = active"), std::string::npos);
  // Only the output pass: reductions and the re-reading path load as before.
  EXPECT_EQ(src.find("p_w", use + std::string("const pack_t v_w = p_w[j];").size()), std::string::npos);
}

// hint=1: loads carry L2 eviction policies. A re-read row is kept for the
// passes after the first and streamed by the last; weights are kept; a
// cached row is read once and streamed. hint=0 prints no policy.
TEST(RowReductionPrinter, LoadsTellTheL2WhatToKeep) {
  const std::string reread = row_source("layernorm", DType::kF32, "cache=0 fast=1 hint=1 rows=1 threads=256 vec=4");
  EXPECT_EQ(count(reread, "fk_load_hint<float, kV>(x_x, col0, cols, aligned, fk_keep)"), 2u);    // mean, variance
  EXPECT_EQ(count(reread, "fk_load_hint<float, kV>(x_x, col0, cols, aligned, fk_stream)"), 1u);  // outputs
  EXPECT_EQ(count(reread, "fk_load_hint<float, kV>(g_w, col0, cols, aligned, fk_keep)"), 3u);
  EXPECT_NE(reread.find("const unsigned long long fk_keep = fk_policy<true>(), fk_stream = fk_policy<false>();"),
            std::string::npos);
  const std::string cached = row_source("softmax", DType::kBF16, "cache=4 fast=1 hint=1 keep=0 rows=1 threads=128 vec=8");
  EXPECT_NE(cached.find("c_x[j] = active ? fk_load_words_hint<kV>(x_x, col0, cols, aligned, fk_stream) : cache_t();"),
            std::string::npos);
  const std::string staged =
      row_source("rmsnorm", DType::kBF16, "cache=4 fast=1 hint=1 keep=0 rows=1 smem=1 threads=128 vec=8");
  EXPECT_NE(staged.find("fk_load_words_hint<kV>(x_x, col0, cols, aligned, fk_stream)"), std::string::npos);
  const std::string plain = row_source("layernorm", DType::kF32, "cache=0 fast=1 rows=1 threads=256 vec=4");
  EXPECT_EQ(plain.find("fk_policy"), std::string::npos);
  EXPECT_EQ(plain.find("cache_hint"), std::string::npos);
  // hint=1 loads carry no L1 priority.
  EXPECT_EQ(count(reread, ", kV, 1>("), 0u);
  EXPECT_EQ(count(reread, ", kV, 2>("), 0u);
}

// hint=2: the L1 too (1: evict_last with fk_keep, 2: evict_first with
// fk_stream), and a row read once is kept, as Inductor reads a row first.
TEST(RowReductionPrinter, InductorsHintsTellTheL1Too) {
  const std::string reread = row_source("layernorm", DType::kF32, "cache=0 fast=1 hint=2 rows=1 threads=256 vec=4");
  EXPECT_EQ(count(reread, "fk_load_hint<float, kV, 1>(x_x, col0, cols, aligned, fk_keep)"), 2u);    // mean, variance
  EXPECT_EQ(count(reread, "fk_load_hint<float, kV, 2>(x_x, col0, cols, aligned, fk_stream)"), 1u);  // outputs
  EXPECT_EQ(count(reread, "fk_load_hint<float, kV, 1>(g_w, col0, cols, aligned, fk_keep)"), 3u);
  const std::string cached =
      row_source("rmsnorm", DType::kF32, "cache=4 fast=1 hint=2 keep=2 len=16384 rows=1 threads=1024 vec=4");
  EXPECT_NE(cached.find("c_x[j] = active ? fk_load_hint<float, kV, 1>(x_x, col0, cols, aligned, fk_keep) : cache_t();"),
            std::string::npos);
  EXPECT_NE(cached.find("FK_LDG_HINT(\".L1::evict_last\")"), std::string::npos);
  EXPECT_NE(cached.find("FK_LDG_HINT(\".L1::evict_first\")"), std::string::npos);
  const std::string staged =
      row_source("rmsnorm", DType::kBF16, "cache=4 fast=1 hint=2 keep=0 rows=1 smem=1 threads=128 vec=8");
  EXPECT_NE(staged.find("fk_load_words_hint<kV, 1>(x_x, col0, cols, aligned, fk_keep)"), std::string::npos);
}

TEST(RowReductionPrinter, UnrolledReReadsLoadABatchFirst) {
  const std::string src = row_source("add_layernorm", DType::kF32, "cache=0 fast=1 rows=1 threads=256 unroll=4 vec=4");
  EXPECT_NE(src.find("kU = 4;"), std::string::npos);
  // Three passes (two reductions and the outputs), each over batches.
  EXPECT_EQ(count(src, "c0 += kU * kT * kS * kV) {"), 3u) << src;
  EXPECT_NE(src.find("pack_t w_residual[kU];"), std::string::npos);
  EXPECT_NE(src.find("w_x[g] = active && col0 < cols ? fk_load<float, kV>(x_x, col0, cols, aligned) : pack_t();"),
            std::string::npos);
  EXPECT_NE(src.find("const pack_t v_x = w_x[g];"), std::string::npos);
  const std::string one = row_source("add_layernorm", DType::kF32, "cache=0 fast=1 rows=1 threads=256 vec=4");
  EXPECT_EQ(one.find("kU"), std::string::npos);
  // Let names carry a process-wide counter (b1_t13): compared without it.
  auto plain = [](const std::string& s) { return std::regex_replace(s, std::regex("_t[0-9]+"), "_t"); };
  EXPECT_EQ(plain(one), plain(row_source("add_layernorm", DType::kF32, "cache=0 fast=1 rows=1 threads=256 unroll=1 vec=4")));
  // The template bounds the bytes in flight: 4 x 16 bytes x 2 inputs fits, 4 x 16 x 3 does not.
  const ArchLimits& sm90 = require_arch("sm_90");
  EXPECT_TRUE(RowReductionTemplate::space(sm90, Backend::kNvrtc, 4, 2)
                  .legal(Config::parse("cache=0 fast=1 rows=1 split=1 threads=256 unroll=4 vec=4")));
  EXPECT_FALSE(RowReductionTemplate::space(sm90, Backend::kNvrtc, 4, 3)
                   .legal(Config::parse("cache=0 fast=1 rows=1 split=1 threads=256 unroll=4 vec=4")));
}

// A row split across a cluster: every block combines the cluster's partials
// and waits for the others' reads before it exits.
TEST(RowReductionPrinter, SplitRowsUseAClusterOfBlocks) {
  const auto& c = find_pattern("layernorm");
  PrintedKernel k = print_row_reduction_kernel(c, instantiate(c, DType::kF32),
                                               Config::parse("cache=8 fast=1 rows=1 split=8 threads=256 vec=4"), "k");
  EXPECT_NE(k.source.find("__cluster_dims__(8, 1, 1) k("), std::string::npos);
  EXPECT_NE(k.source.find("red0 = fk_cluster_combine<kS, false>(red0, &fk_slot[0][threadIdx.y]);"), std::string::npos);
  EXPECT_NE(k.source.find("red1 = fk_cluster_combine<kS, false>(red1, &fk_slot[1][threadIdx.y]);\n      fk_cluster_arrive();"),
            std::string::npos)
      << k.source;
  EXPECT_NE(k.source.find("fk_cluster_wait();\n    return;"), std::string::npos);
  const LaunchShape shape = layernorm_shape(1000, 65536);
  PreparedLaunch prepared;
  ASSERT_TRUE(prepare_launch(k.launch, shape, &prepared).ok());
  EXPECT_EQ(prepared.grid[0], 8000u);  // 8 blocks per row
  const std::string plain = print_row_reduction_kernel(c, instantiate(c, DType::kF32),
                                                       Config::parse("cache=8 fast=1 rows=1 threads=256 vec=4"), "k")
                                .source;
  EXPECT_EQ(plain.find("__cluster_dims__"), std::string::npos);
  EXPECT_EQ(plain.find("= fk_cluster_combine<"), std::string::npos);
}

// The database key must not depend on how many pipelines came before
// (Halide numbers the lets of Func definitions process-wide).
TEST(RowReductionCandidate, CanonicalTextIsStable) {
  const auto& c = find_pattern("add_layernorm");
  const std::string a = canonical_pipeline_text(c, DType::kF32);
  auto wl = make_candidate_workload(c, DType::kF32);
  EXPECT_EQ(canonical_pipeline_text(c, DType::kF32), a);
  EXPECT_NE(a.find("fk_red1 = mean over col of (let k0 = "), std::string::npos) << a;
}

TEST(RowReductionCandidate, ReductionsNeedTheRowsLayout) {
  FusionCandidate c = find_pattern("relu_add");
  c.algorithm = [](const AlgorithmContext& ctx) {
    return std::vector<Halide::Expr>{ctx.reduce(Reduction::kSum, ctx.in("x"))};
  };
  EXPECT_THROW(instantiate(c, DType::kF32), UserError);
}

}  // namespace
}  // namespace fusekit

namespace fusekit {
namespace {

TEST(RowReductionExpressions, UsersWriteTheirOwnSoftmax) {
  FusionCandidate c = parse_expression("out = exp(x - max(x, col)) / sum(exp(x - max(x, col)), col)");
  EXPECT_EQ(c.layout, Layout::kRows);
  auto wl = make_candidate_workload(c, DType::kF32);
  Problem p = wl->problem({3, 1});
  std::vector<HostTensor> in = {HostTensor::make(DType::kF32, p.input_dims[0])}, out;
  for (int i = 0; i < 3; ++i) in[0].set(i, static_cast<float>(i + 1));
  wl->reference(p, in, &out);
  const double s = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(out[0].get(i), std::exp(i + 1.0) / s, 1e-7);
  // And the printer turns it into the same two passes as the catalog's.
  const std::string src =
      print_row_reduction_kernel(c, instantiate(c, DType::kF32), Config::parse("cache=1 fast=0 rows=1 threads=32 vec=4"),
                                 "k")
          .source;
  EXPECT_NE(src.find("fk_row_combine<kT, true>"), std::string::npos);
  EXPECT_NE(src.find("fk_row_combine<kT, false>"), std::string::npos);
}

TEST(RowReductionExpressions, MeanWithBroadcastWeights) {
  // A user rmsnorm: x / sqrt(mean(x*x, col) + eps) * w[col], rows [3 4] -> rms 3.5355.
  FusionCandidate c = parse_expression("param eps = 0\nout = x / sqrt(mean(x * x, col) + eps) * w[col]");
  EXPECT_EQ(c.layout, Layout::kRows);
  auto wl = make_candidate_workload(c, DType::kF32);
  Problem p = wl->problem({2, 1});
  std::vector<HostTensor> in = {HostTensor::make(DType::kF32, p.input_dims[0]),
                                HostTensor::make(DType::kF32, p.input_dims[1])},
                          out;
  in[0].set(0, 3);
  in[0].set(1, 4);
  in[1].set(0, 1);
  in[1].set(1, 2);
  wl->reference(p, in, &out);
  const double rms = std::sqrt(12.5);
  EXPECT_NEAR(out[0].get(0), 3 / rms, 1e-6);
  EXPECT_NEAR(out[0].get(1), 2 * 4 / rms, 1e-6);
}

// gelu's erff is a float extern; the reference's double math must still call it.
TEST(RowReductionExpressions, ErfInsideARowOp) {
  FusionCandidate c = parse_expression("out = gelu(x - mean(x, col))");
  auto wl = make_candidate_workload(c, DType::kF32);
  Problem p = wl->problem({2, 1});
  std::vector<HostTensor> in = {HostTensor::make(DType::kF32, p.input_dims[0])}, out;
  in[0].set(0, 1);
  in[0].set(1, 3);
  wl->reference(p, in, &out);
  EXPECT_NEAR(out[0].get(1), 0.5 * (1 + std::erf(1 / std::sqrt(2.0))), 1e-6);
}

TEST(RowReductionExpressions, BinaryMaxStaysPointwiseAndErrorsNameThePosition) {
  EXPECT_EQ(parse_expression("out = max(x, y)").layout, Layout::kFlat);
  // A sum over rows (each column's) is a general layout, not a row reduction.
  EXPECT_TRUE(parse_expression("out = sum(x, row)").general);
  EXPECT_EQ(parse_error("out = x + sum(x)"),
            "expression:1:11: sum() reduces over axes: write sum(e, col) along each row, or e.g. sum(e, hw) or "
            "sum(e, n hw) over axes of an NCHW domain");
  EXPECT_NE(parse_error("out = sum(x, col) + s[c]").find("mixes the nchw and rowcol layouts"), std::string::npos);
}

}  // namespace
}  // namespace fusekit
