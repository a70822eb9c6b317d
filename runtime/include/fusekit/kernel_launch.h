// Loading a KernelArtifact into the current CUDA context and launching it on
// a caller's stream, with grid and shape arguments evaluated from the call's
// tensor extents.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fusekit/cuda_driver.h"
#include "fusekit/kernel_artifact.h"
#include "fusekit/status.h"

namespace fusekit {

// Extents of one call. Tensors are dense with min 0; dims innermost first.
struct LaunchShape {
  std::vector<int64_t> domain;                    // the output iteration domain
  std::vector<std::vector<int64_t>> inputs;       // dims of each input tensor
  std::vector<std::vector<int64_t>> outputs;      // dims of each output tensor
  int sm_count = 1;
  // Blocks of the kernel being launched that the device holds at once
  // (LoadedKernel::resident_blocks); 0: not known.
  int64_t resident_blocks = 0;

  int64_t elements() const;  // product of domain
};

// Symbol values a LaunchExpr may use: "n", "d<k>", "sm_count",
// "in<i>.extent.<k>", "in<i>.min.<k>", "in<i>.stride.<k>" and the same for
// "out<i>", and "resident_blocks" (2^31 - 1, no bound, when not known).
// Returns false for anything else.
bool lookup_shape_symbol(const LaunchShape& shape, const std::string& name, int64_t* value);

// Device pointers and scalar values of one call.
struct LaunchArgs {
  std::vector<CUdeviceptr> inputs;
  std::vector<CUdeviceptr> outputs;
  std::vector<float> params;
};

// A module loaded from an artifact's image, and its entry function.
class LoadedKernel {
 public:
  LoadedKernel() = default;
  LoadedKernel(const LoadedKernel&) = delete;
  LoadedKernel& operator=(const LoadedKernel&) = delete;
  ~LoadedKernel();

  // Loads into the current context; on failure the JIT log is in the Status.
  Status load(const CudaDriver& driver, const KernelArtifact& artifact);
  void unload();
  // Forgets the module without unloading it (for owners that may outlive
  // the context or the driver, such as a static package at process exit).
  void release() {
    module_ = nullptr;
    function_ = nullptr;
  }
  CUfunction function() const { return function_; }
  bool loaded() const { return module_ != nullptr; }
  // Blocks of this kernel (in whole clusters, for a kernel compiled with
  // cluster dimensions) that the current device holds at once, from the
  // driver's occupancy queries at load; 0 when the driver cannot say.
  // Persistent grids are sized by it: a block that is not resident with the
  // others waits for one of them to finish all its work.
  int64_t resident_blocks() const { return resident_blocks_; }

 private:
  const CudaDriver* driver_ = nullptr;
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
  int64_t resident_blocks_ = 0;
};

// The shape-dependent part of a launch: grid and shape-argument values,
// evaluated once per shape (and cacheable across calls with that shape).
struct PreparedLaunch {
  static constexpr int kMaxParams = 64;
  unsigned grid[3] = {1, 1, 1};
  int num_params = 0;
  uint64_t shape_values[kMaxParams] = {};  // per parameter slot (0 for non-shape slots)
};

// Evaluates `artifact`'s grid and shape arguments for `shape`; a Status for
// out-of-range grids or shape values that overflow their type.
Status prepare_launch(const KernelArtifact& artifact, const LaunchShape& shape, PreparedLaunch* out);

// cuLaunchKernel with a prepared launch and the call's pointers and scalars.
Status launch_prepared(const CudaDriver& driver, const KernelArtifact& artifact, CUfunction function,
                       const PreparedLaunch& prepared, const LaunchArgs& args, CUstream stream);

// prepare_launch then launch_prepared.
Status launch_kernel(const CudaDriver& driver, const KernelArtifact& artifact, CUfunction function,
                     const LaunchShape& shape, const LaunchArgs& args, CUstream stream);

}  // namespace fusekit
