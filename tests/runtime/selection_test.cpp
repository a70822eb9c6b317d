// Variant selection with fake device properties: the fallback ladder.
#include <gtest/gtest.h>

#include "fusekit/package.h"

namespace fusekit {
namespace {

const fusekit_param_desc kParams[] = {{0, 0, 0, ""}, {1, 0, 0, ""}, {3, 3, 0, "n"}};

fusekit_variant_desc variant(const char* entry, int sm, int kind, int bucket, int align, int dtype = 0,
                             const char* op = "relu_add", int index32 = 0, int row_log2 = -1, int row_length = 0,
                             int row_multiple = 0) {
  static const unsigned char image[] = {0};
  return {op,    dtype, bucket,  sm, kind, image, 1, entry, {128, 1, 1}, {"(div (add n 127) 128)", "1", "1"},
          0,     align, kParams, 3,  index32 ? "halide" : "nvrtc", "threads=128", "id", 1, index32, row_log2, row_length,
          row_multiple};
}

const fusekit_variant_desc kTable[] = {
    variant("sm90_b12", 90, 0, 12, 16),  variant("sm90_b20", 90, 0, 20, 16), variant("sm90_generic", 90, 0, -1, 4),
    variant("sm80_b20", 80, 0, 20, 16),  variant("sm80_generic", 80, 0, -1, 4),
    variant("ptx_b20", 0, 1, 20, 16),    variant("ptx_generic", 0, 1, -1, 4),
    variant("bf16_sm90", 90, 0, 20, 16, 2),
    // silu_mul: a 32-bit-indexed Halide winner and a 64-bit generic; gelu: Halide only.
    variant("silu_halide", 90, 0, 26, 16, 0, "silu_mul", 1), variant("silu_generic", 90, 0, -1, 4, 0, "silu_mul"),
    variant("gelu_halide", 90, 0, 26, 16, 0, "gelu", 1),
    // softmax: winners per (element count, row length) bucket.
    variant("softmax_n25_r10", 90, 0, 25, 16, 0, "softmax", 0, 10),
    variant("softmax_n26_r14", 90, 0, 26, 16, 0, "softmax", 0, 14),
    variant("softmax_n26_r16", 90, 0, 26, 16, 0, "softmax", 0, 16),
    // compiled for rows of exactly 16384 columns, beside the bucket's generic winner
    variant("softmax_n26_len16384", 90, 0, 26, 16, 0, "softmax", 0, 14, 16384),
    variant("softmax_generic", 90, 0, -1, 2, 0, "softmax"),
    // layernorm: a Halide vector winner (rows of a multiple of 4 columns) and a generic variant.
    variant("layernorm_vec4", 90, 0, 26, 16, 0, "layernorm", 1, 14, 0, 4),
    variant("layernorm_generic", 90, 0, -1, 4, 0, "layernorm"),
};
constexpr size_t kCount = sizeof(kTable) / sizeof(kTable[0]);

Selection pick(int sm, int64_t n, int align = 256, DType dt = DType::kF32, const char* op = "relu_add",
               int64_t row_length = -1) {
  Selection s;
  Status st = select_variant(kTable, kCount, op, dt, DeviceProps{sm, 100}, n, row_length, align, &s);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return s;
}

// softmax f32 on an sm_90 device, rows x cols, any alignment.
Selection softmax(int64_t rows, int64_t cols) { return pick(90, rows * cols, 256, DType::kF32, "softmax", cols); }

// Launched directly, `a` prepares for 4096 rows of `ok` columns and is a
// Status naming `why` for rows of `bad` columns.
void expect_launch_takes_rows(const KernelArtifact& a, int64_t ok, int64_t bad, const std::string& why) {
  LaunchShape shape;
  shape.domain = {ok, 4096};
  PreparedLaunch prepared;
  EXPECT_TRUE(prepare_launch(a, shape, &prepared).ok());
  shape.domain = {bad, 4096};
  Status st = prepare_launch(a, shape, &prepared);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find(why), std::string::npos) << st.message();
}

TEST(SelectVariant, ExactArchAndExactBucket) {
  Selection s = pick(90, 4096);
  EXPECT_STREQ(s.variant->entry, "sm90_b12");
  EXPECT_STREQ(s.arch_step, "exact arch");
  EXPECT_STREQ(s.shape_step, "exact bucket");
  EXPECT_STREQ(pick(90, 1 << 20).variant->entry, "sm90_b20");
}

TEST(SelectVariant, NearestTunedBucket) {
  Selection s = pick(90, 1 << 26);
  EXPECT_STREQ(s.variant->entry, "sm90_b20");
  EXPECT_STREQ(s.shape_step, "nearest bucket");
  EXPECT_STREQ(pick(90, 1 << 15).variant->entry, "sm90_b12");  // 15 is nearer 12 than 20
  EXPECT_STREQ(pick(90, 1 << 16).variant->entry, "sm90_b20");  // tie: the larger bucket
}

// Row reductions: the row length's bucket decides before the element
// count's; ops tuned without row lengths ignore it.
TEST(SelectVariant, RowLengthComesFirstForRowReductions) {
  Selection s = softmax(32768, 1024);
  EXPECT_STREQ(s.variant->entry, "softmax_n25_r10");
  EXPECT_STREQ(s.shape_step, "exact bucket");
  EXPECT_STREQ(softmax(4096, 12288).variant->entry, "softmax_n26_r14");
  EXPECT_STREQ(softmax(1024, 65536).variant->entry, "softmax_n26_r16");
  // 4096 x 8192: rows of 2^13 are nearer 2^14 than 2^10, though 2^25
  // elements match the r10 winner's count exactly.
  s = softmax(4096, 8192);
  EXPECT_STREQ(s.variant->entry, "softmax_n26_r14");
  EXPECT_STREQ(s.shape_step, "nearest bucket");
  EXPECT_STREQ(softmax(7, 1501).variant->entry, "softmax_n25_r10");  // rows of 2^11: nearer 2^10
  EXPECT_STREQ(softmax(7, 3001).variant->entry, "softmax_n26_r14");  // 2^12: a tie, to the longer rows
  // Unknown row length: the element count decides among the rows.
  EXPECT_STREQ(pick(90, 1 << 25, 256, DType::kF32, "softmax").variant->entry, "softmax_n25_r10");
  // A pointwise op's variants have no row bucket.
  s = pick(90, 4096, 256, DType::kF32, "relu_add", 64);
  EXPECT_STREQ(s.variant->entry, "sm90_b12");
  EXPECT_STREQ(s.shape_step, "exact bucket");
  EXPECT_NE(pick(90, 1 << 25, 256, DType::kF32, "softmax", 1024).describe().find("bucket n<=2^25 cols<=2^10"),
            std::string::npos);
}

// A variant compiled for one row length: taken for that length before any
// generic variant, never for another length.
TEST(SelectVariant, ExactRowLengthVariantsServeTheirLengthOnly) {
  Selection s = softmax(4096, 16384);
  EXPECT_STREQ(s.variant->entry, "softmax_n26_len16384");
  EXPECT_STREQ(s.shape_step, "exact row length");
  // Another row count of that length: still taken, before the generic
  // winners of nearer element counts.
  s = softmax(1000, 16384);
  EXPECT_STREQ(s.variant->entry, "softmax_n26_len16384");
  EXPECT_STREQ(s.shape_step, "exact row length");
  EXPECT_STREQ(softmax(2047, 16384).variant->entry, "softmax_n26_len16384");  // 2^25: r10's element count
  // The same bucket, another length: the generic winner.
  s = softmax(4096, 16383);
  EXPECT_STREQ(s.variant->entry, "softmax_n26_r14");
  EXPECT_STREQ(s.shape_step, "exact bucket");
  // Unknown row length: never a specialized variant.
  EXPECT_STREQ(pick(90, int64_t{1} << 26, 256, DType::kF32, "softmax").variant->entry, "softmax_n26_r14");
  // Misaligned pointers skip it like any tuned variant.
  EXPECT_STREQ(pick(90, 4096 * 16384, 8, DType::kF32, "softmax", 16384).variant->entry, "softmax_generic");
  // Launched directly for another length, its artifact is a status.
  KernelArtifact a;
  ASSERT_TRUE(variant_artifact(*softmax(4096, 16384).variant, &a).ok());
  EXPECT_EQ(a.row_length, 16384);
  expect_launch_takes_rows(a, 16384, 16383, "compiled for rows of 16384 columns; this call's rows have 16383");
}

// A variant for rows of a multiple of its vector is taken for such rows
// only, and launched directly for others it is a status.
TEST(SelectVariant, RowMultiplesTakeAlignedRowsOnly) {
  auto layernorm = [](int64_t rows, int64_t cols) {
    return pick(90, rows * cols, 256, DType::kF32, "layernorm", cols);
  };
  EXPECT_STREQ(layernorm(4096, 16384).variant->entry, "layernorm_vec4");
  EXPECT_STREQ(layernorm(4096, 16388).variant->entry, "layernorm_vec4");
  EXPECT_STREQ(layernorm(4096, 16383).variant->entry, "layernorm_generic");
  EXPECT_STREQ(layernorm(4096, 16386).variant->entry, "layernorm_generic");
  // Unknown row length: not taken.
  EXPECT_STREQ(pick(90, int64_t{1} << 26, 256, DType::kF32, "layernorm").variant->entry, "layernorm_generic");
  KernelArtifact a;
  ASSERT_TRUE(variant_artifact(*layernorm(4096, 16384).variant, &a).ok());
  EXPECT_EQ(a.row_multiple, 4);
  expect_launch_takes_rows(a, 16388, 16386, "needs rows of a multiple of 4 columns; this call's rows have 16386");
  // Tables written before the field leave it 0: any row.
  ASSERT_TRUE(variant_artifact(*layernorm(4096, 16383).variant, &a).ok());
  EXPECT_EQ(a.row_multiple, 1);
}

TEST(SelectVariant, SameMajorCubinThenPtx) {
  Selection s = pick(86, 1 << 20);  // sm_80 cubins run on sm_86
  EXPECT_STREQ(s.variant->entry, "sm80_b20");
  EXPECT_STREQ(s.arch_step, "same-major cubin");
  s = pick(89, 1 << 20);
  EXPECT_STREQ(s.variant->entry, "sm80_b20");
  s = pick(75, 1 << 20);  // nothing for major 7: portable PTX
  EXPECT_STREQ(s.variant->entry, "ptx_b20");
  EXPECT_STREQ(s.arch_step, "ptx jit");
  s = pick(100, 1 << 20);
  EXPECT_STREQ(s.arch_step, "ptx jit");
}

TEST(SelectVariant, MoreThanTwoToThe31ElementsSkip32BitKernels) {
  EXPECT_STREQ(pick(90, 1 << 26, 256, DType::kF32, "silu_mul").variant->entry, "silu_halide");
  const int64_t big = int64_t{1} << 31;
  Selection s = pick(90, big, 256, DType::kF32, "silu_mul");
  EXPECT_STREQ(s.variant->entry, "silu_generic");
  EXPECT_STREQ(s.shape_step, "generic");
  Status st = select_variant(kTable, kCount, "gelu", DType::kF32, DeviceProps{90, 132}, big, -1, 256, &s);
  EXPECT_EQ(st.code(), StatusCode::kNotSupported);
  EXPECT_NE(st.message().find("2147483648 elements need 64-bit indexing"), std::string::npos) << st.message();
  EXPECT_TRUE(select_variant(kTable, kCount, "gelu", DType::kF32, DeviceProps{90, 132}, big - 1, -1, 256, &s).ok());
}

TEST(SelectVariant, PtxOnlyDevicesSkipEveryCubin) {
  Selection s;
  DeviceProps device{90, 132, /*ptx_only=*/true};
  ASSERT_TRUE(select_variant(kTable, kCount, "relu_add", DType::kF32, device, 1 << 20, -1, 256, &s).ok());
  EXPECT_STREQ(s.variant->entry, "ptx_b20");
  EXPECT_STREQ(s.arch_step, "ptx jit");
  ASSERT_TRUE(select_variant(kTable, kCount, "relu_add", DType::kF32, device, 1 << 20, -1, 4, &s).ok());
  EXPECT_STREQ(s.variant->entry, "ptx_generic");
  // An op with cubins only has nothing to offer.
  EXPECT_EQ(select_variant(kTable, kCount, "relu_add", DType::kBF16, device, 1 << 20, -1, 256, &s).code(),
            StatusCode::kNotSupported);
}

TEST(SelectVariant, MisalignedPointersTakeTheGenericVariant) {
  Selection s = pick(90, 1 << 20, 4);
  EXPECT_STREQ(s.variant->entry, "sm90_generic");
  EXPECT_STREQ(s.shape_step, "generic");
  Selection t;
  Status st = select_variant(kTable, kCount, "relu_add", DType::kF32, DeviceProps{90, 1}, 1 << 20, -1, 2, &t);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("2-byte aligned"), std::string::npos);
}

TEST(SelectVariant, UnknownOpDtypeOrDeviceIsAStatus) {
  Selection s;
  Status st = select_variant(kTable, kCount, "no_such_op", DType::kF32, DeviceProps{90, 1}, 10, -1, 256, &s);
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  st = select_variant(kTable, kCount, "relu_add", DType::kF16, DeviceProps{90, 1}, 10, -1, 256, &s);
  EXPECT_EQ(st.code(), StatusCode::kNotSupported);
  EXPECT_NE(st.message().find("the package has: f32 bf16"), std::string::npos) << st.message();
  // bf16 exists only as an sm_90 cubin: an sm_80 device has no code for it.
  st = select_variant(kTable, kCount, "relu_add", DType::kBF16, DeviceProps{80, 1}, 1 << 20, -1, 256, &s);
  EXPECT_EQ(st.code(), StatusCode::kNotSupported);
  EXPECT_NE(st.message().find("rebuild it with --arch sm_80"), std::string::npos) << st.message();
}

TEST(SelectVariant, DescribesTheSteps) {
  Selection s = pick(86, 1 << 26);
  const std::string d = s.describe();
  EXPECT_NE(d.find("sm80_b20"), std::string::npos);
  EXPECT_NE(d.find("same-major cubin"), std::string::npos);
  EXPECT_NE(d.find("nearest bucket"), std::string::npos);
}

TEST(VariantArtifact, ParsesTheLaunchDescription) {
  KernelArtifact a;
  ASSERT_TRUE(variant_artifact(kTable[0], &a).ok());
  EXPECT_EQ(a.params.size(), 3u);
  EXPECT_EQ(a.params[2].expr.to_string(), "n");
  EXPECT_EQ(a.grid[0].to_string(), "(div (add n 127) 128)");
  fusekit_variant_desc bad = kTable[0];
  bad.grid[0] = "(div n";
  EXPECT_EQ(variant_artifact(bad, &a).code(), StatusCode::kInvalidArgument);
}

TEST(CommonAlignment, IsTheLargestPowerOfTwoDividingAll) {
  EXPECT_EQ(common_alignment({0x1000, 0x2010}), 16);
  EXPECT_EQ(common_alignment({0x1000}), 256);
  EXPECT_EQ(common_alignment({0x1002, 0x1000}), 2);
}

TEST(Package, ZeroElementsLaunchNothingAndNullPointersAreRejected) {
  Package p(kTable, kCount);
  LaunchShape shape;
  shape.domain = {0};
  LaunchArgs args;
  args.inputs = {0x1000, 0x2000};
  args.outputs = {0x3000};
  EXPECT_TRUE(p.launch("relu_add", DType::kF32, shape, args, nullptr).ok());
  shape.domain = {10};
  args.inputs[1] = 0;
  Status st = p.launch("relu_add", DType::kF32, shape, args, nullptr);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("input 1 is a null pointer"), std::string::npos);
  shape.domain = {-3};
  EXPECT_EQ(p.launch("relu_add", DType::kF32, shape, args, nullptr).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace fusekit
