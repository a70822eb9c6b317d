#include "generator/build/artifact_json.h"

#include <gtest/gtest.h>

#include "common/errors.h"

namespace fusekit {
namespace {

TEST(Base64, RoundTripsEveryLengthAndByte) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  for (size_t n = 0; n < 10; ++n) EXPECT_EQ(base64_decode(base64_encode(all.substr(0, n))), all.substr(0, n));
  EXPECT_EQ(base64_decode(base64_encode(all)), all);
  EXPECT_EQ(base64_encode("fusekit"), "ZnVzZWtpdA==");
  EXPECT_THROW(base64_decode("abc"), UserError);
  EXPECT_THROW(base64_decode("ab!d"), UserError);
}

TEST(ArtifactJson, RoundTrips) {
  KernelArtifact a;
  a.backend = "nvrtc";
  a.image_kind = ImageKind::kCubin;
  a.image = std::string("\x7f" "ELF\0\0binary", 12);
  a.entry = "fusekit_sm90_relu_add_f32_nvrtc_01234567";
  a.target_sm = 90;
  a.block[0] = 256;
  a.grid[0] = ceil_div(LaunchExpr::symbol("n"), 2048);
  a.pointer_alignment = 16;
  a.params.push_back({KernelParam::Kind::kInput, KernelParam::Type::kPtr, 0, {}});
  a.params.push_back({KernelParam::Kind::kShape, KernelParam::Type::kBool, 0, LaunchExpr::symbol("d0")});
  KernelArtifact b = artifact_from_json(artifact_to_json(a));
  EXPECT_EQ(artifact_to_json(b), artifact_to_json(a));
  EXPECT_EQ(b.image, a.image);
  EXPECT_EQ(b.params[1].type, KernelParam::Type::kBool);
  nlohmann::json broken = artifact_to_json(a);
  broken["grid"][0] = "(frob n)";
  EXPECT_THROW(artifact_from_json(broken), UserError);
  broken = artifact_to_json(a);
  broken.erase("entry");
  EXPECT_THROW(artifact_from_json(broken), UserError);
}

}  // namespace
}  // namespace fusekit
