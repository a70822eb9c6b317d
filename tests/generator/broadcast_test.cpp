// General numpy broadcasting: the nd and ndrows layouts (axes d0..d3) in the
// expression language, the CPU reference against values computed here by
// plain loops on odd shapes, and their NVRTC and Halide kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "common/errors.h"
#include "generator/candidate_workload.h"
#include "generator/candidates/expr_parser.h"
#include "generator/candidates/op_traits.h"
#include "generator/halide/halide_backend.h"
#include "generator/nvrtc/kernel_printer.h"
#include "generator/nvrtc/nvrtc_compiler.h"
#include "schedules/arch_limits.h"
#include "schedules/row_reduction_template.h"
#include "tests/generator/parse_error.h"

namespace fusekit {
namespace {

// BERT's attention: scores [B, H, S, S] scaled, plus a [B, 1, 1, S] mask,
// softmax over the last axis.
constexpr const char* kMaskedSoftmax =
    "s = x * 0.125 + m[d0,d3]\n"
    "out = exp(s - max(s, col)) / sum(exp(s - max(s, col)), col)";
// A [1, S, D] position table and a [D] bias over [B, S, D], and a per-(h, b)
// value r[d1,d2] on a 4-D space.
constexpr const char* kPointwise = "out = x + pos[d0,d1] * 2 + b[d0] - r[d2,d3]";

// Deterministic inputs in [-2, 2).
HostTensor filled(const std::vector<int64_t>& dims, unsigned seed) {
  HostTensor t = HostTensor::make(DType::kF32, dims);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (int64_t k = 0; k < t.elements(); ++k) t.set(k, u(rng));
  return t;
}

// The reference's outputs for a domain (innermost first) and its inputs.
std::vector<HostTensor> reference(const FusionCandidate& c, const std::vector<int64_t>& domain,
                                  std::vector<HostTensor>* inputs) {
  auto wl = make_candidate_workload(c, DType::kF32);
  const Problem p = wl->problem(domain);
  for (size_t i = 0; i < c.inputs.size(); ++i) inputs->push_back(filled(p.input_dims[i], 11u + static_cast<unsigned>(i)));
  std::vector<HostTensor> out;
  wl->reference(p, *inputs, &out);
  return out;
}

TEST(Broadcast, ParserGivesTheNdLayouts) {
  const FusionCandidate pw = parse_expression(kPointwise);
  EXPECT_EQ(pw.layout, Layout::kNd);
  ASSERT_EQ(pw.inputs.size(), 4u);
  EXPECT_TRUE(pw.inputs[0].full());
  EXPECT_EQ(pw.inputs[1].axes, (std::vector<int>{0, 1}));
  EXPECT_EQ(pw.inputs[2].axes, (std::vector<int>{0}));
  EXPECT_EQ(pw.inputs[3].axes, (std::vector<int>{2, 3}));
  const FusionCandidate sm = parse_expression(kMaskedSoftmax);
  EXPECT_EQ(sm.layout, Layout::kNdRows);
  EXPECT_TRUE(sm.reduces());
  EXPECT_EQ(sm.full_inputs(), 2) << "the mask's rows are read like a full input's";
  // (e, d0) is the same reduction as (e, col).
  EXPECT_EQ(parse_expression("out = x - max(x + m[d0,d2], d0)").layout, Layout::kNdRows);
  EXPECT_EQ(parse_expression("out = x - max(x, d0)").layout, Layout::kNdRows);
}

TEST(Broadcast, ParserRefusesWhatNoLayoutIndexes) {
  // col/row and n/c/hw axes out of order are a permuted read (a general layout); d0..d3 take none.
  EXPECT_EQ(parse_error("out = x + m[d3,d0]"),
            "expression:1:11: list the axes of 'm' innermost first (d0 before d1 before d2 before d3)");
  EXPECT_EQ(parse_error("out = x + m[d4]"),
            "expression:1:13: axis 'd4' is out of range; nd expressions have at most four axes, d0 (the last) to d3");
  EXPECT_EQ(parse_error("out = x[col] + m[d0]"),
            "expression:1:18: axis 'd0' mixes the nd and rowcol layouts; use one of col/row, n/c/hw and d0..d3");
  EXPECT_EQ(parse_error("out = m[d1] + x[row]"),
            "expression:1:17: axis 'row' mixes the rowcol and nd layouts; use one of col/row, n/c/hw and d0..d3");
}

TEST(Broadcast, ShapesPadToFourAxes) {
  const FusionCandidate pw = parse_expression(kPointwise);
  EXPECT_EQ(pw.domain_for_shape({8, 128, 768}), (std::vector<int64_t>{768, 128, 8, 1}));
  EXPECT_EQ(pw.domain_for_shape({2, 12, 128, 128}), (std::vector<int64_t>{128, 128, 12, 2}));
  try {
    pw.domain_for_shape({2, 3, 4, 5, 6});
    ADD_FAILURE() << "a 5-D shape has no nd domain";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("takes up to d3 x d2 x d1 x d0"), std::string::npos) << e.what();
  }
  EXPECT_EQ(pw.odd_domain(), (std::vector<int64_t>{101, 7, 5, 3}));
  EXPECT_EQ(pw.input_dims(1, {101, 7, 5, 3}), (std::vector<int64_t>{101, 7}));
  EXPECT_EQ(pw.input_dims(3, {101, 7, 5, 3}), (std::vector<int64_t>{5, 3}));
}

TEST(Broadcast, PointwiseReferenceMatchesLoops) {
  const FusionCandidate c = parse_expression(kPointwise);
  const std::vector<int64_t> dom = {7, 5, 3, 3};  // d0..d3, every extent odd
  std::vector<HostTensor> in;
  const std::vector<HostTensor> out = reference(c, dom, &in);
  int64_t k = 0;
  for (int64_t i3 = 0; i3 < dom[3]; ++i3)
    for (int64_t i2 = 0; i2 < dom[2]; ++i2)
      for (int64_t i1 = 0; i1 < dom[1]; ++i1)
        for (int64_t i0 = 0; i0 < dom[0]; ++i0, ++k) {
          const double want = in[0].get(k) + in[1].get(i0 + dom[0] * i1) * 2.0 + in[2].get(i0) -
                              in[3].get(i2 + dom[2] * i3);
          ASSERT_NEAR(out[0].get(k), want, 1e-5) << "at " << i0 << "," << i1 << "," << i2 << "," << i3;
        }
}

TEST(Broadcast, MaskedSoftmaxReferenceMatchesLoops) {
  const FusionCandidate c = parse_expression(kMaskedSoftmax);
  const std::vector<int64_t> dom = {13, 5, 3, 3};  // [B=3, H=3, S=5, S'=13]
  std::vector<HostTensor> in;
  const std::vector<HostTensor> out = reference(c, dom, &in);  // s, then the softmax
  ASSERT_EQ(in[1].dims, (std::vector<int64_t>{13, 3}));
  ASSERT_EQ(out.size(), 2u);
  for (int64_t row = 0; row < dom[1] * dom[2] * dom[3]; ++row) {
    const int64_t b = row / (dom[1] * dom[2]);
    std::vector<double> s(static_cast<size_t>(dom[0]));
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < dom[0]; ++j) {
      s[j] = in[0].get(row * dom[0] + j) * 0.125 + in[1].get(j + dom[0] * b);
      mx = std::max(mx, s[j]);
    }
    for (double v : s) sum += std::exp(v - mx);
    for (int64_t j = 0; j < dom[0]; ++j)
      ASSERT_NEAR(out[1].get(row * dom[0] + j), std::exp(s[j] - mx) / sum, 1e-6) << "row " << row << " col " << j;
  }
}

void expect_compiles(const FusionCandidate& c, DType dt, const Config& config) {
  SCOPED_TRACE(config.to_string());
  const PrintedKernel k = print_nvrtc_kernel(c, instantiate(c, dt), config, "k");
  const NvrtcResult r = compile_cuda_to_cubin(k.source, "k", require_arch("sm_90").arch, true);
  EXPECT_TRUE(r.ok) << r.log << "\n" << k.source;
}

// `n` schedules of the template compiled for sm_90: the seeds the space
// allows, then samples (a sample the printer refuses for this op, as the
// tuner records it, is skipped).
void expect_some_compile(const FusionCandidate& c, DType dt, size_t n) {
  const ArchLimits& sm90 = require_arch("sm_90");
  const int bytes = static_cast<int>(dtype_bytes(dt));
  ParamSpace space = template_space(c.template_kind(), sm90, Backend::kNvrtc, bytes, c.full_inputs(), op_traits(c, dt));
  std::vector<Config> tries;
  for (const Config& s : template_seeds(c.template_kind(), Backend::kNvrtc, bytes))
    if (space.legal(s) && tries.size() < n / 2) tries.push_back(s);
  std::mt19937_64 rng(5);
  for (int k = 0; k < 64; ++k) tries.push_back(space.sample(rng));
  size_t compiled = 0;
  const Pipeline p = instantiate(c, dt);
  for (const Config& config : tries) {
    if (compiled == n) break;
    try {
      print_nvrtc_kernel(c, p, config, "k");
    } catch (const UserError&) {
      continue;
    }
    expect_compiles(c, dt, config);
    ++compiled;
  }
  EXPECT_EQ(compiled, n);
}

TEST(Broadcast, PointwiseKernelsIndexWithoutADivisionPerElement) {
  const FusionCandidate c = parse_expression(kPointwise);
  const PrintedKernel k = print_nvrtc_kernel(c, instantiate(c, DType::kF32),
                                       Config::parse("ept=2 fast=0 grid=0 threads=128 vec=4"), "k");
  // Coordinates once per vector (magic divisions by launch constants),
  // advanced incrementally across lanes.
  EXPECT_NE(k.source.find("c[3] = fk_div(q2, e2, m2, s2); c[2] = q2 - c[3] * e2;"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("if (++c[2] == d2) { c[2] = 0; ++c[3]; }"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("g_pos[c[0] + d0 * (c[1])]"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("g_r[c[2] + d2 * (c[3])]"), std::string::npos) << k.source;
  for (DType dt : {DType::kF32, DType::kBF16})
    expect_some_compile(c, dt, 3);
  // plane=1: inputs constant over an innermost row, loaded once per block.
  const FusionCandidate plane = parse_expression("out = x * r[d2,d3] + q[d1]");
  EXPECT_EQ(op_traits(plane, DType::kF32).plane_inputs, 2);
  const Config pc = Config::parse("ept=1 fast=0 grid=0 plane=1 threads=128 vec=4");
  const std::string src = print_nvrtc_kernel(plane, instantiate(plane, DType::kF32), pc, "k").source;
  EXPECT_NE(src.find("c[3] = fk_div(p2, d2, m2, s2);"), std::string::npos) << src;
  expect_compiles(plane, DType::kF32, pc);
}

TEST(Broadcast, RowKernelsSplitTheRowIndexOncePerRow) {
  const FusionCandidate c = parse_expression(kMaskedSoftmax + std::string(" + w[d1,d2]"));
  const PrintedKernel k = print_nvrtc_kernel(c, instantiate(c, DType::kF32),
                                       Config::parse("cache=2 fast=0 rows=1 split=1 threads=128 vec=4"), "k");
  EXPECT_NE(k.source.find("const long long cq = (active ? row : 0) / e1, c1 = (active ? row : 0) - cq * e1, c3 = cq / "
                          "e2, c2 = cq - c3 * e2;"),
            std::string::npos)
      << k.source;
  EXPECT_NE(k.source.find("x_m = g_m + (c3) * (long long)cols;"), std::string::npos) << k.source;
  EXPECT_NE(k.source.find("r_w = g_w[c1 + e1 * (c2)];"), std::string::npos) << k.source;
  std::vector<std::string> shapes;  // rows, cols, then the extents a row index splits by
  for (const KernelParam& p : k.launch.params)
    if (p.kind == KernelParam::Kind::kShape) shapes.push_back(p.expr.to_string());
  EXPECT_EQ(shapes, (std::vector<std::string>{"(mul d1 (mul d2 d3))", "d0", "d1", "d2"}));
  for (DType dt : {DType::kF32, DType::kBF16})
    expect_some_compile(c, dt, 2);
  // Persistent blocks stage the mask's rows too.
  expect_compiles(c, DType::kF32, Config::parse("cache=2 fast=0 persist=2 rows=1 smem=1 split=1 threads=128 vec=4"));
}

TEST(Broadcast, HalideBuildsTheNdLayouts) {
  const ArchLimits& sm90 = require_arch("sm_90");
  const KernelArtifact pw =
      build_halide_kernel(parse_expression(kPointwise), DType::kF32, Config::parse("ept=1 threads=128 vec=1"), sm90, "k");
  EXPECT_FALSE(pw.image.empty());
  const KernelArtifact rows =
      build_halide_kernel(parse_expression(kMaskedSoftmax), DType::kF32, Config::parse("threads=128"), sm90, "k");
  EXPECT_FALSE(rows.image.empty());
}

}  // namespace
}  // namespace fusekit
