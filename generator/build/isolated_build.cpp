#include "generator/build/isolated_build.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>

#include "common/errors.h"
#include "generator/build/artifact_json.h"

namespace fusekit {
namespace {

void write_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

}  // namespace

IsolatedBuild run_isolated_build(const std::function<KernelArtifact()>& build) {
  IsolatedBuild out;
  int result_pipe[2], err_pipe[2];
  if (pipe(result_pipe) != 0 || pipe(err_pipe) != 0) {
    out.error = std::string("pipe failed: ") + std::strerror(errno);
    return out;
  }
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    out.error = std::string("fork failed: ") + std::strerror(errno);
    return out;
  }
  if (pid == 0) {
    close(result_pipe[0]);
    close(err_pipe[0]);
    dup2(err_pipe[1], STDERR_FILENO);
    std::string payload;
    try {
      payload = "A" + artifact_to_json(build()).dump();
    } catch (const std::exception& e) {
      payload = std::string("E") + e.what();
    }
    write_all(result_pipe[1], payload);
    close(result_pipe[1]);
    _exit(0);
  }
  close(result_pipe[1]);
  close(err_pipe[1]);
  // Drain both pipes until the child closes them.
  std::string result, err;
  pollfd fds[2] = {{result_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof(buf));
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      } else {
        (i == 0 ? result : err).append(buf, static_cast<size_t>(n));
      }
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (err.size() > 4000) err = "..." + err.substr(err.size() - 4000);
  if (!result.empty() && result[0] == 'A') {
    try {
      out.artifact = artifact_from_json(nlohmann::json::parse(result.substr(1)));
      out.ok = true;
    } catch (const std::exception& e) {
      out.error = std::string("isolated build returned a bad artifact: ") + e.what();
    }
  } else if (!result.empty() && result[0] == 'E') {
    out.error = result.substr(1);
  } else if (WIFSIGNALED(status)) {
    out.error = std::string("compiler crashed (") + strsignal(WTERMSIG(status)) + ")" + (err.empty() ? "" : ": " + err);
  } else {
    out.error = "compiler process exited with status " + std::to_string(WEXITSTATUS(status)) +
                (err.empty() ? "" : ": " + err);
  }
  return out;
}

}  // namespace fusekit
