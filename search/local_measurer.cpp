// A Measurer over a device executor in this process (see device_executor.h).
#include "search/device_executor.h"

namespace fusekit {
namespace {

class LocalMeasurer final : public Measurer {
 public:
  explicit LocalMeasurer(std::unique_ptr<DeviceExecutor> executor) : executor_(std::move(executor)) {}
  const DeviceInfo& device() const override { return executor_->device(); }

  void prepare(const Workload& workload, const Problem& problem, const MeasureOptions& options) override {
    host_of(workload, problem, options);
  }

  std::vector<MeasureResult> measure(const Workload& workload, const Problem& problem,
                                     const std::vector<MeasureInput>& batch, const MeasureOptions& options) override {
    const HostProblem* host = &host_of(workload, problem, options);
    std::vector<const KernelArtifact*> kernels;
    for (const auto& in : batch) kernels.push_back(in.artifact);
    return executor_->run(*host, kernels, options, {});
  }

 private:
  const HostProblem& host_of(const Workload& workload, const Problem& problem, const MeasureOptions& options) {
    const HostProblem* host = problems_.find(host_problem_key(workload, problem, options.seed));
    return host ? *host : problems_.put(prepare_host_problem(workload, problem, options.seed));
  }

  std::unique_ptr<DeviceExecutor> executor_;
  HostProblemCache problems_;
};

}  // namespace

std::unique_ptr<Measurer> make_local_measurer(std::unique_ptr<DeviceExecutor> executor) {
  return std::make_unique<LocalMeasurer>(std::move(executor));
}

}  // namespace fusekit
