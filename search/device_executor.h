// The device half of measuring: runs built kernels on a problem whose host
// data is already prepared (search/host_problem.h) and reports each step
// before it starts, so a process watching it (search/measure_worker.h) can
// tell which candidate hung or killed it. The GPU executor lives in
// gpu_measurer.cpp; a fake one (fake_executor.cpp) stands in for it in tests
// without a GPU.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "search/host_problem.h"
#include "search/interfaces.h"

namespace fusekit {

class DeviceExecutor {
 public:
  virtual ~DeviceExecutor() = default;
  virtual const DeviceInfo& device() const = 0;
  // Devices of this kind on the host (this one among them).
  virtual int device_count() const = 0;
  // Called before each step that launches candidate `index` of the batch,
  // with how long the step should take (seconds; 0 when not known yet).
  using StepFn = std::function<void(size_t index, double expected_s)>;
  // Verifies (and with options.time, times) every kernel on the problem.
  virtual std::vector<MeasureResult> run(const HostProblem& problem, const std::vector<const KernelArtifact*>& kernels,
                                         const MeasureOptions& options, const StepFn& step) = 0;
};

// The GPU of ordinal `device` (driver API). Throws UserError when there is
// no such usable GPU, with the driver's reason.
std::unique_ptr<DeviceExecutor> make_gpu_executor(int device);

// What a fake executor does, for tests of the machinery around it. Every
// kernel whose entry contains `hang_entry` sleeps forever, `abort_entry`
// aborts the process; others pass with times derived from their image.
// With abort_on_run, every run() aborts (a device lost under the worker);
// with fail_verify, every kernel fails verification.
struct FakeExecutorSpec {
  int device = 0;
  int count = 1;
  std::string gpu_name = "fake GPU";
  Arch arch{9, 0};
  std::string hang_entry = "fk_test_hang";
  std::string abort_entry = "fk_test_abort";
  bool abort_on_run = false;
  bool fail_verify = false;
};
std::unique_ptr<DeviceExecutor> make_fake_executor(const FakeExecutorSpec& spec);

// A Measurer over an executor in this process: the host data is prepared
// here (once per problem) and handed to it.
std::unique_ptr<Measurer> make_local_measurer(std::unique_ptr<DeviceExecutor> executor);

}  // namespace fusekit
