// `fusekit build`'s choice per bucket: the records it used and those it
// passed over, with the reasons, from a real SQLite store.
#include "generator/package/record_selection.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "tests/support/sample_record.h"
#include "tests/support/temp_dir.h"

namespace fusekit {
namespace {

// A record of the test's key made by `cuda` with the origin fields set.
TuningRecord rec(const std::string& params, double us, const std::string& cuda, RecordStatus status = RecordStatus::kOk) {
  TuningRecord r = testing::sample_record("nvrtc", us, status);
  if (status == RecordStatus::kModeled) r.gpu_name = "model";
  r.driver_version = "580.95.05";
  r.cuda_version = cuda;
  r.halide_version = "14.0.0";
  r.fusekit_version = "0.1.0";
  r.params = params;
  return r;
}

class RecordSelection : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    db_ = open_tune_db(path("selection.db"), OpenMode::kCreate);
  }
  void TearDown() override {
    db_.reset();
    TempDirTest::TearDown();
  }
  std::unique_ptr<TuneDb> db_;
  const TuneKey key_{"abc123", "f32", "n<=2^12", "sm_90"};
};

TEST_F(RecordSelection, NamesTheWinnerAndWhatPassedOverWhy) {
  const TuningRecord stale = rec("threads=256", 3.0, "12.4");
  const TuningRecord fresh = rec("threads=128", 4.0, "13.0");
  const TuningRecord modeled = rec("threads=64", 1.0, "13.0", RecordStatus::kModeled);
  db_->commit({stale, fresh, rec("threads=128", 4.5, "13.0"), modeled});
  RecordOrigin target{"NVIDIA H200", 132, "580", "13.0", "14.0.0", "0.1.0", ""};
  const BucketChoice c = choose_bucket_record(*db_, key_, target, "relu_add f32");
  ASSERT_TRUE(c.best.has_value());
  EXPECT_EQ(c.best->id, fresh.id);
  const std::string& e = c.explanation;
  const std::string head = "relu_add f32 sm_90 n<=2^12: nvrtc 'threads=128' 4.00 us (ok, record " + fresh.id.substr(0, 8);
  EXPECT_EQ(e.rfind(head, 0), 0u) << e;
  EXPECT_NE(e.find("ranked among 2 records of 1 schedules"), std::string::npos) << e;
  EXPECT_NE(e.find("passed over 2:"), std::string::npos) << e;
  EXPECT_NE(e.find("1 stale: CUDA 12.4 (not 13.0) [" + stale.id.substr(0, 8) + "]"), std::string::npos) << e;
  EXPECT_NE(e.find("1 modeled; measured records rank first [" + modeled.id.substr(0, 8) + "]"), std::string::npos)
      << e;
  // Built for CUDA 12.4, the other record is the one that matches.
  target.cuda_version = "12.4";
  EXPECT_EQ(choose_bucket_record(*db_, key_, target, "relu_add f32").best->id, stale.id);
}

TEST_F(RecordSelection, AKeyWithoutRecordsHasNoChoice) {
  const BucketChoice c = choose_bucket_record(*db_, key_, {}, "relu_add f32");
  EXPECT_FALSE(c.best.has_value());
  EXPECT_EQ(c.explanation, "");
}

}  // namespace
}  // namespace fusekit
