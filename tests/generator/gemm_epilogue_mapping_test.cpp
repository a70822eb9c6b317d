// Which epilogues map onto cuBLASLt's fused ones, and the refusals: erf-GELU
// above all, since cuBLASLt's GELU is the tanh form.
#include <gtest/gtest.h>

#include "generator/cublaslt/epilogue_mapping.h"

namespace fusekit {
namespace {

LtEpilogueMapping map(const std::string& src) { return map_to_cublaslt(make_gemm_candidate(src, true)); }

TEST(EpilogueMapping, FusedEpilogues) {
  struct Case {
    const char* src;
    GemmEpilogue epilogue;
    bool bias, residual;
  } cases[] = {
      {"out = acc", GemmEpilogue::kDefault, false, false},
      {"out = acc + bias[col]", GemmEpilogue::kBias, true, false},
      {"out = b[col] + acc", GemmEpilogue::kBias, true, false},
      {"out = relu(acc + b[col])", GemmEpilogue::kReluBias, true, false},
      {"out = relu(acc)", GemmEpilogue::kRelu, false, false},
      {"out = gelu_tanh(acc + b[col])", GemmEpilogue::kGeluBias, true, false},
      {"out = gelu_tanh(acc)", GemmEpilogue::kGelu, false, false},
      {"out = acc + b[col] + r", GemmEpilogue::kBias, true, true},
      {"out = r + acc + b[col]", GemmEpilogue::kBias, true, true},
      {"out = acc + residual", GemmEpilogue::kDefault, false, true},
  };
  for (const auto& c : cases) {
    LtEpilogueMapping m = map(c.src);
    EXPECT_TRUE(m.fused) << c.src << ": " << m.reason;
    EXPECT_EQ(m.epilogue, c.epilogue) << c.src;
    EXPECT_EQ(m.bias_input >= 0, c.bias) << c.src;
    EXPECT_EQ(m.residual_input >= 0, c.residual) << c.src;
  }
  LtEpilogueMapping m = map("out = acc + b[col] + r");
  const GemmCandidate gc = make_gemm_candidate("out = acc + b[col] + r", true);
  EXPECT_EQ(gc.epilogue.inputs[m.bias_input].name, "b");
  EXPECT_EQ(gc.epilogue.inputs[m.residual_input].name, "r");
}

TEST(EpilogueMapping, ErfGeluNeverMaps) {
  for (const char* src : {"out = gelu(acc + b[col])", "out = gelu(acc)", "out = gelu(b[col] + acc)"}) {
    LtEpilogueMapping m = map(src);
    EXPECT_FALSE(m.fused) << src;
    EXPECT_NE(m.reason.find("exact (erf) form"), std::string::npos) << src << ": " << m.reason;
  }
}

TEST(EpilogueMapping, OtherEpiloguesGoToTheTail) {
  struct Case {
    const char* src;
    const char* reason;
  } cases[] = {
      {"out = silu(acc) * acc2", "two products"},
      {"param a = 0.5\nout = a * acc", "scalar parameters"},
      {"out = acc * s[row]", "neither the one per-column bias"},
      {"out = acc + b[col] + c[col]", "neither the one per-column bias"},
      {"out = sigmoid(acc + b[col])", "none of them"},
      {"out = relu(acc) + b[col]", "none of them"},
      {"out = 2 * acc", "none of them"},
  };
  for (const auto& c : cases) {
    LtEpilogueMapping m = map(c.src);
    EXPECT_FALSE(m.fused) << c.src;
    EXPECT_NE(m.reason.find(c.reason), std::string::npos) << c.src << ": " << m.reason;
  }
}

}  // namespace
}  // namespace fusekit
