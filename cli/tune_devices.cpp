// Map: parse --devices, split the host's shard, then a loop that keeps one
// child tune per live GPU running, forwards the children's progress lines
// with the whole run's share done and ETA, and requeues a dead child's
// sub-shard.
#include "cli/tune_devices.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <map>
#include <set>

#include "cli/cli_common.h"
#include "common/errors.h"

extern char** environ;

namespace fusekit {

std::vector<int> parse_devices(const std::string& text, int (*count)()) {
  if (text == "all") {
    const int n = count();
    std::vector<int> all;
    for (int i = 0; i < n; ++i) all.push_back(i);
    if (all.empty()) throw UserError("--devices all: no GPU here");
    return all;
  }
  std::vector<int> out;
  for (const auto& item : split_list({text})) {
    if (item.empty() || item.size() > 4 || item.find_first_not_of("0123456789") != std::string::npos)
      throw UserError("malformed --devices '" + text + "'; give all or GPU ordinals, e.g. --devices 0,1");
    const int d = std::atoi(item.c_str());
    if (std::find(out.begin(), out.end(), d) != out.end())
      throw UserError("--devices '" + text + "' names GPU " + item + " twice");
    out.push_back(d);
  }
  if (out.empty()) throw UserError("--devices is empty; give all or GPU ordinals, e.g. --devices 0,1");
  return out;
}

std::vector<ShardSpec> sub_shards(const ShardSpec& host, int parts) {
  std::vector<ShardSpec> out;
  for (int k = 0; k < parts; ++k) out.push_back({host.index + host.count * k, host.count * parts});
  return out;
}

std::vector<std::string> child_tune_args(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    bool dropped = false;
    for (const char* name : {"--devices", "--shard", "--shard-count", "--device"}) {
      if (a == name) {
        ++i;  // and its value
        dropped = true;
      } else if (a.rfind(std::string(name) + "=", 0) == 0) {
        dropped = true;
      }
    }
    if (!dropped) out.push_back(a);
  }
  return out;
}

namespace {

// One child tune on one GPU.
struct Child {
  pid_t pid = -1;
  int device = 0;
  size_t shard = 0;
  int err_fd = -1;       // its stderr
  std::string pending;   // a partial line
  double fraction = 0;   // of its sub-shard, from its "[a/b]" lines
};

Child spawn_child(int device, size_t shard, const ShardSpec& spec, std::vector<std::string> args) {
  int fds[2];
  // Close-on-exec: a later child must not hold an earlier one's pipe.
  if (pipe2(fds, O_CLOEXEC) != 0) throw UserError(std::string("--devices: pipe: ") + std::strerror(errno));
  args.insert(args.begin(), {self_binary(), "tune"});
  args.insert(args.end(), {"--shard", std::to_string(spec.index) + "/" + std::to_string(spec.count), "--device",
                           std::to_string(device)});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  Child c;
  c.device = device;
  c.shard = shard;
  const int rc = posix_spawn(&c.pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    throw UserError(std::string("--devices: cannot start a child tune: ") + std::strerror(rc));
  }
  c.err_fd = fds[0];
  return c;
}

// The "a/b" of a progress line "[a/b] ...", as a fraction; -1 if none.
double progress_of(const std::string& line) {
  long a = 0, b = 0;
  if (std::sscanf(line.c_str(), "[%ld/%ld]", &a, &b) == 2 && b > 0) return std::min(1.0, (a - 0.5) / b);
  return -1;
}

}  // namespace

int tune_on_devices(const std::vector<int>& devices, const ShardSpec& host, const std::vector<std::string>& args) {
  // More parts than GPUs, so a fast GPU takes more and a lost one's share is
  // small; one GPU runs the host's shard whole, exactly as a plain tune.
  const int parts = devices.size() == 1 ? 1 : static_cast<int>(2 * devices.size());
  const std::vector<ShardSpec> shards = sub_shards(host, parts);
  const std::vector<std::string> base = child_tune_args(args);
  std::vector<std::string> redo = base;  // a redo resumes; --retune would measure the committed again
  redo.erase(std::remove(redo.begin(), redo.end(), "--retune"), redo.end());
  std::deque<size_t> todo;
  for (size_t k = 0; k < shards.size(); ++k) todo.push_back(k);
  std::vector<int> tries(shards.size(), 0);
  std::set<int> idle(devices.begin(), devices.end()), lost;
  std::map<int, Child> running;  // by stderr fd
  size_t finished = 0;
  int status = 0;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  auto overall = [&] {
    double f = static_cast<double>(finished);
    for (const auto& [fd, c] : running) f += c.fraction;
    return f / static_cast<double>(shards.size());
  };
  std::fprintf(stderr, "fusekit: tuning on %zu GPU%s in %d part%s\n", devices.size(), devices.size() == 1 ? "" : "s",
               parts, parts == 1 ? "" : "s");
  while (!todo.empty() || !running.empty()) {
    while (!todo.empty() && !idle.empty()) {
      const int d = *idle.begin();
      idle.erase(idle.begin());
      const size_t k = todo.front();
      todo.pop_front();
      Child c = spawn_child(d, k, shards[k], tries[k]++ ? redo : base);
      running.emplace(c.err_fd, std::move(c));
    }
    if (running.empty())
      throw UserError("--devices: every GPU was lost (" + std::to_string(lost.size()) + ") with " +
                      std::to_string(todo.size()) + " part(s) of the tune left; the database holds what finished");
    std::vector<pollfd> fds;
    for (const auto& [fd, c] : running) fds.push_back({fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), 1000) < 0 && errno != EINTR) throw UserError("--devices: poll failed");
    for (const pollfd& p : fds) {
      if (!(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Child& c = running.at(p.fd);
      char buf[4096];
      const ssize_t n = read(p.fd, buf, sizeof(buf));
      if (n > 0) {
        c.pending.append(buf, static_cast<size_t>(n));
        for (size_t nl; (nl = c.pending.find('\n')) != std::string::npos;) {
          const std::string line = c.pending.substr(0, nl);
          c.pending.erase(0, nl + 1);
          const double f = progress_of(line);
          if (f >= 0) c.fraction = f;
          const double all = overall(), t = elapsed();
          std::fprintf(stderr, "[gpu %d, part %zu/%d] %s", c.device, c.shard + 1, parts, line.c_str());
          if (f >= 0 && all > 0) std::fprintf(stderr, " | all GPUs: %.0f%%, ETA %.0fs", 100 * all, t / all * (1 - all));
          std::fprintf(stderr, "\n");
        }
        continue;
      }
      // Its stderr closed: it is ending.
      int ws = 0;
      while (waitpid(c.pid, &ws, 0) < 0 && errno == EINTR) {
      }
      close(p.fd);
      const int rc = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + (WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
      if (rc == 0 || rc == 1) {
        status = std::max(status, rc);
        ++finished;
        idle.insert(c.device);
      } else {
        std::fprintf(stderr, "fusekit: GPU %d lost (its tune of part %zu/%d ended with status %d); its part goes to "
                             "another GPU\n", c.device, c.shard + 1, parts, rc);
        lost.insert(c.device);
        if (tries[c.shard] >= 3)
          throw UserError("--devices: part " + std::to_string(c.shard + 1) + " failed on 3 GPUs; see the lines above");
        todo.push_front(c.shard);
      }
      running.erase(p.fd);
    }
  }
  std::fprintf(stderr, "fusekit: %d part%s done on %zu GPU%s (%zu lost) in %.0fs\n", parts, parts == 1 ? "" : "s",
               devices.size() - lost.size(), devices.size() - lost.size() == 1 ? "" : "s", lost.size(), elapsed());
  return status;
}

}  // namespace fusekit
