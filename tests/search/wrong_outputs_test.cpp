// Verification that can fail: for every catalog op and dtype, at the widths
// of the default sizes, outputs a broken kernel would write (all zeros, all
// NaN, never written, shifted by one row, missing a normalization) fail the
// comparison with the op's own tolerance and the reference's slack; the
// reference itself passes. An ill-conditioned reference widens the tolerance
// by its own error there, and only there.
#include <gtest/gtest.h>

#include <cmath>

#include "generator/candidate_workload.h"
#include "generator/candidates/catalog.h"
#include "generator/candidates/expr_parser.h"
#include "search/host_problem.h"
#include "search/workload.h"

namespace fusekit {
namespace {

// Small problems with the default sizes' row lengths (the tolerance depends
// on them): pointwise counts, and 3 rows of each default column count.
std::vector<std::vector<int64_t>> domains_for(const FusionCandidate& c) {
  if (c.reduces()) return {{1024, 3}, {4096, 3}, {16384, 3}, {65536, 3}, {3001, 3}};
  return {c.domain_for_elements(4096), c.domain_for_elements(65536)};
}

using Corrupt = void (*)(HostTensor* t, int64_t row);

void zeros(HostTensor* t, int64_t) {
  for (int64_t i = 0; i < t->elements(); ++i) t->set(i, 0.0f);
}
void nans(HostTensor* t, int64_t) {
  for (int64_t i = 0; i < t->elements(); ++i) t->set(i, NAN);
}
void unwritten(HostTensor* t, int64_t) { std::fill(t->bytes.begin(), t->bytes.end(), kPoisonByte); }
void shifted(HostTensor* t, int64_t row) {
  const HostTensor ref = *t;
  const int64_t n = t->elements();
  for (int64_t i = 0; i < n; ++i) t->set(i, ref.get((i + row) % n));
}
void unnormalized(HostTensor* t, int64_t) {
  for (int64_t i = 0; i < t->elements(); ++i) t->set(i, t->get(i) * 1.5f);
}

TEST(WrongOutputs, FailVerificationForEveryCatalogOpAndDtype) {
  const std::pair<const char*, Corrupt> wrongs[] = {
      {"all zeros", zeros}, {"all NaN", nans}, {"never written", unwritten},
      {"shifted by one row", shifted}, {"unnormalized", unnormalized}};
  for (const FusionCandidate& cand : catalog()) {
    for (DType dt : {DType::kF32, DType::kF16, DType::kBF16}) {
      auto wl = make_candidate_workload(cand, dt);
      for (const auto& domain : domains_for(cand)) {
        const Problem p = wl->problem(domain);
        std::vector<HostTensor> in;
        for (size_t i = 0; i < p.input_dims.size(); ++i) {
          in.push_back(HostTensor::make(dt, p.input_dims[i]));
          wl->fill_input(i, 7 + i, &in.back());
        }
        std::vector<HostTensor> ref, slack;
        wl->reference(p, in, &ref);
        wl->reference_slack(p, in, ref, &slack);
        const Tolerance tol = wl->tolerance(p);
        const std::string what = cand.name + " " + dtype_name(dt) + " " + p.shape_text;
        EXPECT_TRUE(compare_outputs(ref, ref, tol, slack).passed()) << what;
        const int64_t row = domain.size() > 1 ? domain[0] : 1;
        for (const auto& [name, corrupt] : wrongs) {
          std::vector<HostTensor> got = ref;
          for (auto& t : got) corrupt(&t, row);
          const Comparison c = compare_outputs(got, ref, tol, slack);
          EXPECT_FALSE(c.passed()) << what << ": " << name << " passed (max ratio " << c.max_ratio << ")";
        }
      }
    }
  }
}

// Inputs (input i seeded with 11 + i), reference, slack and tolerance of `wl` at `domain`.
HostProblem evaluate(const Workload& wl, const std::vector<int64_t>& domain) {
  HostProblem e;
  e.problem = wl.problem(domain);
  for (size_t i = 0; i < e.problem.input_dims.size(); ++i) {
    e.inputs.push_back(HostTensor::make(wl.dtype(), e.problem.input_dims[i]));
    wl.fill_input(i, 11 + i, &e.inputs.back());
  }
  wl.reference(e.problem, e.inputs, &e.reference);
  wl.reference_slack(e.problem, e.inputs, e.reference, &e.slack);
  e.tolerance = wl.tolerance(e.problem);
  return e;
}

// A row reduction that cancels (the sum of a row is about as large as its
// terms' rounding): an f32 evaluation, as a kernel computes it, fails the
// f64 reference's tolerance alone and passes with the slack; wrong outputs
// still fail.
TEST(IllConditionedReference, CancellingRowSumPassesAnF32KernelOnly) {
  const FusionCandidate c = parse_expression("out = x - sum(0.5 * 0.1 + x, col)");
  auto wl = make_candidate_workload(c, DType::kF32);
  const HostProblem e = evaluate(*wl, {4097, 61});
  ASSERT_EQ(e.slack.size(), 1u) << "the two evaluations agreed: no cancellation detected";
  // What an f32 kernel computes: the same math, summed in f32 (here in the reverse order).
  std::vector<HostTensor> got = e.reference;
  const int64_t cols = 4097;
  for (int64_t r = 0; r < 61; ++r) {
    float sum = 0;
    for (int64_t k = cols; k-- > 0;) sum += 0.05f + e.inputs[0].get(r * cols + k);
    for (int64_t k = 0; k < cols; ++k) got[0].set(r * cols + k, e.inputs[0].get(r * cols + k) - sum);
  }
  const Tolerance tol = e.tolerance;
  EXPECT_FALSE(compare_outputs(got, e.reference, tol).passed()) << "no cancellation at this size: pick a harder case";
  const Comparison with = compare_outputs(got, e.reference, tol, e.slack);
  EXPECT_TRUE(with.passed()) << with.detail;
  EXPECT_GT(with.widened, 0);
  for (Corrupt corrupt : {zeros, nans, unwritten, shifted, unnormalized}) {
    std::vector<HostTensor> bad = e.reference;
    corrupt(&bad[0], cols);
    EXPECT_FALSE(compare_outputs(bad, e.reference, tol, e.slack).passed());
  }
}

// Well-conditioned references get no slack: the tolerance stays as tight as before.
TEST(IllConditionedReference, WellConditionedOpsHaveNoSlack) {
  for (const char* name : {"softmax", "layernorm", "bias_gelu", "silu_mul"})
    for (DType dt : {DType::kF32, DType::kBF16}) {
      const FusionCandidate& c = find_pattern(name);
      auto wl = make_candidate_workload(c, dt);
      const HostProblem e = evaluate(*wl, c.reduces() ? std::vector<int64_t>{1024, 7} : c.domain_for_elements(65537));
      EXPECT_TRUE(e.slack.empty()) << name << " " << dtype_name(dt);
    }
}

}  // namespace
}  // namespace fusekit
