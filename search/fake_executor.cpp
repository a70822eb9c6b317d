// A device executor without a device, for tests of the worker machinery:
// every kernel passes with a time derived from its image, except those
// whose entry asks it to hang or to abort the process.
#include <unistd.h>

#include <cstdlib>
#include <functional>

#include "search/device_executor.h"

namespace fusekit {
namespace {

class FakeExecutor final : public DeviceExecutor {
 public:
  explicit FakeExecutor(const FakeExecutorSpec& spec) : spec_(spec) {
    info_.gpu_name = spec.gpu_name;
    info_.arch = spec.arch;
    info_.sm_count = 132;
    info_.l2_bytes = 50e6;
    info_.driver_version = "fake";
    info_.measured = true;
  }
  const DeviceInfo& device() const override { return info_; }
  int device_count() const override { return spec_.count; }

  std::vector<MeasureResult> run(const HostProblem& problem, const std::vector<const KernelArtifact*>& kernels,
                                 const MeasureOptions& options, const StepFn& step) override {
    if (spec_.abort_on_run) std::abort();
    std::vector<MeasureResult> out(kernels.size());
    for (size_t i = 0; i < kernels.size(); ++i) {
      if (step) step(i, 0.0);
      const std::string& entry = kernels[i]->entry;
      if (!spec_.hang_entry.empty() && entry.find(spec_.hang_entry) != std::string::npos)
        for (;;) pause();
      if (!spec_.abort_entry.empty() && entry.find(spec_.abort_entry) != std::string::npos) std::abort();
      if (spec_.fail_verify) {
        out[i].status = RecordStatus::kVerifyError;
        out[i].verify_error = 2.0 + static_cast<double>(i);
        out[i].error = "verification failed at " + problem.problem.shape_text + ": element 0: got 0, reference 1 (fake)";
        continue;
      }
      if (!options.time) continue;
      // Same kernel, same time: runs on two fake devices agree.
      const double us = 1.0 + static_cast<double>(std::hash<std::string>()(kernels[i]->image + problem.key) % 1000);
      out[i].samples_us.assign(static_cast<size_t>(options.min_samples), us);
      out[i].summarize();
    }
    return out;
  }

 private:
  FakeExecutorSpec spec_;
  DeviceInfo info_;
};

}  // namespace

std::unique_ptr<DeviceExecutor> make_fake_executor(const FakeExecutorSpec& spec) {
  return std::make_unique<FakeExecutor>(spec);
}

}  // namespace fusekit
