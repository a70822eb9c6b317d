// The measuring worker without a GPU: the fusekit binary's measure-worker
// over a fake device (FUSEKIT_TEST_FAKE_GPUS), whose kernels named to hang
// or abort stand in for a spinning and a faulting kernel.
#include "search/measure_worker.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>

#include "common/errors.h"
#include "generator/candidate_workload.h"
#include "generator/candidates/catalog.h"
#include "search/measure_wire.h"
#include "search/tuner.h"
#include "tests/support/injected_tune.h"
#include "tests/support/temp_dir.h"

namespace fusekit {
namespace {

std::vector<std::string> fake_worker() {
  setenv("FUSEKIT_TEST_FAKE_GPUS", "2", 1);
  return {FUSEKIT_BINARY, "measure-worker", "--device", "0"};
}

KernelArtifact named(const std::string& entry) {
  KernelArtifact a;
  a.image_kind = ImageKind::kPtx;
  a.image = "image of " + entry;
  a.entry = entry;
  a.grid[0] = ceil_div(LaunchExpr::symbol("n"), 256);
  a.params = {{KernelParam::Kind::kInput, KernelParam::Type::kPtr, 0, {}},
              {KernelParam::Kind::kShape, KernelParam::Type::kI64, 0, LaunchExpr::symbol("n")}};
  return a;
}

TEST(MeasureWire, ArtifactsAndProblemsRoundTrip) {
  const KernelArtifact a = named("fk_entry");
  auto wl = make_candidate_workload(find_pattern("relu_add"), DType::kBF16);
  const HostProblem p = prepare_host_problem(*wl, wl->problem({1000}), 7);
  Writer w;
  write_artifact(w, a);
  write_problem(w, p);
  Reader r(w.data());
  const KernelArtifact b = read_artifact(r);
  EXPECT_EQ(b.entry, a.entry);
  EXPECT_EQ(b.image, a.image);
  EXPECT_EQ(b.grid[0].to_string(), a.grid[0].to_string());
  ASSERT_EQ(b.params.size(), 2u);
  EXPECT_EQ(b.params[1].expr.to_string(), "n");
  const HostProblem q = read_problem(r);
  EXPECT_EQ(q.key, p.key);
  EXPECT_EQ(q.problem.shape_text, p.problem.shape_text);
  ASSERT_EQ(q.inputs.size(), p.inputs.size());
  EXPECT_EQ(q.inputs[1].bytes, p.inputs[1].bytes);
  EXPECT_EQ(q.reference[0].bytes, p.reference[0].bytes);
  EXPECT_EQ(q.tolerance.rtol, p.tolerance.rtol);
  EXPECT_THROW(r.u64(), InternalError);  // nothing left
}

TEST(MeasureWire, OptionsRoundTrip) {
  MeasureOptions o;
  o.time = false;
  o.max_samples = 123;
  o.rounds = 7;
  o.queued = true;
  Writer w;
  write_options(w, o);
  Reader r(w.data());
  const MeasureOptions p = read_options(r);
  EXPECT_FALSE(p.time);
  EXPECT_EQ(p.max_samples, 123);
  EXPECT_EQ(p.rounds, 7);
  EXPECT_TRUE(p.queued);
  EXPECT_THROW(r.u64(), InternalError);  // nothing left
}

void expect_same_tensors(const std::vector<HostTensor>& a, const std::vector<HostTensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].dims, b[i].dims);
    EXPECT_TRUE(a[i].bytes == b[i].bytes) << "tensor " << i;
  }
}

// The worker's two ways in: the tensors in a memory file over a socket
// (only the rest in the frame), or all of it in the frame where there is no
// socket. A shared frame whose file never comes is an error, not a hang.
TEST(MeasureWire, AProblemArrivesWholeThroughSharedMemoryOrInline) {
  auto wl = make_candidate_workload(find_pattern("layernorm"), DType::kBF16);
  const HostProblem p = prepare_host_problem(*wl, wl->problem({1031, 1027}), 11);
  ASSERT_GT(host_problem_bytes(p), size_t{4} << 20);  // copied in more than one chunk
  int frames[2], bulk[2];
  ASSERT_EQ(pipe(frames), 0);
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, bulk), 0);
  ASSERT_TRUE(send_problem(frames[1], bulk[0], p));
  WireTag tag;
  std::string body;
  ASSERT_EQ(read_frame(frames[0], 1000, &tag, &body), FrameRead::kOk);
  EXPECT_EQ(tag, WireTag::kSharedProblem);
  EXPECT_LT(body.size(), size_t{4096});
  const HostProblem q = receive_problem(tag, body, bulk[1]);
  EXPECT_EQ(q.key, p.key);
  EXPECT_EQ(q.problem.output_dims, p.problem.output_dims);
  expect_same_tensors(q.inputs, p.inputs);
  expect_same_tensors(q.reference, p.reference);
  expect_same_tensors(q.slack, p.slack);
  EXPECT_EQ(q.params, p.params);
  close(bulk[0]);
  EXPECT_THROW(receive_problem(tag, body, bulk[1]), InternalError);
  close(bulk[1]);

  auto small = make_candidate_workload(find_pattern("relu_add"), DType::kF32);
  const HostProblem s = prepare_host_problem(*small, small->problem({1000}), 3);
  ASSERT_TRUE(send_problem(frames[1], -1, s));
  ASSERT_EQ(read_frame(frames[0], 1000, &tag, &body), FrameRead::kOk);
  EXPECT_EQ(tag, WireTag::kProblem);
  expect_same_tensors(receive_problem(tag, body, -1).inputs, s.inputs);
  close(frames[0]);
  close(frames[1]);
}

TEST(ProblemWindow, KeepsTheNewestWithinItsCountAndBytes) {
  ProblemWindow w;
  const int n = static_cast<int>(ProblemWindow::kEntries);
  for (int i = 0; i <= n; ++i) w.add("p" + std::to_string(i), 10);
  EXPECT_FALSE(w.holds("p0"));
  EXPECT_TRUE(w.holds("p1"));
  EXPECT_TRUE(w.holds("p" + std::to_string(n)));
  w.add("p1", 10);  // refreshed: now the newest
  EXPECT_EQ(w.add("next", 10), (std::vector<std::string>{"p2"}));
  EXPECT_GE(ProblemWindow::bytes(), size_t{2} << 30);
  EXPECT_EQ(w.add("big", ProblemWindow::bytes()).size(), ProblemWindow::kEntries);  // alone over the bytes, kept
  EXPECT_TRUE(w.holds("big"));
  EXPECT_FALSE(w.holds("next"));
}

TEST(WorkerMeasurer, RecordsAHangAndADeathAndMeasuresTheRestOnANewWorker) {
  auto measurer = make_worker_measurer(fake_worker());
  EXPECT_EQ(measurer->device().gpu_name, "fake GPU");
  EXPECT_TRUE(measurer->device().measured);
  auto wl = make_candidate_workload(find_pattern("relu_add"), DType::kF32);
  const Problem p = wl->problem({4096});
  const std::vector<KernelArtifact> arts = {named("fk_a"), named("fk_test_hang_b"), named("fk_test_abort_c"),
                                            named("fk_d")};
  std::vector<Candidate> cands(arts.size());
  std::vector<MeasureInput> batch;
  for (size_t i = 0; i < arts.size(); ++i) batch.push_back({&cands[i], &arts[i]});
  MeasureOptions o;
  o.min_samples = 3;
  o.launch_deadline_s = 0.5;
  const auto r = measurer->measure(*wl, p, batch, o);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].status, RecordStatus::kOk);
  EXPECT_EQ(r[0].samples_us.size(), 3u);
  EXPECT_EQ(r[1].status, RecordStatus::kTimeout) << r[1].error;
  EXPECT_NE(r[1].error.find("killed and restarted"), std::string::npos) << r[1].error;
  EXPECT_EQ(r[2].status, RecordStatus::kFault) << r[2].error;
  EXPECT_NE(r[2].error.find("signal 6"), std::string::npos) << r[2].error;
  EXPECT_EQ(r[3].status, RecordStatus::kOk);
  // The restarted worker serves the next batch.
  const auto again = measurer->measure(*wl, p, {batch[3]}, o);
  EXPECT_EQ(again.at(0).status, RecordStatus::kOk);
  EXPECT_EQ(again.at(0).median_us, r[3].median_us);
}

// prepare() computes a problem and hands it to the worker ahead of
// measure(), also to the worker started after one died.
TEST(WorkerMeasurer, APreparedProblemIsMeasuredAlsoByARestartedWorker) {
  auto measurer = make_worker_measurer(fake_worker());
  auto wl = make_candidate_workload(find_pattern("relu_add"), DType::kF32);
  const Problem p = wl->problem({4096});
  const std::vector<KernelArtifact> arts = {named("fk_a"), named("fk_test_abort_b")};
  std::vector<Candidate> cands(arts.size());
  MeasureOptions o;
  o.min_samples = 3;
  measurer->prepare(*wl, p, o);
  const auto first = measurer->measure(*wl, p, {{&cands[0], &arts[0]}}, o);
  ASSERT_EQ(first.at(0).status, RecordStatus::kOk) << first.at(0).error;
  EXPECT_EQ(measurer->measure(*wl, p, {{&cands[1], &arts[1]}}, o).at(0).status, RecordStatus::kFault);
  measurer->prepare(*wl, p, o);
  const auto again = measurer->measure(*wl, p, {{&cands[0], &arts[0]}}, o);
  EXPECT_EQ(again.at(0).status, RecordStatus::kOk) << again.at(0).error;
  EXPECT_EQ(again.at(0).median_us, first.at(0).median_us);
}

TEST(WorkerMeasurer, ANoDeviceWorkerIsAUserErrorWithItsReason) {
  setenv("FUSEKIT_TEST_FAKE_GPUS", "2", 1);
  try {
    make_worker_measurer({FUSEKIT_BINARY, "measure-worker", "--device", "5"});
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("no GPU 5"), std::string::npos) << e.what();
  }
  EXPECT_EQ(worker_device_count(fake_worker()), 2);
}

// Renames the built entries of two candidates so the fake device hangs on
// one and aborts on the other.
class InjectingBuilder final : public Builder {
 public:
  explicit InjectingBuilder(std::unique_ptr<Builder> inner) : inner_(std::move(inner)) {}
  std::vector<BuildResult> build(const std::vector<Candidate>& batch) override {
    std::vector<BuildResult> out = inner_->build(batch);
    for (size_t i = 0; i < out.size(); ++i) {
      if (!out[i].ok || injected_.size() == 2) continue;
      const std::string what = injected_.empty() ? "fk_test_hang_" : "fk_test_abort_";
      out[i].artifact.entry = what + out[i].artifact.entry;
      injected_[batch[i].config.to_string()] = what;
    }
    return out;
  }
  std::map<std::string, std::string> injected_;  // params -> how

 private:
  std::unique_ptr<Builder> inner_;
};

TEST(Tuner, AHangingAndAFaultingKernelAreRecordedAndTheTuneGoesOn) {
  const FusionCandidate& cand = find_pattern("relu_add");
  const ArchLimits& arch = require_arch("sm_90");
  const std::filesystem::path dir = testing::make_temp_dir("worker_tune");
  {
    auto db = open_sqlite_db((dir / "tune.db").string());
    auto wl = make_candidate_workload(cand, DType::kF32);
    InjectingBuilder builder(make_kernel_builder(cand, DType::kF32, arch));
    auto [task, opt] = testing::injected_tune(cand, *wl, &builder, 65536, 5, 0.5);
    auto measurer = make_worker_measurer(fake_worker());
    opt.measure.min_samples = 3;
    const TuneSummary s = tune(task, *measurer, *db, arch, opt);
    EXPECT_EQ(s.failed, 2u);
    EXPECT_EQ(s.measured, 3u);
    ASSERT_EQ(builder.injected_.size(), 2u);
    std::map<std::string, RecordStatus> by_params;
    for (const auto& r : db->all()) by_params[r.params] = r.status;
    EXPECT_EQ(by_params.size(), 5u);
    for (const auto& [params, how] : builder.injected_)
      EXPECT_EQ(by_params[params], how == "fk_test_hang_" ? RecordStatus::kTimeout : RecordStatus::kFault) << params;
    for (const auto& [params, status] : by_params) {
      if (!builder.injected_.count(params)) {
        EXPECT_EQ(status, RecordStatus::kOk) << params;
      }
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace fusekit
