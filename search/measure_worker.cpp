// The measuring worker: its serving loop and the parent's Measurer that
// drives it, restarts it and blames the step it died in (measure_worker.h).
#include "search/measure_worker.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/errors.h"
#include "search/measure_wire.h"

extern char** environ;

namespace fusekit {

int serve_measure_worker(DeviceExecutor* executor, const std::string& open_error, int in_fd, int out_fd,
                         int bulk_fd) {
  HostProblemCache problems;
  for (;;) {
    WireTag tag;
    std::string body;
    if (read_frame(in_fd, -1, &tag, &body) != FrameRead::kOk) return 0;
    try {
      if (tag == WireTag::kQuit) return 0;
      if (!executor) {
        write_frame(out_fd, WireTag::kError, open_error);
        continue;
      }
      Reader r(body);
      if (tag == WireTag::kHello) {
        Writer w;
        write_device(w, executor->device());
        w.i64(executor->device_count());
        write_frame(out_fd, WireTag::kDevice, w.data());
      } else if (tag == WireTag::kProblem || tag == WireTag::kSharedProblem) {
        problems.put(receive_problem(tag, body, bulk_fd));
      } else if (tag == WireTag::kMeasure) {
        const MeasureOptions options = read_options(r);
        const HostProblem* host = problems.find(r.str());
        if (!host) throw InternalError("measure worker: asked to measure a problem it does not hold");
        std::vector<KernelArtifact> kernels(r.u64());
        for (auto& k : kernels) k = read_artifact(r);
        std::vector<const KernelArtifact*> ptrs;
        for (const auto& k : kernels) ptrs.push_back(&k);
        auto step = [&](size_t index, double expected_s) {
          Writer w;
          w.u64(index);
          w.f64(expected_s);
          write_frame(out_fd, WireTag::kStep, w.data());
        };
        Writer w;
        write_results(w, executor->run(*host, ptrs, options, step));
        write_frame(out_fd, WireTag::kResults, w.data());
      } else {
        throw InternalError("measure worker: unknown request " + std::to_string(static_cast<int>(tag)));
      }
    } catch (const std::exception& e) {
      write_frame(out_fd, WireTag::kError, e.what());
    }
  }
}

namespace {

// An fd above the ones a child's stdio and wire use, close-on-exec.
int high_fd(int fd) {
  const int moved = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  close(fd);
  if (moved < 0) throw UserError(std::string("measure worker: fcntl: ") + std::strerror(errno));
  return moved;
}

std::string how_it_ended(int status) {
  if (WIFSIGNALED(status))
    return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended";
}

// One running worker process, its two pipes and the socket its problems'
// memory files go over.
class WorkerProcess {
 public:
  explicit WorkerProcess(const std::vector<std::string>& argv) {
    int req[2], resp[2], bulk[2];
    if (pipe(req) != 0 || pipe(resp) != 0)
      throw UserError(std::string("measure worker: pipe: ") + std::strerror(errno));
    if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, bulk) != 0) bulk[0] = bulk[1] = -1;  // problems go inline
    for (int* fd : {&req[0], &req[1], &resp[0], &resp[1]}) *fd = high_fd(*fd);
    for (int* fd : {&bulk[0], &bulk[1]})
      if (*fd >= 0) *fd = high_fd(*fd);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, req[0], 3);
    posix_spawn_file_actions_adddup2(&fa, resp[1], 4);
    if (bulk[1] >= 0) posix_spawn_file_actions_adddup2(&fa, bulk[1], 5);
    posix_spawn_file_actions_adddup2(&fa, 2, 1);  // its stdout is not the caller's output
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const int rc = posix_spawn(&pid_, argv[0].c_str(), &fa, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    close(req[0]);
    close(resp[1]);
    if (bulk[1] >= 0) close(bulk[1]);
    to_ = req[1];
    from_ = resp[0];
    bulk_ = bulk[0];
    if (rc != 0) {
      pid_ = -1;
      throw UserError("cannot start the measuring worker " + argv[0] + ": " + std::strerror(rc));
    }
  }
  ~WorkerProcess() {
    if (pid_ > 0) {
      write_frame(to_, WireTag::kQuit, "");
      close(to_);
      to_ = -1;
      for (int i = 0; i < 200 && waitpid(pid_, nullptr, WNOHANG) == 0; ++i) usleep(10000);
      if (waitpid(pid_, nullptr, WNOHANG) == 0) end();
    }
    if (to_ >= 0) close(to_);
    if (from_ >= 0) close(from_);
    if (bulk_ >= 0) close(bulk_);
  }
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  int to() const { return to_; }
  int from() const { return from_; }
  int bulk() const { return bulk_; }  // -1: none
  // Kills it (when still running) and says how it ended.
  std::string end() {
    if (pid_ <= 0) return "ended";
    kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return how_it_ended(status);
  }
  // Waits for it to exit on its own (after its pipe closed) and says how.
  std::string reap() {
    int status = 0;
    for (int i = 0; i < 500; ++i) {
      const pid_t got = waitpid(pid_, &status, WNOHANG);
      if (got == pid_) {
        pid_ = -1;
        return how_it_ended(status);
      }
      usleep(10000);
    }
    return end();
  }

 private:
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1, bulk_ = -1;
};

// What one attempt at a batch came to.
struct Attempt {
  bool done = false;                 // results are in
  std::vector<MeasureResult> results;
  long culprit = -1;                 // else: the step's candidate (-1: before any)
  RecordStatus status = RecordStatus::kFault;
  std::string error;
};

class WorkerMeasurer final : public Measurer {
 public:
  WorkerMeasurer(std::vector<std::string> argv, std::function<void(const std::string&)> notice)
      : argv_(std::move(argv)), notice_(std::move(notice)) {
    signal(SIGPIPE, SIG_IGN);  // a dead worker's pipe is an error return, not a signal
    start();
  }

  const DeviceInfo& device() const override { return info_; }
  int count() const { return count_; }

  void prepare(const Workload& workload, const Problem& problem, const MeasureOptions& options) override {
    host_ = &host_of(workload, problem, options);
    if (!worker_) start();
    if (send_problem()) return;
    if (notice_) notice_("measuring worker restarted: it " + worker_->reap() + " before it took the problem");
    worker_.reset();
  }

  std::vector<MeasureResult> measure(const Workload& workload, const Problem& problem,
                                     const std::vector<MeasureInput>& batch, const MeasureOptions& options) override {
    host_ = &host_of(workload, problem, options);
    std::vector<MeasureResult> out(batch.size());
    std::vector<size_t> left(batch.size());
    for (size_t i = 0; i < left.size(); ++i) left[i] = i;
    int early = 0;  // deaths before the worker reached any candidate
    while (!left.empty()) {
      if (!worker_) start();
      Attempt a = attempt(batch, left, options);
      if (a.done) {
        for (size_t k = 0; k < left.size(); ++k) out[left[k]] = std::move(a.results[k]);
        break;
      }
      if (a.culprit < 0) {
        if (++early >= 2)
          throw UserError("the measuring worker on " + info_.gpu_name + " failed twice before it ran a kernel: " +
                          a.error);
        continue;
      }
      out[left[a.culprit]].status = a.status;
      out[left[a.culprit]].error = a.error;
      if (notice_) notice_("measuring worker restarted: " + a.error);
      left.erase(left.begin() + a.culprit);
    }
    return out;
  }

 private:
  void start() {
    worker_.reset();
    worker_ = std::make_unique<WorkerProcess>(argv_);
    worker_holds_.clear();
    WireTag tag;
    std::string body;
    const FrameRead got = write_frame(worker_->to(), WireTag::kHello, "")
                              ? read_frame(worker_->from(), 300000, &tag, &body)
                              : FrameRead::kClosed;
    if (got != FrameRead::kOk) {
      const std::string how = worker_->end();
      worker_.reset();
      throw UserError("the measuring worker " + argv_[0] + " did not answer (" + how + ")");
    }
    if (tag == WireTag::kError) {
      worker_.reset();
      throw UserError(body);
    }
    Reader r(body);
    info_ = read_device(r);
    count_ = static_cast<int>(r.i64());
  }

  Attempt lost(long culprit, RecordStatus status, const std::string& what) {
    Attempt a;
    a.culprit = culprit;
    a.status = status;
    a.error = what;
    worker_.reset();
    return a;
  }

  const HostProblem& host_of(const Workload& workload, const Problem& problem, const MeasureOptions& options) {
    const HostProblem* host = problems_.find(host_problem_key(workload, problem, options.seed));
    return host ? *host : problems_.put(prepare_host_problem(workload, problem, options.seed));
  }

  // Sends host_ to the worker unless it holds it; false if the worker died.
  bool send_problem() {
    if (worker_holds_.holds(host_->key)) return true;
    if (!fusekit::send_problem(worker_->to(), worker_->bulk(), *host_)) return false;
    worker_holds_.add(host_->key, host_problem_bytes(*host_));
    return true;
  }

  Attempt attempt(const std::vector<MeasureInput>& batch, const std::vector<size_t>& left,
                  const MeasureOptions& options) {
    if (!send_problem())
      return lost(-1, RecordStatus::kFault, "the measuring worker " + worker_->reap() + " before it took the problem");
    Writer w;
    write_options(w, options);
    w.str(host_->key);
    w.u64(left.size());
    for (size_t i : left) write_artifact(w, *batch[i].artifact);
    if (!write_frame(worker_->to(), WireTag::kMeasure, w.data()))
      return lost(-1, RecordStatus::kFault, "the measuring worker " + worker_->reap() + " before it took the batch");
    long culprit = -1;
    double expected = 0, waited = 0;
    for (;;) {
      // Before the first step the worker copies the problem to its device.
      waited = options.launch_deadline_s + (culprit < 0 ? 60.0 : 20.0 * expected);
      WireTag tag;
      std::string body;
      const FrameRead got = read_frame(worker_->from(), static_cast<int>(waited * 1000), &tag, &body);
      if (got == FrameRead::kTimedOut) {
        char text[200];
        std::snprintf(text, sizeof(text), "no word from the measuring worker for %.0f s while it ran this kernel (%s)",
                      waited, expected > 0 ? "timed launches" : "verification launch");
        worker_->end();
        return lost(culprit, RecordStatus::kTimeout, std::string(text) + "; killed and restarted");
      }
      if (got == FrameRead::kClosed)
        return lost(culprit, RecordStatus::kFault,
                    "the measuring worker " + worker_->reap() + " while it ran this kernel");
      Reader r(body);
      if (tag == WireTag::kStep) {
        culprit = static_cast<long>(r.u64());
        expected = r.f64();
        if (culprit >= static_cast<long>(left.size())) throw InternalError("measure worker: step out of range");
        continue;
      }
      // An error in a candidate's step (a context that would not come back
      // after a fault) is that candidate's: the worker is replaced.
      if (tag == WireTag::kError && culprit >= 0) {
        worker_->end();
        return lost(culprit, RecordStatus::kFault, "measuring worker: " + body + "; restarted");
      }
      Attempt a;
      a.done = true;
      if (tag == WireTag::kResults) {
        a.results = read_results(r);
        if (a.results.size() != left.size()) throw InternalError("measure worker: result count mismatch");
      } else {
        // The worker could not set the problem up (device memory, ...):
        // every candidate of the batch says so.
        MeasureResult m;
        m.status = RecordStatus::kLaunchError;
        m.error = "measuring worker: " + body;
        a.results.assign(left.size(), m);
      }
      return a;
    }
  }

  std::vector<std::string> argv_;
  std::function<void(const std::string&)> notice_;
  std::unique_ptr<WorkerProcess> worker_;
  ProblemWindow worker_holds_;  // the problems the worker holds
  DeviceInfo info_;
  int count_ = 0;
  HostProblemCache problems_;
  const HostProblem* host_ = nullptr;  // this batch's, in problems_
};

}  // namespace

std::unique_ptr<Measurer> make_worker_measurer(const std::vector<std::string>& argv,
                                               std::function<void(const std::string&)> notice) {
  return std::make_unique<WorkerMeasurer>(argv, std::move(notice));
}

int worker_device_count(const std::vector<std::string>& argv) { return WorkerMeasurer(argv, {}).count(); }

}  // namespace fusekit
