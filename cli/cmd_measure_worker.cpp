// The measuring worker's command: opens GPU --device and serves its parent
// on fds 3 and 4, fd 5 being the socket its problems' memory files come
// over. FUSEKIT_TEST_FAKE_GPUS=N (read here, at the edge) makes it
// a fake device of N for the tests without a GPU: FUSEKIT_TEST_FAKE_ARCH
// (sm_90) is its arch, and FUSEKIT_TEST_FAKE_DEAD_DEVICE=D makes device D
// abort whenever it is asked to measure, FUSEKIT_TEST_FAKE_VERIFY=fail fails
// every kernel's verification.
#include "cli/cmd_measure_worker.h"

#include <sys/prctl.h>

#include <csignal>
#include <cstdlib>

#include "common/errors.h"
#include "search/measure_worker.h"

namespace fusekit {

po::options_description cmd_measure_worker_options() {
  po::options_description o("measure-worker options");
  o.add_options()("device", po::value<int>()->default_value(0), "GPU ordinal to measure on");
  return o;
}

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

int cmd_measure_worker(const po::variables_map& vm, const std::vector<std::string>& args) {
  if (!args.empty()) throw UserError("measure-worker takes no positional arguments, got '" + args[0] + "'");
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // a worker hung in a kernel must not outlive its tune
  const int device = vm["device"].as<int>();
  std::unique_ptr<DeviceExecutor> executor;
  std::string open_error;
  try {
    if (!env("FUSEKIT_TEST_FAKE_GPUS").empty()) {
      FakeExecutorSpec spec;
      spec.count = std::atoi(env("FUSEKIT_TEST_FAKE_GPUS").c_str());
      if (!env("FUSEKIT_TEST_FAKE_ARCH").empty()) spec.arch = require_arch(env("FUSEKIT_TEST_FAKE_ARCH")).arch;
      spec.device = device;
      spec.abort_on_run = env("FUSEKIT_TEST_FAKE_DEAD_DEVICE") == std::to_string(device);
      spec.fail_verify = env("FUSEKIT_TEST_FAKE_VERIFY") == "fail";
      if (device < 0 || device >= spec.count)
        throw UserError("no GPU " + std::to_string(device) + ": " + std::to_string(spec.count) + " fake GPUs");
      executor = make_fake_executor(spec);
    } else {
      executor = make_gpu_executor(device);
    }
  } catch (const UserError& e) {
    open_error = e.what();
  }
  return serve_measure_worker(executor.get(), open_error, 3, 4, 5);
}

}  // namespace fusekit
