// Host cost of the dispatch runtime (Google Benchmark).
//
//   BM_SelectVariant     selection alone, fake device, a 3-arch package table
//   BM_PackageLaunchHostOnly  Package::launch against a fake driver: our host work
//                        without the driver's (0: shapes prepared once, 1: per call)
//   BM_RawLaunch         cuLaunchKernel of sigmoid_mul_tanh_add f32, 4096 elements,
//                        back to back on one stream (the floor)
//   BM_PackageLaunch     the same kernel through Package::launch (selection, cached
//                        module, argument evaluation, cuLaunchKernel)
//   BM_GraphLaunch       the same call captured 100 times in a CUDA graph; the
//                        us_per_kernel counter is seconds per kernel (shown in s)
// The GPU benchmarks skip (with the reason) where no GPU is present. The kernel
// is built here with NVRTC for the device's arch, so both paths launch the same
// code. Each iteration is one call; the stream is synchronized every 10 000.
#include <benchmark/benchmark.h>

#include <memory>

#include "fusekit/cuda_driver.h"
#include "fusekit/package.h"
#include "generator/candidate_workload.h"
#include "generator/candidates/catalog.h"
#include "testing/fake_driver.h"

namespace fusekit {
namespace {

struct Table {
  std::vector<KernelArtifact> artifacts;
  std::vector<std::vector<fusekit_param_desc>> params;
  std::vector<std::vector<std::string>> texts;  // keep LaunchExpr strings alive
  std::vector<fusekit_variant_desc> variants;

  void add(const KernelArtifact& a, const char* op, int sm, int bucket) {
    artifacts.push_back(a);
    const KernelArtifact& k = artifacts.back();
    texts.emplace_back();
    auto& t = texts.back();
    t.reserve(3 + k.params.size());
    for (int i = 0; i < 3; ++i) t.push_back(k.grid[i].to_string());
    params.emplace_back();
    for (const auto& p : k.params) {
      t.push_back(p.kind == KernelParam::Kind::kShape ? p.expr.to_string() : "");
      params.back().push_back({static_cast<int>(p.kind), static_cast<int>(p.type), p.index, t.back().c_str()});
    }
    variants.push_back({op, 0, bucket, sm, k.image_kind == ImageKind::kCubin ? 0 : 1,
                        reinterpret_cast<const unsigned char*>(k.image.data()), k.image.size(), k.entry.c_str(),
                        {k.block[0], k.block[1], k.block[2]}, {t[0].c_str(), t[1].c_str(), t[2].c_str()},
                        k.shared_bytes, k.pointer_alignment, params.back().data(),
                        static_cast<int>(params.back().size()), "nvrtc", "bench", "", 1, 0, -1, 0, 1});
  }
};

const Config kSchedule = Config::parse("ept=1 fast=0 grid=0 threads=256 vec=4");

KernelArtifact build(const ArchLimits& arch) {
  auto b = make_kernel_builder(find_pattern("sigmoid_mul_tanh_add"), DType::kF32, arch)->build({{Backend::kNvrtc, kSchedule}});
  if (!b.front().ok) throw std::runtime_error(b.front().error);
  return b.front().artifact;
}

void BM_SelectVariant(benchmark::State& state) {
  static Table table = [] {
    Table t;
    t.artifacts.reserve(64);
    t.params.reserve(64);
    t.texts.reserve(64);
    for (const char* arch : {"sm_80", "sm_86", "sm_90"}) {
      KernelArtifact a = build(require_arch(arch));
      for (int bucket : {12, 16, 20, 26, -1}) t.add(a, "sigmoid_mul_tanh_add", require_arch(arch).arch.number(), bucket);
    }
    return t;
  }();
  int64_t n = 4096;
  for (auto _ : state) {
    Selection s;
    Status st = select_variant(table.variants.data(), table.variants.size(), "sigmoid_mul_tanh_add", DType::kF32,
                               DeviceProps{90, 132}, n, -1, 256, &s);
    benchmark::DoNotOptimize(s.variant);
    benchmark::DoNotOptimize(st);
  }
}
BENCHMARK(BM_SelectVariant);

// The package path's host work alone: a fake driver whose cuLaunchKernel
// returns at once. Arg 0: shapes and pointers prepared once; arg 1: filled per
// call into per-thread objects, as the generated C entry points do.
void BM_PackageLaunchHostOnly(benchmark::State& state) {
  static Table table = [] {
    Table t;
    t.artifacts.reserve(4);
    t.params.reserve(4);
    t.texts.reserve(4);
    t.add(build(require_arch("sm_90")), "sigmoid_mul_tanh_add", 90, 12);
    return t;
  }();
  fake::state() = fake::State{};
  fake::state().record = false;
  Package package(table.variants.data(), table.variants.size(), &fake::driver());
  const bool per_call = state.range(0) != 0;
  LaunchShape shape;
  LaunchArgs args;
  auto prepare = [&](int64_t n) {
    shape.domain = {n};
    shape.inputs = {{n}, {n}, {n}};
    shape.outputs = {{n}};
    args.inputs = {0x10000000, 0x10100000, 0x10200000};
    args.outputs = {0x10300000};
  };
  prepare(4096);
  for (auto _ : state) {
    if (per_call) {
      // What a generated entry point does per call (objects reused per thread).
      thread_local LaunchShape s;
      thread_local LaunchArgs a;
      s.domain.resize(1);
      s.domain[0] = 4096;
      s.inputs.resize(3);
      for (auto& dims : s.inputs) dims.assign(1, 4096);
      s.outputs.resize(1);
      s.outputs[0] = s.domain;
      a.inputs.assign({0x10000000, 0x10100000, 0x10200000});
      a.outputs.assign({0x10300000});
      benchmark::DoNotOptimize(package.launch("sigmoid_mul_tanh_add", DType::kF32, s, a, nullptr));
    } else {
      benchmark::DoNotOptimize(package.launch("sigmoid_mul_tanh_add", DType::kF32, shape, args, nullptr));
    }
  }
}
BENCHMARK(BM_PackageLaunchHostOnly)->Arg(0)->Arg(1);

// GPU state shared by the launch benchmarks.
struct Gpu {
  const CudaDriver* d = nullptr;
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  CUdeviceptr buf = 0;
  int sm = 0, sm_count = 0;
  std::string error;
  Table table;
  std::unique_ptr<Package> package;
  LoadedKernel raw;
  LaunchShape shape;
  LaunchArgs args;

  Gpu() {
    Status st = load_cuda_driver(&d);
    if (!st.ok()) { error = st.message(); return; }
    CUdevice dev;
    int major = 0, minor = 0;
    if (d->cuDeviceGet(&dev, 0) != CUDA_SUCCESS || d->cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS) {
      error = "no CUDA device";
      return;
    }
    d->cuCtxSetCurrent(ctx);
    d->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    d->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    d->cuDeviceGetAttribute(&sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    sm = major * 10 + minor;
    const ArchLimits* arch = find_arch_limits(Arch{major, minor});
    if (!arch) { error = "arch sm_" + std::to_string(sm) + " not in fusekit's table"; return; }
    table.artifacts.reserve(4);
    table.params.reserve(4);
    table.texts.reserve(4);
    table.add(build(*arch), "sigmoid_mul_tanh_add", sm, 12);
    package = std::make_unique<Package>(table.variants.data(), table.variants.size());
    st = raw.load(*d, table.artifacts[0]);
    if (!st.ok()) { error = st.message(); return; }
    d->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
    d->cuMemAlloc(&buf, 4 * 4096 * sizeof(float));
    shape.domain = {4096};
    shape.inputs = {{4096}, {4096}, {4096}};
    shape.outputs = {{4096}};
    shape.sm_count = sm_count;
    for (int i = 0; i < 3; ++i) args.inputs.push_back(buf + i * 4096 * sizeof(float));
    args.outputs.push_back(buf + 3 * 4096 * sizeof(float));
  }
};

Gpu& gpu() {
  static Gpu g;
  return g;
}

void BM_RawLaunch(benchmark::State& state) {
  Gpu& g = gpu();
  if (!g.error.empty()) { state.SkipWithError(g.error.c_str()); return; }
  // The launch arguments, prepared once: only cuLaunchKernel is timed.
  CUdeviceptr x = g.args.inputs[0], y = g.args.inputs[1], z = g.args.inputs[2], out = g.args.outputs[0];
  long long n = 4096;
  void* params[] = {&x, &y, &z, &out, &n};
  const unsigned grid = static_cast<unsigned>((n + 1023) / 1024);
  int64_t i = 0;
  for (auto _ : state) {
    g.d->cuLaunchKernel(g.raw.function(), grid, 1, 1, 256, 1, 1, 0, g.stream, params, nullptr);
    if (++i % 10000 == 0) g.d->cuStreamSynchronize(g.stream);
  }
  g.d->cuStreamSynchronize(g.stream);
}
BENCHMARK(BM_RawLaunch)->Iterations(100000);

void BM_PackageLaunch(benchmark::State& state) {
  Gpu& g = gpu();
  if (!g.error.empty()) { state.SkipWithError(g.error.c_str()); return; }
  int64_t i = 0;
  for (auto _ : state) {
    Status st = g.package->launch("sigmoid_mul_tanh_add", DType::kF32, g.shape, g.args, g.stream);
    if (!st.ok()) { state.SkipWithError(st.message().c_str()); break; }
    if (++i % 10000 == 0) g.d->cuStreamSynchronize(g.stream);
  }
  g.d->cuStreamSynchronize(g.stream);
}
BENCHMARK(BM_PackageLaunch)->Iterations(100000);

// 100 package calls captured into one graph; time per kernel of a replay.
void BM_GraphLaunch(benchmark::State& state) {
  Gpu& g = gpu();
  if (!g.error.empty()) { state.SkipWithError(g.error.c_str()); return; }
  constexpr int kPerGraph = 100;
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  if (g.d->cuStreamBeginCapture(g.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) != CUDA_SUCCESS) {
    state.SkipWithError("cuStreamBeginCapture failed");
    return;
  }
  for (int k = 0; k < kPerGraph; ++k) {
    Status st = g.package->launch("sigmoid_mul_tanh_add", DType::kF32, g.shape, g.args, g.stream);
    if (!st.ok()) {
      g.d->cuStreamEndCapture(g.stream, &graph);
      state.SkipWithError(st.message().c_str());
      return;
    }
  }
  if (g.d->cuStreamEndCapture(g.stream, &graph) != CUDA_SUCCESS ||
      g.d->cuGraphInstantiateWithFlags(&exec, graph, 0) != CUDA_SUCCESS) {
    state.SkipWithError("graph capture or instantiation failed");
    return;
  }
  int64_t i = 0;
  for (auto _ : state) {
    g.d->cuGraphLaunch(exec, g.stream);
    if (++i % 100 == 0) g.d->cuStreamSynchronize(g.stream);
  }
  g.d->cuStreamSynchronize(g.stream);
  state.counters["us_per_kernel"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kPerGraph,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  g.d->cuGraphExecDestroy(exec);
  g.d->cuGraphDestroy(graph);
}
BENCHMARK(BM_GraphLaunch)->Iterations(1000)->UseRealTime();

}  // namespace
}  // namespace fusekit

BENCHMARK_MAIN();
