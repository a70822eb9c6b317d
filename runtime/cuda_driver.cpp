#include "fusekit/cuda_driver.h"

#include <dlfcn.h>

#include <mutex>

namespace fusekit {
namespace {

struct Loaded {
  CudaDriver driver{};
  Status status;
};

template <typename Fn>
bool bind(void* lib, const char* symbol, Fn* slot, std::string* missing) {
  void* p = dlsym(lib, symbol);
  if (!p) {
    if (!missing->empty()) *missing += ", ";
    *missing += symbol;
    return false;
  }
  *slot = reinterpret_cast<Fn>(p);
  return true;
}

Loaded load() {
  Loaded out;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = dlerror();
    out.status = Status(StatusCode::kNotFound,
                        std::string("no CUDA driver: dlopen(libcuda.so.1) failed: ") +
                            (err ? err : "unknown error"));
    return out;
  }
  CudaDriver& d = out.driver;
  std::string missing;
  // Versioned names are the ones cuda.h maps the plain names to.
  bind(lib, "cuInit", &d.cuInit, &missing);
  bind(lib, "cuDriverGetVersion", &d.cuDriverGetVersion, &missing);
  bind(lib, "cuDeviceGetCount", &d.cuDeviceGetCount, &missing);
  bind(lib, "cuDeviceGet", &d.cuDeviceGet, &missing);
  bind(lib, "cuDeviceGetAttribute", &d.cuDeviceGetAttribute, &missing);
  bind(lib, "cuDeviceGetName", &d.cuDeviceGetName, &missing);
  bind(lib, "cuDeviceTotalMem_v2", &d.cuDeviceTotalMem, &missing);
  bind(lib, "cuDevicePrimaryCtxRetain", &d.cuDevicePrimaryCtxRetain, &missing);
  bind(lib, "cuDevicePrimaryCtxRelease_v2", &d.cuDevicePrimaryCtxRelease, &missing);
  bind(lib, "cuDevicePrimaryCtxReset_v2", &d.cuDevicePrimaryCtxReset, &missing);
  bind(lib, "cuCtxSetCurrent", &d.cuCtxSetCurrent, &missing);
  bind(lib, "cuCtxGetCurrent", &d.cuCtxGetCurrent, &missing);
  bind(lib, "cuCtxGetDevice", &d.cuCtxGetDevice, &missing);
  bind(lib, "cuCtxSynchronize", &d.cuCtxSynchronize, &missing);
  bind(lib, "cuModuleLoadDataEx", &d.cuModuleLoadDataEx, &missing);
  bind(lib, "cuModuleUnload", &d.cuModuleUnload, &missing);
  bind(lib, "cuModuleGetFunction", &d.cuModuleGetFunction, &missing);
  bind(lib, "cuFuncGetAttribute", &d.cuFuncGetAttribute, &missing);
  bind(lib, "cuFuncSetAttribute", &d.cuFuncSetAttribute, &missing);
  bind(lib, "cuLaunchKernel", &d.cuLaunchKernel, &missing);
  bind(lib, "cuMemAlloc_v2", &d.cuMemAlloc, &missing);
  bind(lib, "cuMemFree_v2", &d.cuMemFree, &missing);
  bind(lib, "cuMemcpyHtoD_v2", &d.cuMemcpyHtoD, &missing);
  bind(lib, "cuMemcpyDtoH_v2", &d.cuMemcpyDtoH, &missing);
  bind(lib, "cuMemcpyDtoDAsync_v2", &d.cuMemcpyDtoDAsync, &missing);
  bind(lib, "cuMemsetD8_v2", &d.cuMemsetD8, &missing);
  bind(lib, "cuMemsetD32Async", &d.cuMemsetD32Async, &missing);
  bind(lib, "cuStreamCreate", &d.cuStreamCreate, &missing);
  bind(lib, "cuStreamDestroy_v2", &d.cuStreamDestroy, &missing);
  bind(lib, "cuStreamSynchronize", &d.cuStreamSynchronize, &missing);
  bind(lib, "cuEventCreate", &d.cuEventCreate, &missing);
  bind(lib, "cuEventDestroy_v2", &d.cuEventDestroy, &missing);
  bind(lib, "cuEventRecord", &d.cuEventRecord, &missing);
  bind(lib, "cuEventSynchronize", &d.cuEventSynchronize, &missing);
  bind(lib, "cuEventElapsedTime", &d.cuEventElapsedTime, &missing);
  bind(lib, "cuStreamBeginCapture_v2", &d.cuStreamBeginCapture, &missing);
  bind(lib, "cuStreamEndCapture", &d.cuStreamEndCapture, &missing);
  bind(lib, "cuGraphInstantiateWithFlags", &d.cuGraphInstantiateWithFlags, &missing);
  bind(lib, "cuGraphLaunch", &d.cuGraphLaunch, &missing);
  bind(lib, "cuGraphExecDestroy", &d.cuGraphExecDestroy, &missing);
  bind(lib, "cuGraphDestroy", &d.cuGraphDestroy, &missing);
  bind(lib, "cuGetErrorName", &d.cuGetErrorName, &missing);
  bind(lib, "cuGetErrorString", &d.cuGetErrorString, &missing);
  // Optional entry points: absent from older drivers (clusters: CUDA 12).
  std::string optional;
  bind(lib, "cuOccupancyMaxActiveBlocksPerMultiprocessor", &d.cuOccupancyMaxActiveBlocksPerMultiprocessor, &optional);
  bind(lib, "cuOccupancyMaxActiveClusters", &d.cuOccupancyMaxActiveClusters, &optional);
  if (!missing.empty()) {
    out.status = Status(StatusCode::kNotFound, "libcuda lacks symbols: " + missing);
    return out;
  }
  CUresult r = d.cuInit(0);
  if (r != CUDA_SUCCESS) out.status = cuda_status(d, r, "cuInit(0)");
  return out;
}

}  // namespace

Status load_cuda_driver(const CudaDriver** driver) {
  static Loaded loaded = load();
  *driver = loaded.status.ok() ? &loaded.driver : nullptr;
  return loaded.status;
}

std::string cuda_error_text(const CudaDriver& driver, CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (driver.cuGetErrorName) driver.cuGetErrorName(result, &name);
  if (driver.cuGetErrorString) driver.cuGetErrorString(result, &text);
  std::string s = name ? name : ("CUresult " + std::to_string(static_cast<int>(result)));
  if (text) s += std::string(" (") + text + ")";
  return s;
}

Status cuda_status(const CudaDriver& driver, CUresult result, const char* call,
                   const std::string& context) {
  std::string msg = std::string(call) + " failed: " + cuda_error_text(driver, result);
  if (!context.empty()) msg += ": " + context;
  return Status(StatusCode::kDriverError, msg);
}

}  // namespace fusekit
