// General layouts (reductions over named non-last axes, permuted inputs):
// the expression form, the CPU reference against values computed here by
// plain loops on odd shapes, the Halide builds for sm_90 in every dtype,
// and the NVRTC backend's refusal.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "common/errors.h"
#include "generator/candidate_workload.h"
#include "generator/candidates/expr_parser.h"
#include "generator/candidates/general_layout.h"
#include "generator/candidates/op_traits.h"
#include "generator/halide/halide_backend.h"
#include "generator/nvrtc/kernel_printer.h"
#include "schedules/row_reduction_template.h"

namespace fusekit {
namespace {

std::string example(const std::string& name) {
  std::ifstream f(std::string(FUSEKIT_SOURCE_DIR) + "/examples/general_layouts/" + name + ".fk");
  std::stringstream s;
  s << f.rdbuf();
  EXPECT_FALSE(s.str().empty()) << name;
  return s.str();
}

// Inputs filled with a fixed pseudo-random pattern in [-3, 3).
std::vector<HostTensor> inputs_for(const Problem& p, DType dt) {
  std::vector<HostTensor> in;
  for (size_t i = 0; i < p.input_dims.size(); ++i) {
    in.push_back(HostTensor::make(dt, p.input_dims[i]));
    fill_uniform(&in.back(), 17 + i, -3.0f, 3.0f);
  }
  return in;
}

struct Ran {
  Problem problem;
  std::vector<HostTensor> in, out;
};

Ran run(const FusionCandidate& c, DType dt, const std::vector<int64_t>& domain) {
  auto wl = make_candidate_workload(c, dt);
  Ran r{wl->problem(domain), {}, {}};
  r.in = inputs_for(r.problem, dt);
  wl->reference(r.problem, r.in, &r.out);
  return r;
}

// Tolerance of a value rounded to the storage dtype.
double tol(DType dt) { return dt == DType::kF32 ? 1e-5 : dt == DType::kF16 ? 2e-3 : 1e-2; }

const DType kDtypes[] = {DType::kF32, DType::kF16, DType::kBF16};

TEST(GeneralLayoutExpressions, TheFourExamplesParseAsGeneralLayouts) {
  const FusionCandidate gap = parse_expression(example("global_avg_pool"));
  EXPECT_TRUE(gap.general);
  EXPECT_EQ(gap.layout, Layout::kNchw);
  EXPECT_EQ(gap.output_axes, (std::vector<int>{1, 2}));  // c, n
  EXPECT_EQ(gap.template_kind(), TemplateKind::kGeneral);
  const FusionCandidate bn = parse_expression(example("batchnorm_stats"));
  EXPECT_EQ(bn.output_axes, (std::vector<int>{1}));  // c
  EXPECT_EQ(bn.outputs, (std::vector<std::string>{"m", "v"}));
  const FusionCandidate sm = parse_expression(example("softmax_dim1"));
  EXPECT_EQ(sm.output_axes, (std::vector<int>{0, 1, 2}));
  const FusionCandidate tg = parse_expression(example("transpose_bias_gelu"));
  EXPECT_EQ(tg.layout, Layout::kRowCol);
  ASSERT_EQ(tg.inputs.size(), 2u);
  EXPECT_TRUE(tg.inputs[0].permuted());
  EXPECT_EQ(tg.inputs[0].axes, (std::vector<int>{1, 0}));
  EXPECT_EQ(tg.input_dims(0, {5, 3}), (std::vector<int64_t>{3, 5}));
  // What stays as before: a row reduction along col, and ascending axes.
  EXPECT_EQ(parse_expression("out = x - max(x, col)").layout, Layout::kRows);
  EXPECT_FALSE(parse_expression("out = x - max(x, col)").general);
  EXPECT_FALSE(parse_expression("out = x * s[c]").general);
  EXPECT_EQ(parse_expression("out = max(x, c)").layout, Layout::kNchw);  // an axis name: a reduction over c
  EXPECT_FALSE(parse_expression("out = c + max(x, c)").general);  // c is an input by then: max of two inputs
  // A reduction inside max(a, b)'s first argument, parsed again once max
  // turns out to be a call (the grammar fuzz's find): a row reduction.
  EXPECT_EQ(parse_expression("o1 = max(mean(z, col), -min(1, z))").layout, Layout::kRows);
}

TEST(GeneralLayoutExpressions, ErrorsNameTheAxesAndTheFix) {
  auto error = [](const std::string& src) {
    try {
      parse_expression(src);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("out = sum(s[c], hw)"), "expression:1:7: sum() over hw of a value that does not vary along hw");
  EXPECT_NE(error("a = mean(x, hw); b = x").find("output 'b' varies along hw c n but 'a' along c n"), std::string::npos);
  EXPECT_NE(error("out = mean(x, hw hw)").find("axis 'hw' repeated"), std::string::npos);
  EXPECT_NE(error("out = mean(x, hw, col)").find("mixes"), std::string::npos);
  EXPECT_NE(error("out = mean(x)").find("mean(e, hw)"), std::string::npos);
}

TEST(GeneralLayoutReference, GlobalAveragePoolIsTheMeanOverHw) {
  const FusionCandidate c = parse_expression(example("global_avg_pool"));
  for (DType dt : kDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    const int64_t hw = 7, ch = 5, n = 3;
    Ran r = run(c, dt, {hw, ch, n});
    ASSERT_EQ(r.out.at(0).dims, (std::vector<int64_t>{ch, n}));
    for (int64_t b = 0; b < n; ++b)
      for (int64_t k = 0; k < ch; ++k) {
        double s = 0;
        for (int64_t i = 0; i < hw; ++i) s += r.in[0].get(i + hw * (k + ch * b));
        EXPECT_NEAR(r.out[0].get(k + ch * b), s / hw, tol(dt) * std::max(1.0, std::abs(s / hw))) << k << " " << b;
      }
  }
}

TEST(GeneralLayoutReference, BatchNormStatisticsPerChannel) {
  const FusionCandidate c = parse_expression(example("batchnorm_stats"));
  for (DType dt : kDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    const int64_t hw = 9, ch = 3, n = 5;
    Ran r = run(c, dt, {hw, ch, n});
    ASSERT_EQ(r.out.size(), 2u);
    ASSERT_EQ(r.out[0].dims, (std::vector<int64_t>{ch}));
    for (int64_t k = 0; k < ch; ++k) {
      double s = 0, q = 0;
      for (int64_t b = 0; b < n; ++b)
        for (int64_t i = 0; i < hw; ++i) s += r.in[0].get(i + hw * (k + ch * b));
      const double mean = s / (n * hw);
      for (int64_t b = 0; b < n; ++b)
        for (int64_t i = 0; i < hw; ++i) q += std::pow(r.in[0].get(i + hw * (k + ch * b)) - mean, 2);
      EXPECT_NEAR(r.out[0].get(k), mean, tol(dt) * std::max(1.0, std::abs(mean))) << k;
      EXPECT_NEAR(r.out[1].get(k), q / (n * hw), tol(dt) * std::max(1.0, q / (n * hw))) << k;
    }
  }
}

TEST(GeneralLayoutReference, SoftmaxOverChannels) {
  const FusionCandidate c = parse_expression(example("softmax_dim1"));
  for (DType dt : kDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    const int64_t hw = 5, ch = 7, n = 3;
    Ran r = run(c, dt, {hw, ch, n});
    ASSERT_EQ(r.out.at(0).dims, (std::vector<int64_t>{hw, ch, n}));
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < hw; ++i) {
        double mx = -1e30, s = 0, total = 0;
        for (int64_t k = 0; k < ch; ++k) mx = std::max<double>(mx, r.in[0].get(i + hw * (k + ch * b)));
        for (int64_t k = 0; k < ch; ++k) s += std::exp(r.in[0].get(i + hw * (k + ch * b)) - mx);
        for (int64_t k = 0; k < ch; ++k) {
          const double want = std::exp(r.in[0].get(i + hw * (k + ch * b)) - mx) / s;
          const double got = r.out[0].get(i + hw * (k + ch * b));
          EXPECT_NEAR(got, want, tol(dt) * std::max(0.1, want)) << i << " " << k << " " << b;
          total += got;
        }
        EXPECT_NEAR(total, 1.0, 5 * tol(dt) * ch);
      }
  }
}

TEST(GeneralLayoutReference, TransposeBiasGelu) {
  const FusionCandidate c = parse_expression(example("transpose_bias_gelu"));
  auto gelu = [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); };
  for (DType dt : kDtypes) {
    SCOPED_TRACE(dtype_name(dt));
    const int64_t cols = 11, rows = 7;
    Ran r = run(c, dt, {cols, rows});
    ASSERT_EQ(r.problem.input_dims[0], (std::vector<int64_t>{rows, cols}));  // x stored [cols, rows]
    ASSERT_EQ(r.out.at(0).dims, (std::vector<int64_t>{cols, rows}));
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t col = 0; col < cols; ++col) {
        const double want = gelu(r.in[0].get(row + rows * col) + r.in[1].get(col));
        EXPECT_NEAR(r.out[0].get(col + cols * row), want, tol(dt) * std::max(1.0, std::abs(want)));
      }
  }
}

TEST(GeneralLayoutBuild, TheFirstSeedsTheSpaceKeepsBuildForSm90InEveryDtype) {
  const ArchLimits& sm90 = require_arch("sm_90");
  for (const char* name : {"global_avg_pool", "batchnorm_stats", "softmax_dim1", "transpose_bias_gelu"}) {
    const FusionCandidate c = parse_expression(example(name));
    for (DType dt : kDtypes) {
      SCOPED_TRACE(std::string(name) + " " + dtype_name(dt));
      const int bytes = static_cast<int>(dtype_bytes(dt));
      const ParamSpace space = template_space(TemplateKind::kGeneral, sm90, Backend::kHalide, bytes, 1, op_traits(c, dt));
      int built = 0;
      for (const Config& seed : template_seeds(TemplateKind::kGeneral, Backend::kHalide, bytes)) {
        if (!space.legal(seed) || built == 2) continue;  // two per op and dtype keep the test short
        SCOPED_TRACE(seed.to_string());
        KernelArtifact a = build_halide_kernel(c, dt, space.complete(seed), sm90, "fk_general");
        EXPECT_EQ(a.image_kind, ImageKind::kPtx);
        EXPECT_NE(a.image.find(".entry " + a.entry), std::string::npos);
        EXPECT_EQ(a.image.find(".extern .func"), std::string::npos);
        int outputs = 0;
        for (const auto& p : a.params) outputs += p.kind == KernelParam::Kind::kOutput;
        EXPECT_EQ(outputs, static_cast<int>(c.outputs.size()));
        ++built;
      }
      EXPECT_EQ(built, 2);
      // The generic schedule a package carries is legal and builds.
      EXPECT_TRUE(space.legal(generic_schedule(TemplateKind::kGeneral)));
      EXPECT_EQ(generic_backend(TemplateKind::kGeneral), Backend::kHalide);
    }
  }
}

TEST(GeneralLayoutBuild, NvrtcRefusesWithTheReason) {
  const FusionCandidate c = parse_expression(example("softmax_dim1"));
  const ArchLimits& sm90 = require_arch("sm_90");
  EXPECT_TRUE(template_space(TemplateKind::kGeneral, sm90, Backend::kNvrtc, 4, 1, op_traits(c, DType::kF32))
                  .enumerate()
                  .empty() ||
              template_space(TemplateKind::kGeneral, sm90, Backend::kNvrtc, 4, 1, op_traits(c, DType::kF32))
                  .domains()
                  .empty());
  try {
    print_nvrtc_kernel(c, instantiate(c, DType::kF32), generic_schedule(TemplateKind::kGeneral), "fk_x");
    FAIL() << "the NVRTC printer took a general layout";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("nvrtc backend: " + c.name + " has a general layout"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("use --backend halide"), std::string::npos);
  }
  // Through the builder: a failed build with the message, no crash.
  auto builder = make_kernel_builder(c, DType::kF32, sm90);
  BuildResult r = builder->build({{Backend::kNvrtc, generic_schedule(TemplateKind::kGeneral)}}).front();
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("general layout"), std::string::npos) << r.error;
}

TEST(GeneralLayoutBuild, TraitsDescribeTheFour) {
  const GeneralTraits gap = general_traits(parse_expression(example("global_avg_pool")), DType::kF32);
  EXPECT_EQ(gap.thread_axes, 2);
  EXPECT_TRUE(gap.reduces);
  EXPECT_TRUE(gap.outputs_are_kept);
  const GeneralTraits sm = general_traits(parse_expression(example("softmax_dim1")), DType::kF32);
  EXPECT_EQ(sm.thread_axes, 2);  // hw and n; c is a loop in each thread
  EXPECT_FALSE(sm.outputs_are_kept);
  const GeneralTraits tg = general_traits(parse_expression(example("transpose_bias_gelu")), DType::kF32);
  EXPECT_EQ(tg.thread_axes, 2);
  EXPECT_FALSE(tg.reduces);
  EXPECT_EQ(tg.permuted_inputs, 1);
}

}  // namespace
}  // namespace fusekit
