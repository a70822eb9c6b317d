// Device-to-device copy bandwidth: the ceiling every memory-bound kernel is
// compared against. Counts bytes read plus bytes written, times with CUDA
// events after warm-up, prints JSON with the median and spread.
//
//   copy_bandwidth [BYTES=1073741824] [REPS=50]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "fusekit/cuda_driver.h"

using namespace fusekit;

#define CHECK(call)                                                                  \
  do {                                                                               \
    CUresult r_ = (d->call);                                                         \
    if (r_ != CUDA_SUCCESS) {                                                        \
      std::fprintf(stderr, "%s failed: %s\n", #call, cuda_error_text(*d, r_).c_str()); \
      return 1;                                                                      \
    }                                                                                \
  } while (0)

int main(int argc, char** argv) {
  const size_t bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (size_t{1} << 30);
  const int reps = argc > 2 ? std::atoi(argv[2]) : 50;
  const CudaDriver* d = nullptr;
  Status st = load_cuda_driver(&d);
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.to_string().c_str());
    return 1;
  }
  CUdevice dev;
  CUcontext ctx;
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  char name[256];
  CHECK(cuDeviceGetName(name, sizeof(name), dev));
  CUstream s;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr a, b;
  CHECK(cuMemAlloc(&a, bytes));
  CHECK(cuMemAlloc(&b, bytes));
  CHECK(cuMemsetD8(a, 0x5a, bytes));
  std::vector<CUevent> ev(2 * reps);
  for (auto& e : ev) CHECK(cuEventCreate(&e, CU_EVENT_DEFAULT));
  for (int i = 0; i < 5; ++i) CHECK(cuMemcpyDtoDAsync(b, a, bytes, s));
  for (int i = 0; i < reps; ++i) {
    CHECK(cuEventRecord(ev[2 * i], s));
    CHECK(cuMemcpyDtoDAsync(i % 2 ? a : b, i % 2 ? b : a, bytes, s));
    CHECK(cuEventRecord(ev[2 * i + 1], s));
  }
  CHECK(cuStreamSynchronize(s));
  std::vector<double> gbps;
  for (int i = 0; i < reps; ++i) {
    float ms = 0;
    CHECK(cuEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
    gbps.push_back(2.0 * static_cast<double>(bytes) / (ms * 1e-3) / 1e9);
  }
  std::sort(gbps.begin(), gbps.end());
  auto pct = [&](double q) { return gbps[static_cast<size_t>(q * (gbps.size() - 1) + 0.5)]; };
  std::printf("{\"gpu\": \"%s\", \"bytes\": %zu, \"reps\": %d, \"copy_gbps_median\": %.1f, \"copy_gbps_p20\": %.1f, "
              "\"copy_gbps_p80\": %.1f}\n",
              name, bytes, reps, pct(0.5), pct(0.2), pct(0.8));
  return 0;
}
