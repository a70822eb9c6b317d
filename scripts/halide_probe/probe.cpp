// Which half-float and extern-call kernels a Halide version's CUDA backend
// builds, each in a forked child (an LLVM abort ends only the child).
#include <Halide.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cstdio>
#include <functional>
using namespace Halide;

static void run(const char* name, const std::function<void()>& f) {
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    try { f(); std::printf("%-28s built\n", name); std::fflush(stdout); _exit(0); }
    catch (const std::exception& e) { std::printf("%-28s error: %.150s\n", name, e.what()); std::fflush(stdout); _exit(1); }
  }
  int st = 0; waitpid(pid, &st, 0);
  if (WIFSIGNALED(st)) std::printf("%-28s crashed (signal %d)\n", name, WTERMSIG(st));
}

static void half(Type t, int vec) {
  ImageParam in(t, 1, "in"), y(t, 1, "y");
  Var i("i"), bx("bx"), tx("tx");
  Func f("k");
  f(i) = cast(t, tanh(cast<float>(in(i))) * cast<float>(y(i)) + 1.0f);
  if (vec > 1) f.vectorize(i, vec);
  f.gpu_tile(i, bx, tx, 128);
  Target tg = get_host_target().with_feature(Target::CUDA).with_feature(Target::CUDACapability86);
  Module m = Pipeline(f).compile_to_module({in, y}, "k", tg);
  Buffer<uint8_t> b;
  for (auto& x : m.buffers()) if (x.name().find("gpu_source") != std::string::npos) b = x;
  std::string ptx(reinterpret_cast<const char*>(b.data()), b.size_in_bytes());
  if (ptx.find(".extern .func") != std::string::npos) throw std::runtime_error("unresolved extern in PTX");
}

static void erff_call() {
  ImageParam in(Float(32), 1, "in");
  Var i("i"), bx("bx"), tx("tx");
  Func f("k");
  f(i) = Internal::Call::make(Float(32), "erff", {in(i)}, Internal::Call::PureExtern);
  f.gpu_tile(i, bx, tx, 128);
  Target tg = get_host_target().with_feature(Target::CUDA).with_feature(Target::CUDACapability86);
  Module m = Pipeline(f).compile_to_module({in}, "k", tg);
  std::string ptx;
  for (auto& x : m.buffers()) ptx.append(reinterpret_cast<const char*>(x.data()), x.size_in_bytes());
  if (ptx.find(".extern .func") != std::string::npos) throw std::runtime_error("unresolved extern erff in PTX");
}

int main() {
  for (int vec : {1, 4, 8}) {
    run(("bf16 vec=" + std::to_string(vec)).c_str(), [vec] { half(BFloat(16), vec); });
    run(("f16 vec=" + std::to_string(vec)).c_str(), [vec] { half(Float(16), vec); });
  }
  run("erff pure extern", erff_call);
}
