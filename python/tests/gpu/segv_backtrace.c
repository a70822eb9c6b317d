/* A native backtrace for a child process that dies of a signal, where the
 * machine has no gdb: LD_PRELOAD this library (cc -shared -fPIC) and, on
 * SIGSEGV, SIGBUS, SIGFPE, SIGILL or SIGABRT, it writes one line per frame to
 * stderr, "FRAME <object> <offset in hex> <symbol or ?>", then dies of the
 * same signal. test_operator_gpu.py resolves the offsets with addr2line. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void on_signal(int sig) {
  void* frames[64];
  const int n = backtrace(frames, 64);
  fprintf(stderr, "SIGNAL %d (%s), %d frames\n", sig, strsignal(sig), n);
  for (int i = 0; i < n; ++i) {
    Dl_info info;
    if (dladdr(frames[i], &info) && info.dli_fname) {
      /* Return addresses point past the call; one byte back lands on it. */
      const unsigned long off = (unsigned long)((char*)frames[i] - (char*)info.dli_fbase) - (i > 0);
      fprintf(stderr, "FRAME %s 0x%lx %s\n", info.dli_fname, off, info.dli_sname ? info.dli_sname : "?");
    } else {
      fprintf(stderr, "FRAME ? %p ?\n", frames[i]);
    }
  }
  fflush(stderr);
  signal(sig, SIG_DFL);
  raise(sig);
}

__attribute__((constructor)) static void install(void) {
  const int signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
  for (size_t i = 0; i < sizeof signals / sizeof signals[0]; ++i) signal(signals[i], on_signal);
}
