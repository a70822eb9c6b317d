// Measuring in a child process, so a kernel that hangs or faults the GPU
// takes down only that process. The tuning process prepares each problem's
// host data and sends it with the built kernels; the worker (the fusekit
// binary in its `measure-worker` mode, serve_measure_worker) runs them on its
// device and reports each step before it starts. Call order, per batch:
//
//   parent                                   worker (fds 3 in, 4 out, 5 bulk)
//   kHello ──────────────────────────────►   (once) ──► kDevice | kError
//   kProblem (when the worker lacks it) ──►
//     or its memory file over fd 5, then kSharedProblem (measure_wire.h)
//   kMeasure ─────────────────────────────►   kStep(i, expected)* ──► kResults
//
// When no frame comes within options.launch_deadline_s plus twenty times the
// step's expected time, the parent kills the worker and records the step's
// candidate as a timeout; when the worker dies, as a fault with how it died.
// Then it starts a new worker and measures the rest of the batch again;
// results of earlier batches are the caller's and are never lost.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "search/device_executor.h"

namespace fusekit {

// Serves requests on `in_fd`, answering on `out_fd`, until kQuit or end of
// file; `executor` is null when the device could not be opened, and
// `open_error` says why (sent in reply to kHello). Shared problems' memory
// files come over `bulk_fd` (-1: none). Returns the exit status.
int serve_measure_worker(DeviceExecutor* executor, const std::string& open_error, int in_fd, int out_fd,
                         int bulk_fd = -1);

// A Measurer whose measurements run in worker processes started as `argv`
// (argv[0] a path to the binary). Throws UserError when the worker cannot
// start or cannot open its device, with the worker's reason. `notice`, when
// set, gets one line per restarted worker.
std::unique_ptr<Measurer> make_worker_measurer(const std::vector<std::string>& argv,
                                               std::function<void(const std::string&)> notice = {});

// How many devices the worker started as `argv` sees (its kDevice reply).
int worker_device_count(const std::vector<std::string>& argv);

}  // namespace fusekit
