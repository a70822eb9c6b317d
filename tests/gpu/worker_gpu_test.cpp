// GPU tests of the measuring worker (ctest label `gpu`): a tune of a catalog
// op on the GPU through `fusekit measure-worker`, with a kernel that spins
// forever and one that writes to a wild address injected among its
// candidates; both are recorded (timeout, fault) and every other candidate
// is measured as usual. Skipped, with the reason, where no GPU exists.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "common/errors.h"
#include "generator/candidate_workload.h"
#include "generator/candidates/catalog.h"
#include "search/measure_worker.h"
#include "search/tuner.h"
#include "tests/support/injected_tune.h"
#include "tests/support/temp_dir.h"
#include "tunedb/tune_db.h"

namespace fusekit {
namespace {

// Spins until its input holds a NaN that no input draws.
constexpr const char* kSpinPtx = R"ptx(.version 7.4
.target sm_80
.address_size 64
.visible .entry fk_spin(.param .u64 fk_p)
{
  .reg .pred %p<2>;
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [fk_p];
  cvta.to.global.u64 %rd1, %rd1;
$L_spin:
  ld.volatile.global.u32 %r1, [%rd1];
  setp.ne.u32 %p1, %r1, 2139095041;
  @%p1 bra $L_spin;
  ret;
}
)ptx";

// Stores to an address no allocation has.
constexpr const char* kWildPtx = R"ptx(.version 7.4
.target sm_80
.address_size 64
.visible .entry fk_wild(.param .u64 fk_p)
{
  .reg .b32 %r<2>;
  .reg .b64 %rd<2>;
  mov.u64 %rd1, 0x00000dead0000000;
  mov.u32 %r1, 1;
  st.global.u32 [%rd1], %r1;
  ret;
}
)ptx";

KernelArtifact injected(const char* ptx, const char* entry) {
  KernelArtifact a;
  a.backend = "nvrtc";
  a.image_kind = ImageKind::kPtx;
  a.image = ptx;
  a.entry = entry;
  a.block[0] = 32;
  a.params = {{KernelParam::Kind::kInput, KernelParam::Type::kPtr, 0, {}}};
  return a;
}

// The tune's builder, with its first two built candidates replaced by the
// spinning and the faulting kernel.
class InjectingBuilder final : public Builder {
 public:
  explicit InjectingBuilder(std::unique_ptr<Builder> inner) : inner_(std::move(inner)) {}
  std::vector<BuildResult> build(const std::vector<Candidate>& batch) override {
    std::vector<BuildResult> out = inner_->build(batch);
    for (size_t i = 0; i < out.size() && injected_.size() < 2; ++i) {
      if (!out[i].ok) continue;
      const bool spin = injected_.empty();
      out[i].artifact = spin ? injected(kSpinPtx, "fk_spin") : injected(kWildPtx, "fk_wild");
      injected_[batch[i].config.to_string()] = spin ? RecordStatus::kTimeout : RecordStatus::kFault;
    }
    return out;
  }
  std::map<std::string, RecordStatus> injected_;  // params -> expected status

 private:
  std::unique_ptr<Builder> inner_;
};

// The fusekit binary beside this test (the GPU machine's carried bin/), else
// the build tree's.
std::string fusekit_binary() {
  char buf[4096] = {0};
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n > 0) {
    const auto beside = std::filesystem::path(std::string(buf, n)).parent_path() / "fusekit";
    if (std::filesystem::exists(beside)) return beside.string();
  }
  return FUSEKIT_BINARY;
}

TEST(WorkerGpu, AHangingAndAFaultingKernelAreRecordedAndTheTuneGoesOn) {
  std::unique_ptr<Measurer> measurer;
  try {
    measurer = make_worker_measurer({fusekit_binary(), "measure-worker", "--device", "0"});
  } catch (const UserError& e) {
    GTEST_SKIP() << e.what();
  }
  const ArchLimits* found = find_arch_limits(measurer->device().arch);
  if (!found) GTEST_SKIP() << "no schedule limits for " << measurer->device().arch.name();
  const ArchLimits& arch = *found;
  const FusionCandidate& cand = find_pattern("relu_add");
  const std::filesystem::path dir = testing::make_temp_dir("worker_gpu");
  auto db = open_sqlite_db((dir / "tune.db").string());
  auto wl = make_candidate_workload(cand, DType::kF32);
  InjectingBuilder builder(make_kernel_builder(cand, DType::kF32, arch));
  const auto [task, opt] = testing::injected_tune(cand, *wl, &builder, 1 << 20, 6, 5);
  const TuneSummary s = tune(task, *measurer, *db, arch, opt);
  ASSERT_EQ(builder.injected_.size(), 2u);
  std::map<std::string, TuningRecord> by_params;
  for (const auto& r : db->all()) by_params[r.params] = r;
  EXPECT_EQ(by_params.size(), 6u);
  EXPECT_EQ(s.failed, 2u);
  EXPECT_EQ(s.measured, 4u);
  for (const auto& [params, r] : by_params) {
    const auto want = builder.injected_.find(params);
    if (want != builder.injected_.end()) {
      EXPECT_EQ(r.status, want->second) << params << ": " << r.error;
      EXPECT_FALSE(r.error.empty()) << params;
    } else {
      EXPECT_EQ(r.status, RecordStatus::kOk) << params << ": " << r.error;
      EXPECT_GT(r.median_us, 0) << params;
    }
  }
  db.reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fusekit
