// A fake CUDA driver table for CPU tests and host-overhead benchmarks: a
// current context with a chosen compute capability, modules that "load", and
// cuLaunchKernel calls recorded with their grid and arguments.
#pragma once

#include <cstring>
#include <vector>

#include "fusekit/cuda_driver.h"

namespace fusekit {
namespace fake {

struct Launch {
  CUfunction function;
  unsigned grid[3];
  unsigned block[3];
  CUstream stream;
  std::vector<uint64_t> args;  // first 8 bytes of each argument slot
};

struct State {
  CUcontext current = reinterpret_cast<CUcontext>(0x1);
  int sm = 90;
  int sm_count = 132;
  int modules_loaded = 0;
  int expected_args = 0;  // how many argument slots to record per launch
  bool record = true;
  std::vector<Launch> launches;
  int max_dynamic_shared = 0;  // the last cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)
  // Occupancy: blocks per SM, the loaded function's compile-time cluster
  // width (0: none) and the clusters the device holds of it.
  int blocks_per_sm = 2;
  int cluster_width = 0;
  int active_clusters = 30;
  unsigned occupancy_grid = 0;  // gridDimX of the last cluster query
  // Images whose first byte is this fail to load (a cubin for another
  // arch or driver); -1: none.
  int failing_image_byte = -1;
};

inline State& state() {
  static State s;
  return s;
}

inline CUresult ctx_get_current(CUcontext* c) { *c = state().current; return CUDA_SUCCESS; }
inline CUresult ctx_get_device(CUdevice* d) { *d = 0; return CUDA_SUCCESS; }
inline CUresult device_attribute(int* v, CUdevice_attribute a, CUdevice) {
  if (a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) *v = state().sm / 10;
  else if (a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR) *v = state().sm % 10;
  else if (a == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT) *v = state().sm_count;
  else *v = 0;
  return CUDA_SUCCESS;
}
inline CUresult module_load(CUmodule* m, const void* image, unsigned, CUjit_option*, void**) {
  if (*static_cast<const unsigned char*>(image) == state().failing_image_byte) return CUDA_ERROR_NO_BINARY_FOR_GPU;
  *m = reinterpret_cast<CUmodule>(static_cast<uintptr_t>(++state().modules_loaded));
  return CUDA_SUCCESS;
}
inline CUresult module_unload(CUmodule) { return CUDA_SUCCESS; }
inline CUresult module_function(CUfunction* f, CUmodule m, const char*) {
  *f = reinterpret_cast<CUfunction>(m);
  return CUDA_SUCCESS;
}
inline CUresult func_set_attribute(CUfunction, CUfunction_attribute a, int v) {
  if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) state().max_dynamic_shared = v;
  return CUDA_SUCCESS;
}
inline CUresult func_get_attribute(int* v, CUfunction_attribute a, CUfunction) {
  *v = a == CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH ? state().cluster_width : 0;
  return CUDA_SUCCESS;
}
inline CUresult occupancy_blocks(int* n, CUfunction, int, size_t) {
  *n = state().blocks_per_sm;
  return CUDA_SUCCESS;
}
inline CUresult occupancy_clusters(int* n, CUfunction, const CUlaunchConfig* c) {
  state().occupancy_grid = c->gridDimX;
  *n = state().active_clusters;
  return CUDA_SUCCESS;
}
inline CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                       unsigned, CUstream s, void** params, void**) {
  if (!state().record) return CUDA_SUCCESS;
  Launch l{f, {gx, gy, gz}, {bx, by, bz}, s, {}};
  for (int i = 0; i < state().expected_args; ++i) {
    uint64_t v = 0;
    std::memcpy(&v, params[i], 8);
    l.args.push_back(v);
  }
  state().launches.push_back(l);
  return CUDA_SUCCESS;
}
inline CUresult error_name(CUresult, const char** s) { *s = "CUDA_ERROR_FAKE"; return CUDA_SUCCESS; }

inline const CudaDriver& driver() {
  static CudaDriver d = [] {
    CudaDriver x{};
    x.cuCtxGetCurrent = ctx_get_current;
    x.cuCtxGetDevice = ctx_get_device;
    x.cuDeviceGetAttribute = device_attribute;
    x.cuModuleLoadDataEx = module_load;
    x.cuModuleUnload = module_unload;
    x.cuModuleGetFunction = module_function;
    x.cuFuncSetAttribute = func_set_attribute;
    x.cuFuncGetAttribute = func_get_attribute;
    x.cuOccupancyMaxActiveBlocksPerMultiprocessor = occupancy_blocks;
    x.cuOccupancyMaxActiveClusters = occupancy_clusters;
    x.cuLaunchKernel = launch;
    x.cuGetErrorName = error_name;
    x.cuGetErrorString = error_name;
    return x;
  }();
  return d;
}

}  // namespace fake
}  // namespace fusekit
