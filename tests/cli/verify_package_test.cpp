// The problems `fusekit verify --package` runs: one odd shape per bucket.
#include <gtest/gtest.h>

#include "cli/verify_package.h"
#include "fusekit/shape_bucket.h"
#include "generator/candidates/catalog.h"

namespace fusekit {
namespace {

TEST(VerifyPackage, OddDomainsLandInTheirBucket) {
  for (const auto& c : catalog()) {
    for (int k = 2; k <= 30; ++k) {  // (1, 2] holds no odd count
      const std::vector<int64_t> d = odd_domain_in_bucket(c, k);
      ASSERT_EQ(d.size(), c.odd_domain().size()) << c.name << " k=" << k;
      int64_t n = 1;
      for (int64_t e : d) {
        EXPECT_GE(e, 1);
        EXPECT_EQ(e % 2, 1) << c.name << " k=" << k << ": every extent odd";
        n *= e;
      }
      EXPECT_EQ(shape_bucket_log2(n), k) << c.name << " n=" << n;
    }
  }
  // Large buckets keep the catalog's odd inner extents (broadcast rows and
  // channels of odd length) and stretch the outermost one.
  const auto& gelu = find_pattern("bias_gelu");
  EXPECT_EQ(odd_domain_in_bucket(gelu, 20)[0], gelu.odd_domain()[0]);
}

// A GEMM tail that indexes no input by axis is still one over [M, N], as
// the build lays it out; read back as a bare expression it would be flat.
TEST(VerifyPackage, GemmTailsKeepTheirRowColumnLayout) {
  const nlohmann::json manifest = {
      {"gemms", {{{"op", "llama_gate_up"}, {"epilogue", "out = silu(acc) * acc2"}, {"b_transposed", true}}}},
      {"expressions", {{"llama_gate_up_tail", "out = silu(acc) * acc2"}, {"mine", "out = x * 2"}}}};
  const std::optional<FusionCandidate> tail = package_op(manifest, "llama_gate_up_tail");
  ASSERT_TRUE(tail.has_value());
  EXPECT_EQ(tail->layout, Layout::kRowCol);
  EXPECT_EQ(tail->odd_domain().size(), 2u);
  const std::optional<FusionCandidate> mine = package_op(manifest, "mine");
  ASSERT_TRUE(mine.has_value());
  EXPECT_EQ(mine->layout, Layout::kFlat);
  EXPECT_EQ(package_op(manifest, "softmax")->name, "softmax");
  EXPECT_FALSE(package_op(manifest, "nothing").has_value());
}

TEST(VerifyPackage, RowBucketsGetOddRowsOfTheirLength) {
  const auto& softmax = find_pattern("softmax");
  for (int row_k = 4; row_k <= 17; ++row_k)
    for (int k = row_k; k <= 27; ++k) {
      const std::vector<int64_t> d = odd_domain_in_bucket(softmax, k, row_k);
      ASSERT_EQ(d.size(), 2u);
      EXPECT_EQ(shape_bucket_log2(d[0]), row_k) << "k=" << k << " row_k=" << row_k;
      EXPECT_EQ(shape_bucket_log2(d[0] * d[1]), k) << "k=" << k << " row_k=" << row_k << ": " << d[1] << " rows";
      EXPECT_EQ(d[0] % 2, 1);
      EXPECT_EQ(d[1] % 2, 1);
    }
}

}  // namespace
}  // namespace fusekit
