// Verification that can fail: for every catalog op and dtype, at the widths
// of the default sizes, outputs a broken kernel would write (all zeros, all
// NaN, never written, shifted by one row, missing a normalization) fail the
// comparison with the op's own tolerance; the reference itself passes.
#include <gtest/gtest.h>

#include <cmath>

#include "generator/candidate_workload.h"
#include "generator/candidates/catalog.h"
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
        std::vector<HostTensor> ref;
        wl->reference(p, in, &ref);
        const Tolerance tol = wl->tolerance(p);
        const std::string what = cand.name + " " + dtype_name(dt) + " " + p.shape_text;
        EXPECT_TRUE(compare_outputs(ref, ref, tol).passed()) << what;
        const int64_t row = domain.size() > 1 ? domain[0] : 1;
        for (const auto& [name, corrupt] : wrongs) {
          std::vector<HostTensor> got = ref;
          for (auto& t : got) corrupt(&t, row);
          const Comparison c = compare_outputs(got, ref, tol);
          EXPECT_FALSE(c.passed()) << what << ": " << name << " passed (max ratio " << c.max_ratio << ")";
        }
      }
    }
  }
}

}  // namespace
}  // namespace fusekit
